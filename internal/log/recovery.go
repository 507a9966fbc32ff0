package log

import (
	"errors"
	"fmt"
	"io/fs"
	"math"
	"path/filepath"
	"sort"

	"github.com/runnel-io/runnel/internal/recordbatch"
	"github.com/runnel-io/runnel/internal/vfs"
)

// dirContents is what a partition directory scan found, by ParseFilename only.
type dirContents struct {
	segments  []int64 // base offsets, sorted
	snapshots []int64 // producer snapshot offsets, sorted
}

// scanDir lists the directory and removes leftovers: *.deleted (a deletion the crash
// interrupted), *.tmp, and any *.cleaned or *.swap that finishSwaps left.
func (l *Log) scanDir() (dirContents, error) {
	var d dirContents
	names, err := l.fs.ReadDir(l.dir)
	if err != nil {
		return d, fmt.Errorf("%w: listing %s: %v", ErrKafkaStorage, l.dir, err)
	}
	for _, name := range names {
		t, base, ok := ParseFilename(name)
		if !ok {
			continue
		}
		switch t {
		case FileTypeSegment:
			d.segments = append(d.segments, base)
		case FileTypeProducerSnapshot:
			d.snapshots = append(d.snapshots, base)
		case FileTypeDeleted, FileTypeCleaned, FileTypeSwap, FileTypeTemp:
			if err := l.fs.Remove(filepath.Join(l.dir, name)); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return d, fmt.Errorf("%w: removing %s: %v", ErrKafkaStorage, name, err)
			}
		}
	}
	sort.Slice(d.segments, func(i, j int) bool { return d.segments[i] < d.segments[j] })
	sort.Slice(d.snapshots, func(i, j int) bool { return d.snapshots[i] < d.snapshots[j] })
	return d, nil
}

// load recovers the log at Open:
//
//  1. segments wholly below the recovery point are trusted: their indexes load
//     lazily (rebuilt when missing or insane), only the time index's last entry is
//     read now;
//  2. from the segment holding the recovery point on (always at least the last
//     segment) every batch is read and verified; at the first bad one the segment is
//     truncated, later segments are deleted, and a warning names the file;
//  3. the leader epoch cache and the producer state are rebuilt from the checkpoint,
//     the latest snapshot and the recovered batches;
//  4. everything recovered is fsynced, so the recovery point becomes the log end.
func (l *Log) load(o Options) error {
	if err := l.finishSwaps(); err != nil {
		return err
	}
	gapsBelow := l.loadCleanerState()
	d, err := l.scanDir()
	if err != nil {
		return err
	}
	cfg := l.config.Load()
	ss := make([]*Segment, 0, len(d.segments)+1)
	l.publishLocked(ss)
	for _, base := range d.segments {
		s, err := openSegment(l.fs, l.dir, base, cfg)
		if err != nil {
			return fmt.Errorf("%w: opening segment: %v", ErrKafkaStorage, err)
		}
		ss = append(ss, s)
		l.publishLocked(ss)
	}
	if err := l.epochs.load(l.fs); err != nil {
		l.logger.Warn("leader epoch checkpoint unreadable, rebuilding it from the log", "err", err)
		l.epochs.entries, l.epochs.dirty = nil, true
	}
	if err := l.recoverSegments(o.RecoveryPoint, gapsBelow); err != nil {
		return err
	}
	if err := l.initOffsets(o); err != nil {
		return err
	}
	if err := l.loadProducerState(d.snapshots); err != nil {
		return err
	}
	// What an earlier run left in the page cache is the OS's to keep or evict: the
	// drops (pagecache.go) start at the log end as it is now.
	for _, s := range l.segs() {
		s.cacheDropped.Store((s.size.Load() + pageSize - 1) &^ (pageSize - 1))
	}
	return l.flushLocked(l.leo.Load())
}

