package mirror_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"sync/atomic"
	"testing"
	"time"

	"github.com/runnel-io/runnel/mirror"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestMirrorReport measures, with RUNNEL_REPORT=1, what docs/benchmarks.md's Mirror
// section reports: the mirror's throughput at 100 B and 1 KiB against `runnel
// bench produce` into the same target, and the end-to-end latency a record sees
// from its produce on the source to its consume on the target at 10,000 records/s.
// Both clusters are single in-process nodes on this machine.
func TestMirrorReport(t *testing.T) {
	if os.Getenv("RUNNEL_REPORT") != "1" {
		t.Skip("a measurement: set RUNNEL_REPORT=1")
	}
	src, tgt := startRunnel(t), startRunnel(t)
	for _, size := range []int{100, 1024} {
		n := 300000
		if size > 100 {
			n = 100000
		}
		base := benchProduce(t, tgt, fmt.Sprintf("base-%d", size), n, size)
		srcRep := benchProduce(t, src, fmt.Sprintf("load-%d", size), n, size)
		_ = srcRep
		for _, sequential := range []bool{true, false} {
			// The same preloaded topic, copied once per commit path (to its own target
			// topic): two round trips per transaction, then one (predicted offsets).
			mirror.NoPredict.Store(sequential)
			name, alias := fmt.Sprintf("bench%d", size), "east"
			if !sequential {
				name, alias = name+"p", "eastp"
			}
			m, stop := runMirror(t, mirror.Config{Name: name, Source: []string{src}, Target: []string{tgt}, SourceAlias: alias,
				Topics: []string{fmt.Sprintf("load-%d", size)}})
			rate, mb := mirrorRate(t, m, int64(n), int64(size))
			stop()
			t.Logf("REPORT size=%d sequential=%v bench-produce=%.0f rec/s %.1f MB/s mirror=%.0f rec/s %.1f MB/s (%.0f%%)",
				size, sequential, base.RecordsPerSec, base.MBPerSec, rate, mb, 100*rate/base.RecordsPerSec)
		}
		mirror.NoPredict.Store(false)
	}
	p50, p99 := mirrorLatency(t, src, tgt, 10000, 10*time.Second)
	t.Logf("REPORT e2e latency source produce -> target consume at 10000 rec/s: p50=%v p99=%v", p50, p99)
}

// TestMirrorAddedLatencyReport measures, with RUNNEL_REPORT=1, the latency the mirror
// adds at 10,000 records/s of 100 B over 3 partitions: for each record, from its
// acknowledgement on the source (acks=all: readable there) to its arrival at a
// read_committed consumer of the target (committed there). Both clusters are single
// in-process nodes on this machine.
func TestMirrorAddedLatencyReport(t *testing.T) {
	if os.Getenv("RUNNEL_REPORT") != "1" {
		t.Skip("a measurement: set RUNNEL_REPORT=1")
	}
	src, tgt := startRunnel(t), startRunnel(t)
	// Alternating, so that both see the same machine: two transactions' round
	// trips (records, then the state; noPredict) and one (commitPredicted).
	for round := range 6 {
		before := round%2 == 0
		mirror.NoPredict.Store(before)
		topic := fmt.Sprintf("lat%d", round)
		l := mirrorAddedLatency(t, src, tgt, topic, 10000, 10*time.Second)
		mode := "one round trip (predicted offsets)"
		if before {
			mode = "two round trips (records, then state)"
		}
		t.Logf("REPORT added latency (source ack -> target read_committed), 100 B, %s: %s", mode, l)
	}
	mirror.NoPredict.Store(false)
}

type latencies struct {
	n                   int
	rate                float64 // records/s actually produced
	txns, predicted     int64   // the mirror's transactions with records; of them, written predicted
	p50, p99, p999, max time.Duration
	// direct is a read_committed consumer of the source itself: what reading from
	// the source adds without any mirror (fetch wake-up and delivery).
	directP50, directP99 time.Duration
}

