// Package benchfmt is what the load generators share, so that `runnel bench` and
// bench/natsbench measure and report alike and bench/compare reads both the same way:
// the header every bench record's value starts with, the latency histogram, and the
// report (text, or one JSON object).
package benchfmt

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
)

// A bench record's value starts with a header the consumer checks:
//
//	| producer (4B, big endian) | seq (8B) | produce time, Unix ns (8B) | filler ... |
//
// seq counts from 0 within each producer, so the records of one producer are
// exactly the seqs 0..n-1 and any missing one shows as a hole.
const (
	HeaderSize = 20
	// MaxProducers and MaxSeq bound the header fields a consumer accepts, so a
	// foreign record cannot make it allocate a huge bitmap.
	MaxProducers = 1 << 12
	MaxSeq       = 1 << 36
)

// PutHeader writes the header at the start of v (at least HeaderSize bytes).
func PutHeader(v []byte, producer uint32, seq uint64, unixNano int64) {
	binary.BigEndian.PutUint32(v[0:4], producer)
	binary.BigEndian.PutUint64(v[4:12], seq)
	binary.BigEndian.PutUint64(v[12:20], uint64(unixNano))
}

// ParseHeader reads a record value's header; ok is false for a foreign record.
func ParseHeader(v []byte) (producer uint32, seq uint64, unixNano int64, ok bool) {
	if len(v) < HeaderSize {
		return 0, 0, 0, false
	}
	producer = binary.BigEndian.Uint32(v[0:4])
	seq = binary.BigEndian.Uint64(v[4:12])
	unixNano = int64(binary.BigEndian.Uint64(v[12:20]))
	return producer, seq, unixNano, producer < MaxProducers && seq < MaxSeq
}

// LatencyHist is an HdrHistogram of latencies in microseconds, from 1 µs to an hour
// with 3 significant digits. It is not safe for concurrent use: one goroutine writes
// each histogram, and they are merged at the end.
type LatencyHist struct {
	h *hdrhistogram.Histogram
}

const maxLatencyMicros = int64(time.Hour / time.Microsecond)

// NewLatencyHist returns an empty histogram.
func NewLatencyHist() *LatencyHist {
	return &LatencyHist{h: hdrhistogram.New(1, maxLatencyMicros, 3)}
}

// Record adds one latency, clamped into the histogram's range (a clock step can make
// an end-to-end latency negative).
func (l *LatencyHist) Record(d time.Duration) {
	us := min(max(d.Microseconds(), 1), maxLatencyMicros)
	_ = l.h.RecordValue(us) // cannot fail: us is in range
}

// Merge adds o's latencies to l.
func (l *LatencyHist) Merge(o *LatencyHist) { l.h.Merge(o.h) }

// LatencySummary is a latency distribution in milliseconds, as reported.
type LatencySummary struct {
	Count int64   `json:"count"`
	Mean  float64 `json:"mean"`
	P50   float64 `json:"p50"`
	P90   float64 `json:"p90"`
	P99   float64 `json:"p99"`
	P999  float64 `json:"p99_9"`
	Max   float64 `json:"max"`
}

// Summary returns the distribution, or nil when nothing was recorded.
func (l *LatencyHist) Summary() *LatencySummary {
	if l == nil || l.h.TotalCount() == 0 {
		return nil
	}
	ms := func(us int64) float64 { return float64(us) / 1000 }
	return &LatencySummary{
		Count: l.h.TotalCount(),
		Mean:  l.h.Mean() / 1000,
		P50:   ms(l.h.ValueAtQuantile(50)),
		P90:   ms(l.h.ValueAtQuantile(90)),
		P99:   ms(l.h.ValueAtQuantile(99)),
		P999:  ms(l.h.ValueAtQuantile(99.9)),
		Max:   ms(l.h.Max()),
	}
}

