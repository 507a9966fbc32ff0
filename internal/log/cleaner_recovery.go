package log

import (
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"sort"

	"github.com/runnel-io/runnel/internal/recordbatch"
)

// finishSwaps completes the cleaner swaps that a crash interrupted and removes the
// files of unfinished passes, before the directory is scanned (Kafka LogLoader's
// handling of .cleaned and .swap files; see swapIn for the order of a swap):
//
//   - *.cleaned were written by a pass that had not committed: removed;
//   - <base>.log.swap is a committed cleaned segment: the old segments it replaces
//     (the one at base and those whose base lies within its offsets) are removed,
//     with any index at base, and it is renamed <base>.log; its indexes are
//     rebuilt from it;
//   - index *.swap files are removed (indexes are rebuilt).
//
// Old segments of the group past the swap's last offset may survive: they only
// hold records that the cleaned segment's own records or later ones supersede, so
// the log stays a valid, less compacted, log.
func (l *Log) finishSwaps() error {
	names, err := l.fs.ReadDir(l.dir)
	if err != nil {
		return fmt.Errorf("%w: listing %s: %v", ErrKafkaStorage, l.dir, err)
	}
	var swaps, segs []int64
	for _, name := range names {
		marker, inner, base, ok := ParseMarkedFilename(name)
		switch {
		case !ok:
			if t, b, ok := ParseFilename(name); ok && t == FileTypeSegment {
				segs = append(segs, b)
			}
		case marker == FileTypeCleaned || (marker == FileTypeSwap && inner != FileTypeSegment):
			if err := l.removeFile(filepath.Join(l.dir, name)); err != nil {
				return err
			}
		case marker == FileTypeSwap:
			swaps = append(swaps, base)
		}
	}
	sort.Slice(swaps, func(i, j int) bool { return swaps[i] < swaps[j] })
	for _, base := range swaps {
		if err := l.completeSwap(base, segs); err != nil {
			return err
		}
	}
	if len(swaps) > 0 {
		if err := l.fs.SyncDir(l.dir); err != nil {
			return fmt.Errorf("%w: syncing %s: %v", ErrKafkaStorage, l.dir, err)
		}
	}
	return nil
}

// completeSwap finishes the swap of <base>.log.swap.
func (l *Log) completeSwap(base int64, segs []int64) error {
	swap := MakeFilename(l.dir, FileTypeSwap, base)
	last, err := l.lastOffsetOf(swap)
	if err != nil {
		return err
	}
	for _, b := range segs {
		if b == base || (b > base && b <= last) {
			for _, t := range []FileType{FileTypeSegment, FileTypeOffsetIndex, FileTypeTimeIndex} {
				if err := l.removeFile(MakeFilename(l.dir, t, b)); err != nil {
					return err
				}
			}
		}
	}
	for _, t := range []FileType{FileTypeOffsetIndex, FileTypeTimeIndex} {
		if err := l.removeFile(MakeFilename(l.dir, t, base)); err != nil {
			return err
		}
	}
	if err := l.fs.Rename(swap, MakeFilename(l.dir, FileTypeSegment, base)); err != nil {
		return fmt.Errorf("%w: renaming %s: %v", ErrKafkaStorage, swap, err)
	}
	l.logger.Info("finished a cleaner swap interrupted by a crash", "segment", MakeFilename(l.dir, FileTypeSegment, base), "last_offset", last)
	return nil
}

// lastOffsetOf returns the last offset of the segment file at path (base-1 in
// effect when it is empty: math.MinInt64). The file was fsynced before it was
// renamed .swap, so any bad batch is corruption.
func (l *Log) lastOffsetOf(path string) (int64, error) {
	f, err := l.fs.OpenFile(path, os.O_RDONLY, 0)
	if err != nil {
		return 0, fmt.Errorf("%w: opening %s: %v", ErrKafkaStorage, path, err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return 0, fmt.Errorf("%w: %s: %v", ErrKafkaStorage, path, err)
	}
	last := int64(math.MinInt64)
	valid, err := scanBatches(f, 0, fi.Size(), true, func(b recordbatch.Batch, _ int64) error {
		last = b.LastOffset()
		return nil
	})
	if err != nil || valid != fi.Size() {
		return 0, fmt.Errorf("%w: cleaned segment %s: bad batch at position %d: %v", ErrCorruption, path, valid, err)
	}
	return last, nil
}

func (l *Log) removeFile(path string) error {
	if err := l.fs.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("%w: removing %s: %v", ErrKafkaStorage, path, err)
	}
	return nil
}

// loadCleanerState reads the cleaner checkpoint at Open and returns the offset below
// which recovery accepts gaps between segments. An unreadable checkpoint is
// replaced by an empty state (the cleaner then treats the whole log as dirty, and
// tombstones wait delete.retention.ms again), and every gap is accepted: a gap left
// by cleaning is then indistinguishable from a lost tail, and deleting the segments
// after it would lose data.
func (l *Log) loadCleanerState() (gapsBelow int64) {
	s, err := readCleanerState(l.fs, l.dir)
	if err != nil {
		l.logger.Warn("cleaner checkpoint unreadable: the log is treated as never cleaned", "err", err)
		l.cleaned = cleanerState{}
		return math.MaxInt64
	}
	l.cleaned = s
	l.cleanerEnd.Store(s.firstDirty())
	return s.firstDirty()
}

// cutCleanerStateLocked records a truncation to off in the cleaner state, before the
// truncation itself, and makes any pass in flight give up its swap. A crash in
// between leaves the untruncated log with a state that accepts fewer gaps: at worst
// recovery drops segments past a gap above off, which the truncation removes anyway.
// Called with flushMu held.
func (l *Log) cutCleanerStateLocked(off int64) error {
	l.truncations.Add(1)
	if off >= l.cleaned.firstDirty() {
		return nil
	}
	s := l.cleaned.truncatedTo(off)
	if err := writeCleanerState(l.fs, l.dir, s); err != nil {
		return l.fail("write "+cleanerCheckpointName, err)
	}
	l.cleaned = s
	l.cleanerEnd.Store(s.firstDirty())
	return nil
}
