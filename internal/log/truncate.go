package log

import (
	"fmt"

	"github.com/runnel-io/runnel/internal/recordbatch"
)

// Truncate drops every offset >= to (a follower whose log diverged from the leader's).
// Whole batches go: when to falls inside a batch, that batch is dropped too and the
// log end becomes its base offset. Segments above to are retired, the segment holding
// to is cut and fsynced, and the epoch cache and producer state follow. to at or
// past the log end is a no-op; to at or below the first segment's base empties the
// log and restarts it at to (TruncateFullyAndStartAt).
func (l *Log) Truncate(to int64) error {
	truncated, err := l.truncate(to)
	if truncated && l.onTruncate != nil {
		l.onTruncate()
	}
	return err
}

func (l *Log) truncate(to int64) (truncated bool, err error) {
	l.flushMu.Lock()
	defer l.flushMu.Unlock()
	if to < l.leo.Load() { // the log end only grows without flushMu
		if err := l.cutCleanerStateLocked(to); err != nil {
			return false, err
		}
	}
	l.mu.Lock()
	if err := l.checkWritableLocked(); err != nil {
		l.mu.Unlock()
		return false, err
	}
	if to >= l.leo.Load() {
		l.mu.Unlock()
		return false, nil
	}
	if ss := l.segs(); to <= ss[0].baseOffset || to < l.logStart.Load() {
		l.mu.Unlock()
		return true, l.truncateFullyLocked(to)
	}
	seg, err := l.truncateLocked(to)
	epochs := l.epochCheckpointLocked()
	l.mu.Unlock()
	if err != nil {
		return true, err
	}
	if err := seg.file.Sync(); err != nil {
		return true, l.fail("fsync", err)
	}
	return true, l.writeEpochCheckpoint(epochs)
}

// truncateLocked does the in-memory and file work of Truncate and returns the
// segment that now ends the log, to be fsynced outside mu.
func (l *Log) truncateLocked(to int64) (*Segment, error) {
	ss := l.segs()
	i := floorSegment(ss, to)
	seg := ss[i]
	victims := ss[i+1:]
	// seg becomes the active segment and its indexes are cut below: they must not be
	// unloaded meanwhile (resident.go).
	seg.pin()
	defer seg.unpin()
	l.publishLocked(append([]*Segment(nil), ss[:i+1]...))
	l.dropUnflushedLocked(append(victims[:len(victims):len(victims)], seg))
	seg.needsSync = false
	if err := l.retireLocked(victims, l.now()); err != nil {
		return nil, err
	}
	h := getHdrBuf()
	defer hdrPool.Put(h)
	pos, hdr, found, err := seg.translate(to, seg.size.Load(), h)
	if err != nil {
		return nil, err
	}
	leo := seg.nextOffset
	if leo < 0 || i < len(ss)-1 {
		leo = to // a trusted segment whose end was not scanned: to is inside it
	}
	if found {
		leo = min(to, hdr.base)
		if err := seg.file.Truncate(pos); err != nil {
			return nil, l.failLocked("truncate", err)
		}
		seg.size.Store(pos)
		// Appends go on from pos: the page cache drops must reach them again.
		seg.cacheDropped.Store(min(seg.cacheDropped.Load(), pos&^(pageSize-1)))
	}
	// Damage at or past the cut goes with it (the replica layer fetches those
	// offsets again: TruncateDamaged); the quarantined copies stay.
	l.cutDamageLocked(seg, victims)
	if err := l.resetActiveStateLocked(seg, leo); err != nil {
		return nil, err
	}
	l.leo.Store(leo)
	if l.logStart.Load() > leo {
		// to was in the batch holding the log start: the log is now empty.
		l.logStart.Store(leo)
	}
	if l.recoveryPoint.Load() > leo {
		l.recoveryPoint.Store(leo)
	}
	l.epochs.truncateFromEnd(leo)
	return seg, l.reloadProducerStateLocked(leo)
}

// reloadProducerStateLocked rebuilds the producer state after truncation to leo.
func (l *Log) reloadProducerStateLocked(leo int64) error {
	if err := l.removeSnapshotsAbove(leo); err != nil {
		return err
	}
	snaps, err := l.scanDir()
	if err != nil {
		return err
	}
	return l.loadProducerState(snaps.snapshots)
}

