package log

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"time"
)

// DeleteOldSegments applies retention.ms and retention.bytes (when cleanup.policy
// has delete) and removes the segments wholly below the log start offset (Kafka
// deleteOldSegments). Segments go oldest
// first and only while the predicate holds; a segment holding offsets at or above
// the high watermark (SetHighWatermark) is kept. When every segment is deletable the
// log rolls first, so the new empty active segment remains (the Kafka way). Files
// are renamed *.deleted and removed after file.delete.delay.ms. It returns the number
// of segments deleted and advances the log start offset.
func (l *Log) DeleteOldSegments(now time.Time) (int, error) {
	l.flushMu.Lock()
	defer l.flushMu.Unlock()
	if l.closed.Load() {
		return 0, ErrClosed
	}
	l.removeExpiredDeletes(now, false)
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.checkWritableLocked(); err != nil {
		return 0, err
	}
	n := l.deletableSegmentsLocked(now)
	if n == 0 {
		return 0, nil
	}
	ss := l.segs()
	if n == len(ss) {
		if err := l.rollLocked(now); err != nil {
			return 0, err
		}
	}
	return n, l.deleteOldestLocked(n, "retention", now)
}

// deletableSegmentsLocked returns how many of the oldest segments retention deletes.
func (l *Log) deletableSegmentsLocked(now time.Time) int {
	cfg := l.config.Load()
	ss := l.segs()
	leo, hw, logStart := l.leo.Load(), l.highWatermark.Load(), l.logStart.Load()
	diff := l.Size() - cfg.RetentionBytes
	byTime, bySize, byStart := cfg.Delete(), cfg.Delete() && cfg.RetentionBytes >= 0, true
	n := 0
	for i, s := range ss {
		upper := leo
		if i+1 < len(ss) {
			upper = ss[i+1].baseOffset
		}
		size := s.size.Load()
		if (hw >= 0 && upper > hw) || (i == len(ss)-1 && size == 0) {
			break
		}
		// An empty segment before the last can only be left by the cleaner: it
		// holds nothing to keep.
		byTime = byTime && cfg.RetentionMs >= 0 && ((s.builder.maxTimestamp >= 0 &&
			now.UnixMilli()-s.builder.maxTimestamp > cfg.RetentionMs) || size == 0)
		bySize = bySize && diff-size >= 0
		diff -= size
		byStart = byStart && i+1 < len(ss) && upper <= logStart
		if !byTime && !bySize && !byStart {
			break
		}
		n = i + 1
	}
	return n
}

// DeleteRecordsBefore advances the log start offset to off (DeleteRecords; the caller
// checks off <= high watermark) and deletes the segments wholly below it. off past
// the log end is ErrOffsetOutOfRange; off at or below the log start changes nothing.
func (l *Log) DeleteRecordsBefore(off int64) (int64, error) {
	l.flushMu.Lock()
	defer l.flushMu.Unlock()
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.checkWritableLocked(); err != nil {
		return 0, err
	}
	if off > l.leo.Load() {
		return 0, fmt.Errorf("%w: delete records before %d, log end is %d", ErrOffsetOutOfRange, off, l.leo.Load())
	}
	if off <= l.logStart.Load() {
		return l.logStart.Load(), nil
	}
	l.advanceLogStartLocked(off)
	ss := l.segs()
	n := 0
	for n+1 < len(ss) && ss[n+1].baseOffset <= off {
		n++
	}
	if err := l.deleteOldestLocked(n, "delete records", l.now()); err != nil {
		return 0, err
	}
	return l.logStart.Load(), nil
}

func (l *Log) advanceLogStartLocked(off int64) {
	if off <= l.logStart.Load() {
		return
	}
	l.logStart.Store(off)
	l.epochs.truncateFromStart(off)
	l.producers.truncateHead(off)
}

