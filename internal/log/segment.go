package log

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/runnel-io/runnel/internal/recordbatch"
	"github.com/runnel-io/runnel/internal/vfs"
)

// Segment is one .log file of raw v2 batches with its two indexes (Kafka LogSegment).
// Only the active (last) segment grows; the others are immutable until deleted or
// truncated, so readers use ReadAt on them without any lock.
type Segment struct {
	fs         vfs.FS
	baseOffset int64    // immutable
	path       string   // immutable
	file       vfs.File // immutable; written only by the holder of Log.mu
	index      *OffsetIndex
	timeIndex  *TimeIndex

	// size is the number of bytes readers may use: whole batches only. The appender
	// stores it after its write returns, so a reader never sees a partial batch.
	size atomic.Int64
	// writtenBack is how far (bytes) the write-back of the file was last started, by a
	// write-behind hint or an fsync (flush.go). A hint only: read and written racily.
	writtenBack atomic.Int64
	// cacheDropped is how far (bytes from the file's start) the page cache of the
	// segment was last dropped (pagecache.go). A hint only, like writtenBack.
	cacheDropped atomic.Int64

	// owner is the log the segment belongs to, set when it is first published
	// (Log.publishLocked) and then immutable; nil before. Used to log and report
	// damage found on a read path.
	owner *Log

	// damage lists the stretches of the file that hold no readable batch, sorted by
	// position (damage.go); nil when none. Replaced, never modified, under Log.flushMu
	// (or before the segment is published). Header walks (translate) step over them;
	// no byte range handed to a reader includes them.
	damage atomic.Pointer[[]DamagedRange]
	// verified are the byte ranges a read has checked since this process opened the
	// segment (verify_read.go).
	verified verifiedSpans

	// indexesLoaded is true once the indexes are in memory. Segments below the
	// recovery point load (or rebuild) them on first use, under loadMu.
	indexesLoaded atomic.Bool
	loadMu        sync.Mutex
	// pinned (guarded by loadMu) counts the writers that need the indexes to stay in
	// memory (resident.go).
	pinned int

	// guarded by Log.mu:
	nextOffset int64 // offset after the last batch; baseOffset when empty; -1 when not scanned
	builder    indexBuilder
	// firstBatchTimestamp is the max timestamp of the segment's first batch, the base of
	// segment.ms (Kafka's rollingBasedTimestamp); -1 while empty or not yet read from
	// the file of a segment opened at start-up (firstBatchTimestampLoaded).
	firstBatchTimestamp       int64
	firstBatchTimestampLoaded bool
	// created is when this process created or opened the segment: segment.ms counts
	// from it while no batch timestamp is known (Kafka's LogSegment.created).
	created time.Time
	// needsSync is true for a segment that was rolled but not yet fsynced (Log.unflushed).
	needsSync bool
}

// indexBuilder adds index entries as batches are appended or scanned (Kafka
// LogSegment.append): an offset index entry (lastOffset, position) once more than
// index.interval.bytes were appended since the previous one, and with it a time index
// entry for the largest timestamp so far.
type indexBuilder struct {
	index                *OffsetIndex
	timeIndex            *TimeIndex
	interval             int64
	bytesSinceIndex      int64
	maxTimestamp         int64 // -1 when none
	offsetOfMaxTimestamp int64
}

func (b *indexBuilder) add(batch recordbatch.Batch, pos int64) {
	last := batch.LastOffset()
	if ts := batch.MaxTimestamp(); ts > b.maxTimestamp {
		b.maxTimestamp, b.offsetOfMaxTimestamp = ts, last
	}
	if b.bytesSinceIndex > b.interval {
		b.index.append(last, pos)
		b.timeIndex.maybeAppend(b.maxTimestamp, b.offsetOfMaxTimestamp)
		b.bytesSinceIndex = 0
	}
	b.bytesSinceIndex += int64(len(batch))
}

// finish records the largest timestamp in the time index, as Kafka does when a segment
// becomes inactive, so that the last entry always holds the segment's max timestamp.
func (b *indexBuilder) finish() {
	if b.maxTimestamp >= 0 {
		b.timeIndex.maybeAppend(b.maxTimestamp, b.offsetOfMaxTimestamp)
	}
}

