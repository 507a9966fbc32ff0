package log

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io/fs"

	"github.com/runnel-io/runnel/internal/recordbatch"
)

// The two ways out of damage (damage.go). A replica that has an intact copy elsewhere
// calls TruncateDamaged and fetches the offsets again, so that its bytes become the
// leader's; a partition whose only copy is damaged calls DropDamaged when the
// operator accepts the loss (runnel topic repair --accept-loss).

// TruncateDamaged truncates the log to the first damaged offset (Truncate: the
// damaged bytes, and every batch after them, go; the quarantined copies stay) and
// returns the new log end. A follower then fetches from there. With no damage it does
// nothing and returns the log end.
func (l *Log) TruncateDamaged() (int64, error) {
	ds := l.Damaged()
	if len(ds) == 0 {
		return l.LogEndOffset(), nil
	}
	to := ds[0].FirstOffset
	for _, d := range ds {
		to = min(to, d.FirstOffset)
	}
	l.logger.Warn("truncating to the first damaged offset, to fetch the rest again", "offset", to,
		"file", ds[0].Segment, "position", ds[0].Position, "quarantine", ds[0].Quarantine)
	err := l.Truncate(to)
	return l.LogEndOffset(), err
}

// DropDamaged accepts the loss of the damaged ranges: every damaged segment is
// rewritten with each damaged range replaced by one empty batch (no records, a valid
// CRC) whose offsets are the range's, so no offset is ever reused and the log stays
// contiguous (readers step over it as over a batch the cleaner emptied: KAFKA-5443);
// its indexes are rebuilt, the quarantined copies stay, and the damage list empties.
// It returns the number of offsets dropped. A damaged active segment is rolled first:
// rewrites only touch immutable segments, swapped in as the cleaner's are (swapIn,
// finished by recovery after a crash).
func (l *Log) DropDamaged() (dropped int64, err error) {
	l.cleanMu.Lock()
	defer l.cleanMu.Unlock()
	l.mu.Lock()
	if err := l.checkWritableLocked(); err != nil {
		l.mu.Unlock()
		return 0, err
	}
	if len(l.activeLocked().damaged()) > 0 {
		if err := l.rollLocked(l.now()); err != nil {
			l.mu.Unlock()
			return 0, err
		}
	}
	l.mu.Unlock()
	for _, s := range l.segs() {
		if len(s.damaged()) == 0 {
			continue
		}
		n, err := l.repairSegment(s)
		dropped += n
		if err != nil {
			return dropped, err
		}
	}
	l.flushMu.Lock()
	defer l.flushMu.Unlock()
	return dropped, l.writeDamageCheckpoint()
}

// repairSegment rewrites the inactive segment s without its damaged bytes (see
// DropDamaged) and swaps the copy in. Called with cleanMu held.
func (l *Log) repairSegment(s *Segment) (dropped int64, err error) {
	truncs := l.truncations.Load()
	ds := s.damaged()
	l.mu.Lock()
	end := s.nextOffset
	l.mu.Unlock()
	w, err := l.createCleaned(s.baseOffset, l.config.Load())
	if err != nil {
		return 0, fmt.Errorf("%w: creating the repaired copy of %s: %v", ErrKafkaStorage, s.path, err)
	}
	prevTs, prevEpoch := int64(-1), int32(-1)
	copyRange := func(from, to int64) error {
		valid, err := scanBatches(s.file, from, to, true, func(b recordbatch.Batch, _ int64) error {
			prevTs, prevEpoch = max(prevTs, b.MaxTimestamp()), b.PartitionLeaderEpoch()
			return w.write(b)
		})
		if err == nil && valid == to {
			return nil
		}
		if !isDataError(err) {
			return err
		}
		// Damage no scan had found: record it and let the caller run again.
		found, _, _ := scanForDamage(s.file, s.baseOffset, 0, s.size.Load(), s.baseOffset, ds, func(recordbatch.Batch, int64) {})
		l.reportDamage(s, found, s.size.Load())
		return fmt.Errorf("%w: %s has damage at position %d that was not recorded yet: recorded now, run the repair again",
			ErrCorruption, s.path, valid)
	}
	pos := int64(0)
	for _, d := range ds {
		if err := copyRange(pos, d.Position); err != nil {
			return 0, w.discard(err)
		}
		if d.Offsets() > 0 {
			epoch := prevEpoch
			if epoch < 0 {
				epoch = l.epochAt(d.FirstOffset)
			}
			if err := w.write(emptyBatch(d.FirstOffset, d.LastOffset, epoch, prevTs)); err != nil {
				return 0, w.discard(err)
			}
			dropped += d.Offsets()
		}
		pos = d.end()
	}
	if err := copyRange(pos, s.size.Load()); err != nil {
		return 0, w.discard(err)
	}
	seg, err := w.finish(end)
	if err != nil {
		return 0, w.discard(err)
	}
	if err := l.swapRepaired(s, seg, truncs); err != nil {
		return 0, w.discard(err)
	}
	l.integrity.repaired.Add(int64(len(ds)))
	for _, d := range ds {
		l.logger.Warn("dropped damaged data (accept-loss): its offsets are now an empty batch", "file", s.path,
			"position", d.Position, "bytes", d.Length, "first_offset", d.FirstOffset, "last_offset", d.LastOffset,
			"offsets_lost", d.Offsets(), "quarantine", d.Quarantine)
	}
	return dropped, nil
}

