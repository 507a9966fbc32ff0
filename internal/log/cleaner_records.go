package log

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"hash/crc32"

	"github.com/runnel-io/runnel/internal/recordbatch"
	"github.com/twmb/franz-go/pkg/kgo"
)

// Offsets of the batch header fields the cleaner rewrites (see recordbatch).
const (
	hdrBatchLength  = 8
	hdrCRC          = 17
	hdrAttributes   = 21
	hdrMaxTimestamp = 35
	hdrRecordCount  = 57
)

// rawRecord is one record of a v2 batch as the cleaner needs it. raw is the whole
// record, its length varint included, so a kept record is copied as is: its offset
// and timestamp deltas stay valid because the batch keeps its base offset and base
// timestamp.
type rawRecord struct {
	raw         []byte
	offsetDelta int64
	tsDelta     int64
	key         []byte // nil for a null key
	nullValue   bool   // a tombstone when the key is not null
}

// recordsOf returns the records section of b, decompressed when needed.
func (c *codecs) recordsOf(b recordbatch.Batch) ([]byte, error) {
	body := []byte(b[recordbatch.HeaderSize:])
	if b.Compression() == 0 {
		return body, nil
	}
	out, err := c.dec.Decompress(body, kgo.CompressionCodecType(b.Compression()))
	if err != nil {
		return nil, fmt.Errorf("%w: decompressing the batch at offset %d (codec %d): %v", ErrCorruption, b.BaseOffset(), b.Compression(), err)
	}
	return out, nil
}

// parseRecords calls fn for each of the n records in data. A record that does not
// parse is ErrCorruption.
func parseRecords(data []byte, n int32, fn func(r rawRecord)) error {
	for i := int32(0); i < n; i++ {
		r, rest, err := parseRecord(data)
		if err != nil {
			return fmt.Errorf("%w: record %d of %d: %v", ErrCorruption, i, n, err)
		}
		fn(r)
		data = rest
	}
	if len(data) != 0 {
		return fmt.Errorf("%w: %d bytes after the last of %d records", ErrCorruption, len(data), n)
	}
	return nil
}

// recordReader reads the varint fields of one record body.
type recordReader struct {
	p   []byte
	err error
}

func (r *recordReader) varint() int64 {
	if r.err != nil {
		return 0
	}
	v, n := binary.Varint(r.p)
	if n <= 0 {
		r.err = fmt.Errorf("bad varint")
		return 0
	}
	r.p = r.p[n:]
	return v
}

// bytes reads a nullable byte string; null is (nil, true).
func (r *recordReader) bytes() ([]byte, bool) {
	n := r.varint()
	if r.err != nil || n < 0 {
		return nil, r.err == nil
	}
	if n > int64(len(r.p)) {
		r.err = fmt.Errorf("field of %d bytes past the record end", n)
		return nil, false
	}
	b := r.p[:n:n]
	r.p = r.p[n:]
	return b, false
}

func parseRecord(data []byte) (rawRecord, []byte, error) {
	length, n := binary.Varint(data)
	if n <= 0 || length < 1 || length > int64(len(data)-n) {
		return rawRecord{}, nil, fmt.Errorf("bad record length")
	}
	end := n + int(length)
	rd := recordReader{p: data[n+1 : end]} // skip the attributes byte
	r := rawRecord{raw: data[:end:end]}
	r.tsDelta = rd.varint()
	r.offsetDelta = rd.varint()
	var nullKey bool
	r.key, nullKey = rd.bytes()
	if !nullKey && r.key == nil {
		r.key = []byte{}
	}
	_, r.nullValue = rd.bytes()
	if rd.err != nil {
		return rawRecord{}, nil, rd.err
	}
	return r, data[end:], nil
}

// codecs decompresses and recompresses batches with the codecs Kafka clients use
// (franz-go's, which handle gzip, snappy with or without xerial framing, lz4 frames
// and zstd). One per cleaner goroutine.
type codecs struct {
	dec  kgo.Decompressor
	comp map[int8]kgo.Compressor
	buf  bytes.Buffer
}

