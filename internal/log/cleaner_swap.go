package log

import (
	"bufio"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"time"

	"github.com/runnel-io/runnel/internal/recordbatch"
	"github.com/runnel-io/runnel/internal/vfs"
)

// cleanGroup rewrites the segments of g into one segment at the base of the first,
// written under the .cleaned names, and swaps it in. A group from which nothing
// would be removed is left as it is (the rewrite would be byte for byte the same).
func (p *cleanPass) cleanGroup(c *cleanable, g segmentGroup) error {
	old := c.segs[g.from:g.to]
	for _, s := range old {
		// Load the indexes now, and keep them (pin): once the files are renamed, a
		// lazy load by a reader of the old segment would find the new segment's
		// index under the same name.
		s.pin()
		defer s.unpin()
		if err := s.ensureIndexes(); err != nil {
			return err
		}
	}
	w, err := p.l.createCleaned(old[0].baseOffset, p.cfg)
	if err != nil {
		return fmt.Errorf("%w: log cleaner creating %s: %v", ErrKafkaStorage, MakeFilename(p.l.dir, FileTypeCleaned, old[0].baseOffset), err)
	}
	removed, err := p.copyGroup(old, w)
	if err != nil || removed == 0 {
		return w.discard(err)
	}
	seg, err := w.finish(c.ends[g.to-1])
	if err != nil {
		return w.discard(err)
	}
	p.hookf("cleaned")
	if err := p.l.swapIn(old, seg, p); err != nil {
		if p.swapped(seg) {
			return err // recovery finishes it
		}
		return w.discard(err)
	}
	p.stats.Segments++
	p.stats.BytesWritten += w.pos
	return nil
}

// swapped reports whether seg made it to .swap (from then on recovery, not the
// cleaner, owns its files).
func (p *cleanPass) swapped(seg *Segment) bool {
	if seg == nil {
		return false
	}
	_, err := p.l.fs.Stat(MakeFilename(p.l.dir, FileTypeCleaned, seg.baseOffset))
	return errors.Is(err, fs.ErrNotExist)
}

func (p *cleanPass) hookf(step string) {
	if p.r.hook != nil {
		p.r.hook(step)
	}
}

// copyGroup writes the batches of old, filtered, to w and returns how many records
// were removed.
func (p *cleanPass) copyGroup(old []*Segment, w *cleanedWriter) (int64, error) {
	removed := p.stats.RecordsRemoved
	for i, s := range old {
		if i == 1 {
			p.hookf("copying")
		}
		err := p.scanSegment(s, func(b recordbatch.Batch) error {
			out, err := p.filter(b)
			if err != nil || out == nil {
				return err
			}
			if err := p.r.io.throttle(int64(len(out)), p.r.done); err != nil {
				return err
			}
			return w.write(out)
		})
		if err != nil {
			return 0, err
		}
	}
	return p.stats.RecordsRemoved - removed, nil
}

// filter returns the batch to write for b, or nil to drop it. A batch left without
// records is dropped rather than kept empty: Kafka keeps the last batch of each
// producer empty to preserve its sequence state, but Runnel rebuilds producer state
// from snapshots taken at every roll (never below the active segment's base), and
// clients handle batches with no records poorly.
//
// Control batches and transactional batches are kept whole, and the keys of
// transactional batches are not mapped: whether a transaction committed or
// aborted is not known here, and an aborted record must never supersede a committed
// one (Kafka maps committed transactional records, drops aborted ones and removes
// markers past the delete horizon; Runnel keeps them all, which only compacts less).
func (p *cleanPass) filter(b recordbatch.Batch) ([]byte, error) {
	if b.IsControl() || b.IsTransactional() {
		p.stats.RecordsRead += int64(b.RecordCount())
		return b, nil
	}
	base := b.BaseOffset()
	f, scratch, err := p.r.codecs.filterBatch(b, p.r.scratch, func(r *rawRecord) bool {
		return p.keep(base+r.offsetDelta, r)
	})
	p.r.scratch = scratch
	p.stats.RecordsRead += int64(f.kept + f.removed)
	p.stats.RecordsRemoved += int64(f.removed)
	return f.out, err
}

