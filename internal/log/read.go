package log

import (
	"errors"
	"fmt"
	"io"

	"github.com/runnel-io/runnel/internal/vfs"
)

// ReadInfo is a byte range of whole batches in a segment file. The range is immutable
// while the segment lives; a segment deleted by retention stays readable for
// file.delete.delay.ms.
type ReadInfo struct {
	File        vfs.File
	Position    int64
	Size        int32
	FirstOffset int64 // base offset of the first batch; -1 when Size is 0
}

// AppendTo appends the bytes of the range to dst.
func (r ReadInfo) AppendTo(dst []byte) ([]byte, error) {
	if r.Size == 0 {
		return dst, nil
	}
	n := len(dst)
	if cap(dst)-n >= int(r.Size) {
		// Reslice without clearing: ReadAt overwrites the bytes, and only the bytes it
		// read are returned, so zeroing first would be a wasted pass over the records.
		dst = dst[:n+int(r.Size)]
	} else {
		dst = append(dst, make([]byte, r.Size)...)
	}
	got, err := r.File.ReadAt(dst[n:], r.Position)
	if err != nil && !errors.Is(err, io.EOF) {
		return dst[:n], fmt.Errorf("%w: reading %d bytes at %d of %s: %v", ErrKafkaStorage, r.Size, r.Position, r.File.Name(), err)
	}
	// A short read (the segment was truncated under the reader) returns what was read:
	// clients drop a partial last batch, and dst's unread tail may hold old bytes.
	return dst[:n+got], nil
}

// Read returns whole batches starting with the batch that contains offset and ending
// before maxOffset (exclusive, usually the high watermark), at most maxBytes unless
// minOneBatch and the first batch alone is bigger (then exactly that batch). offset
// below LogStartOffset or above LogEndOffset is ErrOffsetOutOfRange; offset ==
// maxOffset is an empty ReadInfo. Read takes no lock and never waits for appends.
//
// Damage (damage.go): offset at or past the first damaged range is a *DamageError
// (ErrKafkaStorage naming the file and the offsets), never ErrOffsetOutOfRange or an
// empty answer; a read below it ends before it.
func (l *Log) Read(offset int64, maxBytes int32, maxOffset int64, minOneBatch bool) (ReadInfo, error) {
	return l.readChecked(offset, maxBytes, maxOffset, minOneBatch, false, false)
}

// ReadForReplica is Read for a follower replica fetching from this log's replica,
// the leader. It differs only past damage: an offset inside a damaged range is a
// *DamageError as for Read, but one after it reads on (up to the next damaged range).
// A follower that holds the damaged range intact must still get what came after it,
// or it could never catch up, rejoin the ISR and take the leadership over from this
// damaged replica, which would then stay the partition's only copy in the ISR.
func (l *Log) ReadForReplica(offset int64, maxBytes int32, maxOffset int64, minOneBatch bool) (ReadInfo, error) {
	return l.readChecked(offset, maxBytes, maxOffset, minOneBatch, true, false)
}

func (l *Log) readChecked(offset int64, maxBytes int32, maxOffset int64, minOneBatch, pastDamage, retried bool) (ReadInfo, error) {
	if l.closed.Load() {
		return ReadInfo{}, ErrClosed
	}
	leo := l.leo.Load() // before any segment size: see Log.leo
	if offset < l.logStart.Load() || offset > leo {
		return ReadInfo{}, fmt.Errorf("%w: offset %d, log is [%d, %d]", ErrOffsetOutOfRange, offset, l.logStart.Load(), leo)
	}
	maxOffset = min(maxOffset, leo)
	if !pastDamage {
		if d, ok := l.firstBlockingDamage(); ok {
			if offset >= d.FirstOffset {
				return ReadInfo{}, l.damageError(d)
			}
			maxOffset = min(maxOffset, d.FirstOffset)
		}
	} else if d, inside, ok := l.damageFrom(offset); ok {
		if inside {
			return ReadInfo{}, l.damageError(d)
		}
		maxOffset = min(maxOffset, d.FirstOffset)
	}
	if offset >= maxOffset {
		return ReadInfo{FirstOffset: -1}, nil
	}
	if l.readHook != nil {
		l.readHook()
	}
	ri, err := l.read(offset, maxBytes, maxOffset, minOneBatch)
	if errors.Is(err, errReadFoundDamage) && !retried {
		// The damage the read found is recorded now: read again, meeting it.
		return l.readChecked(offset, maxBytes, maxOffset, minOneBatch, pastDamage, true)
	}
	if errors.Is(err, errReadFoundDamage) {
		return ReadInfo{}, fmt.Errorf("%w: %s-%d: the batches at offset %d fail their checks", ErrKafkaStorage, l.tp.Topic, l.tp.Partition, offset)
	}
	if err != nil && !errors.Is(err, ErrOffsetOutOfRange) && offset < l.logStart.Load() {
		// Retention deleted the segment while we read it.
		return ReadInfo{}, fmt.Errorf("%w: offset %d is below the log start %d", ErrOffsetOutOfRange, offset, l.logStart.Load())
	}
	return ri, err
}

