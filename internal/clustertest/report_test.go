package clustertest_test

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

// TestThroughputReport measures acks=all produce throughput of one node (RF 1) against
// three nodes (RF 3, min.insync.replicas=2), with franz-go's idempotent producer and
// without idempotence. It runs only with RUNNEL_REPORT=1:
//
//	RUNNEL_REPORT=1 go test -run TestThroughputReport -v ./internal/clustertest/
func TestThroughputReport(t *testing.T) {
	if os.Getenv("RUNNEL_REPORT") != "1" {
		t.Skip("a measurement, not a test: set RUNNEL_REPORT=1")
	}
	t.Logf("acks=all, one producer, 100-byte records, 6 partitions, %v each; producer and nodes share this machine", reportDuration)
	for _, idem := range []bool{true, false} {
		one := measureThroughput(t, 1, idem)
		three := measureThroughput(t, 3, idem)
		t.Logf("idempotent=%v  1 node RF=1: %s", idem, one)
		t.Logf("idempotent=%v 3 nodes RF=3: %s", idem, three)
		if one.recsPerSec > 0 {
			t.Logf("idempotent=%v ratio 3-node/1-node = %.2f", idem, three.recsPerSec/one.recsPerSec)
		}
	}
}

type throughput struct {
	records    int64
	recsPerSec float64
	mbPerSec   float64
	errors     int64
	stuck      string // what was still unacknowledged a minute after producing stopped
}

func (r throughput) String() string {
	s := fmt.Sprintf("%d records, %.0f records/s, %.2f MB/s, %d errors", r.records, r.recsPerSec, r.mbPerSec, r.errors)
	if r.stuck != "" {
		s += "; STUCK: " + r.stuck
	}
	return s
}

// measureThroughput produces for reportDuration into a new cluster of nodes and
// reports what was acknowledged. Records never acknowledged fail the test.
func measureThroughput(t *testing.T, nodes int, idempotent bool) throughput {
	c := startCluster(t, nodes)
	topic := fmt.Sprintf("%s-%d-%v", topicName(t), nodes, idempotent)
	createTopic(t, c, topic, 6, int16(nodes))
	opts := []kgo.Opt{kgo.RequiredAcks(kgo.AllISRAcks()), kgo.ProducerBatchCompression(kgo.NoCompression()),
		kgo.MaxBufferedRecords(20000), kgo.ProducerLinger(2 * time.Millisecond)}
	if !idempotent {
		opts = append(opts, kgo.DisableIdempotentWrite())
	}
	cl := c.Client(t, opts...)
	var acked, failed atomic.Int64
	promise := func(_ *kgo.Record, err error) {
		if err != nil {
			failed.Add(1)
			return
		}
		acked.Add(1)
	}
	value := make([]byte, 100)
	start := time.Now()
	for time.Since(start) < reportDuration {
		cl.Produce(context.Background(), &kgo.Record{Topic: topic, Value: value}, promise)
	}
	var r throughput
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := cl.Flush(ctx); err != nil {
		r.stuck = fmt.Sprintf("%d records (%v)", cl.BufferedProduceRecords(), err)
		t.Errorf("%d nodes, idempotent %v: %s still unacknowledged a minute after producing stopped", nodes, idempotent, r.stuck)
	}
	secs := time.Since(start).Seconds()
	r.records, r.errors = acked.Load(), failed.Load()
	r.recsPerSec, r.mbPerSec = float64(r.records)/secs, float64(r.records)*100/secs/1e6
	return r
}