// Report is the result of one bench run, printed as text or as one JSON object. MB
// are 10^6 bytes of record values.
type Report struct {
	Mode          string          `json:"mode"` // produce, consume or e2e
	Topic         string          `json:"topic"`
	Partitions    int             `json:"partitions"`
	Producers     int             `json:"producers,omitempty"`
	RecordSize    int             `json:"record_size,omitempty"`
	Records       int64           `json:"records"` // acknowledged (produce, e2e) or consumed (consume)
	Bytes         int64           `json:"bytes"`
	Seconds       float64         `json:"seconds"`
	RecordsPerSec float64         `json:"records_per_sec"`
	MBPerSec      float64         `json:"mb_per_sec"`
	Consumed      int64           `json:"consumed,omitempty"` // e2e: records consumed
	Dropped       int64           `json:"dropped,omitempty"`
	Duplicates    int64           `json:"duplicates,omitempty"`
	Produce       *LatencySummary `json:"produce_latency_ms,omitempty"`
	EndToEnd      *LatencySummary `json:"e2e_latency_ms,omitempty"`
	// Breakdown is where the nodes spent the produce requests' time, by stage
	// (runnel_produce_stage_seconds over the run, --breakdown).
	Breakdown []StageSummary `json:"breakdown_ms,omitempty"`
}

// StageSummary is one stage of the produce latency breakdown: how many times it was
// passed during the run (once per request; append, flush and replicate once per
// partition of a request) and its percentiles in milliseconds, read from the
// nodes' histograms (so good to their bucket width, a factor of sqrt 2).
type StageSummary struct {
	Stage string  `json:"stage"`
	Count int64   `json:"count"`
	P50   float64 `json:"p50"`
	P99   float64 `json:"p99"`
	P999  float64 `json:"p99_9"`
	Max   float64 `json:"max_bucket"` // upper bound of the highest non-empty bucket
}

// SetRate fills the throughput fields from records, bytes and the elapsed time.
func (r *Report) SetRate(records, bytes int64, took time.Duration) {
	r.Records, r.Bytes = records, bytes
	r.Seconds = took.Seconds()
	secs := max(r.Seconds, 1e-9)
	r.RecordsPerSec = float64(records) / secs
	r.MBPerSec = float64(bytes) / 1e6 / secs
}

// Write prints the report as text or, asJSON, as one indented JSON object.
func (r *Report) Write(w io.Writer, asJSON bool) error {
	if asJSON {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(r)
	}
	fmt.Fprintf(w, "%s %q (%d partitions): %d records, %.1f MB in %.2fs: %.0f records/s, %.1f MB/s\n",
		r.Mode, r.Topic, r.Partitions, r.Records, float64(r.Bytes)/1e6, r.Seconds, r.RecordsPerSec, r.MBPerSec)
	if r.Consumed > 0 {
		fmt.Fprintf(w, "consumed: %d records\n", r.Consumed)
	}
	if r.Dropped > 0 || r.Duplicates > 0 {
		fmt.Fprintf(w, "dropped: %d, duplicates: %d\n", r.Dropped, r.Duplicates)
	}
	writeLatency(w, "produce latency", r.Produce)
	writeLatency(w, "end-to-end latency", r.EndToEnd)
	if len(r.Breakdown) > 0 {
		fmt.Fprintf(w, "produce breakdown on the nodes, ms (from their histograms):\n")
		fmt.Fprintf(w, "  %-10s %10s %9s %9s %9s %9s\n", "stage", "count", "p50", "p99", "p99.9", "max<=")
		for _, st := range r.Breakdown {
			fmt.Fprintf(w, "  %-10s %10d %9.3f %9.3f %9.3f %9.3f\n", st.Stage, st.Count, st.P50, st.P99, st.P999, st.Max)
		}
	}
	return nil
}

func writeLatency(w io.Writer, what string, s *LatencySummary) {
	if s == nil {
		return
	}
	fmt.Fprintf(w, "%s ms: p50 %.3f  p90 %.3f  p99 %.3f  p99.9 %.3f  max %.3f  (mean %.3f, %d samples)\n",
		what, s.P50, s.P90, s.P99, s.P999, s.Max, s.Mean, s.Count)
}
