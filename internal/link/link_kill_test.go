package link_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/runnel-io/runnel/internal/clustertest"
	"github.com/runnel-io/runnel/internal/recordbatch"
	"github.com/runnel-io/runnel/internal/testutil"
)

// endOf returns the end offset (ListOffsets latest) of topic-partition on c.
func endOf(t *testing.T, c *clustertest.Cluster, topic string, p int32) int64 {
	t.Helper()
	_, end := offsets(t, c.Admin(t), topic)
	return end[p]
}

// TestLinkKillMidCopy: a link copies a topic of a three-node source (replication
// factor 3) into a three-node destination (replication factor 3) with a throttle, so
// that it is behind, while a producer (acks=all, idempotent) writes all along. The
// destination leader of a mirror partition is killed (no shutdown) mid-copy, then,
// once another node copies, a source leader; both restart. After the producer stops
// and the copy caught up: every acknowledged record is at its offset, once, on every
// in-sync replica of both clusters (History.Check), and every batch on the
// destination is the source's (offset, CRC, bytes but the leader epoch field).
func TestLinkKillMidCopy(t *testing.T) {
	sets := append([]string{"num.partitions=3", "default.replication.factor=3", "offsets.topic.replication.factor=3",
		"min.insync.replicas=2"}, clustertest.FastFailureDetection...)
	start := func() *clustertest.Cluster {
		return clustertest.Start(t, clustertest.Options{Nodes: 3, InProcess: true, StartTimeout: 30 * time.Second, Sets: sets})
	}
	src, dst := start(), start()
	const topic = "stream"
	ctx := context.Background()
	if _, err := src.Admin(t).CreateTopic(ctx, 3, 3, nil, topic); err != nil {
		t.Fatal(err)
	}
	began := time.Now()
	h := clustertest.NewHistory()
	load := src.StartLoad(t, h, clustertest.LoadOptions{Topic: topic, Partitions: 3, Rate: 2000})
	defer load.Stop(time.Second)
	// A backlog before the link, then a throttle (per destination node) below what
	// the load writes to a partition: the copy stays behind until the load stops.
	testutil.Eventually(t, 10*time.Second, func() error {
		if n := h.Len(); n < 3000 {
			return fmt.Errorf("%d records acknowledged", n)
		}
		return nil
	})
	runCLI(t, "link", "create", "dr", "--source", src.Bootstrap(), "--topics", topic, "--throttle", "32768", "-b", dst.Bootstrap())

	// The destination leader of partition 0 dies mid-copy.
	var copied int64
	testutil.Eventually(t, 15*time.Second, func() error {
		copied = endOf(t, dst, topic, 0)
		if se := endOf(t, src, topic, 0); copied == 0 || copied >= se {
			return fmt.Errorf("destination end of %s-0 %d, source end %d: want a copy begun and behind", topic, copied, se)
		}
		return nil
	})
	dleader, _ := dst.WaitLeader(t, topic, 0, 10*time.Second)
	dst.Kill(int(dleader))
	t.Logf("killed destination node %d, leader of %s-0, at %d copied", dleader, topic, copied)
	testutil.Eventually(t, 20*time.Second, func() error {
		if e := endOf(t, dst, topic, 0); e <= copied+100 {
			return fmt.Errorf("destination end of %s-0 %d: no copy since the leader was killed at %d", topic, e, copied)
		}
		return nil
	})
	dst.Restart(int(dleader))

	// Then the source leader of partition 1, the copy behind it.
	sleader, _ := src.WaitLeader(t, topic, 1, 10*time.Second)
	var sourceEnd int64
	testutil.Eventually(t, 15*time.Second, func() error {
		sourceEnd = endOf(t, src, topic, 1)
		if de := endOf(t, dst, topic, 1); de >= sourceEnd {
			return fmt.Errorf("destination end of %s-1 %d, source end %d: want the copy behind", topic, de, sourceEnd)
		}
		return nil
	})
	src.Kill(int(sleader))
	t.Logf("killed source node %d, leader of %s-1 ending at %d", sleader, topic, sourceEnd)
	testutil.Eventually(t, 30*time.Second, func() error {
		if de := endOf(t, dst, topic, 1); de <= sourceEnd {
			return fmt.Errorf("destination end of %s-1 %d: nothing copied past %d, the end when its source leader was killed", topic, de, sourceEnd)
		}
		return nil
	})
	src.Restart(int(sleader))

	if err := load.Stop(30 * time.Second); err != nil {
		t.Fatalf("stopping the load: %v (%s)", err, h.Failures())
	}
	t.Logf("%d records acknowledged in %v", h.Len(), time.Since(began))
	for p := range int32(3) {
		src.WaitISR(t, topic, p, 3, 30*time.Second)
		dst.WaitISR(t, topic, p, 3, 30*time.Second)
	}
	testutil.Eventually(t, 30*time.Second, func() error {
		for p := range int32(3) {
			if se, de := endOf(t, src, topic, p), endOf(t, dst, topic, p); se != de {
				return fmt.Errorf("%s-%d: destination end %d, source end %d", topic, p, de, se)
			}
		}
		return nil
	})
	h.Check(t, src, topic)
	h.Check(t, dst, topic)
	scl, dcl := src.Client(t), dst.Client(t)
	for p := range int32(3) {
		sl, _ := src.WaitLeader(t, topic, p, 10*time.Second)
		dl, _ := dst.WaitLeader(t, topic, p, 10*time.Second)
		sb, db := batchesAt(t, scl, sl, topic, p), batchesAt(t, dcl, dl, topic, p)
		if len(sb) != len(db) {
			t.Errorf("%s-%d: %d batches on the source, %d on the destination; first difference:\n%s", topic, p, len(sb), len(db), firstDifference(sb, db))
			continue
		}
		sameBatches(t, fmt.Sprintf("%s-%d", topic, p), sb, db)
	}
	t.Logf("checked in %v", time.Since(began))
}

// firstDifference describes the batches around the first index where src and dst
// differ in offsets.
func firstDifference(src, dst []recordbatch.Batch) string {
	i := 0
	for i < len(src) && i < len(dst) && src[i].BaseOffset() == dst[i].BaseOffset() && src[i].LastOffset() == dst[i].LastOffset() {
		i++
	}
	var b strings.Builder
	show := func(side string, bs []recordbatch.Batch) {
		for j := max(0, i-2); j < min(len(bs), i+3); j++ {
			x := bs[j]
			fmt.Fprintf(&b, "  %s[%d]: offsets %d-%d, %d records, producer %d epoch %d seq %d, leader epoch %d, crc %08x, %d bytes\n", side, j,
				x.BaseOffset(), x.LastOffset(), x.RecordCount(), x.ProducerID(), x.ProducerEpoch(), x.BaseSequence(), x.PartitionLeaderEpoch(), x.CRC(), len(x))
		}
	}
	show("source", src)
	show("destination", dst)
	return b.String()
}
