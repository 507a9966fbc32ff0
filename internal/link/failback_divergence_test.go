package link

import (
	"context"
	"fmt"
	"testing"

	"github.com/runnel-io/runnel/internal/recordbatch"
)

// fakeLog is a batchSource over batches of 5 records each, from offset 0.
type fakeLog struct {
	batches []recordbatch.Batch
	reads   int
}

// newFakeLog builds n batches; batch i's value is values(i), its leader epoch epoch.
func newFakeLog(n int, epoch int32, values func(i int) string) *fakeLog {
	l := &fakeLog{}
	for i := range n {
		b := recordbatch.NewBuilder(256)
		for r := range 5 {
			b.Add(nil, fmt.Appendf(nil, "%s/%d", values(i), r), nil, 1000)
		}
		bt := b.Build()
		bt.SetBaseOffset(int64(i) * 5)
		bt.SetPartitionLeaderEpoch(epoch)
		l.batches = append(l.batches, bt)
	}
	return l
}

func (l *fakeLog) batchAt(_ context.Context, off int64) (recordbatch.Batch, error) {
	l.reads++
	for _, b := range l.batches {
		if b.NextOffset() > off {
			return b, nil
		}
	}
	return nil, nil
}

func TestFailbackDivergence(t *testing.T) {
	same := func(i int) string { return fmt.Sprintf("v%d", i) }
	ctx := context.Background()
	for _, tc := range []struct {
		name                                       string
		oldValues                                  func(int) string
		mirroredEnd, epochEnd, oldEnd, floor, want int64
	}{
		// The old primary holds what was mirrored (its own epochs stamped): cut at
		// the recorded end, whatever the old primary wrote after it.
		{name: "tail after the mirrored end", oldValues: same, mirroredEnd: 50, epochEnd: -1, oldEnd: 100, want: 50},
		// The old primary's recorded epoch ends earlier (an unclean election there):
		// no further than that end.
		{name: "source epoch ends earlier", oldValues: same, mirroredEnd: 50, epochEnd: 35, oldEnd: 100, want: 35},
		// The old primary lost and rewrote records below the recorded end, and no
		// epoch says so (unknown): the batches differ from offset 20 on; bisection
		// finds it.
		{name: "rewritten below the record", oldValues: func(i int) string {
			if i >= 4 {
				return fmt.Sprintf("other%d", i)
			}
			return same(i)
		}, mirroredEnd: 50, epochEnd: -1, oldEnd: 100, want: 20},
		{name: "nothing shared", oldValues: func(i int) string { return fmt.Sprintf("other%d", i) }, mirroredEnd: 50, epochEnd: -1, oldEnd: 100, want: 0},
		// The old primary ends before the recorded end (it lost its end): cut at
		// its own end, nothing to set aside.
		{name: "old primary shorter", oldValues: same, mirroredEnd: 50, epochEnd: -1, oldEnd: 30, want: 30},
		// Retention removed, on the old primary, everything below 70: all it holds
		// is the tail, and the cut restarts it at the recorded end.
		{name: "old log start past the record", oldValues: same, mirroredEnd: 50, epochEnd: -1, oldEnd: 100, floor: 70, want: 50},
	} {
		t.Run(tc.name, func(t *testing.T) {
			old := newFakeLog(20, 3, tc.oldValues)
			old.batches = old.batches[:tc.oldEnd/5]
			cur := newFakeLog(10, 7, same) // the new primary: 50 mirrored offsets, its own epoch
			got, err := divergence(ctx, old, cur, tc.mirroredEnd, tc.epochEnd, tc.oldEnd, tc.floor)
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Fatalf("divergence %d, want %d", got, tc.want)
			}
			if old.reads > 12 {
				t.Fatalf("%d reads of the old primary: bisection should need about log2(batches)", old.reads)
			}
		})
	}
}
