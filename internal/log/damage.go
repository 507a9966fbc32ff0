package log

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/runnel-io/runnel/internal/recordbatch"
	"github.com/runnel-io/runnel/internal/vfs"
)

// Damage: bytes of a segment that do not read back as the batches written there (bit
// rot, a bad sector, a stray write), found by recovery, by an index rebuild or by
// Verify. A crash can only leave a torn tail: the last batches of the log, beyond the
// recovery point, incomplete or failing their CRC with no valid batch after them in
// their segment; recovery cuts those as before. Anything else is damage, and damage is
// never truncated or deleted by the log:
//
//   - the stretch is recorded on its segment (Segment.damage) and in the log's list
//     (Log.Damaged), from the end of the last good batch to the start of the next
//     one, found by scanning forward for a position where a batch header parses and
//     its CRC-32C verifies (resync); its offsets are those between the two batches;
//   - the segment file is copied to DATA_DIR/quarantine/<topic>-<partition>/ (never
//     deleted by Runnel) and a WARN names partition, file, position and offsets;
//   - the batches after the damage stay, indexed, and the log end does not move;
//   - reads starting at or past the first damaged offset fail with a *DamageError
//     (ErrKafkaStorage: KAFKA_STORAGE_ERROR naming the file and the offsets), reads
//     below it stop before it; appends go on;
//   - the list survives restarts in damaged-ranges-checkpoint: the segments it names
//     are scanned again at Open even when below the recovery point;
//   - it ends by TruncateDamaged (a follower then fetches the range again from the
//     leader), DropDamaged (accept-loss: the stretch becomes an empty batch holding
//     its offsets), or a truncation or retention that removes the segment part.

// DamagedRange is a stretch of a segment file that holds no readable batch.
type DamagedRange struct {
	// Segment is the path of the segment file; SegmentBase its base offset.
	Segment     string
	SegmentBase int64
	// Position and Length locate the damaged bytes in the file.
	Position, Length int64
	// FirstOffset is the offset after the last good batch before the damage (the
	// segment's base offset when there is none); LastOffset the offset before the next
	// good batch after it (before the next segment, or the recovery point for damage
	// at the end of the log). LastOffset < FirstOffset for bytes that held no offset
	// (garbage between two consecutive batches): such a stretch blocks no read.
	FirstOffset, LastOffset int64
	// Quarantine is the path of the copy of the segment file taken when the damage was
	// found ("" when the copy failed).
	Quarantine string
	// Reason is what the check found (the CRC mismatch, the impossible length...).
	Reason string

	// pending: found on a read path (an index rebuild) and already stepped over by
	// readers, but not yet quarantined, logged and counted (reportDamage).
	pending bool
}

// Offsets is the number of offsets the damaged bytes held (0 for garbage between
// consecutive batches).
func (d DamagedRange) Offsets() int64 { return max(d.LastOffset-d.FirstOffset+1, 0) }

func (d DamagedRange) end() int64 { return d.Position + d.Length }

// DamageError is returned by Read for an offset at or past damaged data. It wraps
// ErrKafkaStorage (Kafka KAFKA_STORAGE_ERROR); errors.As gives the replica layer the
// range.
type DamageError struct {
	TP    TopicPartition
	Range DamagedRange
}

func (e *DamageError) Error() string {
	d := e.Range
	q := "no quarantined copy"
	if d.Quarantine != "" {
		q = "quarantined copy at " + d.Quarantine
	}
	return fmt.Sprintf("%s: %s-%d: offsets %d-%d are corrupt in %s at byte %d (%s)", ErrKafkaStorage.Error(), e.TP.Topic,
		e.TP.Partition, d.FirstOffset, d.LastOffset, filepath.Base(d.Segment), d.Position, q)
}

func (e *DamageError) Unwrap() error { return ErrKafkaStorage }

// IntegrityCounters count what the log found and repaired, for
// runnel_corrupt_batches_total and runnel_repaired_batches_total. The Manager shares
// one among its logs (Manager.IntegrityStats); safe for concurrent use.
type IntegrityCounters struct {
	corrupt, repaired atomic.Int64
}

