package clustertest_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/runnel-io/runnel/internal/clustertest"
)

// controllerMoveBound is how long the metadata quorum may take to move its
// leadership off a node whose disk filled and commit a change without it.
const controllerMoveBound = 15 * time.Second

// TestControllerDiskFull fills the disk of the active controller under a checked
// acks=all load: its whole data dir ("data dir": every node's data dir is a small
// tmpfs of its own), or only its metadata log ("metadata dir": a tmpfs on every
// node's DATA_DIR/__raft, the partitions keep their room). Within
// controllerMoveBound another voter must be the active controller, a topic creation
// must be acknowledged (it waits for every node that can apply it, not for the full
// one), and the full node's partitions must have other leaders. Once the file is
// removed the node rejoins every ISR, serves the topic created meanwhile, and
// restarts from its Raft log; every acknowledged record is on every ISR replica. It
// needs root to mount the tmpfs, and skips otherwise.
func TestControllerDiskFull(t *testing.T) {
	skipIfShort(t)
	for name, sub := range map[string]string{"data dir": "", "metadata dir": "__raft"} {
		t.Run(name, func(t *testing.T) { controllerDiskFull(t, sub) })
	}
}

// controllerDiskFull is TestControllerDiskFull with the tmpfs on DATA_DIR/sub.
func controllerDiskFull(t *testing.T, sub string) {
	dirs := map[int32]string{}
	c := clustertest.Start(t, clustertest.Options{Nodes: 3, InProcess: true, Sets: clustertest.FastFailureDetection, StartTimeout: startTimeout,
		Prepare: func(n *clustertest.Node) error {
			dirs[n.ID] = filepath.Join(n.DataDir, sub)
			return mountSmallDisk(t, dirs[n.ID], "64m")
		}})
	topic := topicName(t)
	const parts = 3
	createTopic(t, c, topic, parts, 3)
	h := clustertest.NewHistory()
	load := c.StartLoad(t, h, clustertest.LoadOptions{Topic: topic, Partitions: parts, Rate: 300})
	waitAcks(t, h, 300, "before the disk fills")

	full := activeController(t, c.Client(t), -1)
	var others []int32
	for id := int32(1); id <= 3; id++ {
		if id != full {
			others = append(others, id)
		}
	}
	cl := c.ClientOn(t, others)
	adm := kadm.NewClient(cl)
	filler := filepath.Join(dirs[full], "filler")
	fillDisk(t, filler)
	filled := time.Now()
	next := activeController(t, cl, full)
	t.Logf("node %d is the active controller %v after node %d's disk filled", next, time.Since(filled).Round(time.Millisecond), full)
	during := topic + "-during"
	deadline := filled.Add(controllerMoveBound)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		_, err := adm.CreateTopic(ctx, 1, 3, nil, during)
		cancel()
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no topic creation acknowledged within %v of node %d's (the active controller's) disk filling: %v", controllerMoveBound, full, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Logf("topic %s created %v after the fill", during, time.Since(filled).Round(time.Millisecond))
	for p := range int32(parts) {
		waitPartition(t, c, int(others[0]), topic, p, func(leader int32, _ []int32) bool {
			return leader >= 0 && leader != full
		}, "a leader other than node %d", full)
	}
	waitAcks(t, h, h.Len()+600, fmt.Sprintf("while node %d's disk is full", full))

	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	freed := time.Now()
	for p := range int32(parts) {
		c.WaitISR(t, topic, p, 3, waitTimeout)
	}
	waitPartition(t, c, int(full), during, 0, func(leader int32, _ []int32) bool { return leader >= 0 },
		"known to node %d with a leader", full)
	t.Logf("node %d back in every ISR and serving %s %v after the free", full, during, time.Since(freed).Round(time.Millisecond))
	if err := c.Stop(int(full)); err != nil {
		t.Fatalf("stop node %d: %v", full, err)
	}
	c.Restart(int(full))
	waitPartition(t, c, int(full), during, 0, func(leader int32, _ []int32) bool { return leader >= 0 },
		"known to node %d after its restart", full)
	waitAcks(t, h, h.Len()+300, "after the free and the restart")
	stopLoad(t, load, h)
	checkAllRunning(t, c)
	h.Check(t, c, topic)
}

// activeController waits (controllerMoveBound) until cl's nodes name an active
// controller other than not, and returns it. It asks them every time (kadm's
// BrokerMetadata may answer from the client's metadata cache).
func activeController(t *testing.T, cl *kgo.Client, not int32) int32 {
	t.Helper()
	deadline := time.Now().Add(controllerMoveBound)
	var last string
	for time.Now().Before(deadline) {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		req := kmsg.NewPtrMetadataRequest()
		req.Topics = []kmsg.MetadataRequestTopic{}
		resp, err := req.RequestWith(ctx, cl)
		cancel()
		if err == nil && resp.ControllerID >= 0 && resp.ControllerID != not {
			return resp.ControllerID
		}
		if err == nil {
			last = fmt.Sprintf("controller %d", resp.ControllerID)
		} else {
			last = err.Error()
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("no active controller other than node %d within %v (last: %s)", not, controllerMoveBound, last)
	return 0
}
