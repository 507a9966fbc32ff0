package kafka

import (
	"context"
	"sync"
)

// byteBudget bounds the bytes of requests held in memory (queued.max.request.bytes).
// A reader takes a request's size before reading its body and the handler returns it
// when the response is queued, so a flood of large produce requests blocks the sockets
// (TCP back-pressure on the clients) instead of growing the heap. A request larger than
// the whole budget is let through alone, when nothing else is held, so it cannot wait
// for ever.
type byteBudget struct {
	mu    sync.Mutex // guards used and waking
	cond  *sync.Cond
	limit int64
	used  int64
}

func newByteBudget(limit int64) *byteBudget {
	b := &byteBudget{limit: limit}
	b.cond = sync.NewCond(&b.mu)
	return b
}

// acquire waits until n bytes fit, or ctx ends (then it returns false).
func (b *byteBudget) acquire(ctx context.Context, n int64) bool {
	if b.limit <= 0 {
		return true
	}
	// Fast path, the common case: the bytes fit now. No wake-up hook is set up, so an
	// uncontended request costs no allocation here.
	b.mu.Lock()
	if b.used == 0 || b.used+n <= b.limit {
		b.used += n
		b.mu.Unlock()
		return true
	}
	b.mu.Unlock()
	stop := context.AfterFunc(ctx, func() {
		b.mu.Lock()
		b.cond.Broadcast()
		b.mu.Unlock()
	})
	defer stop()
	b.mu.Lock()
	defer b.mu.Unlock()
	for b.used > 0 && b.used+n > b.limit {
		if ctx.Err() != nil {
			return false
		}
		b.cond.Wait()
	}
	b.used += n
	return true
}

func (b *byteBudget) release(n int64) {
	if b.limit <= 0 {
		return
	}
	b.mu.Lock()
	b.used -= n
	b.cond.Broadcast()
	b.mu.Unlock()
}
