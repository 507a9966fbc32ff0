package cli

import (
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
)

// latencyHist is an HdrHistogram of latencies in microseconds, from 1 µs to an hour
// with 3 significant digits. It is not safe for concurrent use: each producer's
// histogram is written only by its client's promise goroutine (kgo calls promises
// serially), the consumer's only by the consumer loop; they are merged at the end.
type latencyHist struct {
	h *hdrhistogram.Histogram
}

const maxLatencyMicros = int64(time.Hour / time.Microsecond)

func newLatencyHist() *latencyHist {
	return &latencyHist{h: hdrhistogram.New(1, maxLatencyMicros, 3)}
}

// record adds one latency, clamped into the histogram's range (a clock step can make
// an end-to-end latency negative).
func (l *latencyHist) record(d time.Duration) {
	us := min(max(d.Microseconds(), 1), maxLatencyMicros)
	_ = l.h.RecordValue(us) // cannot fail: us is in range
}

func (l *latencyHist) merge(o *latencyHist) { l.h.Merge(o.h) }

// latencySummary is a latency distribution in milliseconds, as reported.
type latencySummary struct {
	Count int64   `json:"count"`
	Mean  float64 `json:"mean"`
	P50   float64 `json:"p50"`
	P90   float64 `json:"p90"`
	P99   float64 `json:"p99"`
	P999  float64 `json:"p99_9"`
	Max   float64 `json:"max"`
}

// summary returns the distribution, or nil when nothing was recorded.
func (l *latencyHist) summary() *latencySummary {
	if l == nil || l.h.TotalCount() == 0 {
		return nil
	}
	ms := func(us int64) float64 { return float64(us) / 1000 }
	return &latencySummary{
		Count: l.h.TotalCount(),
		Mean:  l.h.Mean() / 1000,
		P50:   ms(l.h.ValueAtQuantile(50)),
		P90:   ms(l.h.ValueAtQuantile(90)),
		P99:   ms(l.h.ValueAtQuantile(99)),
		P999:  ms(l.h.ValueAtQuantile(99.9)),
		Max:   ms(l.h.Max()),
	}
}

// benchReport is the result of one bench run, printed as text or, with --json, as
// one JSON object. MB are 10^6 bytes of record values.
type benchReport struct {
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
	Produce       *latencySummary `json:"produce_latency_ms,omitempty"`
	EndToEnd      *latencySummary `json:"e2e_latency_ms,omitempty"`
}

// setRate fills the throughput fields from records, bytes and the elapsed time.
func (r *benchReport) setRate(records, bytes int64, took time.Duration) {
	r.Records, r.Bytes = records, bytes
	r.Seconds = took.Seconds()
	secs := max(r.Seconds, 1e-9)
	r.RecordsPerSec = float64(records) / secs
	r.MBPerSec = float64(bytes) / 1e6 / secs
}

func (r *benchReport) write(w io.Writer, asJSON bool) error {
	if asJSON {
		return writeJSON(w, r)
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
	return nil
}

func writeLatency(w io.Writer, what string, s *latencySummary) {
	if s == nil {
		return
	}
	fmt.Fprintf(w, "%s ms: p50 %.3f  p90 %.3f  p99 %.3f  p99.9 %.3f  max %.3f  (mean %.3f, %d samples)\n",
		what, s.P50, s.P90, s.P99, s.P999, s.Max, s.Mean, s.Count)
}

// progress prints a line every second on w with the counters' totals and their rate
// over the last second, until stop is called.
type progress struct {
	done chan struct{}
	wg   sync.WaitGroup
}

// progressCounter is one counter shown on the progress line.
type progressCounter struct {
	name string
	n    *atomic.Int64
}

func startProgress(w io.Writer, mode string, counters ...progressCounter) *progress {
	p := &progress{done: make(chan struct{})}
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		p.loop(w, mode, counters)
	}()
	return p
}

func (p *progress) loop(w io.Writer, mode string, counters []progressCounter) {
	t := time.NewTicker(time.Second)
	defer t.Stop()
	last := make([]int64, len(counters))
	lastAt, start := time.Now(), time.Now()
	for {
		select {
		case <-p.done:
			return
		case now := <-t.C:
			line := fmt.Sprintf("bench %s %4.0fs:", mode, now.Sub(start).Seconds())
			for i, c := range counters {
				n := c.n.Load()
				rate := float64(n-last[i]) / now.Sub(lastAt).Seconds()
				line += fmt.Sprintf("  %s %d (%.0f/s)", c.name, n, rate)
				last[i] = n
			}
			lastAt = now
			fmt.Fprintln(w, line)
		}
	}
}

// stop ends the progress lines and waits for the printer to exit.
func (p *progress) stop() {
	close(p.done)
	p.wg.Wait()
}
