package log

import (
	"encoding/binary"
	"time"

	"github.com/runnel-io/runnel/internal/recordbatch"
)

// cleanable is a compacted log's state for the cleaner at one instant (Kafka
// LogToClean): segments wholly below firstDirty are clean, the segments from the one
// holding firstDirty up to firstUncleanable are dirty, the rest (the active segment,
// segments reaching the high watermark or the recovery point, segments younger than
// min.compaction.lag.ms) may not be cleaned yet.
type cleanable struct {
	log  *Log
	cfg  *Config
	segs []*Segment // the segment list at that instant
	// ends[i] is the offset after segment i: the next segment's base, or the log
	// end for the last one.
	ends             []int64
	firstDirty       int64
	firstUncleanable int64 // the base offset of a segment
	cleanBytes       int64
	dirtyBytes       int64
	// needNow is true when the oldest dirty record is older than max.compaction.lag.ms.
	needNow bool
}

// ratio is the dirty share of the cleanable part of the log.
func (c *cleanable) ratio() float64 {
	if c.cleanBytes+c.dirtyBytes == 0 {
		return 0
	}
	return float64(c.dirtyBytes) / float64(c.cleanBytes+c.dirtyBytes)
}

// worthCleaning is Kafka's choice of the logs to clean: some dirty bytes, and the
// dirty ratio at least min.cleanable.dirty.ratio or max.compaction.lag.ms passed.
func (c *cleanable) worthCleaning() bool {
	return c.dirtyBytes > 0 && (c.ratio() >= c.cfg.MinCleanableDirtyRatio || c.needNow)
}

// dirtySegments returns the indexes [from, to) of the dirty segments.
func (c *cleanable) dirtySegments() (from, to int) {
	from = len(c.segs)
	for i := range c.segs {
		if c.ends[i] > c.firstDirty && from == len(c.segs) {
			from = i
		}
		if c.segs[i].baseOffset >= c.firstUncleanable {
			return min(from, i), i
		}
	}
	return from, len(c.segs)
}

// cleanableAt computes the log's cleanable state at now. ok is false for a log that
// is not compacted or is closed.
func (l *Log) cleanableAt(now time.Time) (c cleanable, ok bool) {
	cfg := l.config.Load()
	if !cfg.Compact() || l.closed.Load() || l.damaged.Load() != nil {
		// A damaged log is left alone until repaired: the cleaner would stop at
		// the damage, and its offset map could not see the keys it holds.
		return cleanable{}, false
	}
	times := l.segmentTimes()
	leo, logStart := l.leo.Load(), l.logStart.Load()
	c = cleanable{log: l, cfg: cfg, segs: make([]*Segment, len(times)), ends: make([]int64, len(times))}
	for i, st := range times {
		c.segs[i] = st.seg
		c.ends[i] = leo
		if i > 0 {
			c.ends[i-1] = st.seg.baseOffset
		}
	}
	c.firstDirty = l.cleanerEnd.Load()
	if c.firstDirty < logStart || c.firstDirty > leo {
		c.firstDirty = logStart
	}
	c.firstUncleanable = l.firstUncleanable(&c, times, now)
	from, to := c.dirtySegments()
	for i, s := range c.segs[:to] {
		if i < from {
			c.cleanBytes += s.size.Load()
		} else {
			c.dirtyBytes += s.size.Load()
		}
	}
	if from < to && cfg.MaxCompactionLagMs < 1<<62 {
		ts, found := firstBatchTimestamp(c.segs[from])
		c.needNow = found && now.UnixMilli()-ts > cfg.MaxCompactionLagMs
	}
	return c, true
}

// firstUncleanable is the base of the first segment that may not be cleaned: the
// active one, the first one not wholly below the high watermark and the recovery
// point (the cleaner only rewrites records that are committed and durable, so a
// truncation never removes a record that superseded a cleaned one), or the first
// dirty one whose newest record is younger than min.compaction.lag.ms.
func (l *Log) firstUncleanable(c *cleanable, times []segmentTimes, now time.Time) int64 {
	bound := l.recoveryPoint.Load()
	if hw := l.highWatermark.Load(); hw >= 0 {
		bound = min(bound, hw)
	}
	last := len(c.segs) - 1
	for i, st := range times[:last] {
		young := c.cfg.MinCompactionLagMs > 0 && c.ends[i] > c.firstDirty &&
			st.maxTimestamp > now.UnixMilli()-c.cfg.MinCompactionLagMs
		if c.ends[i] > bound || young {
			return st.seg.baseOffset
		}
	}
	return c.segs[last].baseOffset
}

// firstBatchTimestamp reads the max timestamp of a segment's first batch (Kafka
// LogSegment.getFirstBatchTimestamp).
func firstBatchTimestamp(s *Segment) (int64, bool) {
	if s.size.Load() < recordbatch.HeaderSize {
		return 0, false
	}
	var h [recordbatch.HeaderSize]byte
	if _, err := s.file.ReadAt(h[:], 0); err != nil {
		return 0, false
	}
	return int64(binary.BigEndian.Uint64(h[hdrMaxTimestamp:])), true
}