// deleteOldestLocked removes the n oldest segments (never all of them) from the log
// and retires their files. Called with flushMu and mu held.
func (l *Log) deleteOldestLocked(n int, reason string, now time.Time) error {
	if n == 0 {
		return nil
	}
	ss := l.segs()
	victims := ss[:n]
	l.publishLocked(append([]*Segment(nil), ss[n:]...))
	l.advanceLogStartLocked(ss[n].baseOffset)
	l.dropUnflushedLocked(victims)
	for _, s := range victims {
		l.logger.Info("deleting segment", "reason", reason, "segment", s.path, "bytes", s.size.Load())
	}
	if err := l.retireLocked(victims, now); err != nil {
		return err
	}
	for _, s := range victims {
		if len(s.damaged()) > 0 {
			// Retention took a damaged segment; its quarantined copy stays.
			l.refreshDamage()
			if err := l.writeDamageCheckpoint(); err != nil {
				l.logger.Error("cannot write the damaged ranges checkpoint", "err", err)
			}
			break
		}
	}
	return l.removeSnapshotsBelow(ss[n].baseOffset)
}

func (l *Log) dropUnflushedLocked(victims []*Segment) {
	keep := l.unflushed[:0]
	for _, s := range l.unflushed {
		gone := false
		for _, v := range victims {
			gone = gone || v == s
		}
		if !gone {
			keep = append(keep, s)
		}
	}
	l.unflushed = keep
}

// retireLocked renames the files of segments already out of the list to *.deleted
// and schedules their removal after file.delete.delay.ms, so that reads in flight
// finish. Renaming under mu keeps a new segment at the same base from colliding.
func (l *Log) retireLocked(victims []*Segment, now time.Time) error {
	delay := time.Duration(l.config.Load().FileDeleteDelayMs) * time.Millisecond
	for _, s := range victims {
		for _, p := range []string{s.path, s.index.path, s.timeIndex.path} {
			if err := l.fs.Rename(p, DeletedFilename(p)); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return l.failLocked("rename to .deleted", err)
			}
		}
		l.pendingDeletes = append(l.pendingDeletes, pendingDelete{seg: s, at: now.Add(delay)})
	}
	if delay == 0 {
		l.removeExpiredDeletes(now, false)
	}
	return nil
}

// removeExpiredDeletes closes and removes the retired segments whose delay has
// passed (all of them when force). Called with flushMu held. Errors are logged: the
// files are removed again at the next Open.
func (l *Log) removeExpiredDeletes(now time.Time, force bool) {
	keep := l.pendingDeletes[:0]
	for _, d := range l.pendingDeletes {
		if !force && now.Before(d.at) {
			keep = append(keep, d)
			continue
		}
		d.seg.close()
		for _, p := range []string{d.seg.path, d.seg.index.path, d.seg.timeIndex.path} {
			if err := l.fs.Remove(DeletedFilename(p)); err != nil && !errors.Is(err, fs.ErrNotExist) {
				l.logger.Warn("cannot remove deleted segment file", "file", p, "err", err)
			}
		}
	}
	l.pendingDeletes = keep
}

// removeSnapshotsBelow removes the producer snapshots below offset (their segments
// are gone), or all of them when offset < 0.
func (l *Log) removeSnapshotsBelow(offset int64) error {
	names, err := l.fs.ReadDir(l.dir)
	if err != nil {
		return l.failLocked("list", err)
	}
	for _, name := range names {
		t, base, ok := ParseFilename(name)
		if !ok || t != FileTypeProducerSnapshot || (offset >= 0 && base >= offset) {
			continue
		}
		if err := l.fs.Remove(filepath.Join(l.dir, name)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return l.failLocked("remove snapshot", err)
		}
	}
	return nil
}

// removeSnapshotsAbove removes the producer snapshots above offset (after truncation).
func (l *Log) removeSnapshotsAbove(offset int64) error {
	names, err := l.fs.ReadDir(l.dir)
	if err != nil {
		return l.failLocked("list", err)
	}
	for _, name := range names {
		if t, base, ok := ParseFilename(name); ok && t == FileTypeProducerSnapshot && base > offset {
			if err := l.fs.Remove(filepath.Join(l.dir, name)); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return l.failLocked("remove snapshot", err)
			}
		}
	}
	return nil
}