func (l latencies) String() string {
	return fmt.Sprintf("n=%d at %.0f rec/s p50=%v p99=%v p99.9=%v max=%v (a consumer of the source itself: p50=%v p99=%v); %d transactions with records, %d predicted",
		l.n, l.rate, l.p50, l.p99, l.p999, l.max, l.directP50, l.directP99, l.txns, l.predicted)
}

func percentile(ds []time.Duration, q float64) time.Duration {
	return ds[min(len(ds)-1, int(float64(len(ds))*q))]
}

// mirrorAddedLatency produces rate records/s for d into a new 3-partition topic
// of the source while a mirror copies it, and measures each record from its
// acknowledgement on the source to its arrival on the target.
func mirrorAddedLatency(t *testing.T, src, tgt, topic string, rate int, d time.Duration) latencies {
	createTopic(t, src, topic, 3, nil)
	m, _ := runMirror(t, mirror.Config{Name: topic, Source: []string{src}, Target: []string{tgt}, SourceAlias: "east", Topics: []string{topic}})
	waitCaughtUp(t, m)
	consumer := func(addr, topic string) *kgo.Client {
		return newClient(t, addr, kgo.ConsumeTopics(topic), kgo.FetchIsolationLevel(kgo.ReadCommitted()),
			kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(100*time.Millisecond),
			kgo.MetadataMinAge(100*time.Millisecond), kgo.MetadataMaxAge(time.Second))
	}
	tcons, scons := consumer(tgt, "east."+topic), consumer(src, topic)
	prod := newClient(t, src, kgo.DefaultProduceTopic(topic), kgo.ProducerLinger(0))
	total := rate * int(d/time.Second)
	acked := make([]atomic.Int64, total) // unix nanoseconds of the acknowledgement
	tookCh := make(chan time.Duration, 1)
	go func() {
		// Paced by the clock, not by ticks (a loaded machine drops ticks): every
		// millisecond, what the rate owes since the start.
		tick := time.NewTicker(time.Millisecond)
		defer tick.Stop()
		start := time.Now()
		for i := 0; i < total; {
			<-tick.C
			for owed := min(total, int(time.Since(start).Seconds()*float64(rate))); i < owed; i++ {
				v := make([]byte, 100)
				binary.BigEndian.PutUint64(v, uint64(i))
				prod.Produce(context.Background(), &kgo.Record{Value: v}, func(r *kgo.Record, err error) {
					if err == nil {
						acked[binary.BigEndian.Uint64(r.Value)].Store(time.Now().UnixNano())
					}
				})
			}
		}
		tookCh <- time.Since(start)
	}()
	read := func(cl *kgo.Client, out chan<- []time.Duration) {
		ctx, cancel := context.WithTimeout(context.Background(), d+time.Minute)
		defer cancel()
		arrived := make([]int64, total)
		for got := 0; got < total && ctx.Err() == nil; {
			fs := cl.PollFetches(ctx)
			now := time.Now().UnixNano()
			fs.EachRecord(func(r *kgo.Record) { arrived[binary.BigEndian.Uint64(r.Value)] = now; got++ })
		}
		var lats []time.Duration
		for i, a := range arrived {
			if ack := acked[i].Load(); a > 0 && ack > 0 {
				// The consumer can see a record before the producer's callback runs.
				lats = append(lats, time.Duration(max(0, a-ack)))
			}
		}
		sort.Slice(lats, func(i, j int) bool { return lats[i] < lats[j] })
		out <- lats
	}
	tch, sch := make(chan []time.Duration, 1), make(chan []time.Duration, 1)
	go read(tcons, tch)
	go read(scons, sch)
	lats, direct := <-tch, <-sch
	if len(lats) < total || len(direct) < total {
		t.Fatalf("%d records arrived on the target, %d on the source consumer, of %d", len(lats), len(direct), total)
	}
	var txns, predicted int64
	for _, st := range m.Status(time.Now()) {
		if p, _, n, ok := m.WorkerCounts(mirror.TopicPartition{st.Topic, st.Partition}); ok {
			predicted += p
			txns += n
		}
	}
	took := <-tookCh
	return latencies{n: len(lats), rate: float64(total) / took.Seconds(), txns: txns, predicted: predicted, p50: percentile(lats, 0.5), p99: percentile(lats, 0.99), p999: percentile(lats, 0.999),
		max: lats[len(lats)-1], directP50: percentile(direct, 0.5), directP99: percentile(direct, 0.99)}
}