func newCodecs() *codecs {
	return &codecs{dec: kgo.DefaultDecompressor(), comp: map[int8]kgo.Compressor{}}
}

var codecByID = map[int8]func() kgo.CompressionCodec{
	1: kgo.GzipCompression, 2: kgo.SnappyCompression, 3: kgo.Lz4Compression, 4: kgo.ZstdCompression,
}

// compress appends records compressed with codec to dst.
func (c *codecs) compress(dst []byte, codec int8, records []byte) ([]byte, error) {
	comp := c.comp[codec]
	if comp == nil {
		mk := codecByID[codec]
		if mk == nil {
			return nil, fmt.Errorf("%w: unknown compression codec %d", ErrCorruption, codec)
		}
		var err error
		if comp, err = kgo.DefaultCompressor(mk()); err != nil {
			return nil, err
		}
		c.comp[codec] = comp
	}
	c.buf.Reset()
	out, used := comp.Compress(&c.buf, records)
	if int8(used) != codec {
		return nil, fmt.Errorf("compressing with codec %d failed", codec)
	}
	return append(dst, out...), nil
}

// batchFilter is what filtering one batch decided.
type batchFilter struct {
	kept, removed int
	out           []byte // the batch to write; nil when every record went
}

// filterBatch keeps the records of b for which keep is true (Kafka
// MemoryRecords.filterTo). A batch that keeps every record is returned as is; one
// that keeps some is rebuilt with the same base offset, last offset delta, base
// timestamp, producer id, epoch and base sequence, partition leader epoch,
// attributes and codec, the kept records copied byte for byte, and a new record
// count, max timestamp (for CreateTime) and CRC. Control batches are never passed
// here: they are kept whole.
func (c *codecs) filterBatch(b recordbatch.Batch, scratch []byte, keep func(r *rawRecord) bool) (batchFilter, []byte, error) {
	data, err := c.recordsOf(b)
	if err != nil {
		return batchFilter{}, scratch, err
	}
	var f batchFilter
	kept := scratch[:0]
	maxTs := int64(-1 << 63)
	err = parseRecords(data, b.RecordCount(), func(r rawRecord) {
		if !keep(&r) {
			f.removed++
			return
		}
		f.kept++
		kept = append(kept, r.raw...)
		maxTs = max(maxTs, b.BaseTimestamp()+r.tsDelta)
	})
	if err != nil {
		return batchFilter{}, kept, fmt.Errorf("batch at offset %d: %w", b.BaseOffset(), err)
	}
	switch {
	case f.removed == 0:
		f.out = b
	case f.kept > 0:
		f.out, err = c.rebuild(b, kept, int32(f.kept), maxTs)
	}
	return f, kept, err
}

// rebuild makes a new batch from b's header and the kept records.
func (c *codecs) rebuild(b recordbatch.Batch, records []byte, count int32, maxTs int64) ([]byte, error) {
	out := make([]byte, recordbatch.HeaderSize, recordbatch.HeaderSize+len(records))
	copy(out, b[:recordbatch.HeaderSize])
	var err error
	if codec := b.Compression(); codec != 0 {
		if out, err = c.compress(out, codec, records); err != nil {
			return nil, err
		}
	} else {
		out = append(out, records...)
	}
	binary.BigEndian.PutUint32(out[hdrBatchLength:], uint32(len(out)-recordbatch.LengthPrefixSize))
	binary.BigEndian.PutUint32(out[hdrRecordCount:], uint32(count))
	if !b.LogAppendTime() {
		binary.BigEndian.PutUint64(out[hdrMaxTimestamp:], uint64(maxTs))
	}
	binary.BigEndian.PutUint32(out[hdrCRC:], crc32.Checksum(out[hdrAttributes:], castagnoli))
	return out, nil
}
