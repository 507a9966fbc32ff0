package log

import (
	"errors"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/runnel-io/runnel/internal/log/logtest"
	"github.com/runnel-io/runnel/internal/recordbatch"
	"github.com/runnel-io/runnel/internal/vfs"
)

// TestConcurrentAppendReadFlush runs appenders, flushers, readers and retention at
// once (run it with -race). Readers must always get whole, valid batches with
// increasing offsets below the bound they asked for, the first holding the offset
// asked for (the log has no gaps), or ErrOffsetOutOfRange once retention took it.
func TestConcurrentAppendReadFlush(t *testing.T) {
	forEachLogConfig(t, func(t *testing.T, env testEnv, cfg Config) {
		cfg.RetentionBytes = 20_000
		l := openLog(t, env, cfg)
		var wg sync.WaitGroup
		done := make(chan struct{})
		errc := make(chan error, 16)
		for w := 0; w < 3; w++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := 0; i < 150; i++ {
					info, err := l.AppendAsLeader(logtest.Batch(1+i%5, 30), 1)
					if err == nil && l.NeedsFlush(info) {
						err = l.Flush(info.LastOffset + 1)
					}
					if err == nil && l.RecoveryPoint() <= info.LastOffset && cfg.FlushMessages == 1 {
						err = errors.New("flushed offset not below the recovery point")
					}
					if err != nil {
						errc <- err
						return
					}
				}
			}()
		}
		for r := 0; r < 2; r++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for {
					select {
					case <-done:
						return
					default:
					}
					if err := readOnce(l); err != nil {
						errc <- err
						return
					}
				}
			}()
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-done:
					return
				case <-time.After(time.Millisecond):
					if _, err := l.DeleteOldSegments(time.Now()); err != nil {
						errc <- err
						return
					}
				}
			}
		}()
		waitAppenders(t, l, 3*150*3)
		close(done)
		wg.Wait()
		close(errc)
		for err := range errc {
			t.Fatal(err)
		}
		start, leo := l.LogStartOffset(), l.LogEndOffset()
		checkContiguous(t, readAll(t, l, start, leo, 1<<20), start, leo)
	})
}

// waitAppenders waits until the appenders wrote their records (3 writers x 150
// batches of 1-5 records, 3 on average).
func waitAppenders(t *testing.T, l *Log, want int64) {
	deadline := time.Now().Add(20 * time.Second)
	for l.LogEndOffset() < want {
		if time.Now().After(deadline) {
			t.Fatalf("appenders stuck at log end %d, want %d", l.LogEndOffset(), want)
		}
		time.Sleep(time.Millisecond)
	}
}

// readOnce reads from a random-ish place up to the log end and validates batches.
// The log is contiguous (no cleaner, no damage) and off is below leo, so the answer
// starts with the batch holding off: an empty answer, or one starting later, would
// make a consumer or a follower skip records or fetch off again forever.
func readOnce(l *Log) error {
	leo := l.LogEndOffset()
	start := l.LogStartOffset()
	if leo == start {
		return nil
	}
	off := start + (leo-start)/3
	ri, err := l.Read(off, 4096, leo, true)
	if errors.Is(err, ErrOffsetOutOfRange) {
		return nil // retention moved the start meanwhile
	}
	if err != nil {
		return err
	}
	data, err := ri.AppendTo(nil)
	if err != nil {
		return nil // the segment was deleted and closed under us
	}
	next := int64(-1)
	for len(data) > 0 {
		b, rest, err := recordbatch.Next(data, 0)
		if err != nil {
			return err
		}
		if err := b.Verify(); err != nil {
			return err
		}
		if next < 0 && (b.BaseOffset() > off || b.LastOffset() < off) {
			return fmt.Errorf("read at %d of [%d, %d) began with batch [%d, %d], not the one holding %d",
				off, start, leo, b.BaseOffset(), b.LastOffset(), off)
		}
		if b.BaseOffset() <= next || b.LastOffset() >= leo {
			return errors.New("read returned batches out of order or past the bound")
		}
		next, data = b.LastOffset(), rest
	}
	if next < 0 {
		return fmt.Errorf("read at %d of [%d, %d) returned no batch (file %v, position %d, size %d)",
			off, start, leo, ri.File != nil, ri.Position, ri.Size)
	}
	return nil
}

