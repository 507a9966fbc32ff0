package log

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"sort"
	"sync"

	"github.com/runnel-io/runnel/internal/vfs"
)

const (
	offsetEntrySize = 8  // relative offset (4) + position (4)
	timeEntrySize   = 12 // timestamp (8) + relative offset (4)
)

// errBadIndex marks an index file that must be rebuilt from its segment.
var errBadIndex = errors.New("index file fails its sanity check")

// entryIndex is the storage shared by OffsetIndex and TimeIndex: fixed-size big-endian
// entries kept in memory, sorted, and written whole to the file at roll and close
// (the file is never read on the hot path, and never preallocated).
type entryIndex struct {
	path       string // immutable
	baseOffset int64  // immutable
	entrySize  int    // immutable

	mu sync.RWMutex
	// guarded by mu:
	buf []byte // len is a multiple of entrySize; entries strictly increase in both fields
	// dirty is true when buf differs from the file content.
	dirty bool
}

func (x *entryIndex) entries() int {
	x.mu.RLock()
	defer x.mu.RUnlock()
	return len(x.buf) / x.entrySize
}

// search returns the number of entries for which less(entry) is true, where less is
// monotonic (true then false). Called with mu held.
func (x *entryIndex) searchLocked(less func(e []byte) bool) int {
	n := len(x.buf) / x.entrySize
	return sort.Search(n, func(i int) bool { return !less(x.buf[i*x.entrySize:]) })
}

// trim gives the entries a buffer of their own size. The active segment's buffer
// grows by appending (doubling its capacity); once the segment is rolled nothing is
// appended, and keeping the slack would hold up to twice the index in memory for every
// segment of the log.
func (x *entryIndex) trim() {
	x.mu.Lock()
	defer x.mu.Unlock()
	if cap(x.buf) > len(x.buf) {
		nb := make([]byte, len(x.buf))
		copy(nb, x.buf)
		x.buf = nb
	}
}

func (x *entryIndex) truncateEntries(n int) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if n*x.entrySize < len(x.buf) {
		x.buf = x.buf[:n*x.entrySize]
		x.dirty = true
	}
}

func (x *entryIndex) reset(buf []byte) {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.buf = buf
	x.dirty = true
}

// writeFile writes the entries to the file if they changed, without fsync.
func (x *entryIndex) writeFile(fsys vfs.FS) error {
	x.mu.Lock()
	defer x.mu.Unlock()
	if !x.dirty {
		return nil
	}
	f, err := fsys.OpenFile(x.path, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	if _, err := f.Write(x.buf); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	x.dirty = false
	return nil
}

// syncFile fsyncs the index file (written by writeFile). A missing file is fine: it
// is rebuilt at recovery.
func (x *entryIndex) syncFile(fsys vfs.FS) error {
	f, err := fsys.OpenFile(x.path, os.O_RDONLY, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	err = f.Sync()
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// readFile returns the file content, or errBadIndex when it is missing or not a
// whole number of entries.
func (x *entryIndex) readFile(fsys vfs.FS) ([]byte, error) {
	b, err := vfs.ReadFile(fsys, x.path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%w: %s is missing", errBadIndex, x.path)
	}
	if err != nil {
		return nil, err
	}
	if len(b)%x.entrySize != 0 {
		return nil, fmt.Errorf("%w: %s has %d bytes, not a multiple of %d", errBadIndex, x.path, len(b), x.entrySize)
	}
	return b, nil
}

func (x *entryIndex) remove(fsys vfs.FS) error {
	err := fsys.Remove(x.path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	return err
}

// OffsetIndex maps offsets to positions in a segment (Kafka OffsetIndex). It is sparse:
// one entry (lastOffset of a batch, position of that batch) every index.interval.bytes.
// A lookup returns the greatest entry at or below the target; the reader scans batch
// headers from there. Safe for concurrent use: readers never wait for I/O.
type OffsetIndex struct {
	entryIndex
	maxEntries int // immutable: segment.index.bytes / 8
}

func newOffsetIndex(path string, base int64, maxBytes int32) *OffsetIndex {
	return &OffsetIndex{
		entryIndex: entryIndex{path: path, baseOffset: base, entrySize: offsetEntrySize},
		maxEntries: int(maxBytes) / offsetEntrySize,
	}
}

func (x *OffsetIndex) entry(e []byte) (offset, pos int64) {
	return x.baseOffset + int64(binary.BigEndian.Uint32(e)), int64(binary.BigEndian.Uint32(e[4:]))
}

// isFull reports whether no entry can be added (the segment must roll).
func (x *OffsetIndex) isFull() bool { return x.entries() >= x.maxEntries }

// append adds an entry. Callers append increasing offsets and positions.
func (x *OffsetIndex) append(offset, pos int64) {
	var e [offsetEntrySize]byte
	binary.BigEndian.PutUint32(e[:], uint32(offset-x.baseOffset))
	binary.BigEndian.PutUint32(e[4:], uint32(pos))
	x.mu.Lock()
	x.buf = append(x.buf, e[:]...)
	x.dirty = true
	x.mu.Unlock()
}

// lookup returns the greatest entry whose offset is <= target, or (base, 0).
func (x *OffsetIndex) lookup(target int64) (offset, pos int64) {
	x.mu.RLock()
	defer x.mu.RUnlock()
	rel := target - x.baseOffset
	i := x.searchLocked(func(e []byte) bool { return int64(binary.BigEndian.Uint32(e)) <= rel })
	if i == 0 {
		return x.baseOffset, 0
	}
	return x.entry(x.buf[(i-1)*offsetEntrySize:])
}

// lookupPosition returns the greatest entry whose position is <= maxPos, or (base, 0).
func (x *OffsetIndex) lookupPosition(maxPos int64) (offset, pos int64) {
	x.mu.RLock()
	defer x.mu.RUnlock()
	i := x.searchLocked(func(e []byte) bool { return int64(binary.BigEndian.Uint32(e[4:])) <= maxPos })
	if i == 0 {
		return x.baseOffset, 0
	}
	return x.entry(x.buf[(i-1)*offsetEntrySize:])
}

// truncateToPosition drops the entries at or after pos.
func (x *OffsetIndex) truncateToPosition(pos int64) {
	x.mu.RLock()
	i := x.searchLocked(func(e []byte) bool { return int64(binary.BigEndian.Uint32(e[4:])) < pos })
	x.mu.RUnlock()
	x.truncateEntries(i)
}

// load reads the file and checks it against the segment: offsets and positions
// strictly increase, and every position lies inside the segment of size segSize.
func (x *OffsetIndex) load(fsys vfs.FS, segSize int64) error {
	b, err := x.readFile(fsys)
	if err != nil {
		return err
	}
	var prevOff, prevPos int64 = -1, -1
	for i := 0; i < len(b); i += offsetEntrySize {
		off, pos := x.entry(b[i:])
		if off <= prevOff || pos <= prevPos || pos >= segSize {
			return fmt.Errorf("%w: %s entry %d (offset %d, position %d) is out of order or past the segment end %d",
				errBadIndex, x.path, i/offsetEntrySize, off, pos, segSize)
		}
		prevOff, prevPos = off, pos
	}
	x.mu.Lock()
	x.buf, x.dirty = b, false
	x.mu.Unlock()
	return nil
}
