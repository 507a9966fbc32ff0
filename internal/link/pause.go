package link

import (
	"sync/atomic"

	"github.com/runnel-io/runnel/internal/metadata"
)

// What `link pause` promises: once it answers, nothing more is copied. Two things
// make it so. The operation answers only once every live node applied the metadata
// that pauses (Admin.settle). And a node applies it only once no answer fetched
// before is still to be appended: the session stops the partition's fetching mpart
// (stop) before the image counts as applied, and an append that had not started by
// then is dropped (write). The same holds for a resume (the paused mpart stops before
// the fetched one starts), a leadership or leader epoch change, a promote and a
// failure: each replaces or drops the partition's mpart.

// write runs fn, a write to p's destination log (an append of a fetch answer, a
// restart at the source's log start), unless p stopped; it reports whether fn ran.
func (p *mpart) write(fn func() error) (bool, error) {
	if h := holdWrite.Load(); h != nil {
		if after := (*h)(p.tp); after != nil {
			defer after()
		}
	}
	p.writeMu.Lock()
	defer p.writeMu.Unlock()
	if p.removed.Load() {
		return false, nil
	}
	return true, fn()
}

// stop marks p no longer fetched and waits for a write of it in progress: once stop
// returns, p writes nothing more. Never call it holding the session's lock (a write
// does not take it, but status and the fetchers' sends would wait for an fsync).
func (p *mpart) stop() {
	p.removed.Store(true)
	p.writeMu.Lock()
	defer p.writeMu.Unlock() // taking it is the barrier: a write in progress has ended
}

// Test hooks (pause_export_test.go sets them): holdWrite runs as a write of a
// partition begins, before it checks whether the partition stopped, and the func it
// returns (if any) once the write is done or dropped; holdImage runs as the manager
// begins to apply an image.
var (
	holdWrite atomic.Pointer[func(tp metadata.TopicPartition) (after func())]
	holdImage atomic.Pointer[func(im *metadata.Image)]
)
