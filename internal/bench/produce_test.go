package bench

import (
	"sync/atomic"
	"testing"

	"github.com/runnel-io/runnel/internal/benchfmt"
)

// TestBenchRecordAllocs: records and values come from slabs, so building a record
// allocates nothing of its own (two slab allocations per up to 1024 records).
func TestBenchRecordAllocs(t *testing.T) {
	var acked atomic.Int64
	p := newProducer(nil, 0, "t", 100, &acked)
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

// The generator prefaults its floor and twice what its producers may buffer: by record
// count, or by the buffer's bytes when that is the tighter bound, and never more than
// maxPrefault; a consumer buffers nothing of its own.
func TestBenchPrefaultCoversTheBufferedRecords(t *testing.T) {
	per := int64(1024 + recordOverhead)
	for _, c := range []struct {
		name string
		cfg  Config
		want int64
	}{
		{"records", Config{Producers: 1, RecordSize: 1024, BufferRecords: 100000}, gcFloor + 2*100000*per},
		{"two producers", Config{Producers: 2, RecordSize: 1024, BufferRecords: 1000}, gcFloor + 4*1000*per},
		{"bytes tighter", Config{Producers: 1, RecordSize: 1024, BufferRecords: 100000, BufferBytes: 10 << 20}, gcFloor + 2*10<<20},
		{"records tighter", Config{Producers: 1, RecordSize: 1024, BufferRecords: 10, BufferBytes: 10 << 20}, gcFloor + 2*10*per},
		{"capped", Config{Producers: 8, RecordSize: 1 << 20, BufferRecords: 100000}, maxPrefault},
		{"consumer", Config{}, gcFloor},
	} {
		if got := int64(c.cfg.prefaultBytes()); got != c.want {
			t.Errorf("%s: prefault %d bytes, want %d", c.name, got, c.want)
		}
	}
}