// commitState records, once per pass, that the pass reached p.end (see
// cleanerState); it is written before the pass's first swap so that recovery knows
// the offset gaps below it are legitimate.
func (p *cleanPass) commitState() error {
	if p.stateWritten {
		return nil
	}
	p.l.flushMu.Lock()
	defer p.l.flushMu.Unlock()
	if err := p.l.checkUnchangedLocked(p.truncs); err != nil {
		return err
	}
	return p.commitStateLocked()
}

func (p *cleanPass) commitStateLocked() error {
	if p.stateWritten {
		return nil
	}
	s := p.l.cleaned.with(p.end, p.now.UnixMilli())
	if err := writeCleanerState(p.l.fs, p.l.dir, s); err != nil {
		return fmt.Errorf("%w: log cleaner writing %s: %v", ErrKafkaStorage, MakeFilename(p.l.dir, FileTypeCleanerCheckpoint, 0), err)
	}
	p.l.cleaned = s
	p.l.cleanerEnd.Store(s.firstDirty())
	p.stateWritten = true
	return nil
}

// cleanedWriter writes one cleaned segment under its .cleaned names.
type cleanedWriter struct {
	l   *Log
	seg *Segment // final paths; its file is open on the .cleaned name
	bw  *bufio.Writer
	pos int64
}

// createCleaned creates <base>.log.cleaned. The segment keeps this handle after the
// renames (open handles follow a file on Unix and in vfs.Mem), so its File.Name()
// still says .cleaned; only error messages show it.
func (l *Log) createCleaned(base int64, cfg *Config) (*cleanedWriter, error) {
	f, err := l.fs.OpenFile(MakeFilename(l.dir, FileTypeCleaned, base), os.O_CREATE|os.O_TRUNC|os.O_RDWR, 0o644)
	if err != nil {
		return nil, err
	}
	seg := newSegmentStruct(l.fs, l.dir, base, f, cfg)
	seg.indexesLoaded.Store(true)
	return &cleanedWriter{l: l, seg: seg, bw: bufio.NewWriterSize(f, scanChunk)}, nil
}

func (w *cleanedWriter) write(b []byte) error {
	if w.pos+int64(len(b)) > math.MaxInt32 {
		return fmt.Errorf("log cleaner: cleaned segment %s would pass 2 GiB", w.seg.path)
	}
	if _, err := w.bw.Write(b); err != nil {
		return fmt.Errorf("%w: log cleaner writing %s: %v", ErrKafkaStorage, w.seg.path, err)
	}
	w.seg.builder.add(recordbatch.Batch(b), w.pos)
	w.pos += int64(len(b))
	return nil
}

// finish syncs the segment and writes and syncs its indexes, all under the .cleaned
// names, and returns the segment, which ends at end.
func (w *cleanedWriter) finish(end int64) (*Segment, error) {
	s := w.seg
	s.builder.finish()
	err := w.bw.Flush()
	if err == nil {
		err = s.file.Sync()
	}
	for _, x := range []*entryIndex{&s.index.entryIndex, &s.timeIndex.entryIndex} {
		if err == nil {
			err = writeSyncedFile(w.l.fs, MarkedFilename(x.path, FileTypeCleaned), x.buf)
			x.dirty = false
		}
	}
	if err != nil {
		return nil, fmt.Errorf("%w: log cleaner writing %s: %v", ErrKafkaStorage, s.path, err)
	}
	s.size.Store(w.pos)
	s.nextOffset = end
	return s, nil
}

// discard closes and removes the .cleaned files and returns cause.
func (w *cleanedWriter) discard(cause error) error {
	w.seg.close()
	for _, p := range segmentPaths(w.seg) {
		if err := w.l.fs.Remove(MarkedFilename(p, FileTypeCleaned)); err != nil && !errors.Is(err, fs.ErrNotExist) && cause == nil {
			cause = fmt.Errorf("%w: log cleaner removing %s: %v", ErrKafkaStorage, p, err)
		}
	}
	return cause
}

// segmentPaths lists a segment's files, indexes first: renames go in this order so
// that the .log, renamed last, says the indexes already were.
func segmentPaths(s *Segment) [3]string { return [3]string{s.index.path, s.timeIndex.path, s.path} }