// TestReadOfSegmentDeletedMidReadIsOutOfRange deletes the segment a read wants
// after the read checked the offset against the log start but before it loaded the
// segment list (readHook). The read must say ErrOffsetOutOfRange, as one started a
// moment later would: not answer with the records after the deleted segment as if
// they came next (a consumer or a follower would skip the deleted records without
// resetting), nor with nothing (it would fetch the same offset again and again).
func TestReadOfSegmentDeletedMidReadIsOutOfRange(t *testing.T) {
	for _, tc := range []struct {
		name      string
		maxOffset int64 // the bound a read is given: the high watermark
		replica   bool
	}{
		{"consumer below log end", 10, false},
		{"consumer below new log start", 4, false},
		{"follower below log end", 10, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := openLog(t, memEnv(), DefaultConfig())
			for i := 0; i < 10; i++ { // offsets 0-9, one segment each
				mustAppend(t, l, logtest.Batch(1, 10))
				if err := l.Roll(); err != nil {
					t.Fatal(err)
				}
			}
			deleted := false
			l.readHook = func() {
				if deleted {
					return
				}
				deleted = true
				if start, err := l.DeleteRecordsBefore(5); err != nil || start != 5 {
					t.Errorf("DeleteRecordsBefore(5) = %d, %v", start, err)
				}
			}
			read := l.Read
			if tc.replica {
				read = l.ReadForReplica
			}
			ri, err := read(2, 1<<20, tc.maxOffset, true)
			if !deleted {
				t.Fatal("the read hook did not run")
			}
			if l.NumSegments() != 6 || l.LogStartOffset() != 5 {
				t.Fatalf("after deleting records below 5: %d segments, log start %d; want 6, 5", l.NumSegments(), l.LogStartOffset())
			}
			if !errors.Is(err, ErrOffsetOutOfRange) {
				got := "no batch"
				if ri.Size > 0 {
					got = fmt.Sprintf("%d bytes from offset %d", ri.Size, ri.FirstOffset)
				}
				t.Fatalf("read at 2 whose segment was deleted mid-read: %s, err %v; want ErrOffsetOutOfRange", got, err)
			}
		})
	}
}

// blockingSyncFS wraps a filesystem so that fsyncs of .log files wait for release.
type blockingSyncFS struct {
	vfs.FS
	entered chan struct{}
	release chan struct{}
}

type blockingSyncFile struct {
	vfs.File
	fs *blockingSyncFS
}

func (f blockingSyncFile) Sync() error {
	f.fs.entered <- struct{}{}
	<-f.fs.release
	return f.File.Sync()
}

func (b *blockingSyncFS) OpenFile(name string, flag int, perm os.FileMode) (vfs.File, error) {
	f, err := b.FS.OpenFile(name, flag, perm)
	if err != nil || flag&os.O_RDWR == 0 {
		return f, err
	}
	return blockingSyncFile{File: f, fs: b}, nil
}

// TestFlushDoesNotBlockAppends holds an fsync and checks that appends and reads go
// on meanwhile, and that flushes queued behind it share the next fsync.
func TestFlushDoesNotBlockAppends(t *testing.T) {
	bfs := &blockingSyncFS{FS: vfs.NewMem(), entered: make(chan struct{}, 10), release: make(chan struct{})}
	l, err := Open(Options{FS: vfs.NewMem(), Dir: "/d/t-0", Config: DefaultConfig()})
	if err != nil {
		t.Fatal(err)
	}
	l.Close()
	l, err = Open(Options{FS: bfs, Dir: "/d/t-0", Config: DefaultConfig()})
	if err != nil {
		t.Fatal(err)
	}
	info := mustAppend(t, l, logtest.Batch(2, 10))
	flushed := make(chan error, 4)
	go func() { flushed <- l.Flush(info.LastOffset + 1) }()
	<-bfs.entered // the fsync is in progress
	for i := 0; i < 5; i++ {
		info = mustAppend(t, l, logtest.Batch(2, 10))
	}
	checkContiguous(t, readAll(t, l, 0, l.LogEndOffset(), 1<<20), 0, l.LogEndOffset())
	for i := 0; i < 3; i++ {
		go func() { flushed <- l.Flush(info.LastOffset + 1) }()
	}
	bfs.release <- struct{}{}
	if err := <-flushed; err != nil {
		t.Fatal(err)
	}
	<-bfs.entered // one more fsync, shared by the three flushes
	bfs.release <- struct{}{}
	for i := 0; i < 3; i++ {
		if err := <-flushed; err != nil {
			t.Fatal(err)
		}
	}
	select {
	case <-bfs.entered:
		t.Fatal("a third fsync: queued flushes did not share one")
	default:
	}
	if l.RecoveryPoint() != l.LogEndOffset() {
		t.Fatalf("recovery point %d, log end %d", l.RecoveryPoint(), l.LogEndOffset())
	}
	close(bfs.release)
	go func() {
		for range bfs.entered {
		}
	}()
}