func (l *Log) read(offset int64, maxBytes int32, maxOffset int64, minOneBatch bool) (ReadInfo, error) {
	h := getHdrBuf()
	defer hdrPool.Put(h)
	ss := l.segs()
	first := floorSegment(ss, offset)
	if first < 0 {
		// offset was at or above the log start when Read checked it, but retention
		// (or DeleteRecords, or a full truncation) removed its segment before the list
		// was loaded: the first segment's base is at or below the log start
		// (Log.logStart), so the records at offset are gone. Reading on from the first
		// segment would answer with later offsets as if they came next (a consumer or
		// a follower would skip the records between without the OffsetOutOfRange that
		// makes it reset), or, when maxOffset is below them, with nothing (it would
		// fetch the same offset again).
		return ReadInfo{}, fmt.Errorf("%w: %s-%d: offset %d is below the log start %d (its segment was deleted during the read)",
			ErrOffsetOutOfRange, l.tp.Topic, l.tp.Partition, offset, max(l.logStart.Load(), ss[0].baseOffset))
	}
	for i := first; i < len(ss); i++ {
		seg := ss[i]
		limit := seg.size.Load()
		pos, hdr, found, err := seg.translate(offset, limit, h)
		if err != nil {
			return ReadInfo{}, err
		}
		if i < len(ss)-1 {
			l.noteIndexesUsed(seg) // an inactive segment's indexes (resident.go)
		}
		if !found {
			continue // offset falls after this segment's last batch (a gap)
		}
		if hdr.hole {
			// Only a read racing with newly found damage, or one from a gap just
			// before it, gets here: the check in Read covers the rest.
			if d, ok := holeAt(seg.damaged(), pos); ok {
				return ReadInfo{}, l.damageError(d)
			}
			return ReadInfo{FirstOffset: -1}, nil
		}
		if hdr.base >= maxOffset {
			return ReadInfo{FirstOffset: -1}, nil
		}
		ri, err := l.readRange(seg, pos, hdr, limit, maxBytes, maxOffset, minOneBatch, h)
		if err == nil && ri.Size > 0 && i < len(ss)-1 {
			// An inactive segment: checked on its first read (verify_read.go).
			err = l.verifyRead(seg, ri.Position, ri.Position+int64(ri.Size))
		}
		return ri, err
	}
	return ReadInfo{FirstOffset: -1}, nil
}

// readRange cuts the range [pos, ...) of seg to whole batches below maxOffset and
// within maxBytes.
func (l *Log) readRange(seg *Segment, pos int64, first batchHeader, limit int64, maxBytes int32, maxOffset int64, minOneBatch bool, h *hdrBuf) (ReadInfo, error) {
	if maxOffset <= first.last {
		// The first batch already reaches maxOffset: nothing is below it.
		return ReadInfo{FirstOffset: -1}, nil
	}
	if mpos, _, found, err := seg.translate(maxOffset, limit, h); err != nil {
		return ReadInfo{}, err
	} else if found {
		limit = mpos
	}
	// No range handed out holds damaged bytes, even garbage that held no offset.
	limit = nextHole(seg.damaged(), pos, limit)
	if limit-pos > int64(maxBytes) {
		end, err := seg.wholeBatchesEnd(pos, pos+int64(max(maxBytes, 0)), h)
		if err != nil {
			return ReadInfo{}, err
		}
		limit = end
	}
	if limit == pos {
		if !minOneBatch {
			return ReadInfo{FirstOffset: -1}, nil
		}
		limit = pos + first.size
	}
	return ReadInfo{File: seg.file, Position: pos, Size: int32(limit - pos), FirstOffset: first.base}, nil
}
