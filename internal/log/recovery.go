package log

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
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
//     segment), and in every segment damaged-ranges-checkpoint names, every batch is
//     read and verified. A torn tail (bad bytes from at or above the recovery point
//     to the end of their segment, with no valid batch after them there) is cut and
//     later segments are deleted, with a warning naming the file; any other bad
//     bytes are damage, kept and quarantined (damage.go);
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
	rebuildEpochs := false
	if err := l.epochs.load(l.fs); err != nil {
		l.logger.Warn("leader epoch checkpoint unreadable, rebuilding it from the log", "file", l.epochs.path, "err", err)
		l.quarantineFile(l.epochs.path)
		l.epochs.entries, l.epochs.dirty = nil, true
		rebuildEpochs = true
	}
	known, trustKnown := l.readDamageCheckpoint()
	if err := l.recoverSegments(o.RecoveryPoint, gapsBelow, known, trustKnown, rebuildEpochs); err != nil {
		return err
	}
	if err := l.initOffsets(o); err != nil {
		return err
	}
	l.refreshDamage()
	if err := l.writeDamageCheckpoint(); err != nil {
		return err
	}
	if !rebuildEpochs && !l.epochsMatchLog() {
		l.logger.Warn("leader epoch checkpoint does not match the log, rebuilding it from the log", "file", l.epochs.path)
		l.quarantineFile(l.epochs.path)
		l.epochs.entries, l.epochs.dirty = nil, true
		for _, s := range l.segs() {
			if err := l.assignEpochsOf(s); err != nil {
				return err
			}
		}
		l.epochs.truncateFromEnd(l.leo.Load())
		l.epochs.truncateFromStart(l.logStart.Load())
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
// before the next one starts. known lists the damage recorded before (the segments
// to scan again even below the recovery point); with trustKnown false that list was
// lost and every segment is scanned. rebuildEpochs: the epoch checkpoint was
// unreadable, so the epochs of the segments below the recovery point are read from
// their batch headers.
func (l *Log) recoverSegments(recoveryPoint, gapsBelow int64, known map[damageKey]DamagedRange, trustKnown, rebuildEpochs bool) error {
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
	damagedBases := map[int64]bool{}
	for k := range known {
		damagedBases[k.base] = true
	}
	for i := 0; i < start; i++ {
		var err error
		if !trustKnown || damagedBases[ss[i].baseOffset] {
			// Below the recovery point: bad bytes are damage, never a torn tail.
			_, err = l.recoverSegment(ss[i], recoveryPoint, ss[i+1].baseOffset, true, rebuildEpochs, known)
			if err == nil {
				ss[i].nextOffset = ss[i+1].baseOffset
				ss[i].builder.finish()
				err = ss[i].writeIndexes()
			}
		} else {
			err = l.loadTrustedSegment(ss[i], ss[i+1].baseOffset)
			if err == nil && rebuildEpochs {
				err = l.assignEpochsOf(ss[i])
			}
		}
		if err != nil {
			return err
		}
	}
	l.epochs.truncateFromEnd(ss[start].baseOffset)
	for i := start; i < len(ss); i++ {
		nextBase := int64(-1)
		if i < len(ss)-1 {
			nextBase = ss[i+1].baseOffset
		}
		truncated, err := l.recoverSegment(ss[i], recoveryPoint, nextBase, false, true, known)
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
// only when that entry is unusable: then the segment is scanned (rescanSegment).
func (l *Log) loadTrustedSegment(s *Segment, next int64) error {
	s.nextOffset = next
	ts, off, err := s.timeIndex.readLastEntry(l.fs)
	if err == nil && (off >= next || (ts >= 0 && off < s.baseOffset)) {
		err = fmt.Errorf("%w: %s last entry offset %d outside the segment", errBadIndex, s.timeIndex.path, off)
	}
	if errors.Is(err, errBadIndex) {
		l.logger.Warn("index file fails its check: rebuilding it from the segment", "file", s.timeIndex.path, "reason", err)
		return l.rescanSegment(s)
	}
	if err != nil {
		return err
	}
	s.builder.maxTimestamp, s.builder.offsetOfMaxTimestamp = ts, off
	return nil
}

// rescanSegment scans a segment below the recovery point (never the last one) in
// full: its indexes are rebuilt and written, and any damage is recorded, never cut.
// Called during Open, or with flushMu held.
func (l *Log) rescanSegment(s *Segment) error {
	ss := l.segs()
	i := floorSegment(ss, s.baseOffset)
	if i < 0 || i+1 >= len(ss) || ss[i] != s {
		return fmt.Errorf("%w: rescanning %s: not an inactive segment of the log", ErrKafkaStorage, s.path)
	}
	known := map[damageKey]DamagedRange{}
	for _, d := range s.damaged() {
		known[damageKey{d.SegmentBase, d.Position}] = d
	}
	if _, err := l.recoverSegment(s, l.recoveryPoint.Load(), ss[i+1].baseOffset, true, false, known); err != nil {
		return err
	}
	s.nextOffset = ss[i+1].baseOffset
	s.builder.finish()
	if err := s.writeIndexes(); err != nil {
		return fmt.Errorf("%w: writing the indexes of %s: %v", ErrKafkaStorage, s.path, err)
	}
	return nil
}

// recoverSegment scans every batch of s, rebuilding its indexes and (assignEpochs)
// the epoch cache. Bad bytes with a valid batch after them in the segment are damage,
// and so is anything from below the recovery point, or in a trusted segment (one
// below it, scanned because it was damaged before): recorded, quarantined, kept
// (recordDamage). Only a torn tail is truncated: bad bytes from the end of the last
// good batch to the end of the segment, where that batch ends at or above the
// recovery point, the only place a crash can leave them. nextBase is the next
// segment's base offset, -1 for the last segment.
func (l *Log) recoverSegment(s *Segment, recoveryPoint, nextBase int64, trusted, assignEpochs bool, known map[damageKey]DamagedRange) (truncated bool, err error) {
	size := s.size.Load()
	s.index.reset(nil)
	s.timeIndex.reset(nil)
	s.builder.bytesSinceIndex, s.builder.maxTimestamp, s.builder.offsetOfMaxTimestamp = 0, -1, -1
	s.setDamage(nil)
	found, next, err := scanForDamage(s.file, s.baseOffset, 0, size, s.baseOffset, nil, func(b recordbatch.Batch, pos int64) {
		s.builder.add(b, pos)
		if assignEpochs {
			l.epochs.assign(b.PartitionLeaderEpoch(), b.BaseOffset())
		}
	})
	if err != nil {
		return false, err
	}
	s.nextOffset = next
	s.indexesLoaded.Store(true)
	if n := len(found); n > 0 && found[n-1].LastOffset < 0 && found[n-1].end() == size {
		tail := &found[n-1]
		if !trusted && tail.FirstOffset >= recoveryPoint {
			l.logger.Warn("truncating torn segment tail", "segment", s.path, "offset", tail.FirstOffset,
				"position", tail.Position, "bytes_dropped", tail.Length, "recovery_point", recoveryPoint, "reason", tail.Reason)
			if err := s.file.Truncate(tail.Position); err != nil {
				return true, fmt.Errorf("%w: truncating %s: %v", ErrKafkaStorage, s.path, err)
			}
			s.size.Store(tail.Position)
			found, truncated = found[:n-1], true
		} else {
			// Damage up to the end of the segment: its offsets run to the next
			// segment, or for the last one to the recovery point, which the log end
			// keeps (every offset below it was written and fsynced).
			if nextBase >= 0 {
				tail.LastOffset = nextBase - 1
			} else {
				tail.LastOffset = max(recoveryPoint, tail.FirstOffset) - 1
				s.nextOffset = max(recoveryPoint, tail.FirstOffset)
			}
		}
	}
	l.recordDamage(s, found, s.size.Load(), known)
	return truncated, nil
}

// assignEpochsOf adds the leader epochs of s's batches to the epoch cache, reading
// their headers only (the epoch checkpoint is being rebuilt).
func (l *Log) assignEpochsOf(s *Segment) error {
	size := s.size.Load()
	holes := s.damaged()
	var h [headerPrefix]byte
	for pos := int64(0); pos < size; {
		if d, ok := holeAt(holes, pos); ok {
			pos = d.end()
			continue
		}
		if _, err := s.file.ReadAt(h[:], pos); err != nil {
			return fmt.Errorf("%w: reading the batch header at position %d of %s: %v", ErrKafkaStorage, pos, s.path, err)
		}
		length := int64(int32(binary.BigEndian.Uint32(h[8:]))) + recordbatch.LengthPrefixSize
		if length < recordbatch.HeaderSize || pos+length > size {
			// Damage that no scan has found yet: the epochs after it wait for one.
			l.logger.Warn("bad batch header while rebuilding the epoch cache", "segment", s.path, "position", pos)
			return nil
		}
		l.epochs.assign(int32(binary.BigEndian.Uint32(h[12:])), int64(binary.BigEndian.Uint64(h[0:])))
		pos += length
	}
	return nil
}

// epochsMatchLog checks the epoch cache (as loaded from its checkpoint and completed
// by recovery) against the log: the batch holding each entry's start offset has that
// epoch, and the batch before it the previous entry's (none for the first entry). A
// couple of header reads per entry; offsets the log cannot show (damaged, below the
// log start) pass.
func (l *Log) epochsMatchLog() bool {
	logStart, leo := l.logStart.Load(), l.leo.Load()
	prev := int32(-1)
	for _, e := range l.epochs.entries {
		if e.StartOffset >= leo {
			break
		}
		if e.StartOffset > logStart {
			if epoch, _, ok := l.epochOfBatchAt(e.StartOffset - 1); ok && epoch != prev {
				return false
			}
		}
		if e.StartOffset >= logStart {
			if epoch, base, ok := l.epochOfBatchAt(e.StartOffset); ok && (epoch != e.Epoch || (base != e.StartOffset && e.StartOffset != logStart)) {
				return false
			}
		}
		prev = e.Epoch
	}
	return true
}

// epochOfBatchAt reads the leader epoch and base offset of the batch holding off.
func (l *Log) epochOfBatchAt(off int64) (epoch int32, base int64, ok bool) {
	ss := l.segs()
	i := floorSegment(ss, off)
	if i < 0 {
		return 0, 0, false
	}
	h := getHdrBuf()
	defer hdrPool.Put(h)
	pos, hdr, found, err := ss[i].translate(off, ss[i].size.Load(), h)
	if i < len(ss)-1 {
		l.noteIndexesUsed(ss[i]) // at most residentIndexes stay loaded (resident.go)
	}
	if err != nil || !found || hdr.hole || hdr.base > off {
		return 0, 0, false
	}
	var b [headerPrefix]byte
	if _, err := ss[i].file.ReadAt(b[:], pos); err != nil {
		return 0, 0, false
	}
	return int32(binary.BigEndian.Uint32(b[12:])), hdr.base, true
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

// replayProducers updates the producer state with the batches in [from, to),
// stepping over damaged ranges (their producers' sequences show a gap).
func (l *Log) replayProducers(from, to int64) error {
	ss := l.segs()
	for i := max(floorSegment(ss, from), 0); i < len(ss) && ss[i].baseOffset < to; i++ {
		s := ss[i]
		size := s.size.Load()
		holes := s.damaged()
		for pos := int64(0); pos < size; {
			if d, ok := holeAt(holes, pos); ok {
				pos = d.end()
				continue
			}
			limit := nextHole(holes, pos, size)
			valid, err := scanBatches(s.file, pos, limit, false, func(b recordbatch.Batch, _ int64) error {
				if b.BaseOffset() >= from && b.BaseOffset() < to {
					l.producers.update(b)
				}
				return nil
			})
			if err != nil || valid != limit {
				if i == len(ss)-1 {
					return fmt.Errorf("%w: rebuilding producer state from %s: bad batch at position %d: %v", ErrCorruption, s.path, valid, err)
				}
				// Damage no scan had found (the segment is below the recovery
				// point): record it, then go on around it.
				l.logger.Warn("bad batch while rebuilding the producer state: scanning the segment", "segment", s.path, "position", valid)
				if err := l.rescanSegment(s); err != nil {
					return err
				}
				l.refreshDamage()
				if err := l.writeDamageCheckpoint(); err != nil {
					return err
				}
				if _, ok := holeAt(s.damaged(), valid); !ok {
					return fmt.Errorf("%w: rebuilding producer state from %s: bad batch at position %d: %v", ErrCorruption, s.path, valid, err)
				}
				holes, pos = s.damaged(), valid // go on around the damage
				continue
			}
			pos = limit
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