func writeSyncedFile(fsys vfs.FS, path string, data []byte) error {
	f, err := fsys.OpenFile(path, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// swapIn replaces old (consecutive segments, none of them active) by seg, whose
// files are complete and synced under their .cleaned names (Kafka replaceSegments):
//
//  1. the cleaner state is written if this is the pass's first swap;
//  2. .cleaned -> .swap, indexes first: from the moment <base>.log.swap exists,
//     recovery finishes the swap (finishSwaps);
//  3. the old segments' files -> .deleted, removed after file.delete.delay.ms so
//     that reads in flight finish, as retention does;
//  4. .swap -> the final names, indexes first;
//  5. the new segment list is published.
//
// A crash before step 2 leaves the old segments, one after it the new one. flushMu
// is held throughout (retention, truncation and Close wait), mu only for step 5.
func (l *Log) swapIn(old []*Segment, seg *Segment, p *cleanPass) error {
	l.flushMu.Lock()
	defer l.flushMu.Unlock()
	if err := l.checkSwapLocked(old, p.truncs); err != nil {
		return err
	}
	if err := p.commitStateLocked(); err != nil {
		return err
	}
	p.hookf("state")
	if err := l.renameSegmentFiles(seg, FileTypeCleaned, FileTypeSwap); err != nil {
		return err
	}
	p.hookf("swap")
	for i, s := range old {
		for _, path := range segmentPaths(s) {
			if err := l.fs.Rename(path, DeletedFilename(path)); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return l.fail("rename to .deleted", err)
			}
		}
		if p.r.hook != nil {
			p.hookf(fmt.Sprintf("retire-%d", i))
		}
	}
	if err := l.renameSegmentFiles(seg, FileTypeSwap, FileTypeSegment); err != nil {
		return err
	}
	p.hookf("final")
	l.mu.Lock()
	l.replaceSegmentsLocked(old, seg)
	l.mu.Unlock()
	l.scheduleDeletesLocked(old, l.now())
	p.hookf("published")
	return nil
}

// checkSwapLocked makes sure that old is still in the log, consecutive and not
// active, and that nothing truncated the log since the pass started.
func (l *Log) checkSwapLocked(old []*Segment, truncs int64) error {
	if err := l.checkUnchangedLocked(truncs); err != nil {
		return err
	}
	ss := l.segs()
	i := floorSegment(ss, old[0].baseOffset)
	if i < 0 || i+len(old) >= len(ss) {
		return errCleanAborted
	}
	for k, s := range old {
		if ss[i+k] != s {
			return errCleanAborted
		}
	}
	return nil
}

// checkUnchangedLocked fails with errCleanAborted when the log closed, went offline
// or was truncated since a pass read truncs.
func (l *Log) checkUnchangedLocked(truncs int64) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.checkWritableLocked() != nil || l.truncations.Load() != truncs {
		return errCleanAborted
	}
	return nil
}

// renameSegmentFiles renames seg's files from one marker to another (FileTypeSegment
// for the final names), indexes first, then syncs the directory.
func (l *Log) renameSegmentFiles(seg *Segment, from, to FileType) error {
	name := func(p string, t FileType) string {
		if t == FileTypeSegment {
			return p
		}
		return MarkedFilename(p, t)
	}
	for _, p := range segmentPaths(seg) {
		if err := l.fs.Rename(name(p, from), name(p, to)); err != nil {
			return l.fail("log cleaner rename", err)
		}
	}
	if err := l.fs.SyncDir(l.dir); err != nil {
		return l.fail("sync dir", err)
	}
	return nil
}

// replaceSegmentsLocked publishes the list with seg in place of old.
func (l *Log) replaceSegmentsLocked(old []*Segment, seg *Segment) {
	ss := l.segs()
	i := floorSegment(ss, old[0].baseOffset)
	next := make([]*Segment, 0, len(ss)-len(old)+1)
	next = append(append(append(next, ss[:i]...), seg), ss[i+len(old):]...)
	l.publishLocked(next)
	l.dropUnflushedLocked(old)
	l.refreshDamage() // a repaired segment (DropDamaged) replaced a damaged one
}

// scheduleDeletesLocked closes and removes the files of old (already renamed
// *.deleted) after file.delete.delay.ms. Called with flushMu held.
func (l *Log) scheduleDeletesLocked(old []*Segment, now time.Time) {
	delay := time.Duration(l.config.Load().FileDeleteDelayMs) * time.Millisecond
	for _, s := range old {
		l.pendingDeletes = append(l.pendingDeletes, pendingDelete{seg: s, at: now.Add(delay)})
	}
	if delay == 0 {
		l.removeExpiredDeletes(now, false)
	}
}
