package link

import (
	"testing"

	"github.com/runnel-io/runnel/internal/recordbatch"
)

// TestWholeBatchesEnd: where a fetch answer's whole batches end is where the fetch
// sent ahead asks from; a batch cut by the byte limit and batches the destination
// holds already do not move it, and it agrees with the batches wholeBatches appends.
func TestWholeBatchesEnd(t *testing.T) {
	var buf []byte
	bl := recordbatch.NewBuilder(0)
	for i, base := range []int64{10, 13, 20} { // 3 records each; a compaction gap at 16-19
		bl.Reset()
		for range 3 {
			bl.Add([]byte("k"), []byte("v"), nil, int64(i))
		}
		b := bl.Build()
		b.SetBaseOffset(base)
		buf = append(buf, b...)
	}
	cut := buf[:len(buf)-5] // the last batch cut by the byte limit
	for _, c := range []struct {
		name string
		buf  []byte
		from int64
		want int64
	}{
		{"whole", buf, 10, 23},
		{"cut", cut, 10, 16},
		{"held already", buf, 16, 23},
		{"inside a batch", buf, 11, 23},
		{"all held", buf, 23, 23},
		{"empty", nil, 7, 7},
	} {
		if got := wholeBatchesEnd(c.buf, c.from); got != c.want {
			t.Errorf("%s: wholeBatchesEnd from %d = %d, want %d", c.name, c.from, got, c.want)
		}
		whole, err := wholeBatches(c.buf, c.from)
		if err != nil {
			t.Fatal(err)
		}
		end := c.from
		if len(whole) > 0 {
			var last recordbatch.Batch
			for rest := whole; len(rest) > 0; {
				last, rest, _ = recordbatch.Next(rest, 0)
			}
			end = last.NextOffset()
		}
		if end != c.want {
			t.Errorf("%s: wholeBatches from %d ends at %d, want %d", c.name, c.from, end, c.want)
		}
	}
}
