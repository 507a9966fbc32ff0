package log

import (
	"errors"
	"fmt"
	"math"
	"syscall"
	"time"

	"github.com/runnel-io/runnel/internal/recordbatch"
)

// AppendInfo describes an append.
type AppendInfo struct {
	FirstOffset, LastOffset int64
	// LogAppendTime is the time stamped on the batches of a LogAppendTime topic, in ms;
	// -1 for CreateTime topics.
	LogAppendTime  int64
	LogStartOffset int64
	NumBatches     int
	NumRecords     int
	Bytes          int
	// Duplicate is true for a retry of an idempotent batch already in the log: nothing
	// was written and the offsets are the original ones.
	Duplicate bool
}

// appendBatches are the batches of one append, framed once by frameBatches and read
// by every later step (stamping, the idempotence checks, the roll decision, indexing,
// the epoch cache and the producer state) instead of each walking the bytes again.
// Each batch is a view into the append's bytes, so stamping through one is seen by all.
type appendBatches struct {
	list       []recordbatch.Batch
	records    int  // the records of every batch, summed
	idempotent bool // some batch has a producer id
}

// maxInlineBatches is how many batches an append frames without allocating (a client
// sends one batch per partition per request; a follower a few).
const maxInlineBatches = 8

// frameBatches checks every batch before anything is written: framing, CRC, magic
// and, for the leader, the size limit, a nonzero record count matching
// lastOffsetDelta, and no control batches. It never decompresses. The batches are
// appended to into (pass a stack array's [:0] to keep a small append allocation-free).
func frameBatches(records []byte, leader bool, maxBytes int32, into []recordbatch.Batch) (appendBatches, error) {
	v := appendBatches{list: into}
	if len(records) == 0 {
		return v, fmt.Errorf("%w: no batches", ErrInvalidRecord)
	}
	for rest := records; len(rest) > 0; {
		n := len(v.list)
		b, next, err := recordbatch.Next(rest, 0)
		if err != nil {
			return v, fmt.Errorf("%w: batch %d: %v", ErrCorruption, n, err)
		}
		rest = next
		if leader && len(b) > int(maxBytes) {
			return v, fmt.Errorf("%w: batch %d is %d bytes, max.message.bytes is %d", ErrRecordTooLarge, n, len(b), maxBytes)
		}
		if err := b.Verify(); err != nil {
			if errors.Is(err, recordbatch.ErrUnsupportedMagic) {
				return v, fmt.Errorf("%w: batch %d: %v", ErrInvalidRecord, n, err)
			}
			return v, fmt.Errorf("%w: batch %d: %v", ErrCorruption, n, err)
		}
		if leader {
			if err := validateLeaderBatch(b); err != nil {
				return v, fmt.Errorf("%w: batch %d: %v", ErrInvalidRecord, n, err)
			}
		}
		v.list = append(v.list, b)
		v.records += int(b.RecordCount())
		v.idempotent = v.idempotent || b.ProducerID() >= 0
	}
	return v, nil
}

func validateLeaderBatch(b recordbatch.Batch) error {
	n := b.RecordCount()
	switch {
	case n == 0:
		return errors.New("no records")
	case n != b.LastOffsetDelta()+1:
		return fmt.Errorf("record count %d does not match last offset delta %d", n, b.LastOffsetDelta())
	case b.IsControl():
		return errors.New("control batches cannot be produced")
	}
	return nil
}