// IntegrityStats is a snapshot of IntegrityCounters.
type IntegrityStats struct {
	// CorruptBatches counts damaged ranges found (each is one or more batches that
	// failed their checks; damage already known from before a restart is not counted
	// again).
	CorruptBatches int64
	// RepairedBatches counts damaged ranges removed by DropDamaged (accept-loss) or
	// TruncateDamaged and other truncations (the replica then fetches them again).
	RepairedBatches int64
}

// Stats returns the counts so far.
func (c *IntegrityCounters) Stats() IntegrityStats {
	return IntegrityStats{CorruptBatches: c.corrupt.Load(), RepairedBatches: c.repaired.Load()}
}

// Damaged returns the log's damaged ranges in offset order (nil when none).
func (l *Log) Damaged() []DamagedRange {
	if p := l.damaged.Load(); p != nil {
		return append([]DamagedRange(nil), (*p)...)
	}
	return nil
}

// IntegrityStats returns the counters this log reports to (shared with the other logs
// of its Manager).
func (l *Log) IntegrityStats() IntegrityStats { return l.integrity.Stats() }

// firstBlockingDamage returns the first damaged range holding offsets, if any.
func (l *Log) firstBlockingDamage() (DamagedRange, bool) {
	p := l.damaged.Load()
	if p == nil {
		return DamagedRange{}, false
	}
	for _, d := range *p {
		if d.Offsets() > 0 {
			return d, true
		}
	}
	return DamagedRange{}, false
}

// damageFrom returns the first damaged range holding offsets that offset falls in
// (inside) or that comes after offset, if any.
func (l *Log) damageFrom(offset int64) (d DamagedRange, inside, ok bool) {
	p := l.damaged.Load()
	if p == nil {
		return DamagedRange{}, false, false
	}
	for _, d := range *p {
		switch {
		case d.Offsets() == 0 || d.LastOffset < offset:
		case d.FirstOffset <= offset:
			return d, true, true
		default:
			return d, false, true
		}
	}
	return DamagedRange{}, false, false
}

func (l *Log) damageError(d DamagedRange) error { return &DamageError{TP: l.tp, Range: d} }

// refreshDamage republishes the log's list from its segments' lists. Called with
// flushMu held (or during Open).
func (l *Log) refreshDamage() {
	var all []DamagedRange
	for _, s := range l.segs() {
		all = append(all, s.damaged()...)
	}
	if len(all) == 0 {
		l.damaged.Store(nil)
		return
	}
	l.damaged.Store(&all)
}

// damaged returns the segment's damaged ranges (nil when none); the slice is never
// modified.
func (s *Segment) damaged() []DamagedRange {
	if p := s.damage.Load(); p != nil {
		return *p
	}
	return nil
}

func (s *Segment) setDamage(ds []DamagedRange) {
	if len(ds) == 0 {
		s.damage.Store(nil)
		return
	}
	s.damage.Store(&ds)
}

// updateDamage replaces the segment's list by fn(list), atomically: a read path
// (rebuildIndexes) may add ranges while flushMu's holder changes the list.
func (s *Segment) updateDamage(fn func(old []DamagedRange) []DamagedRange) {
	for {
		p := s.damage.Load()
		var old []DamagedRange
		if p != nil {
			old = *p
		}
		next := fn(old)
		var np *[]DamagedRange
		if len(next) > 0 {
			np = &next
		}
		if s.damage.CompareAndSwap(p, np) {
			return
		}
	}
}

// mergeDamage returns old with the ranges of add, replacing those at the same
// positions, sorted by position.
func mergeDamage(old, add []DamagedRange) []DamagedRange {
	out := make([]DamagedRange, 0, len(old)+len(add))
	for _, d := range old {
		if _, ok := holeAt(add, d.Position); !ok {
			out = append(out, d)
		}
	}
	out = append(out, add...)
	sortDamage(out)
	return out
}