// resetActiveStateLocked makes seg, cut at its current size, the active segment
// again: its indexes lose the entries past the cut and its largest timestamp is
// recomputed from the time index plus the batches after the last index entry.
func (l *Log) resetActiveStateLocked(seg *Segment, leo int64) error {
	if err := seg.ensureIndexes(); err != nil {
		return err
	}
	size := seg.size.Load()
	seg.index.truncateToPosition(size)
	seg.timeIndex.truncateToOffset(leo)
	seg.nextOffset = leo
	b := &seg.builder
	b.maxTimestamp, b.offsetOfMaxTimestamp, _ = seg.timeIndex.lastEntry()
	b.bytesSinceIndex = 0
	_, from := seg.index.lookupPosition(size)
	holes := seg.damaged()
	for from < size {
		if d, ok := holeAt(holes, from); ok {
			from = d.end()
			continue
		}
		limit := nextHole(holes, from, size)
		_, err := scanBatches(seg.file, from, limit, false, func(batch recordbatch.Batch, _ int64) error {
			if ts := batch.MaxTimestamp(); ts > b.maxTimestamp {
				b.maxTimestamp, b.offsetOfMaxTimestamp = ts, batch.LastOffset()
			}
			b.bytesSinceIndex += int64(len(batch))
			return nil
		})
		if err != nil {
			return fmt.Errorf("%w: rescanning %s after truncation: %v", ErrCorruption, seg.path, err)
		}
		from = limit
	}
	return nil
}

// TruncateFullyAndStartAt empties the log and restarts it at off (a follower far
// behind the leader's log start): every segment is retired, the epoch cache and the
// producer state are cleared.
func (l *Log) TruncateFullyAndStartAt(off int64) error {
	l.flushMu.Lock()
	err := l.truncateFullyLocked(off)
	l.flushMu.Unlock()
	if l.onTruncate != nil {
		l.onTruncate()
	}
	return err
}

// truncateFullyLocked is TruncateFullyAndStartAt with flushMu held.
func (l *Log) truncateFullyLocked(off int64) error {
	if err := l.cutCleanerStateLocked(min(off, l.segs()[0].baseOffset)); err != nil {
		return err
	}
	l.mu.Lock()
	if err := l.checkWritableLocked(); err != nil {
		l.mu.Unlock()
		return err
	}
	now := l.now()
	victims := l.segs()
	l.unflushed = nil
	if err := l.retireLocked(victims, now); err != nil {
		l.mu.Unlock()
		return err
	}
	seg, err := createSegment(l.fs, l.dir, off, l.config.Load())
	if err != nil {
		l.mu.Unlock()
		return l.fail("create segment", err)
	}
	l.publishLocked([]*Segment{seg})
	l.cutDamageLocked(nil, victims)
	l.leo.Store(off)
	l.logStart.Store(off)
	l.recoveryPoint.Store(off)
	l.epochs.clear()
	l.producers.clear()
	err = l.removeSnapshotsBelow(-1)
	epochs := l.epochCheckpointLocked()
	l.mu.Unlock()
	if err != nil {
		return err
	}
	if err := l.fs.SyncDir(l.dir); err != nil {
		return l.fail("sync dir", err)
	}
	return l.writeEpochCheckpoint(epochs)
}

// cutDamageLocked forgets the damage of the retired segments victims and of seg's
// bytes past its (new) size, counts it as repaired (the replica layer fetches those
// offsets again) and rewrites damaged-ranges-checkpoint. Called with flushMu and mu
// held, after the cut.
func (l *Log) cutDamageLocked(seg *Segment, victims []*Segment) {
	n := 0
	for _, v := range victims {
		n += len(v.damaged())
	}
	if seg != nil {
		cut := 0
		seg.updateDamage(func(old []DamagedRange) []DamagedRange {
			var keep []DamagedRange
			for _, d := range old {
				if d.Position < seg.size.Load() {
					keep = append(keep, d)
				}
			}
			cut = len(old) - len(keep)
			return keep
		})
		n += cut
	}
	if n == 0 {
		return
	}
	l.integrity.repaired.Add(int64(n))
	l.refreshDamage()
	if err := l.writeDamageCheckpoint(); err != nil {
		l.logger.Error("cannot write the damaged ranges checkpoint", "err", err)
	}
	l.logger.Warn("truncation removed damaged ranges: their offsets must come again from another replica", "ranges", n)
}
