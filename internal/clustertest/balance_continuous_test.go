package clustertest_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/runnel-io/runnel/internal/clustertest"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// continuousSets puts the balancer in continuous mode with a dead-node timeout of 3 s
// and a disk poll every 500 ms.
var continuousSets = append(slices.Clone(clustertest.FastFailureDetection),
	"partition.autobalancing.mode=continuous",
	"partition.autobalancing.node.availability.timeout.sec=3",
	"partition.autobalancing.tick.interval.ms=500")

// TestBalancerContinuousDeadNode: in continuous mode with a 3 s availability timeout,
// a broker holding 3 of 12 replicas (RF 3) is killed with SIGKILL under an acks=all
// load. Its replicas must be re-created on the other nodes (every partition back to 3
// replicas, all in the ISR, none on the dead node); when the node comes back it must
// be a replica of nothing and serve none of the partitions it held; every
// acknowledged record must be in every ISR replica (History.Check).
func TestBalancerContinuousDeadNode(t *testing.T) {
	skipIfShort(t)
	c := clustertest.Start(t, clustertest.Options{Nodes: 3, StartTimeout: startTimeout, Sets: continuousSets})
	topic := topicName(t)
	const parts = 4
	createTopic(t, c, topic, parts, 3)
	h := clustertest.NewHistory()
	load := c.StartLoad(t, h, clustertest.LoadOptions{Topic: topic, Partitions: parts, Rate: 300})
	waitAcks(t, h, 300, "before the join")
	n := c.AddNode(t) // a broker only: killing it leaves the metadata quorum whole
	waitReplicaCount(t, c, topic, parts, func(per map[int32]int) bool { return per[n.ID] == 3 }, "node_add gives node %d its 3 replicas", n.ID)
	adm := c.Admin(t)
	waitNoReassignments(t, c, adm, topic)

	killed := time.Now()
	c.Kill(int(n.ID))
	t.Logf("killed node %d", n.ID)
	waitReplicaCount(t, c, topic, parts, func(per map[int32]int) bool {
		return per[n.ID] == 0 && per[1] == parts && per[2] == parts && per[3] == parts
	}, "the replicas of dead node %d re-created on nodes 1-3", n.ID)
	for p := range int32(parts) {
		c.WaitISR(t, topic, p, 3, waitTimeout)
	}
	t.Logf("every partition back to 3 in-sync replicas without node %d %v after the kill (timeout 3 s)", n.ID, time.Since(killed).Round(time.Millisecond))
	waitAcks(t, h, h.Len()+300, "after the dead node's replicas moved")

	// The node comes back: it is a replica of nothing, and serves none of the
	// partitions it held (ListOffsets to it: NOT_LEADER_OR_FOLLOWER). The copies it
	// had stay on its disk (the replica layer does not delete stray logs at start-up;
	// they are logged below).
	c.Restart(int(n.ID))
	c.WaitBrokers(t, []int32{1, 2, 3, n.ID}, waitTimeout)
	var stray []string
	for p := range int32(parts) {
		if _, err := os.Stat(n.PartitionDir(topic, p)); err == nil {
			stray = append(stray, filepath.Base(n.PartitionDir(topic, p)))
		}
	}
	t.Logf("node %d, back, keeps the stray copies %v on its disk", n.ID, stray)
	direct := c.Client(t, kgo.SeedBrokers(n.KafkaAddr))
	for p := range int32(parts) {
		req := kmsg.NewPtrListOffsetsRequest()
		rt := kmsg.NewListOffsetsRequestTopic()
		rt.Topic = topic
		rp := kmsg.NewListOffsetsRequestTopicPartition()
		rp.Partition, rp.Timestamp = p, -1
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		kresp, err := direct.Broker(int(n.ID)).Request(ctx, req)
		cancel()
		if err != nil {
			t.Fatalf("ListOffsets to node %d: %v", n.ID, err)
		}
		code := kresp.(*kmsg.ListOffsetsResponse).Topics[0].Partitions[0].ErrorCode
		if err := kerr.ErrorForCode(code); !errors.Is(err, kerr.NotLeaderForPartition) && !errors.Is(err, kerr.UnknownTopicOrPartition) {
			t.Errorf("ListOffsets of %s-%d to node %d, back and a replica of nothing: error %v, want NOT_LEADER_OR_FOLLOWER", topic, p, n.ID, err)
		}
	}
	waitReplicaCount(t, c, topic, parts, func(per map[int32]int) bool { return per[n.ID] == 0 }, "node %d, back, a replica of nothing", n.ID)
	stopLoad(t, load, h)
	h.Check(t, c, topic)
}

