package clustertest_test

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestReassignReport measures a partition move of 256 MiB onto the spare node of a
// three-node cluster, unthrottled and under a 20 MiB/s throttle, with an acks=all
// producer of 1 KiB records at 2,000 records/s on another partition of the same leader
// meanwhile: the move rate in MB/s and the producer's p50/p99 latency during the move
// against before it. It runs only with RUNNEL_REPORT=1:
//
//	RUNNEL_REPORT=1 go test -run TestReassignReport -v ./internal/clustertest/
func TestReassignReport(t *testing.T) {
	if os.Getenv("RUNNEL_REPORT") != "1" {
		t.Skip("a measurement, not a test: set RUNNEL_REPORT=1")
	}
	t.Run("unthrottled", func(t *testing.T) { reassignReport(t, 0) })
	t.Run("throttled-20MiB", func(t *testing.T) { reassignReport(t, 20<<20) })
}

func reassignReport(t *testing.T, throttle int64) {
	c := startCluster(t, 3)
	topic := topicName(t)
	createTopic(t, c, topic, 2, 2)
	st, _ := c.PartitionFrom(context.Background(), int(c.LiveIDs()[0]), topic, 0)
	dest := spareNode(st.Replicas, 3)
	const size = 256 << 20
	cl := c.Client(t, kgo.RequiredAcks(kgo.AllISRAcks()), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.ProducerBatchMaxBytes(1<<20), kgo.ProducerBatchCompression(kgo.NoCompression()))
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	value := make([]byte, 64<<10)
	rand.Read(value)
	for range size / len(value) {
		cl.Produce(ctx, &kgo.Record{Topic: topic, Partition: 0, Value: value}, nil)
	}
	if err := cl.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	adm := c.Admin(t)
	if throttle > 0 {
		r := fmt.Sprint(throttle)
		if _, err := adm.AlterBrokerConfigs(ctx, []kadm.AlterConfig{
			{Name: "leader.replication.throttled.rate", Value: &r}, {Name: "follower.replication.throttled.rate", Value: &r}}); err != nil {
			t.Fatal(err)
		}
		var ls []string
		for _, id := range st.Replicas {
			ls = append(ls, fmt.Sprintf("0:%d", id))
		}
		lv, fv := strings.Join(ls, ","), fmt.Sprintf("0:%d", dest)
		if _, err := adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{
			{Name: "leader.replication.throttled.replicas", Value: &lv}, {Name: "follower.replication.throttled.replicas", Value: &fv}}, topic); err != nil {
			t.Fatal(err)
		}
	}
	// The measured producer: partition 1, 1 KiB records at 2,000/s.
	var mu sync.Mutex
	hist := map[string]*hdrhistogram.Histogram{"before": hdrhistogram.New(1, 60_000_000, 3), "during": hdrhistogram.New(1, 60_000_000, 3)}
	phase := "before"
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		pcl := c.Client(t, kgo.RequiredAcks(kgo.AllISRAcks()), kgo.RecordPartitioner(kgo.ManualPartitioner()))
		v := make([]byte, 1024)
		tick := time.NewTicker(500 * time.Microsecond)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				pcl.Flush(context.Background())
				return
			case <-tick.C:
			}
			sent := time.Now()
			pcl.Produce(ctx, &kgo.Record{Topic: topic, Partition: 1, Value: v}, func(_ *kgo.Record, err error) {
				if err != nil {
					return
				}
				mu.Lock()
				hist[phase].RecordValue(time.Since(sent).Microseconds())
				mu.Unlock()
			})
		}
	})
	time.Sleep(5 * time.Second)
	mu.Lock()
	phase = "during"
	mu.Unlock()
	start := time.Now()
	alter(t, ctx, adm, topic, 0, []int32{st.Leader, dest})
	deadline := time.Now().Add(4 * time.Minute)
	for len(listReassignments(t, c, adm, topic)) > 0 {
		if time.Now().After(deadline) {
			t.Fatal(errors.New("move not done in 4 minutes"))
		}
		time.Sleep(20 * time.Millisecond)
	}
	took := time.Since(start)
	close(stop)
	wg.Wait()
	mu.Lock()
	defer mu.Unlock()
	b, d := hist["before"], hist["during"]
	t.Logf("throttle %d B/s: moved %d MiB in %v = %.0f MB/s; producer (1 KiB, 2,000/s, acks=all, other partition of the leader) p50/p99 before %.2f/%.2f ms, during %.2f/%.2f ms (%d records)",
		throttle, size>>20, took.Round(time.Millisecond), float64(size)/took.Seconds()/1e6,
		float64(b.ValueAtQuantile(50))/1000, float64(b.ValueAtQuantile(99))/1000,
		float64(d.ValueAtQuantile(50))/1000, float64(d.ValueAtQuantile(99))/1000, d.TotalCount())
}
