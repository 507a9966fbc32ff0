package cli

import (
	"encoding/json"
	"errors"
	"math"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/runnel-io/runnel/internal/benchfmt"
)

func TestBenchUsageErrors(t *testing.T) {
	for _, args := range [][]string{
		{"bench"},
		{"bench", "nope"},
		{"bench", "produce", "--acks", "2"},
		{"bench", "produce", "--record-size", "19"},
		{"bench", "produce", "--producers", "0"},
		{"bench", "produce", "--compression", "brotli"},
		{"bench", "produce", "--on-full", "sometimes"},
		{"bench", "produce", "--enqueue-timeout", "soon"},
		{"bench", "produce", "--rate", "-1"},
		{"bench", "produce", "--records", "-1"},
		{"bench", "produce", "--batch-max-bytes", "50"},
		{"bench", "produce", "--buffer-records", "0"},
		{"bench", "produce", "-b", "nohostport"},
		{"bench", "consume"},
		{"bench", "consume", "--topic", "t", "--timeout", "0s"},
		{"bench", "e2e", "--duration", "0s"},
		{"bench", "e2e", "--partitions", "0"},
	} {
		r := run(t, "", args...)
		if r.code != exitUsage {
			t.Errorf("runnel %s: exit %d, want %d; stderr %q", strings.Join(args, " "), r.code, exitUsage, r.stderr)
		}
	}
}

func TestBenchFlagDefaults(t *testing.T) {
	cmd := newBenchE2ECommand()
	if err := cmd.ParseFlags([]string{"--producers", "4", "--rate", "1000"}); err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]string{"record-size": "100", "acks": "all", "duration": "20s",
		"linger": "0s", "buffer-records": "100000", "partitions": "3", "on-full": "block"} {
		if got := cmd.Flags().Lookup(name).Value.String(); got != want {
			t.Errorf("--%s = %q, want %q", name, got, want)
		}
	}
	f := &benchFlags{producers: 4, overload: produceFlags{bufferRecords: 100000, onFull: "block", rate: 1000}}
	if _, err := f.overloadOptions(); err != nil {
		t.Fatal(err)
	}
	if got := f.producerRate(); got != 250 {
		t.Fatalf("each of 4 producers is limited to %v/s, want 250/s", got)
	}
}

// tracker returns a seqTracker that saw the given seqs of each producer.
func tracker(seqs ...[]int64) *seqTracker {
	t := &seqTracker{}
	v := make([]byte, benchfmt.HeaderSize)
	for p, ss := range seqs {
		for _, s := range ss {
			benchfmt.PutHeader(v, uint32(p), uint64(s), 0)
			t.add(v)
		}
	}
	return t
}

func seqRange(from, to int64) []int64 {
	var s []int64
	for i := from; i < to; i++ {
		s = append(s, i)
	}
	return s
}

func TestSeqTrackerCheckTotal(t *testing.T) {
	full := tracker(seqRange(0, 500), seqRange(0, 500))
	if err := full.checkTotal(1000); err != nil {
		t.Fatalf("all 1000 seen: %v", err)
	}
	if err := full.checkTotal(0); err != nil {
		t.Fatalf("no expectation, no holes: %v", err)
	}
	if err := full.checkTotal(1001); !errors.Is(err, errLostRecords) || !strings.Contains(err.Error(), "1 of 1001") {
		t.Fatalf("one short: %v", err)
	}
	hole := tracker(seqRange(0, 500), append(seqRange(0, 70), seqRange(71, 500)...))
	err := hole.checkTotal(0)
	if !errors.Is(err, errLostRecords) || !strings.Contains(err.Error(), "producer 1: first missing seq 70") {
		t.Fatalf("hole at producer 1 seq 70: %v", err)
	}
	dup := tracker(append(seqRange(0, 10), 3, 3))
	if err := dup.checkTotal(10); err != nil || dup.duplicates != 2 {
		t.Fatalf("duplicates: err %v, count %d", err, dup.duplicates)
	}
	foreign := tracker(seqRange(0, 3))
	foreign.add([]byte("short"))
	if err := foreign.checkTotal(3); !errors.Is(err, errForeignRecords) {
		t.Fatalf("foreign record: %v", err)
	}
}

func TestSeqTrackerCheckAcked(t *testing.T) {
	tr := tracker(seqRange(0, 100), append(seqRange(0, 40), seqRange(41, 60)...))
	if err := tr.checkAcked([]int64{100, 59}, []int64{100, 60}); err != nil {
		t.Fatalf("a dropped (unacknowledged) record is no loss: %v", err)
	}
	if err := tr.checkAcked([]int64{100, 60}, []int64{100, 60}); !errors.Is(err, errLostRecords) {
		t.Fatalf("an acknowledged record missing: %v", err)
	}
	if err := tr.checkAcked([]int64{100, 59}, []int64{100, 50}); !errors.Is(err, errForeignRecords) {
		t.Fatalf("a seq never sent: %v", err)
	}
	if err := tr.checkAcked([]int64{100}, []int64{100}); !errors.Is(err, errForeignRecords) {
		t.Fatalf("records of a producer the run lacks: %v", err)
	}
}

