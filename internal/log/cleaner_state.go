package log

import (
	"fmt"
	"sort"
	"strconv"

	"github.com/runnel-io/runnel/internal/vfs"
)

// cleanMark says that the offsets in [previous mark's upTo, upTo) were first reached
// by a cleaning pass at atMs (the pass's start, in ms).
type cleanMark struct {
	upTo, atMs int64
}

// maxCleanMarks bounds the marks kept per log; the oldest are merged beyond it.
const maxCleanMarks = 32

// cleanerState is how far the cleaner got in one log and when (Kafka's
// cleaner-offset-checkpoint, which holds only the offset, plus the times that
// replace KIP-534's delete horizon stored in batches). The log cleaner reads it to
// find the dirty section (from firstDirty on), to tell whether a tombstone was
// already cleaned once and since when, and recovery reads it to accept the offset
// gaps that cleaning leaves between segments below firstDirty.
//
// Invariant: marks have strictly increasing upTo.
type cleanerState struct {
	marks []cleanMark
}

// firstDirty is the first offset no pass has reached; 0 when the log was never cleaned.
func (s cleanerState) firstDirty() int64 {
	if len(s.marks) == 0 {
		return 0
	}
	return s.marks[len(s.marks)-1].upTo
}

// firstCleanedAt returns when a pass first reached offset off.
func (s cleanerState) firstCleanedAt(off int64) (int64, bool) {
	i := sort.Search(len(s.marks), func(i int) bool { return s.marks[i].upTo > off })
	if i == len(s.marks) {
		return 0, false
	}
	return s.marks[i].atMs, true
}

// with returns the state after a pass that reached upTo at atMs. Marks at or past
// upTo (none, unless the log was truncated below them) are dropped. Past
// maxCleanMarks the two oldest marks merge into one with the later time: tombstones
// there then stay longer than needed, never shorter.
func (s cleanerState) with(upTo, atMs int64) cleanerState {
	marks := s.truncatedTo(upTo).marks
	if n := len(marks); n > 0 && marks[n-1].upTo == upTo {
		marks = marks[:n-1]
	}
	marks = append(marks, cleanMark{upTo: upTo, atMs: atMs})
	for len(marks) > maxCleanMarks {
		marks[1].atMs = max(marks[0].atMs, marks[1].atMs)
		marks = marks[1:]
	}
	return cleanerState{marks: marks}
}

// truncatedTo returns the state of the log once the offsets from off on are gone:
// the marks below off, the last one cut at off.
func (s cleanerState) truncatedTo(off int64) cleanerState {
	var out cleanerState
	for _, m := range s.marks {
		if m.upTo >= off {
			if off > 0 {
				out.marks = append(out.marks, cleanMark{upTo: off, atMs: m.atMs})
			}
			break
		}
		out.marks = append(out.marks, m)
	}
	return out
}

// encode renders the state in Kafka's checkpoint format, one "upTo atMs" per mark.
func (s cleanerState) encode() []byte {
	lines := make([]string, len(s.marks))
	for i, m := range s.marks {
		lines[i] = strconv.FormatInt(m.upTo, 10) + " " + strconv.FormatInt(m.atMs, 10)
	}
	return encodeCheckpoint(lines)
}

// readCleanerState reads the cleaner checkpoint of dir; a missing file is the state
// of a log never cleaned.
func readCleanerState(fsys vfs.FS, dir string) (cleanerState, error) {
	path := MakeFilename(dir, FileTypeCleanerCheckpoint, 0)
	entries, err := readCheckpoint(fsys, path, 2)
	if err != nil {
		return cleanerState{}, err
	}
	var s cleanerState
	for _, e := range entries {
		upTo, err1 := strconv.ParseInt(e[0], 10, 64)
		at, err2 := strconv.ParseInt(e[1], 10, 64)
		if err1 != nil || err2 != nil || upTo < 0 || upTo <= s.firstDirty() && len(s.marks) > 0 {
			return cleanerState{}, fmt.Errorf("%w %s: entry %q", errBadCheckpoint, path, e)
		}
		s.marks = append(s.marks, cleanMark{upTo: upTo, atMs: at})
	}
	return s, nil
}

// writeCleanerState replaces the cleaner checkpoint of dir (atomically, fsynced).
func writeCleanerState(fsys vfs.FS, dir string, s cleanerState) error {
	return vfs.WriteFileAtomic(fsys, MakeFilename(dir, FileTypeCleanerCheckpoint, 0), s.encode())
}