// holeAt returns the damaged range holding position pos.
func holeAt(holes []DamagedRange, pos int64) (DamagedRange, bool) {
	for _, d := range holes {
		if pos >= d.Position && pos < d.end() {
			return d, true
		}
	}
	return DamagedRange{}, false
}

// nextHole returns the start of the first damaged range at or after pos (limit when none
// is before limit).
func nextHole(holes []DamagedRange, pos, limit int64) int64 {
	for _, d := range holes {
		if d.Position >= pos && d.Position < limit {
			return d.Position
		}
	}
	return limit
}

// isDataError reports whether a scan stopped on bytes that are not a valid batch, as
// opposed to a failed read.
func isDataError(err error) bool {
	return errors.Is(err, recordbatch.ErrCorrupt) || errors.Is(err, recordbatch.ErrTruncated) ||
		errors.Is(err, recordbatch.ErrUnsupportedMagic)
}

// scanForDamage reads every batch of the segment file f (base offset base) between
// positions from and size, verifying each (framing, CRC-32C, offsets increasing from
// next and within 2^31 of base), and calls fn for each good one. Where the batches
// stop verifying it looks for the next position where one starts (resync) and
// returns the stretch in between as a damaged range; the ranges in known (already
// recorded) are skipped and not returned. A range running to size with no good batch
// after it has LastOffset -1: the caller knows what follows. next is the offset after
// the last good batch; err is a failed read.
func scanForDamage(f vfs.File, base, from, size, next int64, known []DamagedRange, fn func(b recordbatch.Batch, pos int64)) (found []DamagedRange, end int64, err error) {
	pos := from
	for pos < size {
		if d, ok := holeAt(known, pos); ok {
			pos, next = d.end(), max(next, d.LastOffset+1)
			continue
		}
		limit := nextHole(known, pos, size)
		valid, reason := scanBatches(f, pos, limit, true, func(b recordbatch.Batch, p int64) error {
			if b.BaseOffset() < next || b.LastOffset()-base > math.MaxInt32 || b.BaseOffset() < base {
				return fmt.Errorf("%w: batch at offset %d follows offset %d", recordbatch.ErrCorrupt, b.BaseOffset(), next-1)
			}
			if b.BaseOffset() > next && p > from && followerExpects(f, p+int64(b.Size()), limit, next+b.NextOffset()-b.BaseOffset()) {
				return fmt.Errorf("%w: batch at position %d says offset %d, but it sits between offset %d and a batch that goes on from it as if it started at %d: its offset field is damaged",
					recordbatch.ErrCorrupt, p, b.BaseOffset(), next-1, next)
			}
			fn(b, p)
			next = b.NextOffset()
			return nil
		})
		if valid == limit {
			pos = limit
			continue
		}
		if !isDataError(reason) {
			return found, next, fmt.Errorf("%w: reading %s at position %d: %v", ErrKafkaStorage, f.Name(), valid, reason)
		}
		q, qBase, ok, err := resync(f, base, valid+1, limit, next)
		if err != nil {
			return found, next, err
		}
		d := DamagedRange{Position: valid, Length: limit - valid, FirstOffset: next, LastOffset: -1, Reason: reason.Error()}
		switch {
		case ok:
			d.Length, d.LastOffset = q-valid, qBase-1
			next = qBase
		case limit < size: // up to a known range
			k, _ := holeAt(known, limit)
			d.LastOffset = k.FirstOffset - 1
		}
		found = append(found, d)
		pos = valid + d.Length
	}
	return found, next, nil
}

// followerExpects reports whether the batch at position at (below limit) starts at
// offset want. A batch's base offset is not covered by its CRC, so a flipped bit
// there goes unseen by the batch itself: the batch seems to leave a gap (as
// compaction leaves), and the intact batches after it then seem to go backwards
// (and, above the recovery point, would be cut as a torn tail). When the next batch
// starts where the suspect one would end had it started at the expected offset, both
// neighbours agree and the suspect's offset field is the damage: a gap left by
// compaction instead puts the next batch at the suspect's own end, past want.
func followerExpects(f io.ReaderAt, at, limit, want int64) bool {
	if at+8 > limit {
		return false
	}
	var h [8]byte
	if _, err := f.ReadAt(h[:], at); err != nil {
		return false
	}
	return int64(binary.BigEndian.Uint64(h[:])) == want
}