func TestCheckPartitions(t *testing.T) {
	ok := map[int32]*partitionCount{0: {start: 5, end: 10, count: 5}, 1: {start: 0, end: 0}}
	if err := checkPartitions(ok); err != nil {
		t.Fatal(err)
	}
	short := map[int32]*partitionCount{0: {start: 0, end: 10, count: 9}}
	if err := checkPartitions(short); !errors.Is(err, errLostRecords) || !strings.Contains(err.Error(), "1 missing") {
		t.Fatalf("a partition one record short: %v", err)
	}
}

func TestLatencySummary(t *testing.T) {
	h := benchfmt.NewLatencyHist()
	if h.Summary() != nil {
		t.Fatal("an empty histogram has no summary")
	}
	for i := 1; i <= 10000; i++ {
		h.Record(time.Duration(i) * 100 * time.Microsecond) // 0.1 ms .. 1000 ms
	}
	h.Record(-time.Second) // clamped to 1 µs, not an error
	s := h.Summary()
	near := func(name string, got, want float64) {
		if math.Abs(got-want) > want*0.002 {
			t.Errorf("%s = %v ms, want %v ms ±0.2%%", name, got, want)
		}
	}
	near("p50", s.P50, 500)
	near("p90", s.P90, 900)
	near("p99", s.P99, 990)
	near("p99.9", s.P999, 999)
	near("max", s.Max, 1000)
	if s.Count != 10001 {
		t.Errorf("count %d, want 10001", s.Count)
	}
	other := benchfmt.NewLatencyHist()
	other.Record(2 * time.Hour) // clamped to the histogram's hour
	h.Merge(other)
	if got := h.Summary().Max; got < 3590000 || got > 3610000 {
		t.Errorf("merged max %v ms, want about an hour", got)
	}
}

func TestBenchHeaderRoundTrip(t *testing.T) {
	v := make([]byte, 100)
	benchfmt.PutHeader(v, 7, 1<<33, -42)
	p, s, ts, ok := benchfmt.ParseHeader(v)
	if !ok || p != 7 || s != 1<<33 || ts != -42 {
		t.Fatalf("got %d %d %d %v", p, s, ts, ok)
	}
	if _, _, _, ok := benchfmt.ParseHeader(v[:19]); ok {
		t.Fatal("a 19-byte value has no header")
	}
	benchfmt.PutHeader(v, benchfmt.MaxProducers, 0, 0)
	if _, _, _, ok := benchfmt.ParseHeader(v); ok {
		t.Fatal("producer out of range accepted")
	}
}

// benchJSON runs a bench command that must succeed and decodes its --json report.
func benchJSON(t *testing.T, args ...string) benchfmt.Report {
	t.Helper()
	r := mustRun(t, "", append(args, "--json")...)
	var rep benchfmt.Report
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
		t.Fatalf("runnel %s: %v in %q", strings.Join(args, " "), err, r.stdout)
	}
	return rep
}

