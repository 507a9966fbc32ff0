package log

import (
	"fmt"
	"sync"
	"testing"

	"github.com/runnel-io/runnel/internal/log/logtest"
	"github.com/runnel-io/runnel/internal/vfs"
)

// A rolled segment's indexes keep no slack: the active segment's buffers grow by
// doubling, and a log of many segments would otherwise hold up to twice its indexes.
func TestRolledSegmentIndexesTrimmed(t *testing.T) {
	cfg := DefaultConfig()
	cfg.SegmentBytes = 64 << 10
	cfg.IndexIntervalBytes = 1
	l, err := Open(Options{FS: vfs.OS(), Dir: t.TempDir() + "/t-0", Config: cfg})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	for range 300 {
		if _, err := l.AppendAsLeader(logtest.Batch(1, 1000), 0); err != nil {
			t.Fatal(err)
		}
	}
	ss := l.segs()
	if len(ss) < 3 {
		t.Fatalf("%d segments, want several", len(ss))
	}
	checked := 0
	for _, s := range ss[:len(ss)-1] {
		if !s.indexesLoaded.Load() {
			continue // unloaded (resident.go): nothing held
		}
		checked++
		for _, x := range []*entryIndex{&s.index.entryIndex, &s.timeIndex.entryIndex} {
			if len(x.buf) == 0 || cap(x.buf) != len(x.buf) {
				t.Errorf("segment %d: index %s holds %d bytes in a buffer of %d", s.baseOffset, x.path, len(x.buf), cap(x.buf))
			}
		}
	}
	if checked == 0 {
		t.Fatal("no rolled segment holds its indexes to check")
	}
}

// Only the active segment and the residentIndexes inactive segments used last keep
// their indexes in memory, however many segments the log has; the others load theirs
// again when used, and every read still finds its records.
func TestIndexesResidentBounded(t *testing.T) {
	cfg := DefaultConfig()
	cfg.SegmentBytes = 32 << 10
	cfg.IndexIntervalBytes = 256
	l, err := Open(Options{FS: vfs.OS(), Dir: t.TempDir() + "/t-0", Config: cfg})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	const n = 2000
	for range n {
		if _, err := l.AppendAsLeader(logtest.Batch(1, 200), 0); err != nil {
			t.Fatal(err)
		}
	}
	loaded := func() int {
		c := 0
		ss := l.segs()
		for _, s := range ss[:len(ss)-1] {
			if s.indexesLoaded.Load() {
				c++
			}
		}
		return c
	}
	if len(l.segs()) < 10 {
		t.Fatalf("%d segments, want many", len(l.segs()))
	}
	if got := loaded(); got > residentIndexes {
		t.Fatalf("%d inactive segments hold their indexes after appends, want at most %d", got, residentIndexes)
	}
	// Read every offset, oldest first, then at random: each read is right, and the
	// bound holds throughout.
	check := func(off int64) {
		t.Helper()
		ri, err := l.Read(off, 1<<20, l.LogEndOffset(), true)
		if err != nil {
			t.Fatalf("Read(%d): %v", off, err)
		}
		if ri.FirstOffset != off {
			t.Fatalf("Read(%d) starts at %d", off, ri.FirstOffset)
		}
		if got := loaded(); got > residentIndexes {
			t.Fatalf("%d inactive segments hold their indexes after reading offset %d, want at most %d", got, off, residentIndexes)
		}
	}
	for off := int64(0); off < n; off += 7 {
		check(off)
	}
	for i := range 500 {
		check(int64((i * 7919) % n))
	}
	// Timestamp lookups use the time indexes, loaded again as needed.
	if off, _, ok := l.FetchOffsetByTimestamp(0); !ok || off != 0 {
		t.Fatalf("FetchOffsetByTimestamp(0) = %d, %v; want 0", off, ok)
	}
}

// Readers racing with the unloading of indexes (run with -race): every read finds the
// batch at its offset while other readers keep other segments' indexes coming and
// going and the log keeps rolling.
func TestIndexesUnloadRacesReaders(t *testing.T) {
	cfg := DefaultConfig()
	cfg.SegmentBytes = 16 << 10
	cfg.IndexIntervalBytes = 128
	l, err := Open(Options{FS: vfs.OS(), Dir: t.TempDir() + "/t-0", Config: cfg})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	for range 1000 {
		if _, err := l.AppendAsLeader(logtest.Batch(1, 200), 0); err != nil {
			t.Fatal(err)
		}
	}
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for g := range 4 {
		wg.Go(func() {
			for i := range 400 {
				off := int64((i*7919 + g*104729) % 1000)
				ri, err := l.Read(off, 1<<20, 1000, true)
				if err == nil && ri.FirstOffset != off {
					err = fmt.Errorf("Read(%d) starts at %d", off, ri.FirstOffset)
				}
				if err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Go(func() {
		for range 300 {
			if _, err := l.AppendAsLeader(logtest.Batch(1, 200), 0); err != nil {
				errs <- err
				return
			}
		}
	})
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}
