package bench

import (
	"errors"
	"strings"
	"testing"

	"github.com/runnel-io/runnel/internal/benchfmt"
)

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
	if err := full.checkTotal(1001); !errors.Is(err, ErrLostRecords) || !strings.Contains(err.Error(), "1 of 1001") {
		t.Fatalf("one short: %v", err)
	}
	hole := tracker(seqRange(0, 500), append(seqRange(0, 70), seqRange(71, 500)...))
	err := hole.checkTotal(0)
	if !errors.Is(err, ErrLostRecords) || !strings.Contains(err.Error(), "producer 1: first missing seq 70") {
		t.Fatalf("hole at producer 1 seq 70: %v", err)
	}
	dup := tracker(append(seqRange(0, 10), 3, 3))
	if err := dup.checkTotal(10); err != nil || dup.duplicates != 2 {
		t.Fatalf("duplicates: err %v, count %d", err, dup.duplicates)
	}
	foreign := tracker(seqRange(0, 3))
	foreign.add([]byte("short"))
	if err := foreign.checkTotal(3); !errors.Is(err, ErrForeignRecords) {
		t.Fatalf("foreign record: %v", err)
	}
}

func TestSeqTrackerCheckAcked(t *testing.T) {
	tr := tracker(seqRange(0, 100), append(seqRange(0, 40), seqRange(41, 60)...))
	if err := tr.checkAcked([]int64{100, 59}, []int64{100, 60}); err != nil {
		t.Fatalf("a dropped (unacknowledged) record is no loss: %v", err)
	}
	if err := tr.checkAcked([]int64{100, 60}, []int64{100, 60}); !errors.Is(err, ErrLostRecords) {
		t.Fatalf("an acknowledged record missing: %v", err)
	}
	if err := tr.checkAcked([]int64{100, 59}, []int64{100, 50}); !errors.Is(err, ErrForeignRecords) {
		t.Fatalf("a seq never sent: %v", err)
	}
	if err := tr.checkAcked([]int64{100}, []int64{100}); !errors.Is(err, ErrForeignRecords) {
		t.Fatalf("records of a producer the run lacks: %v", err)
	}
}

func TestCheckPartitions(t *testing.T) {
	ok := map[int32]*partitionCount{0: {start: 5, end: 10, count: 5}, 1: {start: 0, end: 0}}
	if err := checkPartitions(ok); err != nil {
		t.Fatal(err)
	}
	short := map[int32]*partitionCount{0: {start: 0, end: 10, count: 9}}
	if err := checkPartitions(short); !errors.Is(err, ErrLostRecords) || !strings.Contains(err.Error(), "1 missing") {
		t.Fatalf("a partition one record short: %v", err)
	}
}