func TestBenchProduceConsumeKfake(t *testing.T) {
	_, bs := newCluster(t)
	p := benchJSON(t, "bench", "produce", "-b", bs, "--topic", "b1", "--records", "5000",
		"--producers", "2", "--partitions", "3", "--record-size", "64")
	if p.Records != 5000 || p.Bytes != 5000*64 || p.Partitions != 3 || p.Produce == nil || p.Produce.Count != 5000 {
		t.Fatalf("produce report %+v", p)
	}
	c := benchJSON(t, "bench", "consume", "-b", bs, "--topic", "b1", "--records", "5000")
	if c.Records != 5000 || c.Bytes != 5000*64 || c.Duplicates != 0 {
		t.Fatalf("consume report %+v", c)
	}
	r := run(t, "", "bench", "consume", "-b", bs, "--topic", "b1", "--records", "5001")
	if r.code != exitFailure || !strings.Contains(r.stderr, "records lost: 1 of 5001") || r.stdout != "" {
		t.Fatalf("a missing record: exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
	r = run(t, "", "bench", "consume", "-b", bs, "--topic", "nope")
	if r.code != exitFailure || !strings.Contains(r.stderr, `topic "nope" does not exist`) {
		t.Fatalf("missing topic: exit %d, stderr %q", r.code, r.stderr)
	}
}

func TestBenchConsumeForeignRecords(t *testing.T) {
	_, bs := newCluster(t)
	mustRun(t, "", "topic", "create", "-b", bs, "f1")
	mustRun(t, "a\nb\n", "produce", "-b", bs, "f1")
	r := run(t, "", "bench", "consume", "-b", bs, "--topic", "f1")
	if r.code != exitFailure || !strings.Contains(r.stderr, "not written by runnel bench") {
		t.Fatalf("exit %d, stderr %q", r.code, r.stderr)
	}
}

func TestBenchE2EKfake(t *testing.T) {
	_, bs := newCluster(t)
	rep := benchJSON(t, "bench", "e2e", "-b", bs, "--rate", "2000", "--duration", "1s", "--producers", "2")
	if rep.Records < 1000 || rep.Records > 2600 || rep.Consumed != rep.Records {
		t.Fatalf("e2e at 2000/s for 1s: %+v", rep)
	}
	if rep.EndToEnd == nil || rep.EndToEnd.Count != rep.Records || rep.EndToEnd.P50 <= 0 || rep.EndToEnd.P50 > 1000 {
		t.Fatalf("e2e latency %+v", rep.EndToEnd)
	}
}

// TestBenchRecordAllocs: records and values come from slabs, so building a record
// allocates nothing of its own (two slab allocations per up to 1024 records).
func TestBenchRecordAllocs(t *testing.T) {
	var acked atomic.Int64
	p := newBenchProducer(nil, nil, 0, "t", 100, &acked)
	seq := uint64(0)
	allocs := testing.AllocsPerRun(2000, func() {
		r := p.next(seq)
		seq++
		if len(r.Value) != 100 {
			t.Fatalf("value of %d bytes", len(r.Value))
		}
	})
	if allocs != 0 {
		t.Fatalf("%v allocations per record, want 0 (amortized)", allocs)
	}
	r := p.next(seq)
	if prod, s, _, ok := benchfmt.ParseHeader(r.Value); !ok || prod != 0 || s != seq {
		t.Fatalf("header: producer %d seq %d ok %v, want seq %d", prod, s, ok, seq)
	}
}

// --timeout ends bench e2e and bench produce when nothing is acknowledged or consumed
// for that long: here the broker parks every Produce request.
func TestBenchTimeoutFires(t *testing.T) {
	for _, mode := range []string{"e2e", "produce"} {
		t.Run(mode, func(t *testing.T) {
			c, bs := newCluster(t)
			release := holdProduce(c)
			defer release()
			args := []string{"bench", mode, "-b", bs, "--topic", "stall", "--timeout", "1s"}
			want := "runnel: no record acknowledged for 1s (--timeout): 0 acknowledged so far\n"
			if mode == "e2e" {
				args = append(args, "--duration", "300ms")
				want = "runnel: no record acknowledged or consumed for 1s (--timeout): 0 acknowledged, 0 consumed so far\n"
			}
			done := make(chan result, 1)
			start := time.Now()
			go func() { done <- run(t, "", args...) }()
			select {
			case r := <-done:
				last := r.stderr[strings.LastIndex(strings.TrimSuffix(r.stderr, "\n"), "\n")+1:] // after the progress lines
				if took := time.Since(start); r.code != exitFailure || last != want || took > 5*time.Second {
					t.Fatalf("exit %d after %v, stderr %q; want exit 1 within 5s, stderr %q", r.code, took, r.stderr, want)
				}
			case <-time.After(15 * time.Second):
				release()
				t.Fatalf("bench %s --timeout 1s still runs after 15s with every Produce parked", mode)
			}
		})
	}
}

// The generator prefaults its floor and twice what its producers may buffer: by record
// count, or by --buffer-bytes when that is the tighter bound, and never more than
// maxPrefault; a consumer buffers nothing of its own.
func TestBenchPrefaultCoversTheBufferedRecords(t *testing.T) {
	per := int64(1024 + recordOverhead)
	for _, c := range []struct {
		name string
		f    benchFlags
		want int64
	}{
		{"records", benchFlags{producers: 1, recordSize: 1024, overload: produceFlags{bufferRecords: 100000}}, benchGCFloor + 2*100000*per},
		{"two producers", benchFlags{producers: 2, recordSize: 1024, overload: produceFlags{bufferRecords: 1000}}, benchGCFloor + 4*1000*per},
		{"bytes tighter", benchFlags{producers: 1, recordSize: 1024, overload: produceFlags{bufferRecords: 100000, bufferBytes: 10 << 20}}, benchGCFloor + 2*10<<20},
		{"records tighter", benchFlags{producers: 1, recordSize: 1024, overload: produceFlags{bufferRecords: 10, bufferBytes: 10 << 20}}, benchGCFloor + 2*10*per},
		{"capped", benchFlags{producers: 8, recordSize: 1 << 20, overload: produceFlags{bufferRecords: 100000}}, maxPrefault},
		{"consumer", benchFlags{}, benchGCFloor},
	} {
		if got := int64(c.f.prefaultBytes()); got != c.want {
			t.Errorf("%s: prefault %d bytes, want %d", c.name, got, c.want)
		}
	}
}
