package log

import (
	"context"
	"fmt"

	"github.com/runnel-io/runnel/internal/recordbatch"
	"github.com/runnel-io/runnel/internal/vfs"
)

// Limiter paces Verify's reads: WaitN returns once n more bytes may be read, or the
// context's error. A golang.org/x/time/rate.Limiter (in bytes per second) fits; its
// burst must be at least VerifyChunk.
type Limiter interface {
	WaitN(ctx context.Context, n int) error
}

// VerifyChunk is the most bytes Verify asks its Limiter for at once.
const VerifyChunk = scanChunk

// VerifyResult counts what one Verify pass did.
type VerifyResult struct {
	Segments int   // segments read
	Batches  int64 // batches whose CRC-32C was checked
	Bytes    int64 // bytes read
	// Corrupt is the number of damaged ranges found that were not known before
	// (each recorded, quarantined and logged as recovery does).
	Corrupt int
	// IndexesRebuilt counts the segments whose offset or time index disagreed with the
	// segment and was rebuilt from it.
	IndexesRebuilt int
}

// Verify reads every inactive segment (the scrubber's pass: the active one was
// checked by recovery or written by this process), verifies every batch (framing,
// CRC-32C, offsets increasing) and checks the offset and time index entries against
// the batches they name. New damage is recorded as recovery records it (quarantine,
// WARN, Damaged, reads refused from it on); an index that disagrees is rebuilt with a
// WARN naming its file. Reads go through lim when non-nil. It stops at the first
// error: ctx's, ErrClosed, or a failed read (ErrKafkaStorage).
func (l *Log) Verify(ctx context.Context, lim Limiter) (VerifyResult, error) {
	var r VerifyResult
	ss := l.segs()
	for _, s := range ss[:len(ss)-1] {
		if err := ctx.Err(); err != nil {
			return r, err
		}
		if l.closed.Load() {
			return r, ErrClosed
		}
		if !l.holds(s) {
			continue // retention, truncation or the cleaner took it meanwhile
		}
		if err := l.verifySegment(ctx, s, lim, &r); err != nil {
			return r, err
		}
	}
	return r, nil
}

// verifySegment is Verify for one segment.
func (l *Log) verifySegment(ctx context.Context, s *Segment, lim Limiter, r *VerifyResult) error {
	size := s.size.Load()
	if err := s.ensureIndexes(); err != nil {
		return err
	}
	s.index.mu.RLock()
	offEntries := append([]byte(nil), s.index.buf...)
	s.index.mu.RUnlock()
	s.timeIndex.mu.RLock()
	timeEntries := append([]byte(nil), s.timeIndex.buf...)
	s.timeIndex.mu.RUnlock()
	var badIndex string // the first index entry found wrong
	oi, ti := 0, 0
	check := func(b recordbatch.Batch, pos int64) {
		r.Batches++
		last := b.LastOffset()
		for ; oi < len(offEntries) && badIndex == ""; oi += offsetEntrySize {
			off, p := s.index.entry(offEntries[oi:])
			if p > pos {
				break
			}
			if p < pos || off != last {
				badIndex = fmt.Sprintf("%s entry %d (offset %d, position %d) does not name the batch there",
					s.index.path, oi/offsetEntrySize, off, p)
			}
		}
		for ; ti < len(timeEntries) && badIndex == ""; ti += timeEntrySize {
			ts, off := s.timeIndex.entry(timeEntries[ti:])
			if off > last {
				break
			}
			if off < last || ts != b.MaxTimestamp() {
				badIndex = fmt.Sprintf("%s entry %d (timestamp %d, offset %d) does not match the batch ending there",
					s.timeIndex.path, ti/timeEntrySize, ts, off)
			}
		}
	}
	f := &limitedFile{File: s.file, ctx: ctx, lim: lim}
	// Ranges a read path found but nobody reported yet are found again, and reported.
	var known []DamagedRange
	for _, d := range s.damaged() {
		if !d.pending {
			known = append(known, d)
		}
	}
	found, _, err := scanForDamage(f, s.baseOffset, 0, size, s.baseOffset, known, check)
	r.Segments++
	r.Bytes += f.read
	if cerr := ctx.Err(); cerr != nil {
		return cerr
	}
	if err != nil {
		return err
	}
	if badIndex == "" && (oi < len(offEntries) || ti < len(timeEntries)) {
		badIndex = fmt.Sprintf("%s or %s has entries past the last batch", s.index.path, s.timeIndex.path)
	}
	if len(found) > 0 {
		r.Corrupt += l.reportDamage(s, found, size)
	}
	if badIndex != "" || len(found) > 0 {
		if badIndex != "" {
			l.logger.Warn("index file does not match its segment: rebuilding it", "file", s.path, "reason", badIndex)
			r.IndexesRebuilt++
		}
		s.loadMu.Lock()
		err := s.rebuildIndexes(size)
		if err == nil {
			s.indexesLoaded.Store(true)
			err = s.writeIndexes()
		}
		s.loadMu.Unlock()
		if err != nil {
			return fmt.Errorf("%w: rebuilding the indexes of %s: %v", ErrKafkaStorage, s.path, err)
		}
	}
	return nil
}

// limitedFile paces ReadAt through a Limiter and counts the bytes read.
type limitedFile struct {
	vfs.File
	ctx  context.Context
	lim  Limiter
	read int64
}

func (f *limitedFile) ReadAt(p []byte, off int64) (int, error) {
	if f.lim != nil {
		for n := len(p); n > 0; n -= VerifyChunk {
			if err := f.lim.WaitN(f.ctx, min(n, VerifyChunk)); err != nil {
				return 0, err
			}
		}
	}
	n, err := f.File.ReadAt(p, off)
	f.read += int64(n)
	return n, err
}
