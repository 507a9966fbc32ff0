package main

import (
	"fmt"

	"github.com/runnel-io/runnel/internal/benchfmt"
)

// The header, latency histogram and report are runnel bench's (internal/benchfmt):
// natsbench writes producer 0 in every header, and bench/compare reads both tools'
// JSON reports the same way.

// seqSet is a bitmap of the sequence numbers received; one goroutine uses it.
type seqSet struct {
	bits       []uint64
	distinct   int64
	duplicates int64
	foreign    int64
}

func (s *seqSet) add(v []byte) {
	_, seq, _, ok := benchfmt.ParseHeader(v)
	if !ok {
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
