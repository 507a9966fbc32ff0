package cluster_test

import (
	"context"
	"fmt"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// reportDuration is how long each throughput measurement produces.
const reportDuration = 10 * time.Second

// TestThroughputReport measures acks=all produce throughput of one node against three
// nodes at replication factor 3 (min.insync.replicas=2). It runs only with
// RUNNEL_REPORT=1: go test -run TestThroughputReport ./internal/cluster/.
func TestThroughputReport(t *testing.T) {
	if os.Getenv("RUNNEL_REPORT") != "1" {
		t.Skip("a measurement, not a test: set RUNNEL_REPORT=1")
	}
	one := measureThroughput(t, 1)
	three := measureThroughput(t, 3)
	t.Logf("throughput acks=all, 100-byte records, 6 partitions, 2 cores shared by producer and nodes:")
	t.Logf("  1 node  RF=1: %s", one)
	t.Logf("  3 nodes RF=3: %s", three)
	t.Logf("  ratio 3-node/1-node = %.2f", three.recsPerSec/one.recsPerSec)
}

type throughput struct {
	records    int64
	recsPerSec float64
	mbPerSec   float64
	errors     int64
}

func (r throughput) String() string {
	return fmt.Sprintf("%d records, %.0f records/s, %.2f MB/s, %d errors", r.records, r.recsPerSec, r.mbPerSec, r.errors)
}

func measureThroughput(t *testing.T, nodes int) throughput {
	c := startCluster(t, nodes)
	topic := fmt.Sprintf("%s-%d", topicName(t), nodes)
	createTopic(t, c, topic, 6, int16(nodes))
	cl := c.Client(t, kgo.RequiredAcks(kgo.AllISRAcks()), kgo.ProducerBatchCompression(kgo.NoCompression()),
		kgo.MaxBufferedRecords(20000), kgo.ProducerLinger(2*time.Millisecond))
	value := make([]byte, 100)
	var acked, failed atomic.Int64
	promise := func(_ *kgo.Record, err error) {
		if err != nil {
			failed.Add(1)
			return
		}
		acked.Add(1)
	}
	start := time.Now()
	for time.Since(start) < reportDuration {
		cl.Produce(context.Background(), &kgo.Record{Topic: topic, Value: value}, promise)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := cl.Flush(ctx); err != nil {
		t.Fatalf("flush: %v", err)
	}
	secs := time.Since(start).Seconds()
	n := acked.Load()
	return throughput{records: n, recsPerSec: float64(n) / secs, mbPerSec: float64(n) * 100 / secs / 1e6, errors: failed.Load()}
}
