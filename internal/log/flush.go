package log

import (
	"errors"
	"fmt"
	"syscall"
	"time"

	"github.com/runnel-io/runnel/internal/vfs"
)

// NeedsFlush reports whether the flush policy asks for an fsync now, after the append
// described by info: flush.messages or more records are not durable yet, or flush.ms
// has passed since the last flush.
func (l *Log) NeedsFlush(info AppendInfo) bool {
	cfg := l.config.Load()
	rp := l.recoveryPoint.Load()
	if info.LastOffset+1 <= rp && l.leo.Load() <= rp {
		return false
	}
	if l.leo.Load()-rp >= cfg.FlushMessages {
		return true
	}
	return l.now().UnixMilli()-l.lastFlushMs.Load() >= cfg.FlushMs
}

// Flush makes every offset below upTo durable. Concurrent callers share one fsync
// (group commit): the first one syncs everything appended so far, the others find
// the recovery point already past their offset. The append lock is held only to take
// a snapshot of the work, never across the fsync.
func (l *Log) Flush(upTo int64) error {
	if upTo <= l.recoveryPoint.Load() {
		return nil
	}
	defer l.runPendingDrop()
	if l.flushMu.TryLock() {
		// No fsync running: this one starts at once and writes the pages itself.
		defer l.flushMu.Unlock()
		return l.flushLocked(upTo)
	}
	l.writeBehind()
	l.flushMu.Lock()
	defer l.flushMu.Unlock()
	return l.flushLocked(upTo)
}

// writeBehind is called while another caller's fsync runs: it gets the pages appended
// since the write-back was last started on their way to the disk, so that the fsync
// covering them has less left to write, but only once there are writeBehindMin bytes
// of them: the hint is a synchronous sync_file_range, which on ext4 can wait for the
// journal commit of the fsync in progress, so for small appends (a latency-bound
// producer) it could add up to a whole fsync to the wait for no gain. A hint only, so
// the segment list is read without the append lock: a segment rolled or closed
// meanwhile gets a harmless (or failing, ignored) write-back request.
func (l *Log) writeBehind() {
	ss := l.segs()
	if active := ss[len(ss)-1]; active.size.Load()-active.writtenBack.Load() >= writeBehindMin {
		active.writtenBack.Store(active.size.Load())
		vfs.WriteBehind(active.file)
	}
}

// writeBehindMin is the least appended data whose write-back a waiting Flush starts.
const writeBehindMin = 256 << 10

// flushLocked is Flush with flushMu held.
func (l *Log) flushLocked(upTo int64) error {
	if upTo <= l.recoveryPoint.Load() {
		return nil
	}
	l.mu.Lock()
	if err := l.checkWritableLocked(); err != nil {
		l.mu.Unlock()
		return err
	}
	target := l.leo.Load()
	rolled := l.unflushed
	l.unflushed = nil
	active := l.activeLocked()
	epochs := l.epochCheckpointLocked()
	active.writtenBack.Store(active.size.Load()) // the fsync below writes back at least this
	drop := l.noteDurableLocked(active, active.size.Load())
	l.mu.Unlock()

	for _, s := range rolled {
		if err := s.sync(true); err != nil {
			return l.fail("fsync", err)
		}
	}
	if err := active.sync(false); err != nil {
		return l.fail("fsync", err)
	}
	if err := l.writeEpochCheckpoint(epochs); err != nil {
		return err
	}
	if target > l.recoveryPoint.Load() {
		l.recoveryPoint.Store(target)
	}
	l.lastFlushMs.Store(l.now().UnixMilli())
	if drop != nil {
		l.pendingDrop.Store(drop) // run by Flush once flushMu is released
	}
	return nil
}

// epochCheckpointLocked returns the epoch checkpoint content to write when the cache
// changed since it was last written, else nil.
func (l *Log) epochCheckpointLocked() []byte {
	if !l.epochs.dirty {
		return nil
	}
	l.epochs.dirty = false
	return l.epochs.encode()
}

// writeEpochCheckpoint writes the leader-epoch-checkpoint (with fsync), with flushMu
// held so that writes of successive versions cannot reorder.
func (l *Log) writeEpochCheckpoint(data []byte) error {
	if data == nil {
		return nil
	}
	if err := vfs.WriteFileAtomic(l.fs, l.epochs.path, data); err != nil {
		l.mu.Lock()
		l.epochs.dirty = true
		l.mu.Unlock()
		if errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT) {
			// A full disk: the checkpoint is written again by the next flush (dirty),
			// and until then the file may only be behind the cache or ahead of a
			// truncation: recovery rescans the segments above the recovery point (which
			// a failed flush does not advance) and trims epochs past the log end. So
			// the log stays writable, as for an append that found the disk full.
			return fmt.Errorf("%w: %w: write leader-epoch-checkpoint %s: %v", ErrKafkaStorage, ErrDiskFull, l.dir, err)
		}
		return l.fail("write leader-epoch-checkpoint", err)
	}
	return nil
}

// TimeSinceFlush is how long ago the last Flush completed (for flush.ms).
func (l *Log) TimeSinceFlush(now time.Time) time.Duration {
	return time.Duration(now.UnixMilli()-l.lastFlushMs.Load()) * time.Millisecond
}
