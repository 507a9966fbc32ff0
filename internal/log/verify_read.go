package log

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/runnel-io/runnel/internal/recordbatch"
)

// ReadVerifiedBytes counts the bytes verify-on-read checked, process-wide (tests and
// benchmarks read it).
var ReadVerifiedBytes atomic.Int64

// Verify on read. A batch's CRC-32C was checked when it was appended, but the bytes a
// reader gets later may come from the disk, not the page cache, and a disk flips bits.
// So the first time a range of an inactive segment is handed to a reader (a consumer
// or a follower) in this process, its batches are read and checked; the range is then
// remembered as verified and later reads of it cost nothing more. A range that fails
// is reported as damage (the segment is scanned as Verify does: quarantined, logged,
// counted, and reported to the controller through the node's heartbeats), and the
// read is answered as any read of a damaged log: it stops before the damage, or fails
// with the storage error. No corrupt batch is ever sent as if valid. The active
// segment is exempt: it was written by this process and is read from the page cache
// (a reader of its older part meets it in a later segment, verified then, once it has
// rolled). The scrubber (scrub.go) checks the ranges nobody reads.

// verifiedSpans are the byte ranges of a segment checked since this process opened it.
type verifiedSpans struct {
	mu    sync.Mutex
	spans [][2]int64 // sorted, disjoint, not adjacent: [start, end)
}

// covers reports whether [from, to) was verified.
func (v *verifiedSpans) covers(from, to int64) bool {
	v.mu.Lock()
	defer v.mu.Unlock()
	for _, s := range v.spans {
		if s[0] <= from && to <= s[1] {
			return true
		}
		if s[0] > from {
			break
		}
	}
	return false
}

// add records [from, to) as verified, merging it with the spans it touches.
func (v *verifiedSpans) add(from, to int64) {
	v.mu.Lock()
	defer v.mu.Unlock()
	out := v.spans[:0:0]
	for _, s := range v.spans {
		if s[1] < from || s[0] > to {
			out = append(out, s)
			continue
		}
		from, to = min(from, s[0]), max(to, s[1])
	}
	out = append(out, [2]int64{from, to})
	slices.SortFunc(out, func(a, b [2]int64) int {
		switch {
		case a[0] < b[0]:
			return -1
		case a[0] > b[0]:
			return 1
		}
		return 0
	})
	v.spans = out
}

// errReadFoundDamage: verifying a read's range found damage, now recorded, or found
// the segment replaced under it; the read is tried again and meets the damage as
// recorded, or reads the segment that replaced it.
var errReadFoundDamage = errors.New("verifying a read found damage")

// verifyRead checks the batches of [pos, limit) of seg unless done before. Damage is
// recorded (verifySegment) and errReadFoundDamage returned; a failed read of the file
// is returned as it is.
func (l *Log) verifyRead(seg *Segment, pos, limit int64) error {
	if limit <= pos || seg.verified.covers(pos, limit) {
		return nil
	}
	err := verifyRange(seg, pos, limit)
	if err != nil && !l.holds(seg) {
		// The cleaner or retention replaced the segment while it was checked: its
		// bytes are not the log's any more. Read again from what the log holds now.
		return errReadFoundDamage
	}
	if err == nil {
		seg.verified.add(pos, limit)
		ReadVerifiedBytes.Add(limit - pos)
		return nil
	}
	if !isDataError(err) {
		return err
	}
	l.logger.Warn("a read found a batch failing its checks: scanning the segment for damage",
		"segment", seg.path, "position", pos, "err", err)
	var r VerifyResult
	if verr := l.verifySegment(context.Background(), seg, nil, &r); verr != nil {
		return verr
	}
	if r.Corrupt == 0 && len(seg.damaged()) == 0 {
		// The whole segment verified: the read's check was wrong, not the data. The
		// scan is the judge (it never records good batches as damage), so the read
		// goes on; say so, it is a defect.
		l.logger.Error("verify on read refused a range the segment scan found intact; serving it",
			"segment", seg.path, "position", pos, "end", limit, "read_err", err)
		seg.verified.add(0, seg.size.Load())
		return nil
	}
	return errReadFoundDamage
}

// verifyBufs holds the buffers verifyRange reads into: a read's range is usually a
// fetch's worth (about a MiB), and a buffer per read would be garbage per fetch.
var verifyBufs = sync.Pool{New: func() any { b := make([]byte, 0, 1<<20); return &b }}

// verifyChunk bounds what verifyRange reads at once (a variable for tests).
var verifyChunk int64 = 4 << 20

// verifyRange checks every batch of [pos, limit) of seg (whole batches: a read's
// range), reading it in chunks of at most verifyChunk into a pooled buffer.
func verifyRange(seg *Segment, pos, limit int64) error {
	bp := verifyBufs.Get().(*[]byte)
	defer verifyBufs.Put(bp)
	for pos < limit {
		n := int(min(limit-pos, verifyChunk))
		if cap(*bp) < n {
			*bp = make([]byte, n)
		}
		buf := (*bp)[:n]
		if _, err := seg.file.ReadAt(buf, pos); err != nil {
			return err
		}
		rest := buf
		for len(rest) > 0 {
			// The range's end bounds a batch's size; the buffer's end only cuts it.
			at := pos + int64(len(buf)-len(rest))
			b, next, err := recordbatch.Next(rest, int(min(limit-at, 1<<31-1)))
			if errors.Is(err, recordbatch.ErrTruncated) {
				break // a batch across the chunk's end: the next chunk starts at it
			}
			if err != nil {
				return err
			}
			if err := b.Verify(); err != nil {
				return err
			}
			rest = next
		}
		read := int64(len(buf) - len(rest))
		if read == 0 {
			// One batch larger than a chunk: read it whole.
			if len(buf) < recordbatch.LengthPrefixSize {
				return fmt.Errorf("%w: %d bytes at position %d of %s", recordbatch.ErrTruncated, len(buf), pos, seg.path)
			}
			size := int64(recordbatch.Batch(buf).Size())
			if size <= int64(len(buf)) || pos+size > limit {
				return fmt.Errorf("%w: batch of %d bytes at position %d of %s", recordbatch.ErrCorrupt, size, pos, seg.path)
			}
			whole := make([]byte, size)
			if _, err := seg.file.ReadAt(whole, pos); err != nil {
				return err
			}
			if err := recordbatch.Batch(whole).Verify(); err != nil {
				return err
			}
			read = size
		}
		pos += read
	}
	return nil
}
