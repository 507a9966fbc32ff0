package recordbatch

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
)

// Header field positions; see the package documentation.
const (
	offBaseOffset      = 0
	offBatchLength     = 8
	offLeaderEpoch     = 12
	offMagic           = 16
	offCRC             = 17
	offAttributes      = 21
	offLastOffsetDelta = 23
	offBaseTimestamp   = 27
	offMaxTimestamp    = 35
	offProducerID      = 43
	offProducerEpoch   = 51
	offBaseSequence    = 53
	offRecordCount     = 57

	// HeaderSize is the size of the fixed v2 batch header.
	HeaderSize = 61
	// LengthPrefixSize is the number of bytes before (and not counted in) batchLength.
	LengthPrefixSize = 12
)

// Attribute bits.
const (
	CompressionMask   = 0x07
	TimestampTypeMask = 0x08
	TransactionalFlag = 0x10
	ControlFlag       = 0x20
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// ErrCorrupt is the class of every validation failure: a batch that cannot be trusted.
// Test with errors.Is.
var ErrCorrupt = errors.New("corrupt record batch")

// ErrTruncated is returned by Next when the remaining bytes hold only part of a batch
// (fewer than the 12-byte prefix, or fewer than the length it announces).
var ErrTruncated = errors.New("truncated record batch")

// ErrUnsupportedMagic is returned for batches whose magic byte is not 2.
var ErrUnsupportedMagic = errors.New("unsupported record batch magic (only v2 is supported)")

// Batch is a view over exactly one v2 batch. It aliases the caller's bytes; setters
// write in place.
type Batch []byte

func (b Batch) BaseOffset() int64  { return int64(binary.BigEndian.Uint64(b[offBaseOffset:])) }
func (b Batch) BatchLength() int32 { return int32(binary.BigEndian.Uint32(b[offBatchLength:])) }
func (b Batch) PartitionLeaderEpoch() int32 {
	return int32(binary.BigEndian.Uint32(b[offLeaderEpoch:]))
}
func (b Batch) Magic() int8            { return int8(b[offMagic]) }
func (b Batch) CRC() uint32            { return binary.BigEndian.Uint32(b[offCRC:]) }
func (b Batch) Attributes() int16      { return int16(binary.BigEndian.Uint16(b[offAttributes:])) }
func (b Batch) LastOffsetDelta() int32 { return int32(binary.BigEndian.Uint32(b[offLastOffsetDelta:])) }
func (b Batch) BaseTimestamp() int64   { return int64(binary.BigEndian.Uint64(b[offBaseTimestamp:])) }
func (b Batch) MaxTimestamp() int64    { return int64(binary.BigEndian.Uint64(b[offMaxTimestamp:])) }
func (b Batch) ProducerID() int64      { return int64(binary.BigEndian.Uint64(b[offProducerID:])) }
func (b Batch) ProducerEpoch() int16   { return int16(binary.BigEndian.Uint16(b[offProducerEpoch:])) }
func (b Batch) BaseSequence() int32    { return int32(binary.BigEndian.Uint32(b[offBaseSequence:])) }
func (b Batch) RecordCount() int32     { return int32(binary.BigEndian.Uint32(b[offRecordCount:])) }

// LastOffset is BaseOffset + LastOffsetDelta.
func (b Batch) LastOffset() int64 { return b.BaseOffset() + int64(b.LastOffsetDelta()) }

// NextOffset is the offset after the last record of the batch.
func (b Batch) NextOffset() int64 { return b.LastOffset() + 1 }

// Compression is the codec id: 0 none, 1 gzip, 2 snappy, 3 lz4, 4 zstd.
func (b Batch) Compression() int8 { return int8(b.Attributes() & CompressionMask) }

// LogAppendTime reports whether the batch's timestamp type is LogAppendTime.
func (b Batch) LogAppendTime() bool { return b.Attributes()&TimestampTypeMask != 0 }

// IsTransactional reports the transactional attribute bit.
func (b Batch) IsTransactional() bool { return b.Attributes()&TransactionalFlag != 0 }

// IsControl reports the control attribute bit.
func (b Batch) IsControl() bool { return b.Attributes()&ControlFlag != 0 }

// SetBaseOffset stamps the base offset in place (outside the CRC).
func (b Batch) SetBaseOffset(o int64) { binary.BigEndian.PutUint64(b[offBaseOffset:], uint64(o)) }

// SetPartitionLeaderEpoch stamps the leader epoch in place (outside the CRC).
func (b Batch) SetPartitionLeaderEpoch(e int32) {
	binary.BigEndian.PutUint32(b[offLeaderEpoch:], uint32(e))
}

// SetLogAppendTime sets the timestamp type to LogAppendTime and maxTimestamp to ts,
// then recomputes the CRC, as Kafka does for topics with message.timestamp.type=LogAppendTime.
func (b Batch) SetLogAppendTime(ts int64) {
	attrs := uint16(b.Attributes()) | TimestampTypeMask
	binary.BigEndian.PutUint16(b[offAttributes:], attrs)
	binary.BigEndian.PutUint64(b[offMaxTimestamp:], uint64(ts))
	binary.BigEndian.PutUint32(b[offCRC:], crc32.Checksum(b[offAttributes:], castagnoli))
}

// ComputeCRC returns the CRC-32C of the covered range.
func (b Batch) ComputeCRC() uint32 { return crc32.Checksum(b[offAttributes:], castagnoli) }

// Size is the total size of the batch in bytes including the 12-byte prefix.
func (b Batch) Size() int { return LengthPrefixSize + int(b.BatchLength()) }

// Verify checks the header of a batch already cut to its exact size: magic, length,
// record count against lastOffsetDelta, and the CRC. It does not decompress.
func (b Batch) Verify() error {
	if len(b) < HeaderSize {
		return fmt.Errorf("%w: %d bytes is shorter than the %d-byte header", ErrCorrupt, len(b), HeaderSize)
	}
	if m := b.Magic(); m != 2 {
		return fmt.Errorf("%w: magic %d", ErrUnsupportedMagic, m)
	}
	if b.Size() != len(b) {
		return fmt.Errorf("%w: batchLength %d does not match %d bytes", ErrCorrupt, b.BatchLength(), len(b)-LengthPrefixSize)
	}
	n, lod := b.RecordCount(), b.LastOffsetDelta()
	if n < 0 || lod < 0 {
		return fmt.Errorf("%w: negative record count %d or last offset delta %d", ErrCorrupt, n, lod)
	}
	// Compaction may leave fewer records than lastOffsetDelta+1, never more; a batch
	// with no records is only legal after compaction (n == 0 with any delta).
	if n > lod+1 {
		return fmt.Errorf("%w: record count %d exceeds last offset delta %d + 1", ErrCorrupt, n, lod)
	}
	if got, want := b.ComputeCRC(), b.CRC(); got != want {
		return fmt.Errorf("%w: CRC-32C mismatch (stored %08x, computed %08x)", ErrCorrupt, want, got)
	}
	return nil
}

// Next cuts the first batch off buf without validating its contents beyond the length.
// It returns ErrTruncated when buf holds only part of a batch and ErrCorrupt when the
// announced length is impossible (smaller than a header or larger than maxSize when
// maxSize > 0).
func Next(buf []byte, maxSize int) (Batch, []byte, error) {
	if len(buf) < LengthPrefixSize {
		return nil, buf, ErrTruncated
	}
	l := int64(int32(binary.BigEndian.Uint32(buf[offBatchLength:])))
	size := l + LengthPrefixSize
	if size < HeaderSize {
		return nil, buf, fmt.Errorf("%w: batchLength %d is shorter than a batch header", ErrCorrupt, l)
	}
	if maxSize > 0 && size > int64(maxSize) {
		return nil, buf, fmt.Errorf("%w: batch of %d bytes exceeds the limit of %d", ErrCorrupt, size, maxSize)
	}
	if int64(len(buf)) < size {
		return nil, buf, ErrTruncated
	}
	return Batch(buf[:size]), buf[size:], nil
}
