package clustertest_test

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/runnel-io/runnel/internal/clustertest"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestIdempotentBurst writes as fast as one idempotent acks=all producer can into six
// partitions of one node for 5 s; every record must be acknowledged within 30 s more,
// each exactly once. It runs only with RUNNEL_STRESS=1 (it is a load, not a fault).
func TestIdempotentBurst(t *testing.T) {
	if os.Getenv("RUNNEL_STRESS") != "1" {
		t.Skip("a stress run: set RUNNEL_STRESS=1")
	}
	c := startCluster(t, 1)
	topic := topicName(t)
	const parts = 6
	createTopic(t, c, topic, parts, 1)
	h := clustertest.NewHistory()
	cl := c.Client(t, append(clustertest.LoadDefaults(), kgo.MaxBufferedRecords(20000))...)
	start := time.Now()
	// A blocked Produce (buffer full, nothing acknowledged) gives up at the deadline.
	ctx, cancel := context.WithDeadline(context.Background(), start.Add(35*time.Second))
	defer cancel()
	var p int32
	for time.Since(start) < 5*time.Second && ctx.Err() == nil {
		cl.Produce(ctx, &kgo.Record{Topic: topic, Partition: p, Value: h.NextValue(p)}, h.Record)
		p = (p + 1) % parts
	}
	if err := cl.Flush(ctx); err != nil {
		t.Errorf("%d records unacknowledged %v after the burst began: %v", cl.BufferedProduceRecords(), time.Since(start).Round(time.Second), err)
	}
	t.Logf("%d acknowledged; failures: %s", h.Len(), h.Failures())
	h.Check(t, c, topic)
}
