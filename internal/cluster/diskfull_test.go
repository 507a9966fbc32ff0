package cluster_test

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/runnel-io/runnel/internal/cluster"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestDiskFull fills one node's disk (its data dir is a 48 MiB tmpfs) while a checked
// load runs on a replicated topic. The node must stop on its own, naming the disk
// error, so that the other replicas take over its partitions (as Kafka halts a broker
// whose log directory failed); the load must go on, and every acknowledged record must
// be on every ISR replica. It needs root to mount the tmpfs, and skips otherwise.
func TestDiskFull(t *testing.T) {
	skipIfShort(t)
	const full = 2 // the node whose disk fills
	c := cluster.Start(t, cluster.Options{Nodes: 3, Sets: cluster.FastFailureDetection, StartTimeout: startTimeout,
		Prepare: func(n *cluster.Node) error {
			if n.ID != full {
				return nil
			}
			return mountSmallDisk(t, n.DataDir, "48m")
		}})
	topic := topicName(t)
	const parts = 3
	createTopic(t, c, topic, parts, 3)
	filler := topic + "-filler"
	createTopic(t, c, filler, 1, 3)
	h := cluster.NewHistory()
	load := c.StartLoad(t, h, cluster.LoadOptions{Topic: topic, Partitions: parts, Rate: 300})
	waitAcks(t, h, 300, "before the disk fills")

	// Fill node 2's disk through a replicated topic: every node writes it, only node
	// 2's disk is small.
	start := time.Now()
	cl := c.Client(t, kgo.RecordDeliveryTimeout(10*time.Second))
	value := bytes.Repeat([]byte("x"), 256<<10)
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		for ctx.Err() == nil && c.Node(full).Running() {
			cl.Produce(ctx, &kgo.Record{Topic: filler, Value: value}, nil)
			time.Sleep(5 * time.Millisecond)
		}
	}()
	exited, exitErr := c.WaitExit(full, waitTimeout)
	cancel()
	<-stopped
	if !exited {
		t.Fatalf("node %d still runs %v after its disk started filling", full, waitTimeout)
	}
	t.Logf("node %d exited %v after its disk started filling: %v", full, time.Since(start).Round(time.Millisecond), exitErr)
	if exitErr == nil {
		t.Errorf("node %d exited with status 0 after a disk error; want a failure status", full)
	}
	if logs := c.Logs(full); !strings.Contains(logs, "disk error: stopping this node") || !strings.Contains(logs, "no space left on device") {
		t.Errorf("node %d's output does not say it stopped for the full disk", full)
	}

	waitAcks(t, h, h.Len()+600, "after the full node stopped")
	stopLoad(t, load, h)
	h.Check(t, c, topic)
}

// mountSmallDisk mounts a tmpfs of size on dir for the test, or skips the test where
// that is not allowed.
func mountSmallDisk(t *testing.T, dir, size string) error {
	if os.Geteuid() != 0 {
		t.Skip("needs root to mount a small filesystem")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size="+size, "tmpfs", dir).CombinedOutput(); err != nil {
		t.Skipf("cannot mount a tmpfs on %s: %v: %s", dir, err, out)
	}
	t.Cleanup(func() { _ = exec.Command("umount", "-l", dir).Run() })
	return nil
}
