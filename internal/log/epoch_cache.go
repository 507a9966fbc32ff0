package log

import (
	"fmt"
	"strconv"

	"github.com/runnel-io/runnel/internal/vfs"
)

// EpochEntry says that leader epoch Epoch wrote its first record at StartOffset.
type EpochEntry struct {
	Epoch       int32
	StartOffset int64
}

// Undefined epoch and offset, as returned by EndOffsetForEpoch (Kafka UNDEFINED_EPOCH
// and UNDEFINED_EPOCH_OFFSET).
const (
	UndefinedEpoch       int32 = -1
	UndefinedEpochOffset int64 = -1
)

// LeaderEpochCache is Kafka's LeaderEpochFileCache: the start offset of every leader
// epoch present in the log, persisted in leader-epoch-checkpoint in the checkpoint
// text format ("epoch startOffset" lines). It has no lock of its own: the Log guards
// it with Log.mu. The file is written outside that lock (see Log.writeEpochCheckpoint).
type LeaderEpochCache struct {
	path string // immutable
	// Invariant: epochs and start offsets both strictly increase.
	entries []EpochEntry
	// dirty is true when entries differ from the file.
	dirty bool
}

func newLeaderEpochCache(dir string) *LeaderEpochCache {
	return &LeaderEpochCache{path: MakeFilename(dir, FileTypeEpochCheckpoint, 0)}
}

// load reads the checkpoint file; a missing file is an empty cache.
func (c *LeaderEpochCache) load(fsys vfs.FS) error {
	lines, err := readCheckpoint(fsys, c.path, 2)
	if err != nil {
		return err
	}
	c.entries = c.entries[:0]
	for _, l := range lines {
		e, err1 := strconv.ParseInt(l[0], 10, 32)
		o, err2 := strconv.ParseInt(l[1], 10, 64)
		if err1 != nil || err2 != nil {
			return fmt.Errorf("%w %s: entry %q %q", errBadCheckpoint, c.path, l[0], l[1])
		}
		c.assign(int32(e), o)
	}
	c.dirty = false
	return nil
}

func (c *LeaderEpochCache) encode() []byte {
	lines := make([]string, len(c.entries))
	for i, e := range c.entries {
		lines[i] = fmt.Sprintf("%d %d", e.Epoch, e.StartOffset)
	}
	return encodeCheckpoint(lines)
}

// latest returns the newest entry.
func (c *LeaderEpochCache) latest() (EpochEntry, bool) {
	if len(c.entries) == 0 {
		return EpochEntry{}, false
	}
	return c.entries[len(c.entries)-1], true
}

// assign records that epoch starts at start (Kafka assign). The same epoch again is a
// no-op. Entries that would break monotonicity (an epoch >= epoch, or a start offset
// >= start) are removed first, as Kafka does.
func (c *LeaderEpochCache) assign(epoch int32, start int64) {
	if epoch < 0 {
		return
	}
	if l, ok := c.latest(); ok && l.Epoch == epoch && l.StartOffset <= start {
		return
	}
	n := len(c.entries)
	for n > 0 && (c.entries[n-1].Epoch >= epoch || c.entries[n-1].StartOffset >= start) {
		n--
	}
	c.entries = append(c.entries[:n], EpochEntry{Epoch: epoch, StartOffset: start})
	c.dirty = true
}

// truncateFromEnd removes the entries starting at or after end (log truncated to end).
func (c *LeaderEpochCache) truncateFromEnd(end int64) {
	n := len(c.entries)
	for n > 0 && c.entries[n-1].StartOffset >= end {
		n--
	}
	if n != len(c.entries) {
		c.entries = c.entries[:n]
		c.dirty = true
	}
}

// truncateFromStart drops the epochs wholly below the new log start offset and moves
// the start of the epoch containing it up to it.
func (c *LeaderEpochCache) truncateFromStart(start int64) {
	i := 0
	for i+1 < len(c.entries) && c.entries[i+1].StartOffset <= start {
		i++
	}
	if i > 0 {
		c.entries = append(c.entries[:0], c.entries[i:]...)
		c.dirty = true
	}
	if len(c.entries) > 0 && c.entries[0].StartOffset < start {
		c.entries[0].StartOffset = start
		c.dirty = true
	}
}

func (c *LeaderEpochCache) clear() {
	if len(c.entries) > 0 {
		c.entries = c.entries[:0]
		c.dirty = true
	}
}

// endOffsetFor answers OffsetForLeaderEpoch (KIP-101/279): the largest epoch <= epoch
// present in the log and the offset where the next larger epoch starts (the log end
// offset leo for the latest epoch). An epoch above the latest, or no epochs at all,
// gives (UndefinedEpoch, UndefinedEpochOffset); an epoch below the earliest gives
// (epoch, start of the earliest).
func (c *LeaderEpochCache) endOffsetFor(epoch int32, leo int64) (int32, int64) {
	l, ok := c.latest()
	switch {
	case epoch == UndefinedEpoch || !ok:
		return UndefinedEpoch, UndefinedEpochOffset
	case epoch == l.Epoch:
		return epoch, leo
	case epoch > l.Epoch:
		return UndefinedEpoch, UndefinedEpochOffset
	}
	// The first entry with a larger epoch exists since epoch < latest.
	i := 0
	for c.entries[i].Epoch <= epoch {
		i++
	}
	if i == 0 {
		return epoch, c.entries[0].StartOffset
	}
	return c.entries[i-1].Epoch, c.entries[i].StartOffset
}
