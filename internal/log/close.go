package log

import (
	"errors"
	"fmt"
)

// Close flushes the log, writes the active segment's indexes and a producer snapshot,
// and closes every file. Later calls on the Log return ErrClosed. An offline log
// (ErrKafkaStorage) closes its files without flushing.
func (l *Log) Close() error {
	l.flushMu.Lock()
	defer l.flushMu.Unlock()
	if l.closed.Load() {
		return ErrClosed
	}
	err := l.flushLocked(l.leo.Load())
	l.mu.Lock()
	if err == nil {
		err = l.closeActiveLocked()
	}
	l.closed.Store(true)
	l.mu.Unlock()
	l.removeExpiredDeletes(l.now(), true)
	for _, s := range l.segs() {
		if cerr := s.close(); err == nil && cerr != nil {
			err = fmt.Errorf("%w: closing %s: %v", ErrKafkaStorage, s.path, cerr)
		}
	}
	return err
}

// closeActiveLocked writes and fsyncs the active segment's indexes and a producer
// snapshot at the log end, so that a clean restart trusts everything. Called at
// Close only: the fsync under mu cannot delay appends any more.
func (l *Log) closeActiveLocked() error {
	if err := l.checkWritableLocked(); err != nil {
		return err
	}
	seg := l.activeLocked()
	seg.builder.finish()
	if err := seg.writeIndexes(); err != nil {
		return l.failLocked("write index", err)
	}
	if err := seg.sync(true); err != nil {
		return l.failLocked("fsync", err)
	}
	if err := l.writeProducerSnapshotLocked(l.leo.Load()); err != nil {
		return l.failLocked("write producer snapshot", err)
	}
	return nil
}

// Delete closes the log and removes its directory.
func (l *Log) Delete() error {
	if err := l.Close(); err != nil && !errors.Is(err, ErrClosed) && !errors.Is(err, ErrKafkaStorage) {
		return err
	}
	if err := l.fs.RemoveAll(l.dir); err != nil {
		return fmt.Errorf("%w: removing %s: %v", ErrKafkaStorage, l.dir, err)
	}
	return nil
}
