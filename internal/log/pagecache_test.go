//go:build linux

package log

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/runnel-io/runnel/internal/log/logtest"
	"github.com/runnel-io/runnel/internal/testutil"
)

// pcLog is a log on the OS filesystem with 3 MiB segments, and where its last page
// cache drop started, computed from the dropMin rule independently of the code under
// test.
type pcLog struct {
	*Log
	undropped, lastDrop int64 // in bytes of the log, counted over its segments
}

// pageCacheLog opens a pcLog and appends batches to it.
func pageCacheLog(t *testing.T, tail int64, batches int) *pcLog {
	t.Helper()
	env := osEnv(t)
	if err := os.MkdirAll(env.dir, 0o755); err != nil {
		t.Fatal(err)
	}
	testutil.SkipUnlessPageCacheDrops(t, filepath.Dir(env.dir))
	cfg := DefaultConfig()
	cfg.SegmentBytes = 3 << 20
	l := &pcLog{Log: openLog(t, env, cfg, func(o *Options) { o.PageCacheTail = tail })}
	l.appendFlushed(t, batches)
	if l.NumSegments() < 4 {
		t.Fatalf("%d segments, want several so that the drops cross segments", l.NumSegments())
	}
	return l
}

// appendFlushed appends n batches of about 1 MiB, each flushed (as every acknowledged
// produce is; Flush returns after its drop).
func (l *pcLog) appendFlushed(t *testing.T, n int) {
	t.Helper()
	for range n {
		b := logtest.BatchWith(logtest.BatchOptions{Records: 250, ValueSize: 4096})
		info := mustAppend(t, l.Log, b)
		if err := l.Flush(info.LastOffset + 1); err != nil {
			t.Fatal(err)
		}
		if l.undropped += int64(len(b)); l.undropped >= dropMin {
			l.undropped, l.lastDrop = 0, l.Size()
		}
	}
}

// checkTail checks that the pages further than tail behind the last drop's start are
// out of the page cache and those within it are in, and that every record reads back.
func (l *pcLog) checkTail(t *testing.T, tail int64) {
	t.Helper()
	cut := l.lastDrop - tail // the drop started at lastDrop covers everything below this
	pos, cached := residency(t, l.Log)
	var dropped, kept int
	for i := range pos {
		pageEnd := pos[i] + pageSize
		switch {
		case pageEnd <= cut-maxFolio: // below the cut, and not in the folio across it, which stays until the next drop
			if cached[i] {
				t.Fatalf("page at log byte %d is cached, %d bytes behind the last drop's start (tail %d)", pos[i], l.lastDrop-pos[i], tail)
			}
			dropped++
		case pos[i] >= cut+pageSize:
			if !cached[i] {
				t.Fatalf("page at log byte %d was dropped, within the tail (%d bytes behind the last drop's start)", pos[i], l.lastDrop-pos[i])
			}
			kept++
		}
	}
	if dropped == 0 || kept == 0 {
		t.Fatalf("%d pages checked dropped, %d kept: the test checked nothing", dropped, kept)
	}
	end := l.LogEndOffset()
	if got := readAll(t, l.Log, 0, end, 1<<20); int64(len(got)) != end {
		t.Fatalf("read back %d records, appended %d", len(got), end)
	}
}

// residency returns, for every page of every segment, its position in the log's bytes
// (counted over the segments in order) and whether it is cached.
func residency(t *testing.T, l *Log) (pos []int64, cached []bool) {
	t.Helper()
	var base int64
	for _, s := range l.segs() {
		size := s.size.Load()
		for i, r := range testutil.Resident(t, s.path, size) {
			pos = append(pos, base+int64(i)*pageSize)
			cached = append(cached, r)
		}
		base += size
	}
	return pos, cached
}

// Once durable, what is further than log.page.cache.tail.bytes behind the end of the
// log leaves the page cache, across segments, and the tail stays; every record still
// reads back.
func TestPageCacheTailDropsDurableBytesBehindIt(t *testing.T) {
	const tail = 5<<20 + 1000
	l := pageCacheLog(t, tail, 24)
	l.checkTail(t, tail)
}

// A truncation (a follower cut back to its leader) below what was dropped already:
// the appends that follow it into the same file are dropped in their turn.
func TestPageCacheTailAfterTruncation(t *testing.T) {
	const tail = 5<<20 + 1000
	l := pageCacheLog(t, tail, 24)
	if err := l.Truncate(2500); err != nil { // the second batch of the fourth segment
		t.Fatal(err)
	}
	l.appendFlushed(t, 24)
	l.checkTail(t, tail)
}

// A negative tail leaves the page cache to the OS: nothing is dropped.
func TestPageCacheTailNegativeDropsNothing(t *testing.T) {
	l := pageCacheLog(t, -1, 12)
	pos, cached := residency(t, l.Log)
	for i := range pos {
		if !cached[i] {
			t.Fatalf("page at log byte %d was dropped with log.page.cache.tail.bytes=-1", pos[i])
		}
	}
}