type benchRep struct {
	RecordsPerSec float64 `json:"records_per_sec"`
	MBPerSec      float64 `json:"mb_per_sec"`
}

// benchProduce runs `runnel bench produce` (a binary built from this checkout: the
// cli package imports this one, so it cannot be called in-process here).
func benchProduce(t *testing.T, addr, topic string, n, size int) benchRep {
	bin := filepath.Join(os.TempDir(), "runnel-mirror-report")
	if _, err := os.Stat(bin); err != nil {
		if out, err := exec.Command("go", "build", "-o", bin, "../cmd/runnel").CombinedOutput(); err != nil {
			t.Fatalf("build: %v\n%s", err, out)
		}
	}
	var out, errb bytes.Buffer
	cmd := exec.Command(bin, "bench", "produce", "-b", addr, "--topic", topic, "-n", fmt.Sprint(n),
		"--record-size", fmt.Sprint(size), "-p", "3", "--json")
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("bench produce: %v %s", err, errb.String())
	}
	var r benchRep
	if err := json.Unmarshal(out.Bytes(), &r); err != nil {
		t.Fatalf("bench output %q: %v", out.String(), err)
	}
	return r
}

// mirrorRate times the copy of n records from the first committed transaction on.
func mirrorRate(t *testing.T, m *mirror.Mirror, n, size int64) (float64, float64) {
	var t0 time.Time
	var r0 int64
	deadline := time.Now().Add(5 * time.Minute)
	for time.Now().Before(deadline) {
		var recs int64
		for _, s := range m.Status(time.Now()) {
			recs += s.Records
		}
		if recs > 0 && t0.IsZero() {
			t0, r0 = time.Now(), recs
		}
		if recs >= n {
			secs := time.Since(t0).Seconds()
			rate := float64(recs-r0) / secs
			return rate, rate * float64(size) / 1e6
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("mirror did not copy %d records in time", n)
	return 0, 0
}

// mirrorLatency produces at rate records/s for d on the source while a mirror runs,
// and measures, on a target consumer, now minus each record's (kept) timestamp.
func mirrorLatency(t *testing.T, src, tgt string, rate int, d time.Duration) (time.Duration, time.Duration) {
	createTopic(t, src, "lat", 3, nil)
	m, _ := runMirror(t, mirror.Config{Name: "lat", Source: []string{src}, Target: []string{tgt}, SourceAlias: "east", Topics: []string{"lat"}})
	waitCaughtUp(t, m)
	cons := newClient(t, tgt, kgo.ConsumeTopics("east.lat"), kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(100*time.Millisecond))
	prod := newClient(t, src, kgo.DefaultProduceTopic("lat"), kgo.ProducerLinger(0))
	total := rate * int(d/time.Second)
	go func() {
		tick := time.NewTicker(time.Millisecond)
		defer tick.Stop()
		per := rate / 1000
		for i := 0; i < total; i += per {
			<-tick.C
			for j := 0; j < per; j++ {
				prod.Produce(context.Background(), &kgo.Record{Value: make([]byte, 100), Timestamp: time.Now()}, nil)
			}
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), d+time.Minute)
	defer cancel()
	var lats []time.Duration
	for len(lats) < total && ctx.Err() == nil {
		fs := cons.PollFetches(ctx)
		now := time.Now()
		fs.EachRecord(func(r *kgo.Record) { lats = append(lats, now.Sub(r.Timestamp)) })
	}
	sort.Slice(lats, func(i, j int) bool { return lats[i] < lats[j] })
	if len(lats) == 0 {
		t.Fatal("no record arrived")
	}
	return lats[len(lats)/2], lats[len(lats)*99/100]
}
