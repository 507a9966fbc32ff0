package bench

import (
	"errors"
	"fmt"
	"math/bits"

	"github.com/runnel-io/runnel/internal/benchfmt"
	"github.com/runnel-io/runnel/internal/clitext"
)

// ErrLostRecords is returned by a run that did not get back every record it should
// have: Produce when fewer records were acknowledged than asked for; Consume and
// E2E on a hole in a producer's sequence, fewer records than expected, or a
// partition that served fewer records than its offsets span.
var ErrLostRecords = errors.New("records lost")

// ErrForeignRecords is returned by Consume and E2E when the topic holds records
// runnel bench did not write (too short, header fields out of range, or a producer
// or sequence number this run never used), which makes the check meaningless.
var ErrForeignRecords = errors.New("records not written by runnel bench")

// seqTracker records which (producer, seq) pairs a consumer has seen. It is used by
// one goroutine.
type seqTracker struct {
	seen       [][]uint64 // per producer, a bitmap of seqs seen
	distinct   []int64    // per producer, the number of bits set in seen
	maxSeq     []int64    // per producer, the highest seq seen; -1 before any
	duplicates int64      // records whose (producer, seq) was already seen
	foreign    int64      // records without a valid header
}

// add records one record value's header.
func (t *seqTracker) add(v []byte) {
	producer, seq, _, ok := benchfmt.ParseHeader(v)
	if !ok {
		t.foreign++
		return
	}
	t.mark(int(producer), int64(seq))
}

func (t *seqTracker) mark(producer int, seq int64) {
	for len(t.seen) <= producer {
		t.seen = append(t.seen, nil)
		t.distinct = append(t.distinct, 0)
		t.maxSeq = append(t.maxSeq, -1)
	}
	word, bit := seq/64, uint64(1)<<(seq%64)
	if int64(len(t.seen[producer])) <= word {
		grown := make([]uint64, max(word+1, 2*int64(len(t.seen[producer]))))
		copy(grown, t.seen[producer])
		t.seen[producer] = grown
	}
	if t.seen[producer][word]&bit != 0 {
		t.duplicates++
		return
	}
	t.seen[producer][word] |= bit
	t.distinct[producer]++
	t.maxSeq[producer] = max(t.maxSeq[producer], seq)
}

// total is the number of distinct records seen.
func (t *seqTracker) total() int64 {
	var n int64
	for _, d := range t.distinct {
		n += d
	}
	return n
}

// firstHole returns the lowest seq below maxSeq that producer has not been seen
// with, or -1.
func (t *seqTracker) firstHole(producer int) int64 {
	for w, word := range t.seen[producer] {
		if word == ^uint64(0) {
			continue
		}
		seq := int64(w)*64 + int64(bits.TrailingZeros64(^word))
		if seq < t.maxSeq[producer] {
			return seq
		}
		return -1
	}
	return -1
}

// checkTotal is the check of `bench consume`: no producer's sequence has a hole and,
// when expected > 0, at least expected distinct records were seen.
func (t *seqTracker) checkTotal(expected int64) error {
	if err := t.checkForeign(); err != nil {
		return err
	}
	var holes int64
	first := ""
	for p := range t.seen {
		h := t.maxSeq[p] + 1 - t.distinct[p]
		if h > 0 && first == "" {
			first = fmt.Sprintf(" (producer %d: first missing seq %d)", p, t.firstHole(p))
		}
		holes += h
	}
	lost := holes
	if short := expected - t.total(); short > lost {
		lost = short
	}
	if lost > 0 {
		return fmt.Errorf("%w: %d of %s never consumed%s", ErrLostRecords, lost, clitext.Plural(max(expected, t.total()+lost), "record", "records"), first)
	}
	return nil
}

// checkAcked is the check of `bench e2e`: every producer's acknowledged records were
// all seen. acked[p] is the number of records producer p had acknowledged and sent[p]
// the number it handed to its client; a record dropped under --on-full drop took a
// seq below sent[p] but was never acknowledged.
func (t *seqTracker) checkAcked(acked, sent []int64) error {
	if err := t.checkForeign(); err != nil {
		return err
	}
	var lost, want int64
	for p := range acked {
		want += acked[p]
		got := int64(0)
		if p < len(t.distinct) {
			got = t.distinct[p]
			if t.maxSeq[p] >= sent[p] {
				return fmt.Errorf("%w: producer %d seq %d was consumed but never produced", ErrForeignRecords, p, t.maxSeq[p])
			}
		}
		lost += max(0, acked[p]-got)
	}
	for p := len(acked); p < len(t.distinct); p++ {
		if t.distinct[p] > 0 {
			return fmt.Errorf("%w: %s from producer %d, which this run does not have", ErrForeignRecords, clitext.Plural(t.distinct[p], "record", "records"), p)
		}
	}
	if lost > 0 {
		return fmt.Errorf("%w: %d of %s never consumed", ErrLostRecords, lost, clitext.Plural(want, "acknowledged record", "acknowledged records"))
	}
	return nil
}

func (t *seqTracker) checkForeign() error {
	if t.foreign > 0 {
		return fmt.Errorf("%w: %s without a bench header; use a fresh --topic", ErrForeignRecords, clitext.Plural(t.foreign, "record", "records"))
	}
	return nil
}

// partitionCount is what a consumer got from one partition.
type partitionCount struct {
	start, end int64 // the offsets to read: [start, end); end < 0 while unknown
	count      int64 // records received with start <= offset < end (or any, while end is unknown)
	next       int64 // the offset after the last record received; only grows
}

// checkPartitions fails when a partition served fewer records than its offsets span:
// a bench topic has no transactions or compaction, so its offsets have no gaps.
func checkPartitions(parts map[int32]*partitionCount) error {
	for p, pc := range parts {
		if want := pc.end - pc.start; pc.count < want {
			return fmt.Errorf("%w: partition %d served %s for offsets %d..%d (%d missing)",
				ErrLostRecords, p, clitext.Plural(pc.count, "record", "records"), pc.start, pc.end, want-pc.count)
		}
	}
	return nil
}