// resyncChunk is how much of a segment resync reads at a time.
const resyncChunk = 1 << 20

// resync finds the first position in [from, limit) where a whole batch starts that
// verifies (magic 2, sane length and offsets, CRC-32C) with a base offset at or
// above next and its offsets within 2^31 of the segment base. A damaged length field
// cannot be trusted, so every position is a candidate; the magic byte and the
// offsets rule out almost all of them before a CRC is computed.
func resync(f io.ReaderAt, base, from, limit, next int64) (pos, batchBase int64, found bool, err error) {
	buf := make([]byte, min(resyncChunk+recordbatch.HeaderSize, max(limit-from, 0)))
	for start := from; start+recordbatch.HeaderSize <= limit; start += resyncChunk {
		n := int(min(int64(len(buf)), limit-start))
		if got, err := f.ReadAt(buf[:n], start); err != nil && !(errors.Is(err, io.EOF) && got == n) {
			if errors.Is(err, io.EOF) {
				n = got // the file is shorter than its size: look at what is there
			} else {
				return 0, 0, false, fmt.Errorf("%w: reading at position %d: %v", ErrKafkaStorage, start, err)
			}
		}
		b := buf[:n]
		last := min(resyncChunk, n-recordbatch.HeaderSize+1) // candidates p < last
		for i := 0; i < last; {
			j := bytes.IndexByte(b[i+16:last+16], 2) // the magic byte
			if j < 0 {
				break
			}
			p := i + j
			i = p + 1
			h := b[p:]
			bb := int64(binary.BigEndian.Uint64(h[0:]))
			size := int64(int32(binary.BigEndian.Uint32(h[8:]))) + recordbatch.LengthPrefixSize
			lod := int64(int32(binary.BigEndian.Uint32(h[23:])))
			if size < recordbatch.HeaderSize || start+int64(p)+size > limit || bb < next || bb < base || lod < 0 ||
				bb+lod-base > math.MaxInt32 {
				continue
			}
			cand := b[p:min(int64(n), int64(p)+size)]
			if int64(len(cand)) < size {
				cand = make([]byte, size)
				if _, err := f.ReadAt(cand, start+int64(p)); err != nil && !errors.Is(err, io.EOF) {
					return 0, 0, false, fmt.Errorf("%w: reading at position %d: %v", ErrKafkaStorage, start+int64(p), err)
				}
			}
			if recordbatch.Batch(cand).Verify() == nil {
				return start + int64(p), bb, true, nil
			}
		}
	}
	return 0, 0, false, nil
}

// quarantineRoot is DATA_DIR/quarantine: the data dir is the partition directory's
// parent.
func (l *Log) quarantineRoot() string { return filepath.Join(filepath.Dir(l.dir), "quarantine") }

// quarantineSegment copies the segment file (its size bytes) to
// DATA_DIR/quarantine/<topic>-<partition>/<file>.<unix ms>, fsynced, and returns the
// copy's path. Nothing in Runnel ever deletes it.
func (l *Log) quarantineSegment(s *Segment, size int64) (string, error) {
	dir := filepath.Join(l.quarantineRoot(), filepath.Base(l.dir))
	if err := l.fs.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	name := filepath.Join(dir, filepath.Base(s.path)+"."+strconv.FormatInt(l.now().UnixMilli(), 10))
	for i := 1; ; i++ {
		if _, err := l.fs.Stat(name); errors.Is(err, fs.ErrNotExist) {
			break
		}
		name = strings.TrimSuffix(name, "-"+strconv.Itoa(i-1)) + "-" + strconv.Itoa(i)
	}
	out, err := l.fs.OpenFile(name, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o444)
	if err != nil {
		return "", err
	}
	buf := make([]byte, scanChunk)
	for pos := int64(0); pos < size && err == nil; {
		n, rerr := s.file.ReadAt(buf[:min(int64(len(buf)), size-pos)], pos)
		if n == 0 && rerr != nil {
			err = rerr
			break
		}
		_, err = out.Write(buf[:n])
		pos += int64(n)
	}
	if err == nil {
		err = out.Sync()
	}
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = l.fs.SyncDir(dir)
	}
	if err != nil {
		return "", err
	}
	return name, nil
}

