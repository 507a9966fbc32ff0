package main

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
)

// headerSize is the bench header: producer (4B), seq (8B), publish time (8B).
const headerSize = 20

func putHeader(v []byte, seq uint64, unixNano int64) {
	binary.BigEndian.PutUint32(v[0:4], 0)
	binary.BigEndian.PutUint64(v[4:12], seq)
	binary.BigEndian.PutUint64(v[12:20], uint64(unixNano))
}

func parseHeader(v []byte) (seq uint64, unixNano int64, ok bool) {
	if len(v) < headerSize || binary.BigEndian.Uint32(v[0:4]) != 0 {
		return 0, 0, false
	}
	return binary.BigEndian.Uint64(v[4:12]), int64(binary.BigEndian.Uint64(v[12:20])), true
}

// seqSet is a bitmap of the sequence numbers received; one goroutine uses it.
type seqSet struct {
	bits       []uint64
	distinct   int64
	duplicates int64
	foreign    int64
}

func (s *seqSet) add(v []byte) {
	seq, _, ok := parseHeader(v)
	if !ok || seq >= 1<<36 {
		s.foreign++
		return
	}
	w, b := int(seq/64), uint64(1)<<(seq%64)
	for len(s.bits) <= w {
		s.bits = append(s.bits, 0)
	}
	if s.bits[w]&b != 0 {
		s.duplicates++
		return
	}
	s.bits[w] |= b
	s.distinct++
}

// check fails unless every seq in [0, want) arrived.
func (s *seqSet) check(want int64) error {
	if s.foreign > 0 {
		return fmt.Errorf("%d messages without a bench header", s.foreign)
	}
	if s.distinct < want {
		return fmt.Errorf("records lost: %d of %d never consumed", want-s.distinct, want)
	}
	return nil
}

// latencies is an HdrHistogram in microseconds, as runnel bench keeps.
type latencies struct{ h *hdrhistogram.Histogram }

func newLatencies() *latencies {
	return &latencies{hdrhistogram.New(1, int64(time.Hour/time.Microsecond), 3)}
}

func (l *latencies) record(d time.Duration) {
	_ = l.h.RecordValue(min(max(d.Microseconds(), 1), int64(time.Hour/time.Microsecond)))
}

type summary struct {
	Count int64   `json:"count"`
	Mean  float64 `json:"mean"`
	P50   float64 `json:"p50"`
	P90   float64 `json:"p90"`
	P99   float64 `json:"p99"`
	P999  float64 `json:"p99_9"`
	Max   float64 `json:"max"`
}

func (l *latencies) summary() *summary {
	if l == nil || l.h.TotalCount() == 0 {
		return nil
	}
	ms := func(us int64) float64 { return float64(us) / 1000 }
	return &summary{Count: l.h.TotalCount(), Mean: l.h.Mean() / 1000, P50: ms(l.h.ValueAtQuantile(50)),
		P90: ms(l.h.ValueAtQuantile(90)), P99: ms(l.h.ValueAtQuantile(99)),
		P999: ms(l.h.ValueAtQuantile(99.9)), Max: ms(l.h.Max())}
}

// report has the JSON fields of runnel bench's report.
type report struct {
	Mode          string   `json:"mode"`
	Topic         string   `json:"topic"`
	Partitions    int      `json:"partitions"`
	Producers     int      `json:"producers,omitempty"`
	RecordSize    int      `json:"record_size,omitempty"`
	Records       int64    `json:"records"`
	Bytes         int64    `json:"bytes"`
	Seconds       float64  `json:"seconds"`
	RecordsPerSec float64  `json:"records_per_sec"`
	MBPerSec      float64  `json:"mb_per_sec"`
	Consumed      int64    `json:"consumed,omitempty"`
	Duplicates    int64    `json:"duplicates,omitempty"`
	Produce       *summary `json:"produce_latency_ms,omitempty"`
	EndToEnd      *summary `json:"e2e_latency_ms,omitempty"`
}

func (r *report) setRate(records, bytes int64, took time.Duration) {
	r.Records, r.Bytes, r.Seconds = records, bytes, took.Seconds()
	r.RecordsPerSec = float64(records) / max(r.Seconds, 1e-9)
	r.MBPerSec = float64(bytes) / 1e6 / max(r.Seconds, 1e-9)
}

func (r *report) write(w io.Writer, asJSON bool) error {
	if asJSON {
		return json.NewEncoder(w).Encode(r)
	}
	fmt.Fprintf(w, "%s %q: %d records in %.2fs: %.0f records/s, %.1f MB/s\n",
		r.Mode, r.Topic, r.Records, r.Seconds, r.RecordsPerSec, r.MBPerSec)
	for name, s := range map[string]*summary{"publish latency": r.Produce, "end-to-end latency": r.EndToEnd} {
		if s != nil {
			fmt.Fprintf(w, "%s ms: p50 %.3f p90 %.3f p99 %.3f p99.9 %.3f max %.3f\n", name, s.P50, s.P90, s.P99, s.P999, s.Max)
		}
	}
	return nil
}
