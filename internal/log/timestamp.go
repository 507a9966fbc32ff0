package log

import (
	"encoding/binary"
	"errors"
	"io"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/runnel-io/runnel/internal/recordbatch"
)

// Special timestamps of ListOffsets.
const (
	LatestTimestamp   int64 = -1
	EarliestTimestamp int64 = -2
	MaxTimestamp      int64 = -3
)

// segmentTimes is a snapshot of a segment's largest timestamp, taken under mu.
type segmentTimes struct {
	seg          *Segment
	maxTimestamp int64
	offsetOfMax  int64
}

func (l *Log) segmentTimes() []segmentTimes {
	l.mu.Lock()
	defer l.mu.Unlock()
	ss := l.segs()
	out := make([]segmentTimes, len(ss))
	for i, s := range ss {
		out[i] = segmentTimes{seg: s, maxTimestamp: s.builder.maxTimestamp, offsetOfMax: s.builder.offsetOfMaxTimestamp}
	}
	return out
}

// FetchOffsetByTimestamp answers ListOffsets. ts >= 0: the first offset whose record
// timestamp is >= ts, found through the time indexes, then a scan of batch headers,
// then the records of the one batch that holds it (decompressed when compressed, as
// Kafka does: a consumer seeking to a time must not be handed the earlier records of
// that batch). LatestTimestamp gives the log end offset,
// EarliestTimestamp the log start offset, MaxTimestamp the offset of the record with
// the largest timestamp. ok is false when no record qualifies.
func (l *Log) FetchOffsetByTimestamp(ts int64) (offset int64, timestamp int64, ok bool) {
	switch {
	case ts == LatestTimestamp:
		return l.leo.Load(), -1, true
	case ts == EarliestTimestamp:
		return l.logStart.Load(), -1, true
	case ts == MaxTimestamp:
		return l.offsetOfMaxTimestamp()
	case ts < 0:
		return -1, -1, false
	}
	logStart := l.logStart.Load()
	for _, st := range l.segmentTimes() {
		if st.maxTimestamp < ts {
			continue
		}
		from := max(st.seg.baseOffset, logStart)
		if err := st.seg.ensureIndexes(); err != nil {
			return -1, -1, false
		}
		l.noteIndexesUsed(st.seg)
		if off, found := st.seg.timeIndex.lookupBefore(ts); found {
			from = max(from, off+1)
		}
		if off, t, found := l.scanForTimestamp(st.seg, from, ts); found {
			return max(off, logStart), t, true
		}
	}
	return -1, -1, false
}

// scanForTimestamp finds in seg, from offset from on, the first record with a
// timestamp >= ts.
func (l *Log) scanForTimestamp(seg *Segment, from, ts int64) (int64, int64, bool) {
	h := getHdrBuf()
	defer hdrPool.Put(h)
	limit := seg.size.Load()
	pos, hdr, found, err := seg.translate(from, limit, h)
	if err != nil || !found || hdr.hole {
		return -1, -1, false
	}
	limit = nextHole(seg.damaged(), pos, limit) // damaged bytes are no batches
	var res struct {
		off, ts int64
		ok      bool
	}
	errFound := errors.New("found")
	scanBatches(seg.file, pos, limit, false, func(b recordbatch.Batch, _ int64) error {
		if b.MaxTimestamp() < ts {
			return nil
		}
		res.off, res.ts, res.ok = findRecord(b, from, ts)
		if res.ok {
			return errFound
		}
		return nil
	})
	return res.off, res.ts, res.ok
}

// offsetOfMaxTimestamp finds the record with the largest timestamp (the first one
// on ties).
func (l *Log) offsetOfMaxTimestamp() (int64, int64, bool) {
	best := segmentTimes{maxTimestamp: -1}
	for _, st := range l.segmentTimes() {
		if st.maxTimestamp > best.maxTimestamp && st.offsetOfMax >= l.logStart.Load() {
			best = st
		}
	}
	if best.seg == nil {
		return -1, -1, false
	}
	h := getHdrBuf()
	defer hdrPool.Put(h)
	pos, hdr, found, err := best.seg.translate(best.offsetOfMax, best.seg.size.Load(), h)
	if err != nil || !found || hdr.hole {
		return best.offsetOfMax, best.maxTimestamp, true
	}
	b := make([]byte, hdr.size)
	if _, err := best.seg.file.ReadAt(b, pos); err != nil && !errors.Is(err, io.EOF) {
		return best.offsetOfMax, best.maxTimestamp, true
	}
	if off, t, ok := findRecord(recordbatch.Batch(b), hdr.base, best.maxTimestamp); ok {
		return off, t, true
	}
	return best.offsetOfMax, best.maxTimestamp, true
}

// findRecord returns the first record of b at or after offset from whose timestamp
// is >= ts. LogAppendTime batches carry one timestamp for every record. A compressed
// batch is decompressed; one that does not decompress (damage is found and reported
// by the reads and the scrubber, not here) stands for its records by its first offset.
func findRecord(b recordbatch.Batch, from, ts int64) (int64, int64, bool) {
	if b.MaxTimestamp() < ts {
		return -1, -1, false
	}
	if b.LogAppendTime() {
		return max(b.BaseOffset(), from), b.MaxTimestamp(), true
	}
	p := []byte(b[recordbatch.HeaderSize:])
	if b.Compression() != 0 {
		out, err := batchDecompressor.Decompress(p, kgo.CompressionCodecType(b.Compression()))
		if err != nil {
			return max(b.BaseOffset(), from), b.MaxTimestamp(), true
		}
		p = out
	}
	for i := int32(0); i < b.RecordCount() && len(p) > 0; i++ {
		length, n := binary.Varint(p)
		if n <= 0 || length < 0 || int64(len(p)-n) < length {
			break
		}
		rec := p[n : n+int(length)]
		p = p[n+int(length):]
		if len(rec) < 1 {
			break
		}
		tsDelta, n1 := binary.Varint(rec[1:])
		if n1 <= 0 {
			break
		}
		offDelta, n2 := binary.Varint(rec[1+n1:])
		if n2 <= 0 {
			break
		}
		off, t := b.BaseOffset()+offDelta, b.BaseTimestamp()+tsDelta
		if off >= from && t >= ts {
			return off, t, true
		}
	}
	return -1, -1, false
}
