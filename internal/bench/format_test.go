package bench

import (
	"math"
	"testing"
	"time"

	"github.com/runnel-io/runnel/internal/benchfmt"
)

// The record header and the latency histogram, as the generator uses them.

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