// swapRepaired replaces s by its repaired copy seg (complete and synced under the
// .cleaned names), with swapIn's steps and crash safety. flushMu is taken.
func (l *Log) swapRepaired(s, seg *Segment, truncs int64) error {
	l.flushMu.Lock()
	defer l.flushMu.Unlock()
	if err := l.checkSwapLocked([]*Segment{s}, truncs); err != nil {
		return fmt.Errorf("repairing %s: the log changed meanwhile (truncated, rolled away or closed): %w", s.path, err)
	}
	if err := l.renameSegmentFiles(seg, FileTypeCleaned, FileTypeSwap); err != nil {
		return err
	}
	for _, path := range segmentPaths(s) {
		if err := l.fs.Rename(path, DeletedFilename(path)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return l.fail("rename to .deleted", err)
		}
	}
	if err := l.renameSegmentFiles(seg, FileTypeSwap, FileTypeSegment); err != nil {
		return err
	}
	l.mu.Lock()
	seg.firstBatchTimestamp, seg.firstBatchTimestampLoaded = s.firstBatchTimestamp, s.firstBatchTimestampLoaded
	l.replaceSegmentsLocked([]*Segment{s}, seg)
	l.mu.Unlock()
	l.scheduleDeletesLocked([]*Segment{s}, l.now())
	return nil
}

// epochAt is the leader epoch of offset off by the epoch cache (-1 when unknown).
func (l *Log) epochAt(off int64) int32 {
	l.mu.Lock()
	defer l.mu.Unlock()
	epoch := int32(-1)
	for _, e := range l.epochs.entries {
		if e.StartOffset <= off {
			epoch = e.Epoch
		}
	}
	return epoch
}

// emptyBatch is a v2 batch with no records holding offsets first..last (a batch
// left empty by compaction looks the same): no producer, CreateTime ts.
func emptyBatch(first, last int64, epoch int32, ts int64) []byte {
	b := make([]byte, recordbatch.HeaderSize)
	be := binary.BigEndian
	be.PutUint64(b[0:], uint64(first))
	be.PutUint32(b[8:], uint32(recordbatch.HeaderSize-recordbatch.LengthPrefixSize))
	be.PutUint32(b[12:], uint32(epoch))
	b[16] = 2
	be.PutUint16(b[21:], 0)                  // attributes
	be.PutUint32(b[23:], uint32(last-first)) // last offset delta
	be.PutUint64(b[27:], uint64(ts))         // base timestamp
	be.PutUint64(b[35:], uint64(ts))         // max timestamp
	be.PutUint64(b[43:], ^uint64(0))         // producer id -1
	be.PutUint16(b[51:], ^uint16(0))         // producer epoch -1
	be.PutUint32(b[53:], ^uint32(0))         // base sequence -1
	be.PutUint32(b[57:], 0)                  // record count
	be.PutUint32(b[17:], crc32.Checksum(b[21:], crc32.MakeTable(crc32.Castagnoli)))
	return b
}