// recordDamage records the damage found in s (found, in position order, with known
// ranges it did not return): each new range gets the segment's name, a quarantined
// copy of the file (one for all of them), a WARN and a count. Ranges that
// damaged-ranges-checkpoint already listed keep their quarantined copy and are
// logged again, not counted. Called during Open or with flushMu held; the caller
// republishes the log's list (refreshDamage).
func (l *Log) recordDamage(s *Segment, found []DamagedRange, size int64, known map[damageKey]DamagedRange) {
	if len(found) == 0 {
		return
	}
	var copyPath string
	copied := false
	for i := range found {
		d := &found[i]
		d.Segment, d.SegmentBase = s.path, s.baseOffset
		if k, ok := known[damageKey{s.baseOffset, d.Position}]; ok {
			d.Quarantine = k.Quarantine
			l.logger.Warn("segment still damaged (found before): reads at or past these offsets fail until repair",
				"file", s.path, "position", d.Position, "bytes", d.Length, "first_offset", d.FirstOffset,
				"last_offset", d.LastOffset, "quarantine", d.Quarantine)
			continue
		}
		if !copied {
			copied = true
			p, err := l.quarantineSegment(s, size)
			if err != nil {
				l.logger.Error("cannot copy a damaged segment to quarantine", "file", s.path, "err", err)
			}
			copyPath = p
		}
		d.Quarantine = copyPath
		l.integrity.corrupt.Add(1)
		l.logger.Warn("corrupt data in segment: kept, not truncated; reads at or past these offsets fail until repair",
			"file", s.path, "position", d.Position, "bytes", d.Length, "first_offset", d.FirstOffset,
			"last_offset", d.LastOffset, "reason", d.Reason, "quarantine", d.Quarantine)
	}
	s.updateDamage(func(old []DamagedRange) []DamagedRange { return mergeDamage(old, found) })
}

func sortDamage(ds []DamagedRange) {
	for i := 1; i < len(ds); i++ {
		for j := i; j > 0 && ds[j].Position < ds[j-1].Position; j-- {
			ds[j], ds[j-1] = ds[j-1], ds[j]
		}
	}
}

// damageKey names a damaged range across restarts: its segment and position.
type damageKey struct{ base, pos int64 }

// The damaged-ranges-checkpoint file, in the checkpoint text format, one line per
// range: "segmentBase position length firstOffset lastOffset quarantine", the
// quarantined copy relative to the data dir ("-" for none). It only says which
// segments to scan again at Open: the scan finds the damage anew.
const damageFields = 6

// readDamageCheckpoint returns the ranges the file lists. ok is false when the file
// cannot be trusted (the caller then scans every segment).
func (l *Log) readDamageCheckpoint() (known map[damageKey]DamagedRange, ok bool) {
	path := MakeFilename(l.dir, FileTypeDamageCheckpoint, 0)
	entries, err := readCheckpoint(l.fs, path, damageFields)
	if err == nil {
		known = make(map[damageKey]DamagedRange, len(entries))
		for _, e := range entries {
			var v [5]int64
			for i := range v {
				if v[i], err = strconv.ParseInt(e[i], 10, 64); err != nil {
					break
				}
			}
			if err != nil {
				err = fmt.Errorf("%w %s: entry %q", errBadCheckpoint, path, strings.Join(e, " "))
				break
			}
			d := DamagedRange{SegmentBase: v[0], Position: v[1], Length: v[2], FirstOffset: v[3], LastOffset: v[4]}
			if e[5] != "-" {
				d.Quarantine = filepath.Join(filepath.Dir(l.dir), e[5])
			}
			known[damageKey{d.SegmentBase, d.Position}] = d
		}
	}
	if err != nil {
		l.logger.Warn("damaged ranges checkpoint unreadable: every segment is scanned", "file", path, "err", err)
		l.quarantineFile(path)
		return nil, false
	}
	return known, true
}

