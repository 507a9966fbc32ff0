package log

import (
	"encoding/binary"
	"fmt"

	"github.com/runnel-io/runnel/internal/vfs"
)

// TimeIndex maps timestamps to offsets in a segment (Kafka TimeIndex). Each entry
// (T, O) says: every record at an offset <= O has a timestamp <= T, because T is the
// largest timestamp seen so far in the segment and O the last offset of the batch that
// carried it. Timestamps strictly increase from entry to entry.
type TimeIndex struct {
	entryIndex
}

func newTimeIndex(path string, base int64) *TimeIndex {
	return &TimeIndex{entryIndex{path: path, baseOffset: base, entrySize: timeEntrySize}}
}

func (x *TimeIndex) entry(e []byte) (ts, offset int64) {
	return int64(binary.BigEndian.Uint64(e)), x.baseOffset + int64(binary.BigEndian.Uint32(e[8:]))
}

// maybeAppend adds (ts, offset) when ts is larger than the last entry's timestamp.
func (x *TimeIndex) maybeAppend(ts, offset int64) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if n := len(x.buf); n > 0 {
		if last, lastOff := x.entry(x.buf[n-timeEntrySize:]); ts <= last || offset <= lastOff {
			return
		}
	}
	var e [timeEntrySize]byte
	binary.BigEndian.PutUint64(e[:], uint64(ts))
	binary.BigEndian.PutUint32(e[8:], uint32(offset-x.baseOffset))
	x.buf = append(x.buf, e[:]...)
	x.dirty = true
}

// lastEntry returns the entry with the largest timestamp.
func (x *TimeIndex) lastEntry() (ts, offset int64, ok bool) {
	x.mu.RLock()
	defer x.mu.RUnlock()
	if len(x.buf) == 0 {
		return -1, -1, false
	}
	ts, offset = x.entry(x.buf[len(x.buf)-timeEntrySize:])
	return ts, offset, true
}

// lookupBefore returns the offset of the last entry whose timestamp is < ts: every
// record up to that offset is older than ts. ok is false when there is none.
func (x *TimeIndex) lookupBefore(ts int64) (offset int64, ok bool) {
	x.mu.RLock()
	defer x.mu.RUnlock()
	i := x.searchLocked(func(e []byte) bool { return int64(binary.BigEndian.Uint64(e)) < ts })
	if i == 0 {
		return 0, false
	}
	_, offset = x.entry(x.buf[(i-1)*timeEntrySize:])
	return offset, true
}

// truncateToOffset drops the entries whose offset is >= offset.
func (x *TimeIndex) truncateToOffset(offset int64) {
	x.mu.RLock()
	i := x.searchLocked(func(e []byte) bool { _, o := x.entry(e); return o < offset })
	x.mu.RUnlock()
	x.truncateEntries(i)
}

// load reads the file and checks that it is strictly increasing and that its offsets
// lie in [base, nextOffset) when nextOffset >= 0.
func (x *TimeIndex) load(fsys vfs.FS, nextOffset int64) error {
	b, err := x.readFile(fsys)
	if err != nil {
		return err
	}
	var prevTs, prevOff int64 = -1 << 63, -1
	for i := 0; i < len(b); i += timeEntrySize {
		ts, off := x.entry(b[i:])
		if ts <= prevTs || off <= prevOff || (nextOffset >= 0 && off >= nextOffset) {
			return fmt.Errorf("%w: %s entry %d (timestamp %d, offset %d) is out of order or past offset %d",
				errBadIndex, x.path, i/timeEntrySize, ts, off, nextOffset)
		}
		prevTs, prevOff = ts, off
	}
	x.mu.Lock()
	x.buf, x.dirty = b, false
	x.mu.Unlock()
	return nil
}

// readLastEntry reads only the last entry of the file (used at open for the segment's
// largest timestamp without loading the whole index).
func (x *TimeIndex) readLastEntry(fsys vfs.FS) (ts, offset int64, err error) {
	fi, err := fsys.Stat(x.path)
	if err != nil {
		return 0, 0, fmt.Errorf("%w: %v", errBadIndex, err)
	}
	size := fi.Size()
	if size%timeEntrySize != 0 {
		return 0, 0, fmt.Errorf("%w: %s has %d bytes", errBadIndex, x.path, size)
	}
	if size == 0 {
		return -1, -1, nil
	}
	f, err := fsys.OpenFile(x.path, 0, 0)
	if err != nil {
		return 0, 0, err
	}
	defer f.Close()
	var e [timeEntrySize]byte
	if _, err := f.ReadAt(e[:], size-timeEntrySize); err != nil {
		return 0, 0, err
	}
	ts, offset = x.entry(e[:])
	return ts, offset, nil
}
