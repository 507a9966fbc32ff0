package coordshard

import (
	"context"
	"sync"
)

// Set is the shards of one coordinator, keyed by partition, and the goroutines it
// runs. The zero value is not usable; use New. Methods are safe for concurrent use.
//
// Lock order: Set.mu is a leaf. It is held only around map updates, the newShard and
// current callbacks of Load (which must not call back into the Set) and the start of
// goroutines; never while a load or a goroutine runs. Callers may thus call Go or Get
// while holding their own shard locks.
type Set[S any] struct {
	// done is closed by the first Close, under mu.
	done chan struct{}

	mu sync.RWMutex // guards shards and closed
	// shards maps a partition to its loaded (or loading) shard. Invariant: a shard
	// leaves the map exactly when its context is cancelled (Unload, a replacing Load,
	// Close); a cancelled shard is never in it.
	shards map[int32]entry[S]
	// closed only goes from false to true (Close); once true, the map stays empty and
	// Load and Go refuse.
	closed bool
	// wg counts the goroutines started by Load and Go. Invariant: Add only under mu
	// with closed false, so Close's Wait, which comes after closed is set, sees them all.
	wg sync.WaitGroup
}

// entry is one shard and the cancel function of the context it was created with.
type entry[S any] struct {
	shard  S
	cancel context.CancelFunc
}

// New returns an open, empty Set.
func New[S any]() *Set[S] {
	return &Set[S]{done: make(chan struct{}), shards: map[int32]entry[S]{}}
}

// Load makes a new shard partition's and runs load on it on a tracked goroutine. It
// does nothing and returns false when the Set is closed or when partition already has
// a shard for which current reports true (a repeated leadership notification).
// Otherwise a previous shard of partition is cancelled and replaced: newShard builds
// the new one around ctx, which ends at its Unload, its replacement or Close, so a
// load racing with either sees ctx done and must give up. newShard and current run
// under the Set's lock.
func (s *Set[S]) Load(partition int32, current func(old S) bool, newShard func(ctx context.Context) S, load func(S)) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return false
	}
	if old, ok := s.shards[partition]; ok {
		if current(old.shard) {
			return false
		}
		old.cancel()
	}
	ctx, cancel := context.WithCancel(context.Background())
	sh := newShard(ctx)
	s.shards[partition] = entry[S]{shard: sh, cancel: cancel}
	s.goLocked(func() { load(sh) })
	return true
}

// Unload removes partition's shard and cancels its context; it returns the shard, and
// false when partition had none.
func (s *Set[S]) Unload(partition int32) (S, bool) {
	s.mu.Lock()
	e, ok := s.shards[partition]
	delete(s.shards, partition)
	s.mu.Unlock()
	if ok {
		e.cancel()
	}
	return e.shard, ok
}

// Get returns partition's shard, loaded or still loading; false when there is none.
func (s *Set[S]) Get(partition int32) (S, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	e, ok := s.shards[partition]
	return e.shard, ok
}

// All returns every shard, loaded or still loading, in no particular order.
func (s *Set[S]) All() []S {
	s.mu.RLock()
	defer s.mu.RUnlock()
	out := make([]S, 0, len(s.shards))
	for _, e := range s.shards {
		out = append(out, e.shard)
	}
	return out
}

// Go runs fn on a tracked goroutine, which Close waits for; false (and fn is not run)
// once the Set is closed.
func (s *Set[S]) Go(fn func()) bool {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return false
	}
	s.goLocked(fn)
	return true
}

// goLocked starts fn as a tracked goroutine. s.mu must be held (read or write) with
// s.closed false.
func (s *Set[S]) goLocked(fn func()) {
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		fn()
	}()
}

// Done is closed when Close is first called, before any goroutine is waited for; a
// goroutine with no shard to end it (a periodic task) selects on it.
func (s *Set[S]) Done() <-chan struct{} { return s.done }

// Close unloads every shard, closes Done and waits for every goroutine started by Load
// and Go. It is idempotent: a later call unloads nothing and waits as well.
func (s *Set[S]) Close() {
	s.mu.Lock()
	if !s.closed {
		s.closed = true
		close(s.done)
	}
	shards := s.shards
	s.shards = map[int32]entry[S]{}
	s.mu.Unlock()
	for _, e := range shards {
		e.cancel()
	}
	s.wg.Wait()
}