func newSegmentStruct(fsys vfs.FS, dir string, base int64, f vfs.File, cfg *Config) *Segment {
	s := &Segment{
		fs:                  fsys,
		baseOffset:          base,
		path:                MakeFilename(dir, FileTypeSegment, base),
		file:                f,
		index:               newOffsetIndex(MakeFilename(dir, FileTypeOffsetIndex, base), base, cfg.SegmentIndexBytes),
		timeIndex:           newTimeIndex(MakeFilename(dir, FileTypeTimeIndex, base), base),
		nextOffset:          -1,
		firstBatchTimestamp: -1,
		created:             time.Now(),
	}
	s.builder = indexBuilder{index: s.index, timeIndex: s.timeIndex, interval: int64(cfg.IndexIntervalBytes),
		maxTimestamp: -1, offsetOfMaxTimestamp: -1}
	return s
}

// createSegment creates an empty segment at base, replacing stale files of that name.
func createSegment(fsys vfs.FS, dir string, base int64, cfg *Config) (*Segment, error) {
	f, err := fsys.OpenFile(MakeFilename(dir, FileTypeSegment, base), os.O_CREATE|os.O_TRUNC|os.O_RDWR, 0o644)
	if err != nil {
		return nil, err
	}
	s := newSegmentStruct(fsys, dir, base, f, cfg)
	s.nextOffset = base
	s.firstBatchTimestampLoaded = true // empty: no batch to read
	s.indexesLoaded.Store(true)
	if err := s.removeIndexFiles(); err != nil {
		f.Close()
		return nil, err
	}
	return s, nil
}

