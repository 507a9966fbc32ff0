package clustertest_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/runnel-io/runnel/internal/clustertest"
	"github.com/twmb/franz-go/pkg/kgo"
)

// recorder is a testing.TB that keeps the errors reported to it instead of failing,
// so that a test can check that Check finds what it must.
type recorder struct {
	*testing.T
	mu   sync.Mutex // guards errs
	errs []string
}

func (r *recorder) Errorf(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.errs = append(r.errs, fmt.Sprintf(format, args...))
}

func (r *recorder) found(sub string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, e := range r.errs {
		if strings.Contains(e, sub) {
			return true
		}
	}
	return false
}

// TestHarness runs the harness against one node, which needs no replication: a load
// survives kill -9, SIGSTOP/SIGCONT and SIGTERM with restarts and passes Check, and
// Check reports a changed value, a missing offset and a value stored twice.
func TestHarness(t *testing.T) {
	c := startCluster(t, 1)
	topic := topicName(t)
	createTopic(t, c, topic, 2, 1)
	h := clustertest.NewHistory()
	load := c.StartLoad(t, h, clustertest.LoadOptions{Topic: topic, Partitions: 2, Rate: 300})
	waitAcks(t, h, 100, "before the kill")
	c.Kill(1)
	c.Restart(1)
	waitAcks(t, h, h.Len()+100, "after the restart")
	c.Pause(1)
	if c.Node(1).Alive() || !c.Node(1).Running() {
		t.Errorf("paused node: Alive %v Running %v, want false true", c.Node(1).Alive(), c.Node(1).Running())
	}
	c.Resume(1)
	waitAcks(t, h, h.Len()+100, "after the resume")
	stopLoad(t, load, h)
	if err := c.Stop(1); err != nil {
		t.Errorf("exit after SIGTERM: %v", err)
	}
	c.Restart(1)
	if res := h.Check(t, c, topic); res.Problems != 0 {
		t.Fatalf("check of a clean history: %d problems", res.Problems)
	}
	testCheckFinds(t, c, h, topic)
}

// testCheckFinds feeds h three faults and checks that Check reports each.
func testCheckFinds(t *testing.T, c *clustertest.Cluster, h *clustertest.History, topic string) {
	acks := h.Acks()
	first := acks[0]
	// A value the log holds at another offset than acknowledged.
	h.Record(&kgo.Record{Partition: first.Partition, Offset: first.Offset + 1, Value: []byte(first.Value)}, nil)
	// An offset past the end of the log.
	h.Record(&kgo.Record{Partition: first.Partition, Offset: 1 << 40, Value: []byte("never-written")}, nil)
	// The same value written twice (a producer without idempotence, sending it again).
	cl := c.Client(t, kgo.ProducerBatchCompression(kgo.NoCompression()), kgo.DisableIdempotentWrite(),
		kgo.RequiredAcks(kgo.LeaderAck()), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	last := acks[len(acks)-1]
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Partition: last.Partition, Value: []byte(last.Value)}).FirstErr(); err != nil {
		t.Fatalf("producing a duplicate: %v", err)
	}
	rec := &recorder{T: t}
	res := h.Check(rec, c, topic)
	for _, want := range []string{
		fmt.Sprintf("offset %d acknowledged twice", first.Offset+1),
		fmt.Sprintf("offset %d holds", first.Offset+1),
		"never-written\" (at",
		fmt.Sprintf("value %q stored 2 times", last.Value),
	} {
		if !rec.found(want) {
			t.Errorf("Check did not report %q; it reported %d problems:\n%s", want, res.Problems, strings.Join(rec.errs, "\n"))
		}
	}
}
