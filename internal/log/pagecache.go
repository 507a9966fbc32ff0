package log

import (
	"os"

	"github.com/runnel-io/runnel/internal/vfs"
)

// The page cache tail (log.page.cache.tail.bytes). Every byte appended to a segment
// takes a page of the OS page cache, and while the machine has free memory the kernel
// keeps them all: each append lands on a page never used before. On a virtual machine
// whose free memory is handed back to the host (free page reporting, ballooning,
// DAMON-based reclaim), a fresh page costs a fault in the host on its first touch:
// writing onto fresh pages costs about three times the CPU of writing onto pages just
// freed, and that copy is a large share of a replicated node's CPU (the figures are in
// docs/benchmarks-history.md). So once a range is durable and more than
// pageCacheTail bytes behind the log end, the log drops its pages from the cache
// (fadvise DONTNEED), and the kernel hands the pages it got back to the next appends
// while they are still warm.
//
// What it costs: a reader more than pageCacheTail bytes behind the end (a consumer
// catching up, a new replica) reads the disk instead of the cache, as a Kafka reader
// does once the OS has evicted those pages. Readers at the tail (followers, consumers
// keeping up) are within it. Dropping never loses data: only fsynced ranges are
// dropped, and the kernel drops clean pages only. Negative: the OS alone decides.

// dropMin is the least data worth a drop: a producer of a few records per second
// makes one call every few minutes, a throughput run one per dropMin.
const dropMin = 4 << 20

// pageSize is the page cache's unit; the kernel drops whole pages only.
var pageSize = int64(os.Getpagesize())

// maxFolio is the largest unit of the page cache (a PMD-sized folio on x86-64).
const maxFolio = 2 << 20

// cacheDrop is a drop to run once a flush's fsyncs returned: everything up to size
// bytes of active (the active segment then), and everything before it in ss, is
// durable.
type cacheDrop struct {
	ss     []*Segment
	active *Segment
	size   int64
}

// noteDurableLocked is called by a flush (with mu held) that makes everything up to
// size bytes of the active segment durable once its fsyncs return; it returns the drop
// to run after them, or nil.
func (l *Log) noteDurableLocked(active *Segment, size int64) *cacheDrop {
	if l.pageCacheTail < 0 || l.undropped < dropMin {
		return nil
	}
	l.undropped = 0
	return &cacheDrop{ss: l.segs(), active: active, size: size}
}

// runPendingDrop runs the drop the last flush left, if any, on the flushing goroutine
// after flushMu is released: the pages the kernel frees then go to this CPU's free
// lists, where the appends that follow find them (freed on another goroutine, fewer
// of them are reused). Two drops of one log may overlap; both only drop.
func (l *Log) runPendingDrop() {
	if d := l.pendingDrop.Swap(nil); d != nil {
		dropCacheBehind(d.ss, d.active, d.size, l.pageCacheTail)
	}
}

// dropCacheBehind drops the page cache of the bytes of ss more than keep bytes behind
// the end of the first size bytes of active (one of ss). Segments older than active
// are durable whole (a flush syncs the rolled ones before the active one). The walk
// goes from active to older segments and stops at the first one dropped to its end
// already: drops move forward, so the older ones were done before it.
func dropCacheBehind(ss []*Segment, active *Segment, size, keep int64) {
	last := len(ss) - 1
	for last >= 0 && ss[last] != active {
		last--
	}
	for i := last; i >= 0; i-- {
		s := ss[i]
		end := size
		if i != last {
			end = s.size.Load()
		}
		if keep >= end {
			keep -= end
			continue
		}
		to, from := end-keep, s.cacheDropped.Load()
		if keep > 0 {
			// The cut is inside this segment: a page that holds bytes on both sides of
			// it stays, and the next drop starts at its start, so no page is skipped.
			to &^= pageSize - 1
		} else {
			// The whole rest is behind: the last page holds no other bytes.
			to = (to + pageSize - 1) &^ (pageSize - 1)
		}
		keep = 0
		if from >= to {
			return
		}
		// The kernel drops a folio (up to 2 MiB of pages on ext4 and xfs) only when the
		// range holds it whole, so the one across the previous cut stayed: start a
		// folio earlier. Pages dropped already cost nothing to drop again.
		vfs.DropCache(s.file, max(0, from-maxFolio), to-max(0, from-maxFolio))
		s.cacheDropped.Store(to)
	}
}