// recoverSegments implements steps 1 and 2 of load. Below gapsBelow the log
// cleaner may have removed the last batches of a segment, so a segment may end
// before the next one starts.
func (l *Log) recoverSegments(recoveryPoint, gapsBelow int64) error {
	ss := l.segs()
	if len(ss) == 0 {
		return nil
	}
	// The first segment not wholly below the recovery point. A segment that ends
	// exactly at it may have been flushed while active, before its indexes were
	// written at roll: only a later flush syncs them, and that flush moves the
	// recovery point past the segment. So a trusted segment ends strictly below it.
	start := len(ss) - 1
	for i := 0; i < len(ss)-1; i++ {
		if ss[i+1].baseOffset >= recoveryPoint {
			start = i
			break
		}
	}
	for i := 0; i < start; i++ {
		if err := l.loadTrustedSegment(ss[i], ss[i+1].baseOffset); err != nil {
			return err
		}
	}
	l.epochs.truncateFromEnd(ss[start].baseOffset)
	for i := start; i < len(ss); i++ {
		truncated, err := l.recoverSegment(ss[i])
		if err != nil {
			return err
		}
		// A segment that lost its tail, even at a batch boundary, leaves a hole
		// before the next one: what follows cannot be kept.
		if i < len(ss)-1 && (truncated || !contiguous(ss[i], ss[i+1], gapsBelow)) {
			return l.dropSegmentsAfter(i)
		}
		if i < len(ss)-1 {
			ss[i].nextOffset = ss[i+1].baseOffset
		}
		if i < len(ss)-1 {
			ss[i].builder.finish()
			if err := ss[i].writeIndexes(); err != nil {
				return fmt.Errorf("%w: writing the indexes of %s: %v", ErrKafkaStorage, ss[i].path, err)
			}
			ss[i].needsSync = true
			l.unflushed = append(l.unflushed, ss[i])
		}
	}
	return nil
}

// contiguous reports whether next may follow s: it starts where s ends, or later
// when the cleaner left the gap (next starts at or below gapsBelow).
func contiguous(s, next *Segment, gapsBelow int64) bool {
	return s.nextOffset == next.baseOffset || (s.nextOffset < next.baseOffset && next.baseOffset <= gapsBelow)
}

// loadTrustedSegment fills the state of a segment below the recovery point from its
// time index's last entry (its largest timestamp), loading and checking the indexes
// only when that entry is unusable.
func (l *Log) loadTrustedSegment(s *Segment, next int64) error {
	s.nextOffset = next
	ts, off, err := s.timeIndex.readLastEntry(l.fs)
	if err == nil && (off >= next || (ts >= 0 && off < s.baseOffset)) {
		err = fmt.Errorf("%w: %s last entry offset %d outside the segment", errBadIndex, s.timeIndex.path, off)
	}
	if errors.Is(err, errBadIndex) {
		l.logger.Info("rebuilding index", "segment", s.path, "reason", err)
		if err = s.rebuildIndexes(s.size.Load()); err == nil {
			s.indexesLoaded.Store(true)
			ts, off, _ = s.timeIndex.lastEntry()
			err = s.writeIndexes()
		}
	}
	if err != nil {
		return err
	}
	s.builder.maxTimestamp, s.builder.offsetOfMaxTimestamp = ts, off
	return nil
}

// recoverSegment scans every batch of s, rebuilding its indexes and the epoch cache,
// and truncates it at the first batch that is torn, corrupt or out of order.
func (l *Log) recoverSegment(s *Segment) (truncated bool, err error) {
	size := s.size.Load()
	s.index.reset(nil)
	s.timeIndex.reset(nil)
	s.builder.bytesSinceIndex, s.builder.maxTimestamp, s.builder.offsetOfMaxTimestamp = 0, -1, -1
	next := s.baseOffset
	valid, reason := scanBatches(s.file, 0, size, true, func(b recordbatch.Batch, pos int64) error {
		if b.BaseOffset() < next || b.LastOffset()-s.baseOffset > math.MaxInt32 {
			return fmt.Errorf("%w: batch at offset %d follows offset %d", recordbatch.ErrCorrupt, b.BaseOffset(), next-1)
		}
		s.builder.add(b, pos)
		l.epochs.assign(b.PartitionLeaderEpoch(), b.BaseOffset())
		next = b.NextOffset()
		return nil
	})
	s.nextOffset = next
	s.indexesLoaded.Store(true)
	if valid == size {
		return false, nil
	}
	l.logger.Warn("truncating torn or corrupt segment tail", "segment", s.path, "offset", next,
		"position", valid, "bytes_dropped", size-valid, "reason", reason)
	if err := s.file.Truncate(valid); err != nil {
		return true, fmt.Errorf("%w: truncating %s: %v", ErrKafkaStorage, s.path, err)
	}
	s.size.Store(valid)
	return true, nil
}

// dropSegmentsAfter deletes the segments after index i (they follow a corrupt batch).
func (l *Log) dropSegmentsAfter(i int) error {
	ss := l.segs()
	for _, s := range ss[i+1:] {
		l.logger.Warn("deleting segment after a corrupt batch", "segment", s.path, "bytes", s.size.Load())
		if err := l.removeSegmentFiles(s); err != nil {
			return err
		}
	}
	l.publishLocked(ss[: i+1 : i+1])
	return nil
}

