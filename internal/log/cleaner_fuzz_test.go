package log

import (
	"bytes"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"testing"

	"github.com/runnel-io/runnel/internal/recordbatch"
)

// FuzzCleanerFilterBatch wraps arbitrary bytes as the records of a batch whose
// header and CRC are valid (what a producer may send: appends do not parse records)
// and filters it. The cleaner never panics; it either reports ErrCorruption or
// returns a batch that verifies, keeps the header's offsets, holds the records it
// kept, and is the input itself when it kept them all.
func FuzzCleanerFilterBatch(f *testing.F) {
	valid := keyedBatch(f, batchSpec{recs: []kv{rec("a", "1", 1), rec("b", "", 2), {value: []byte("x"), ts: 3}}})
	f.Add(valid[recordbatch.HeaderSize:], int32(3), uint8(0))
	f.Add(valid[recordbatch.HeaderSize:], int32(3), uint8(0b101))
	f.Add(valid[recordbatch.HeaderSize:], int32(4), uint8(1))
	f.Add([]byte{}, int32(1), uint8(0))
	f.Add([]byte{0x01, 0x00}, int32(1), uint8(0))
	f.Add(bytes.Repeat([]byte{0xff}, 20), int32(2), uint8(0))
	c := newCodecs()
	f.Fuzz(func(t *testing.T, records []byte, count int32, keepMask uint8) {
		if count < 0 || count > 1000 {
			return
		}
		b := append(append([]byte(nil), valid[:recordbatch.HeaderSize]...), records...)
		binary.BigEndian.PutUint32(b[hdrBatchLength:], uint32(len(b)-recordbatch.LengthPrefixSize))
		binary.BigEndian.PutUint32(b[23:], uint32(max(count-1, 0))) // last offset delta
		binary.BigEndian.PutUint32(b[hdrRecordCount:], uint32(count))
		binary.BigEndian.PutUint32(b[hdrCRC:], crc32.Checksum(b[hdrAttributes:], castagnoli))
		i := 0
		f, _, err := c.filterBatch(b, nil, func(*rawRecord) bool { i++; return keepMask&(1<<(i%8)) != 0 })
		if err != nil {
			if !errors.Is(err, ErrCorruption) {
				t.Fatalf("error %v is not ErrCorruption", err)
			}
			return
		}
		if f.kept+f.removed != int(count) {
			t.Fatalf("kept %d + removed %d of %d records", f.kept, f.removed, count)
		}
		switch {
		case f.kept == 0 && f.removed > 0 && f.out != nil:
			t.Fatal("a batch emptied by the filter was kept")
		case f.removed == 0 && !bytes.Equal(f.out, b):
			t.Fatal("a batch keeping every record was rewritten")
		case f.out != nil:
			out := recordbatch.Batch(f.out)
			if err := out.Verify(); err != nil || out.RecordCount() != int32(f.kept) || out.LastOffsetDelta() != recordbatch.Batch(b).LastOffsetDelta() {
				t.Fatalf("filtered batch: %v, %d records, last offset delta %d", err, out.RecordCount(), out.LastOffsetDelta())
			}
		}
	})
}