// AppendAsLeader validates records (one or more concatenated v2 batches), assigns
// offsets from the log end offset and stamps the leader epoch in place, then appends.
// See the package documentation for the idempotence rules. It does not fsync: the
// caller asks NeedsFlush and calls Flush before acknowledging.
func (l *Log) AppendAsLeader(records []byte, leaderEpoch int32) (AppendInfo, error) {
	cfg := l.config.Load()
	var inline [maxInlineBatches]recordbatch.Batch
	v, err := frameBatches(records, true, cfg.MaxMessageBytes, inline[:0])
	if err != nil {
		return AppendInfo{}, err
	}
	if cfg.Compact() {
		// A compacted log refuses records without a key (record_keys.go).
		if err := checkKeys(records, l.tp); err != nil {
			return AppendInfo{}, err
		}
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.checkWritableLocked(); err != nil {
		return AppendInfo{}, err
	}
	if v.idempotent {
		if info, dup, err := l.checkProducersLocked(v.list); dup || err != nil {
			return info, err
		}
	}
	now := l.now()
	info := AppendInfo{FirstOffset: l.leo.Load(), LogAppendTime: -1, NumBatches: len(v.list), NumRecords: v.records, Bytes: len(records)}
	if cfg.MessageTimestampType == LogAppendTime {
		info.LogAppendTime = now.UnixMilli()
	}
	info.LastOffset = stampBatches(v.list, info.FirstOffset, leaderEpoch, info.LogAppendTime)
	if err := l.appendLocked(records, v.list, info.LastOffset, cfg, now); err != nil {
		return AppendInfo{}, err
	}
	l.epochs.assign(leaderEpoch, info.FirstOffset)
	if v.idempotent {
		for _, b := range v.list {
			l.producers.update(b)
		}
	}
	info.LogStartOffset = l.logStart.Load()
	return info, nil
}

// stampBatches assigns offsets from first, stamps the leader epoch and, when
// appendTime >= 0, the log append time, in place. It returns the last offset.
func stampBatches(batches []recordbatch.Batch, first int64, leaderEpoch int32, appendTime int64) int64 {
	next := first
	for _, b := range batches {
		b.SetBaseOffset(next)
		b.SetPartitionLeaderEpoch(leaderEpoch)
		if appendTime >= 0 {
			b.SetLogAppendTime(appendTime)
		}
		next = b.NextOffset()
	}
	return next - 1
}

// checkProducersLocked runs the idempotence checks of every batch. dup is true when
// the append is a retry: info then carries the original offsets.
func (l *Log) checkProducersLocked(batches []recordbatch.Batch) (info AppendInfo, dup bool, err error) {
	var stack [4]pendingSeq
	pending := stack[:0]
	for _, b := range batches {
		if b.ProducerID() < 0 {
			continue
		}
		orig, err := l.producers.check(b, pending)
		if err != nil {
			return AppendInfo{}, false, err
		}
		if orig != nil {
			return AppendInfo{FirstOffset: orig.firstOffset, LastOffset: orig.lastOffset, LogAppendTime: -1,
				LogStartOffset: l.logStart.Load(), NumBatches: 1, NumRecords: int(b.RecordCount()), Duplicate: true}, true, nil
		}
		_, last := batchSeqs(b)
		pending = append(pending, pendingSeq{pid: b.ProducerID(), epoch: b.ProducerEpoch(), lastSeq: last})
	}
	return AppendInfo{}, false, nil
}

// AppendAsFollower appends batches fetched from the leader as they are: offsets and
// leader epochs are kept. The first batch must start at or after the log end offset
// (ErrOffsetOutOfRange otherwise; after the leader's log cleaner removed batches,
// the next one may start later) and offsets must increase.
//
// One exception, Kafka's (Partition.appendRecordsToFollowerOrFutureReplica): an empty
// log (its start is its end: a follower restarted at its leader's log start, a mirror
// at its source's) whose first batch begins below its end and reaches it. DeleteRecords
// moved the leader's log start into that batch, which the leader keeps whole; the log
// restarts at the batch's base offset, stores it whole, and keeps its log start, so the
// offsets below stay unreadable as on the leader. Refused, the append would fail at
// every fetch and the replica never catch up.
func (l *Log) AppendAsFollower(records []byte) (AppendInfo, error) {
	info, err := l.appendAsFollower(records)
	var mid errStartsMidBatch
	if !errors.As(err, &mid) {
		return info, err
	}
	if err := l.TruncateFullyAndStartAt(mid.base); err != nil {
		return AppendInfo{}, err
	}
	if info, err = l.appendAsFollower(records); err != nil {
		return info, err
	}
	if _, err := l.DeleteRecordsBefore(mid.logStart); err != nil {
		return AppendInfo{}, err
	}
	info.LogStartOffset = l.LogStartOffset()
	return info, nil
}

// errStartsMidBatch is appendAsFollower's refusal of a first batch that begins below
// the end of an empty log and reaches it (see AppendAsFollower).
type errStartsMidBatch struct{ base, logStart int64 }

func (e errStartsMidBatch) Error() string {
	return fmt.Sprintf("%v: follower append starts at %d, inside the batch holding the log start %d", ErrOffsetOutOfRange, e.base, e.logStart)
}

func (e errStartsMidBatch) Unwrap() error { return ErrOffsetOutOfRange }

func (l *Log) appendAsFollower(records []byte) (AppendInfo, error) {
	var inline [maxInlineBatches]recordbatch.Batch
	v, err := frameBatches(records, false, 0, inline[:0])
	if err != nil {
		return AppendInfo{}, err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.checkWritableLocked(); err != nil {
		return AppendInfo{}, err
	}
	leo := l.leo.Load()
	info := AppendInfo{FirstOffset: v.list[0].BaseOffset(), LogAppendTime: -1,
		NumBatches: len(v.list), NumRecords: v.records, Bytes: len(records)}
	if info.FirstOffset < leo {
		if leo == l.logStart.Load() && v.list[0].NextOffset() > leo {
			return AppendInfo{}, errStartsMidBatch{base: info.FirstOffset, logStart: leo}
		}
		return AppendInfo{}, fmt.Errorf("%w: follower append starts at %d, the log ends at %d", ErrOffsetOutOfRange, info.FirstOffset, leo)
	}
	next := leo
	for _, b := range v.list {
		if b.BaseOffset() < next {
			return AppendInfo{}, fmt.Errorf("%w: batch at offset %d follows offset %d", ErrInvalidRecord, b.BaseOffset(), next-1)
		}
		next = b.NextOffset()
	}
	info.LastOffset = next - 1
	if err := l.appendLocked(records, v.list, info.LastOffset, l.config.Load(), l.now()); err != nil {
		return AppendInfo{}, err
	}
	for _, b := range v.list {
		l.epochs.assign(b.PartitionLeaderEpoch(), b.BaseOffset())
		l.producers.update(b)
	}
	info.LogStartOffset = l.logStart.Load()
	return info, nil
}

// appendLocked writes validated, stamped batches (records, framed as batches) at the
// end of the active segment, rolling first when needed, then indexes them and
// publishes the new size and LEO.
func (l *Log) appendLocked(records []byte, batches []recordbatch.Batch, last int64, cfg *Config, now time.Time) error {
	seg := l.activeLocked()
	if l.shouldRollLocked(seg, int64(len(records)), last, maxBatchTimestamp(batches), cfg, now) {
		if err := l.rollLocked(now); err != nil {
			return err
		}
		seg = l.activeLocked()
	}
	pos := seg.size.Load()
	if _, err := seg.file.WriteAt(records, pos); err != nil {
		// Readers never see the partial write (size is not published); drop it so
		// that a reopen does not have to. Once it is dropped, a full disk leaves
		// nothing behind and the log can go on when space is freed; any other write
		// error, or a failed cut, takes the log offline.
		terr := seg.file.Truncate(pos)
		if terr == nil && (errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT)) {
			return l.noSpaceLocked(err)
		}
		if terr != nil {
			err = errors.Join(err, fmt.Errorf("cutting the failed write back to %d bytes: %w", pos, terr))
		}
		return l.failLocked("write", err)
	}
	if l.noSpace {
		l.noSpace = false
		l.logger.Info("disk has room again: appends resumed", "dir", l.dir)
	}
	p := pos
	for _, b := range batches {
		if p == 0 { // the segment's first batch
			seg.firstBatchTimestamp, seg.firstBatchTimestampLoaded = b.MaxTimestamp(), true
		}
		seg.builder.add(b, p)
		p += int64(len(b))
	}
	seg.nextOffset = last + 1
	seg.size.Store(p)
	l.undropped += int64(len(records))
	l.leo.Store(last + 1)
	return nil
}

// shouldRollLocked is Kafka's LogSegment.shouldRoll: the batches would not fit in
// segment.bytes, the segment spans more than segment.ms (or max.compaction.lag.ms for a
// compacted log), its index is full, or an offset would not fit in a 4-byte relative
// offset. As Kafka, the span is measured in record time: from the max timestamp of the
// segment's first batch (read back from the file after a restart) to the max timestamp
// of the batches appended (maxTs); while the first batch's is unknown, in wall time
// since the segment was created or opened.
func (l *Log) shouldRollLocked(seg *Segment, n, last, maxTs int64, cfg *Config, now time.Time) bool {
	size := seg.size.Load()
	if size == 0 {
		return false
	}
	waited := now.Sub(seg.created).Milliseconds()
	if base := seg.rollBaseTimestamp(); base >= 0 {
		waited = maxTs - base
	}
	return size > cfg.SegmentBytes-n ||
		waited > cfg.maxSegmentMs() ||
		seg.index.isFull() ||
		last-seg.baseOffset > math.MaxInt32
}

// maxBatchTimestamp is the largest max timestamp of batches (read after stamping: a
// LogAppendTime topic's batches carry the append time).
func maxBatchTimestamp(batches []recordbatch.Batch) int64 {
	maxTs := int64(-1)
	for _, b := range batches {
		maxTs = max(maxTs, b.MaxTimestamp())
	}
	return maxTs
}

// Roll starts a new active segment at the log end offset (a no-op when the active
// segment is empty).
func (l *Log) Roll() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.checkWritableLocked(); err != nil {
		return err
	}
	return l.rollLocked(l.now())
}

// rollLocked closes the active segment (final time index entry, index files written
// without fsync), snapshots the producer state, and creates the new active segment.
// The old segment is fsynced by the next Flush, outside the append lock.
func (l *Log) rollLocked(now time.Time) error {
	old := l.activeLocked()
	leo := l.leo.Load()
	if old.size.Load() == 0 && old.baseOffset == leo {
		return nil
	}
	old.builder.finish()
	if err := old.writeIndexes(); err != nil {
		return l.failLocked("write index", err)
	}
	old.index.trim()
	old.timeIndex.trim()
	if err := l.writeProducerSnapshotLocked(leo); err != nil {
		return l.failLocked("write producer snapshot", err)
	}
	seg, err := createSegment(l.fs, l.dir, leo, l.config.Load())
	if err != nil {
		return l.failLocked("create segment", err)
	}
	old.needsSync = true
	l.unflushed = append(l.unflushed, old)
	ss := l.segs()
	l.publishLocked(append(ss[:len(ss):len(ss)], seg))
	l.noteIndexesUsed(old)
	l.logger.Debug("rolled segment", "base", leo, "previous", old.baseOffset, "bytes", old.size.Load())
	return nil
}