// TestBalancerContinuousDiskThreshold: node 3's data directory is a small tmpfs (48
// MiB); in continuous mode with partition.autobalancing.max.disk.usage.percent a few
// points above the host disk's use, a file filling node 3's past it makes it count as full (the active controller learns it
// from DescribeLogDirs). Its replicas must move to nodes 1 and 2, which are below the
// threshold, and none come back while it stays full; the load's acknowledgements go on,
// and every acknowledged record is in every ISR replica.
func TestBalancerContinuousDiskThreshold(t *testing.T) {
	skipIfShort(t)
	const full = 3
	// The threshold sits above the host disk the other nodes use, as DescribeLogDirs
	// counts it (df's Use%: used over used plus available), and node 3's tmpfs is
	// filled past it.
	var st syscall.Statfs_t
	if err := syscall.Statfs(os.TempDir(), &st); err != nil {
		t.Fatal(err)
	}
	used := float64(st.Blocks - st.Bfree)
	host := 100 * used / (used + float64(st.Bavail))
	threshold := int(host) + 6
	if threshold > 90 {
		t.Skipf("the host disk is %.0f%% used: no room for a threshold between it and a full node", host)
	}
	var mnt string
	c := clustertest.Start(t, clustertest.Options{Nodes: 3, StartTimeout: startTimeout,
		Sets: append(slices.Clone(continuousSets), fmt.Sprintf("partition.autobalancing.max.disk.usage.percent=%d", threshold)),
		Prepare: func(n *clustertest.Node) error {
			if n.ID != full {
				return nil
			}
			mnt = n.DataDir
			return mountSmallDisk(t, n.DataDir, "48m")
		}})
	topic := topicName(t)
	const parts = 3
	createTopic(t, c, topic, parts, 2)
	h := clustertest.NewHistory()
	load := c.StartLoad(t, h, clustertest.LoadOptions{Topic: topic, Partitions: parts, Rate: 300})
	waitAcks(t, h, 300, "before the disk fills")
	var before int
	waitReplicaCount(t, c, topic, parts, func(per map[int32]int) bool { before = per[full]; return true }, "replicas")
	if before == 0 {
		t.Fatalf("node %d holds no replica to begin with", full)
	}

	filler := filepath.Join(mnt, "filler")
	fill := int64(float64(threshold+5) / 100 * (48 << 20)) // 5 points past the threshold
	if err := os.WriteFile(filler, make([]byte, fill), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("host disk %.1f%% used, threshold %d%%, node %d's 48 MiB filled with %.1f MiB", host, threshold, full, float64(fill)/(1<<20))
	filled := time.Now()
	waitReplicaCount(t, c, topic, parts, func(per map[int32]int) bool { return per[full] == 0 },
		"node %d, past the disk threshold, drained", full)
	for p := range int32(parts) {
		c.WaitISR(t, topic, p, 2, waitTimeout)
	}
	t.Logf("node %d's %d replicas moved to nodes 1 and 2 %v after its disk passed the threshold", full, before, time.Since(filled).Round(time.Millisecond))
	waitAcks(t, h, h.Len()+300, "after the moves off the full node")
	// Still full: nothing is placed back on it (a few balancer ticks and disk polls).
	time.Sleep(2 * time.Second)
	waitReplicaCount(t, c, topic, parts, func(per map[int32]int) bool { return per[full] == 0 }, "node %d still holding nothing", full)
	stopLoad(t, load, h)
	h.Check(t, c, topic)
}

// waitReplicaCount waits until ok holds for the replicas per node of topic's
// partitions (as node 1 sees them) with no reassignment in progress.
func waitReplicaCount(t *testing.T, c *clustertest.Cluster, topic string, parts int32, ok func(map[int32]int) bool, what string, args ...any) {
	t.Helper()
	deadline := time.Now().Add(waitTimeout)
	var per map[int32]int
	for {
		per = map[int32]int{}
		settled := true
		for p := range parts {
			st, err := c.PartitionFrom(context.Background(), 1, topic, p)
			if err != nil {
				settled = false
				break
			}
			for _, r := range st.Replicas {
				per[r]++
			}
		}
		if settled && ok(per) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("waiting for "+what+": replicas per node %v", append(args, per)...)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