// openSegment opens an existing segment; its state is filled by recovery.
func openSegment(fsys vfs.FS, dir string, base int64, cfg *Config) (*Segment, error) {
	f, err := fsys.OpenFile(MakeFilename(dir, FileTypeSegment, base), os.O_RDWR, 0)
	if err != nil {
		return nil, err
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	s := newSegmentStruct(fsys, dir, base, f, cfg)
	s.size.Store(fi.Size())
	return s, nil
}

// rollBaseTimestamp is the first batch's max timestamp, read from the file the first
// time it is asked for on a segment opened at start-up, so that the segment.ms clock
// survives a restart; -1 when the segment is empty. Caller holds the log's mu.
func (s *Segment) rollBaseTimestamp() int64 {
	if !s.firstBatchTimestampLoaded {
		s.firstBatchTimestampLoaded = true
		if ts, ok := firstBatchTimestamp(s); ok {
			s.firstBatchTimestamp = ts
		}
	}
	return s.firstBatchTimestamp
}

func (s *Segment) removeIndexFiles() error {
	if err := s.index.remove(s.fs); err != nil {
		return err
	}
	return s.timeIndex.remove(s.fs)
}

// writeIndexes writes both indexes to their files (no fsync).
func (s *Segment) writeIndexes() error {
	if err := s.index.writeFile(s.fs); err != nil {
		return err
	}
	return s.timeIndex.writeFile(s.fs)
}

// sync fsyncs the segment and, when withIndexes, its index files.
func (s *Segment) sync(withIndexes bool) error {
	if err := s.file.Sync(); err != nil {
		return err
	}
	if !withIndexes {
		return nil
	}
	if err := s.index.syncFile(s.fs); err != nil {
		return err
	}
	return s.timeIndex.syncFile(s.fs)
}

// ensureIndexes loads the indexes of a segment that recovery did not scan, rebuilding
// them from the segment when the files are missing or fail their sanity check.
func (s *Segment) ensureIndexes() error {
	if s.indexesLoaded.Load() {
		return nil
	}
	s.loadMu.Lock()
	defer s.loadMu.Unlock()
	if s.indexesLoaded.Load() {
		return nil
	}
	size := s.size.Load()
	err := s.index.load(s.fs, size)
	if err == nil {
		err = s.checkLastIndexEntry(size)
	}
	if err == nil {
		err = s.timeIndex.load(s.fs, -1)
	}
	if errors.Is(err, errBadIndex) {
		s.warn("index file fails its check: rebuilding it from the segment", "file", s.index.path, "reason", err)
		if err = s.rebuildIndexes(size); err == nil {
			// Best effort: a failure only means rebuilding again after a restart.
			_ = s.writeIndexes()
		}
	}
	if err != nil {
		return err
	}
	s.indexesLoaded.Store(true)
	return nil
}

// checkLastIndexEntry reads the batch the last offset index entry points to: it must
// start there and end at the entry's offset. This catches a torn tail that the
// ordering checks of load let through.
func (s *Segment) checkLastIndexEntry(size int64) error {
	s.index.mu.RLock()
	n := len(s.index.buf)
	var off, pos int64
	if n > 0 {
		off, pos = s.index.entry(s.index.buf[n-offsetEntrySize:])
	}
	s.index.mu.RUnlock()
	if n == 0 {
		return nil
	}
	h := getHdrBuf()
	defer hdrPool.Put(h)
	hdr, err := readHeaderAt(s.file, pos, size, h)
	if err != nil || hdr.last != off {
		return fmt.Errorf("%w: %s last entry (offset %d, position %d) does not match the batch there", errBadIndex, s.index.path, off, pos)
	}
	return nil
}

// rebuildIndexes recomputes both indexes of an immutable segment by scanning it,
// stepping over its known damage. Bad bytes found on the way are new damage: the
// indexes are built from the good batches all the same, and the damage goes to the
// log (reportDamage), never truncated: this segment is below the recovery point.
func (s *Segment) rebuildIndexes(size int64) error {
	b := indexBuilder{
		index:     newOffsetIndex(s.index.path, s.baseOffset, int32(s.index.maxEntries*offsetEntrySize)),
		timeIndex: newTimeIndex(s.timeIndex.path, s.baseOffset),
		interval:  s.builder.interval, maxTimestamp: -1, offsetOfMaxTimestamp: -1,
	}
	found, _, err := scanForDamage(s.file, s.baseOffset, 0, size, s.baseOffset, s.damaged(), b.add)
	if err != nil {
		return fmt.Errorf("rebuilding the indexes of %s: %w", s.path, err)
	}
	b.finish()
	s.index.reset(b.index.buf)
	s.timeIndex.reset(b.timeIndex.buf)
	if len(found) > 0 {
		if s.owner == nil {
			return fmt.Errorf("%w: rebuilding the indexes of %s: bad batch at position %d of %d: %s",
				ErrCorruption, s.path, found[0].Position, size, found[0].Reason)
		}
		// Readers step over the damage from now on; quarantine, WARN and counts
		// follow on a goroutine (this may run under Log.flushMu, which
		// reportDamage takes).
		for i := range found {
			found[i].Segment, found[i].SegmentBase, found[i].pending = s.path, s.baseOffset, true
		}
		s.updateDamage(func(old []DamagedRange) []DamagedRange { return mergeDamage(old, found) })
		go s.owner.reportDamage(s, found, size)
	}
	return nil
}

// rebuildBadIndex rebuilds the indexes of an inactive segment whose offset index
// entry (off, pos) does not name the batch at pos. The active segment's indexes are
// built in memory by this process, never read from a file: it is left alone.
func (s *Segment) rebuildBadIndex(pos, off int64) error {
	if s.owner == nil || s.owner.isActive(s) {
		return nil
	}
	s.loadMu.Lock()
	defer s.loadMu.Unlock()
	s.warn("offset index entry does not name the batch at its position: rebuilding the index from the segment",
		"file", s.index.path, "offset", off, "position", pos)
	if err := s.rebuildIndexes(s.size.Load()); err != nil {
		return err
	}
	s.indexesLoaded.Store(true)
	_ = s.writeIndexes() // best effort: a failure means rebuilding again after a restart
	return nil
}

// warn logs through the owning log's logger (which names the partition).
func (s *Segment) warn(msg string, args ...any) {
	if s.owner != nil {
		s.owner.logger.Warn(msg, args...)
		return
	}
	slog.Warn(msg, args...)
}

func (s *Segment) close() error { return s.file.Close() }

// headerPrefix is the start of a batch header that the read path needs: baseOffset,
// batchLength, ... lastOffsetDelta.
const headerPrefix = 27

// headerReadAhead is how much of a segment one header read brings in: twice the
// default index.interval.bytes, so that the walk from an offset index entry to the
// batch sought usually costs one read, where it cost one pread per batch passed (about
// 24 for batches of a few 100 B records, twice per fetch: 9% of a one-node CPU profile
// under a tail-following consumer on a virtual machine, where each syscall is dear).
// For large batches it reads 8 KiB where 27 bytes would do, a copy of a microsecond.
const headerReadAhead = 8 << 10

// hdrBuf is a read-ahead buffer of batch headers for one lookup (translate, its
// scans). It only ever holds bytes below the published size of its file at the time
// of the read, which are immutable while the segment lives (truncation aside, which
// a reader may meet with or without the buffer). Take one with getHdrBuf: a buffer is
// never reused across lookups without being emptied.
type hdrBuf struct {
	f   vfs.File // the file buf caches; nil: empty
	pos int64    // file position of buf[0]
	n   int      // valid bytes in buf
	buf [headerReadAhead]byte
}

var hdrPool = sync.Pool{New: func() any { return new(hdrBuf) }}

// getHdrBuf takes an empty header buffer from the pool; hdrPool.Put gives it back.
func getHdrBuf() *hdrBuf {
	h := hdrPool.Get().(*hdrBuf)
	h.f, h.n = nil, 0
	return h
}

// prefix returns the headerPrefix bytes at pos of f: from the buffer when it holds
// them, else read with what follows up to limit (at most headerReadAhead bytes) put in
// the buffer. The error is ReadAt's when fewer than headerPrefix bytes could be read.
func (h *hdrBuf) prefix(f vfs.File, pos, limit int64) ([]byte, error) {
	if h.f == f && pos >= h.pos && pos+headerPrefix <= h.pos+int64(h.n) {
		off := int(pos - h.pos)
		return h.buf[off : off+headerPrefix], nil
	}
	want := headerPrefix
	if rest := limit - pos; rest > headerPrefix {
		want = int(min(rest, headerReadAhead))
	}
	n, err := f.ReadAt(h.buf[:want], pos)
	h.f = nil
	if n >= headerPrefix && want > headerPrefix {
		// Everything read lies below limit; a short read (EOF) keeps what it got,
		// and the next header past it reads again and meets the error itself.
		h.f, h.pos, h.n = f, pos, n
	}
	if n >= headerPrefix {
		err = nil
	}
	return h.buf[:headerPrefix], err
}

// batchHeader is what the read path needs of a batch.
type batchHeader struct {
	base, last int64
	size       int64
	// hole is true for a damaged range (translate): base and last are its offsets,
	// size its length; no batch starts there.
	hole bool
}

// readHeaderAt reads the header of the batch at pos. A batch that does not fit before
// limit or has an impossible length is ErrCorruption.
func readHeaderAt(f vfs.File, pos, limit int64, hb *hdrBuf) (batchHeader, error) {
	h, err := hb.prefix(f, pos, limit)
	if err != nil {
		class := ErrKafkaStorage
		if errors.Is(err, io.EOF) {
			class = ErrCorruption // the file is shorter than its published size
		}
		return batchHeader{}, fmt.Errorf("%w: reading the batch header at position %d of %s: %v", class, pos, f.Name(), err)
	}
	base := int64(binary.BigEndian.Uint64(h[0:]))
	length := int64(int32(binary.BigEndian.Uint32(h[8:])))
	lod := int64(int32(binary.BigEndian.Uint32(h[23:])))
	size := length + recordbatch.LengthPrefixSize
	if size < recordbatch.HeaderSize || pos+size > limit || lod < 0 {
		return batchHeader{}, fmt.Errorf("%w: batch at position %d of %s announces %d bytes (limit %d)", ErrCorruption, pos, f.Name(), size, limit)
	}
	return batchHeader{base: base, last: base + lod, size: size}, nil
}

// translate finds the first batch whose last offset is >= target, starting from the
// offset index, among the batches that end at or before limit. found is false when
// every batch below limit ends before target. A damaged range on the way is stepped
// over, unless it may hold target: then it is the answer, with hdr.hole set.
func (s *Segment) translate(target, limit int64, h *hdrBuf) (pos int64, hdr batchHeader, found bool, err error) {
	if err := s.ensureIndexes(); err != nil {
		return 0, batchHeader{}, false, err
	}
	var entryOff int64
	entryOff, pos = s.index.lookup(target)
	holes := s.damaged()
	if pos > 0 && pos < limit {
		// An index file is never trusted: the entry must name the batch at its
		// position (its last offset), or the index is rebuilt from the segment.
		if _, inHole := holeAt(holes, pos); !inHole {
			if hdr, err := readHeaderAt(s.file, pos, limit, h); err != nil || hdr.last != entryOff {
				if err := s.rebuildBadIndex(pos, entryOff); err != nil {
					return 0, batchHeader{}, false, err
				}
				_, pos = s.index.lookup(target)
				holes = s.damaged()
			}
		}
	}
	for pos < limit {
		if d, ok := holeAt(holes, pos); ok {
			if target <= d.LastOffset {
				return d.Position, batchHeader{base: d.FirstOffset, last: d.LastOffset, size: d.Length, hole: true}, true, nil
			}
			pos = d.end()
			continue
		}
		hdr, err = readHeaderAt(s.file, pos, limit, h)
		if err != nil {
			return 0, hdr, false, err
		}
		if hdr.last >= target {
			return pos, hdr, true, nil
		}
		pos += hdr.size
	}
	return pos, batchHeader{}, false, nil
}

// wholeBatchesEnd returns the end of the last batch that starts at or after from and
// ends at or before limit (from itself when none does).
func (s *Segment) wholeBatchesEnd(from, limit int64, h *hdrBuf) (int64, error) {
	if off, p := s.index.lookupPosition(limit); p > from {
		// As in translate: the entry must name the batch at its position.
		if hdr, err := readHeaderAt(s.file, p, s.size.Load(), h); err != nil || hdr.last != off {
			if err := s.rebuildBadIndex(p, off); err != nil {
				return 0, err
			}
			_, p = s.index.lookupPosition(limit)
		}
		from = max(from, p)
	}
	limit = nextHole(s.damaged(), from, limit) // callers' ranges end before any damage
	for from < limit {
		hdr, err := readHeaderAt(s.file, from, s.size.Load(), h)
		if err != nil {
			return 0, err
		}
		if from+hdr.size > limit {
			break
		}
		from += hdr.size
	}
	return from, nil
}

const scanChunk = 256 << 10

// scanBatches calls fn for every batch of f between positions from and end, reading
// in large chunks. It stops at the first batch that is torn, badly framed or (when
// verify) fails Verify, and returns the position where the good batches end with the
// reason; a clean end returns (end, nil). An error from fn stops the scan as is.
func scanBatches(f vfs.File, from, end int64, verify bool, fn func(b recordbatch.Batch, pos int64) error) (int64, error) {
	var backing []byte
	buf := backing
	pos := from // file position of buf[0]
	for pos < end {
		b, rest, err := recordbatch.Next(buf, int(min(end-pos, 1<<31-1)))
		if errors.Is(err, recordbatch.ErrTruncated) {
			n, rerr := refill(f, &backing, buf, pos, end)
			if rerr != nil {
				return pos, rerr
			}
			if n == len(buf) {
				return pos, fmt.Errorf("%w: %d bytes at position %d hold only part of a batch", recordbatch.ErrTruncated, len(buf), pos)
			}
			buf = backing[:n]
			continue
		}
		if err != nil {
			return pos, err
		}
		if verify {
			if err := b.Verify(); err != nil {
				return pos, err
			}
		}
		if err := fn(b, pos); err != nil {
			return pos, err
		}
		pos += int64(len(b))
		buf = rest
	}
	return pos, nil
}

// refill moves the unread bytes buf to the front of *backing and reads more after
// them, enough for the batch buf starts (when its length is known). It returns the
// new number of buffered bytes.
func refill(f vfs.File, backing *[]byte, buf []byte, pos, end int64) (int, error) {
	want := scanChunk
	if len(buf) >= recordbatch.LengthPrefixSize {
		size := int(int32(binary.BigEndian.Uint32(buf[8:]))) + recordbatch.LengthPrefixSize
		want = max(want, size)
	}
	want = int(min(int64(want), end-pos))
	if cap(*backing) < want {
		nb := make([]byte, want)
		copy(nb, buf)
		*backing = nb
	} else {
		*backing = (*backing)[:cap(*backing)]
		copy(*backing, buf)
	}
	n, err := f.ReadAt((*backing)[len(buf):want], pos+int64(len(buf)))
	if err != nil && !errors.Is(err, io.EOF) {
		return 0, err
	}
	return len(buf) + n, nil
}
