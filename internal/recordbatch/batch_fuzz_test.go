package recordbatch

import (
	"encoding/binary"
	"errors"
	"testing"
)

// validBatch builds a minimal, well-formed batch with n (empty-bodied) records claimed.
func validBatch(lastOffsetDelta, count int32) []byte {
	b := make([]byte, HeaderSize)
	binary.BigEndian.PutUint32(b[offBatchLength:], uint32(HeaderSize-LengthPrefixSize))
	b[offMagic] = 2
	binary.BigEndian.PutUint32(b[offLastOffsetDelta:], uint32(lastOffsetDelta))
	binary.BigEndian.PutUint32(b[offRecordCount:], uint32(count))
	binary.BigEndian.PutUint64(b[offProducerID:], ^uint64(0))
	binary.BigEndian.PutUint32(b[offCRC:], Batch(b).ComputeCRC())
	return b
}

func TestVerifyValidAndCorrupt(t *testing.T) {
	b := validBatch(2, 3)
	if err := Batch(b).Verify(); err != nil {
		t.Fatalf("valid batch: %v", err)
	}
	Batch(b).SetBaseOffset(42)
	Batch(b).SetPartitionLeaderEpoch(7)
	if err := Batch(b).Verify(); err != nil {
		t.Fatalf("stamping offset and epoch broke the CRC: %v", err)
	}
	if Batch(b).BaseOffset() != 42 || Batch(b).NextOffset() != 45 || Batch(b).PartitionLeaderEpoch() != 7 {
		t.Fatalf("stamped fields read back wrong: base %d next %d epoch %d", Batch(b).BaseOffset(), Batch(b).NextOffset(), Batch(b).PartitionLeaderEpoch())
	}
	b[offAttributes+1] ^= 1
	if err := Batch(b).Verify(); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("flipped attribute bit: err = %v, want ErrCorrupt", err)
	}
	if err := Batch(validBatch(0, 2)).Verify(); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("count above lastOffsetDelta+1: err = %v, want ErrCorrupt", err)
	}
}

// FuzzBatchHeader: Next never panics, never returns more bytes than it was given, and
// what it cuts re-parses identically; Verify never panics on what Next returns.
func FuzzBatchHeader(f *testing.F) {
	f.Add([]byte{})
	f.Add(make([]byte, LengthPrefixSize))
	f.Add(validBatch(0, 1))
	f.Add(append(validBatch(0, 1), validBatch(4, 5)...))
	f.Add(append(validBatch(0, 1), 0xde, 0xad, 0xbe, 0xef))
	f.Fuzz(func(t *testing.T, data []byte) {
		rest := data
		total := 0
		for {
			b, next, err := Next(rest, 1<<20)
			if err != nil {
				if !errors.Is(err, ErrTruncated) && !errors.Is(err, ErrCorrupt) {
					t.Fatalf("Next: unexpected error class %v", err)
				}
				break
			}
			if len(b) < HeaderSize || len(b)+len(next) != len(rest) {
				t.Fatalf("Next cut %d bytes + %d rest from %d", len(b), len(next), len(rest))
			}
			again, _, err := Next(b, 1<<20)
			if err != nil || len(again) != len(b) {
				t.Fatalf("a cut batch does not re-parse: %v", err)
			}
			_ = b.Verify()
			total += len(b)
			rest = next
		}
		if total > len(data) {
			t.Fatalf("consumed %d of %d bytes", total, len(data))
		}
	})
}
