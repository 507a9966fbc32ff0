package interop_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/runnel-io/runnel/internal/testutil"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestCrash kills the server with SIGKILL while several producers write to it, restarts
// it on the same data directory, and checks that every acknowledged record is there at
// its offset with its value, and that each partition's offsets run from 0 without a gap.
func TestCrash(t *testing.T) {
	t.Run("Acks1", func(t *testing.T) { t.Parallel(); testCrash(t, kgo.LeaderAck(), false) })
	t.Run("AcksAllIdempotent", func(t *testing.T) { t.Parallel(); testCrash(t, kgo.AllISRAcks(), true) })
}

// ack is one acknowledged record.
type ack struct {
	partition int32
	offset    int64
	value     string
}

// ackRecorder collects acknowledgements from many producer goroutines.
type ackRecorder struct {
	mu   sync.Mutex // guards acks
	acks []ack
	n    atomic.Int64 // len(acks), readable without mu
}

func (a *ackRecorder) add(r *kgo.Record) {
	a.mu.Lock()
	a.acks = append(a.acks, ack{r.Partition, r.Offset, string(r.Value)})
	a.mu.Unlock()
	a.n.Add(1)
}

func (a *ackRecorder) all() []ack {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]ack(nil), a.acks...)
}

const (
	crashPartitions = 4
	crashProducers  = 4
	// crashAfter acknowledged records, the server is killed.
	crashAfter = 3000
)

func testCrash(t *testing.T, acks kgo.Acks, idempotent bool) {
	p, addrs := startFresh(t)
	dir := p.dataDir
	topic := topicName(t)
	// Small segments, so the crash also finds rolled segments and their indexes.
	createTopic(t, newAdmin(t, p.kafka), topic, crashPartitions, "segment.bytes", "65536")

	// Two rounds: the second crash hits a log that has been recovered once.
	rec := &ackRecorder{}
	var logs map[int32][]string
	for round := range 2 {
		want := rec.n.Load() + crashAfter
		stop := produceUntilStopped(t, p.kafka, topic, round, acks, idempotent, rec)
		testutil.Eventually(t, testTimeout, func() error {
			if n := rec.n.Load(); n < want {
				return fmt.Errorf("only %d of %d records acknowledged before crash %d", n, want, round+1)
			}
			return nil
		})
		p.kill()
		stop()
		acked := rec.all()
		t.Logf("crash %d: %d records acknowledged before SIGKILL", round+1, len(acked))

		p = startProcess(t, dir, addrs)
		logs = readAll(t, p.kafka, topic)
		checkAcked(t, logs, acked, idempotent)
	}

	// The log goes on where it stopped.
	cl := newClient(t, p.kafka, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	for part := range int32(crashPartitions) {
		r := &kgo.Record{Topic: topic, Partition: part, Value: []byte("after the crash")}
		testutil.NoError(t, cl.ProduceSync(ctxT(t), r).FirstErr(), "producing to partition %d after the restart", part)
		testutil.Equal(t, r.Offset, int64(len(logs[part])), "offset of the first record after the restart on partition %d", part)
	}
	err, _ := p.stop(t, 10*time.Second)
	testutil.NoError(t, err, "exit status after SIGTERM")
}

// produceUntilStopped starts crashProducers goroutines, each with its own client,
// producing values distinct in this round to topic and recording what is acknowledged. The returned
// func stops them and waits until every record has been answered or failed.
func produceUntilStopped(t *testing.T, addr, topic string, round int, acks kgo.Acks, idempotent bool, rec *ackRecorder) func() {
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for g := range crashProducers {
		opts := []kgo.Opt{kgo.SeedBrokers(addr), kgo.RequiredAcks(acks), kgo.MaxBufferedRecords(2000),
			kgo.ProducerLinger(time.Millisecond), kgo.RetryTimeout(2 * time.Second)}
		if !idempotent {
			opts = append(opts, kgo.DisableIdempotentWrite())
		}
		cl, err := kgo.NewClient(opts...)
		testutil.NoError(t, err, "producer client")
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer cl.Close() // fails what is still buffered: not acknowledged
			for i := 0; ctx.Err() == nil; i++ {
				r := &kgo.Record{Topic: topic, Key: fmt.Appendf(nil, "%d", i%17), Value: fmt.Appendf(nil, "r%d-g%d-%d", round, g, i)}
				cl.Produce(ctx, r, func(r *kgo.Record, err error) {
					if err == nil {
						rec.add(r)
					}
				})
			}
		}()
	}
	var once sync.Once
	stop := func() { once.Do(func() { cancel(); wg.Wait() }) }
	t.Cleanup(stop)
	return stop
}

// readAll consumes every partition of topic from its start to its end offset and
// returns the values by partition, indexed by offset; it fails unless the offsets are
// contiguous from 0.
func readAll(t *testing.T, addr, topic string) map[int32][]string {
	t.Helper()
	ends := endOffsets(t, newAdmin(t, addr), topic)
	want := map[int32]int{}
	for p, end := range ends {
		want[p] = int(end)
	}
	got := consumePartitions(t, addr, topic, want)
	checkContiguous(t, got, 0)
	out := map[int32][]string{}
	for p, rs := range got {
		for _, r := range rs {
			out[p] = append(out[p], string(r.Value))
		}
	}
	for p := range int32(crashPartitions) {
		if _, ok := out[p]; !ok {
			out[p] = nil
		}
	}
	return out
}

// checkAcked fails unless every acknowledged record is in logs at its offset. With
// idempotence, no value may be written twice either.
func checkAcked(t *testing.T, logs map[int32][]string, acked []ack, idempotent bool) {
	t.Helper()
	for _, a := range acked {
		log := logs[a.partition]
		if a.offset >= int64(len(log)) {
			t.Fatalf("acknowledged %q at %d[%d] is lost: the partition ends at %d after the restart", a.value, a.partition, a.offset, len(log))
		}
		if log[a.offset] != a.value {
			t.Fatalf("acknowledged %q at %d[%d], found %q there after the restart", a.value, a.partition, a.offset, log[a.offset])
		}
	}
	if !idempotent {
		return
	}
	seen := map[string]string{}
	for p, log := range logs {
		for off, v := range log {
			where := fmt.Sprintf("%d[%d]", p, off)
			if prev, dup := seen[v]; dup {
				t.Fatalf("idempotent producer's %q is written twice, at %s and %s", v, prev, where)
			}
			seen[v] = where
		}
	}
}
