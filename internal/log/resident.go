package log

import (
	"slices"
)

// The offset and time indexes of a segment live in memory while it is in use (20 bytes
// per index.interval.bytes: about 5 MiB per GiB of log). Kept for every segment for the
// life of the process, a node's memory would grow with the data it holds. So the
// active segment keeps its indexes, and of the inactive ones only the
// residentIndexes used last (by a read, a timestamp lookup, or a roll) do; the others
// drop them (their files are written: at roll, after a rebuild, by the cleaner) and
// load them again on their next use (Segment.ensureIndexes).
//
// Unloading races only with readers, which then find an empty index and scan the
// segment's batch headers from its start: slower, never wrong (every index lookup's
// answer with no entries is the segment's start). The two writers of an inactive
// segment's indexes pin it (Segment.pin) while they work: truncation, which makes it
// the active segment again, and the cleaner, which renames its files.

// residentIndexes is how many inactive segments per log keep their indexes in memory.
const residentIndexes = 2

// noteIndexesUsed records that s's indexes were used and drops those of the inactive
// segments used longest ago beyond residentIndexes. The active segment is not counted.
func (l *Log) noteIndexesUsed(s *Segment) {
	if l.isActive(s) {
		return
	}
	l.residentMu.Lock()
	defer l.residentMu.Unlock()
	if n := len(l.resident); n > 0 && l.resident[n-1] == s {
		return // used last already: the common case of a reader going through a segment
	}
	l.resident = slices.DeleteFunc(l.resident, func(x *Segment) bool { return x == s })
	l.resident = append(l.resident, s)
	for len(l.resident) > residentIndexes {
		x := l.resident[0]
		l.resident = l.resident[1:]
		x.unloadIndexes(func() bool { return l.isActive(x) || !l.holds(x) })
	}
}

// isActive reports whether s is the log's active segment.
func (l *Log) isActive(s *Segment) bool {
	ss := l.segs()
	return ss[len(ss)-1] == s
}

// holds reports whether s is one of the log's segments (not retired or replaced).
func (l *Log) holds(s *Segment) bool {
	ss := l.segs()
	i := floorSegment(ss, s.baseOffset)
	return i >= 0 && i < len(ss) && ss[i] == s
}

// pin keeps s's indexes in memory until unpin; see the top of this file.
func (s *Segment) pin() {
	s.loadMu.Lock()
	s.pinned++
	s.loadMu.Unlock()
}

func (s *Segment) unpin() {
	s.loadMu.Lock()
	s.pinned--
	s.loadMu.Unlock()
}

// unloadIndexes drops s's in-memory indexes unless keep says not to (the segment became
// active again, or left the log: nothing to save), it is pinned, or an index has
// changes its file does not hold yet.
func (s *Segment) unloadIndexes(keep func() bool) {
	s.loadMu.Lock()
	defer s.loadMu.Unlock()
	if !s.indexesLoaded.Load() || s.pinned > 0 || keep() {
		return
	}
	s.index.mu.Lock()
	s.timeIndex.mu.Lock()
	clean := !s.index.dirty && !s.timeIndex.dirty
	if clean {
		s.index.buf, s.timeIndex.buf = nil, nil
	}
	s.timeIndex.mu.Unlock()
	s.index.mu.Unlock()
	if clean {
		s.indexesLoaded.Store(false)
	}
}
