package recordbatch

import (
	"encoding/binary"
	"hash/crc32"
)

// Header is one record header. A nil Value is encoded as a null value.
type Header struct {
	Key   string
	Value []byte
}

// Builder encodes records into one uncompressed v2 batch, for Runnel's own writers (the
// group coordinator's __consumer_offsets records, internal topics). It writes each
// record once, straight into its buffer: after the first batch of a given size a reused
// Builder allocates nothing.
//
// The batch it builds has baseOffset 0 and partitionLeaderEpoch -1 (the leader stamps
// both), no producer id (-1, not idempotent), CreateTime timestamps, and a CRC-32C over
// the covered range.
//
// Usage: Add records, then Build; Reset before building the next batch. A Builder is not
// safe for concurrent use.
type Builder struct {
	// buf holds the header (zeroed until Build) followed by the encoded records.
	buf []byte
	// count is the number of records added since Reset.
	count int32
	// baseTimestamp is the first record's timestamp; every record stores its delta.
	baseTimestamp int64
	// maxTimestamp is the largest timestamp added. Only grows until Reset.
	maxTimestamp int64
}

// NewBuilder returns a Builder whose buffer starts with room for capacity bytes.
func NewBuilder(capacity int) *Builder {
	b := &Builder{buf: make([]byte, HeaderSize, max(capacity, HeaderSize))}
	return b
}

// Reset empties the builder, keeping its buffer. A Batch returned by Build before is
// overwritten by the next Add.
func (b *Builder) Reset() {
	if cap(b.buf) < HeaderSize {
		b.buf = make([]byte, HeaderSize, 512)
	}
	b.buf = b.buf[:HeaderSize]
	clear(b.buf)
	b.count = 0
}

// Len is the number of records added since Reset.
func (b *Builder) Len() int { return int(b.count) }

// Size is the size in bytes the batch has when built now.
func (b *Builder) Size() int { return max(len(b.buf), HeaderSize) }

// Add appends one record. A nil key is a null key; a nil value is a null value (a
// tombstone on a compacted topic). timestampMs is the record's CreateTime.
func (b *Builder) Add(key, value []byte, headers []Header, timestampMs int64) {
	if len(b.buf) < HeaderSize {
		b.Reset()
	}
	if b.count == 0 {
		b.baseTimestamp, b.maxTimestamp = timestampMs, timestampMs
	}
	b.maxTimestamp = max(b.maxTimestamp, timestampMs)
	tsDelta := timestampMs - b.baseTimestamp
	bodyLen := 1 + varlongLen(tsDelta) + varlongLen(int64(b.count)) +
		bytesLen(key) + bytesLen(value) + varlongLen(int64(len(headers)))
	for i := range headers {
		bodyLen += varlongLen(int64(len(headers[i].Key))) + len(headers[i].Key) + bytesLen(headers[i].Value)
	}
	b.buf = binary.AppendVarint(b.buf, int64(bodyLen))
	b.buf = append(b.buf, 0) // record attributes: unused
	b.buf = binary.AppendVarint(b.buf, tsDelta)
	b.buf = binary.AppendVarint(b.buf, int64(b.count))
	b.buf = appendBytes(b.buf, key)
	b.buf = appendBytes(b.buf, value)
	b.buf = binary.AppendVarint(b.buf, int64(len(headers)))
	for i := range headers {
		b.buf = binary.AppendVarint(b.buf, int64(len(headers[i].Key)))
		b.buf = append(b.buf, headers[i].Key...)
		b.buf = appendBytes(b.buf, headers[i].Value)
	}
	b.count++
}

// Build writes the batch header and CRC and returns the batch, or nil when no record
// was added (Kafka has no empty batches). The batch aliases the builder's buffer: it
// stays valid until the next Add or Reset.
func (b *Builder) Build() Batch {
	if b.count == 0 {
		return nil
	}
	h := b.buf[:HeaderSize]
	binary.BigEndian.PutUint64(h[offBaseOffset:], 0)
	binary.BigEndian.PutUint32(h[offBatchLength:], uint32(len(b.buf)-LengthPrefixSize))
	binary.BigEndian.PutUint32(h[offLeaderEpoch:], 0xffffffff) // -1
	h[offMagic] = 2
	binary.BigEndian.PutUint16(h[offAttributes:], 0)
	binary.BigEndian.PutUint32(h[offLastOffsetDelta:], uint32(b.count-1))
	binary.BigEndian.PutUint64(h[offBaseTimestamp:], uint64(b.baseTimestamp))
	binary.BigEndian.PutUint64(h[offMaxTimestamp:], uint64(b.maxTimestamp))
	binary.BigEndian.PutUint64(h[offProducerID:], 0xffffffffffffffff) // -1
	binary.BigEndian.PutUint16(h[offProducerEpoch:], 0xffff)          // -1
	binary.BigEndian.PutUint32(h[offBaseSequence:], 0xffffffff)       // -1
	binary.BigEndian.PutUint32(h[offRecordCount:], uint32(b.count))
	binary.BigEndian.PutUint32(h[offCRC:], crc32.Checksum(b.buf[offAttributes:], castagnoli))
	return Batch(b.buf)
}

// varlongLen is the size of v as a zig-zag varint, the encoding of every length and
// delta inside a v2 record.
func varlongLen(v int64) int {
	u := uint64(v)<<1 ^ uint64(v>>63)
	n := 1
	for u >= 0x80 {
		u >>= 7
		n++
	}
	return n
}

// bytesLen is the encoded size of a nullable byte string: a varint length (-1 for
// nil) followed by the bytes.
func bytesLen(p []byte) int {
	if p == nil {
		return 1
	}
	return varlongLen(int64(len(p))) + len(p)
}

func appendBytes(dst, p []byte) []byte {
	if p == nil {
		return binary.AppendVarint(dst, -1)
	}
	dst = binary.AppendVarint(dst, int64(len(p)))
	return append(dst, p...)
}