// writeDamageCheckpoint writes the log's list to damaged-ranges-checkpoint (removing
// the file when the list is empty). Called with flushMu held, or during Open.
func (l *Log) writeDamageCheckpoint() error {
	path := MakeFilename(l.dir, FileTypeDamageCheckpoint, 0)
	ds := l.Damaged()
	if len(ds) == 0 {
		if err := l.fs.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("%w: removing %s: %v", ErrKafkaStorage, path, err)
		}
		return nil
	}
	lines := make([]string, len(ds))
	for i, d := range ds {
		q := "-"
		if rel, err := filepath.Rel(filepath.Dir(l.dir), d.Quarantine); d.Quarantine != "" && err == nil {
			q = rel
		}
		lines[i] = fmt.Sprintf("%d %d %d %d %d %s", d.SegmentBase, d.Position, d.Length, d.FirstOffset, d.LastOffset, q)
	}
	if err := vfs.WriteFileAtomic(l.fs, path, encodeCheckpoint(lines)); err != nil {
		return fmt.Errorf("%w: writing %s: %v", ErrKafkaStorage, path, err)
	}
	return nil
}

// quarantineFile copies a small file that failed to parse (a checkpoint) to the
// quarantine directory before it is rebuilt and overwritten. Best effort.
func (l *Log) quarantineFile(path string) {
	data, err := vfs.ReadFile(l.fs, path)
	if err != nil {
		return
	}
	copyToQuarantine(l.fs, filepath.Join(l.quarantineRoot(), filepath.Base(l.dir)), path, data, l.now().UnixMilli())
}

// copyToQuarantine writes data as dir/<base name of path>.<ms>, fsynced. Best effort:
// the caller already logged why.
func copyToQuarantine(fsys vfs.FS, dir, path string, data []byte, ms int64) {
	if fsys.MkdirAll(dir, 0o755) != nil {
		return
	}
	name := filepath.Join(dir, filepath.Base(path)+"."+strconv.FormatInt(ms, 10))
	if _, err := fsys.Stat(name); err == nil {
		return
	}
	_ = vfs.WriteFileAtomic(fsys, name, data)
}

// reportDamage records damage found outside recovery (an index rebuild on a read
// path, Verify) in s, which held size bytes when it was scanned. Ranges already
// recorded are ignored; a range running to the end of the segment ends before the
// next segment (or the log end). Nothing happens when s left the log meanwhile.
func (l *Log) reportDamage(s *Segment, found []DamagedRange, size int64) (recorded int) {
	l.flushMu.Lock()
	defer l.flushMu.Unlock()
	if l.closed.Load() || !l.holds(s) {
		return 0
	}
	ss := l.segs()
	nextBase := l.leo.Load()
	if i := floorSegment(ss, s.baseOffset); i >= 0 && i+1 < len(ss) {
		nextBase = ss[i+1].baseOffset
	}
	var fresh []DamagedRange
	for _, d := range found {
		if k, ok := holeAt(s.damaged(), d.Position); ok && !k.pending {
			continue
		}
		d.pending = false
		if d.LastOffset < 0 && d.FirstOffset >= 0 && d.end() >= size {
			d.LastOffset = nextBase - 1
		}
		fresh = append(fresh, d)
	}
	if len(fresh) == 0 {
		return 0
	}
	l.recordDamage(s, fresh, size, nil)
	l.refreshDamage()
	if err := l.writeDamageCheckpoint(); err != nil {
		l.logger.Error("cannot write the damaged ranges checkpoint", "err", err)
	}
	return len(fresh)
}