// removeSegmentFiles closes s and removes its files now.
func (l *Log) removeSegmentFiles(s *Segment) error {
	s.close()
	for _, p := range []string{s.path, s.index.path, s.timeIndex.path} {
		if err := l.fs.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("%w: removing %s: %v", ErrKafkaStorage, p, err)
		}
	}
	return nil
}

// initOffsets sets the log end, start and recovery point after recovery, creating
// the first segment of an empty log.
func (l *Log) initOffsets(o Options) error {
	ss := l.segs()
	start := max(o.LogStartOffset, 0)
	if len(ss) > 0 && ss[len(ss)-1].nextOffset < start {
		// The checkpointed log start is past everything recovered: start over there.
		l.logger.Warn("log start offset beyond the recovered log end, starting empty", "log_start", start,
			"log_end", ss[len(ss)-1].nextOffset)
		for _, s := range ss {
			if err := l.removeSegmentFiles(s); err != nil {
				return err
			}
		}
		ss = nil
		l.epochs.clear()
	}
	if len(ss) == 0 {
		s, err := createSegment(l.fs, l.dir, start, l.config.Load())
		if err != nil {
			return fmt.Errorf("%w: creating the first segment: %v", ErrKafkaStorage, err)
		}
		ss = []*Segment{s}
		l.publishLocked(ss)
	}
	leo := ss[len(ss)-1].nextOffset
	l.leo.Store(leo)
	l.logStart.Store(max(start, ss[0].baseOffset))
	l.recoveryPoint.Store(min(max(o.RecoveryPoint, 0), leo))
	l.epochs.truncateFromEnd(leo)
	l.epochs.truncateFromStart(l.logStart.Load())
	return nil
}

// loadProducerState restores the producer state from the latest snapshot at or below
// the log end, then replays the batches after it (all of them without a snapshot).
// Snapshots past the log end (their batches were lost) are deleted.
func (l *Log) loadProducerState(snapshots []int64) error {
	leo := l.leo.Load()
	from := l.logStart.Load()
	l.producers.clear()
	for i := len(snapshots) - 1; i >= 0; i-- {
		off := snapshots[i]
		path := MakeFilename(l.dir, FileTypeProducerSnapshot, off)
		if off > leo {
			if err := l.fs.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return fmt.Errorf("%w: removing %s: %v", ErrKafkaStorage, path, err)
			}
			continue
		}
		if off < from {
			break
		}
		state, err := readProducerSnapshot(l.fs, path)
		if err == nil {
			l.producers.restore(state)
			from = off
			break
		}
		l.logger.Warn("ignoring unreadable producer snapshot", "file", path, "err", err)
	}
	return l.replayProducers(from, leo)
}

func readProducerSnapshot(fsys vfs.FS, path string) (producerSnapshot, error) {
	data, err := vfs.ReadFile(fsys, path)
	if err != nil {
		return producerSnapshot{}, err
	}
	return decodeProducerSnapshot(data)
}

// replayProducers updates the producer state with the batches in [from, to).
func (l *Log) replayProducers(from, to int64) error {
	ss := l.segs()
	for i := max(floorSegment(ss, from), 0); i < len(ss) && ss[i].baseOffset < to; i++ {
		s := ss[i]
		size := s.size.Load()
		valid, err := scanBatches(s.file, 0, size, false, func(b recordbatch.Batch, _ int64) error {
			if b.BaseOffset() >= from && b.BaseOffset() < to {
				l.producers.update(b)
			}
			return nil
		})
		if err != nil || valid != size {
			return fmt.Errorf("%w: rebuilding producer state from %s: bad batch at position %d: %v", ErrCorruption, s.path, valid, err)
		}
	}
	return nil
}

// writeProducerSnapshotLocked writes <offset>.snapshot (the state after every batch
// below offset). It is not fsynced: a torn snapshot fails its CRC and recovery
// falls back to an older one or to a full scan.
func (l *Log) writeProducerSnapshotLocked(offset int64) error {
	path := MakeFilename(l.dir, FileTypeProducerSnapshot, offset)
	f, err := l.fs.OpenFile(path+".tmp", osCreateTrunc, 0o644)
	if err != nil {
		return err
	}
	if _, err := f.Write(l.producers.encode()); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return l.fs.Rename(path+".tmp", path)
}
