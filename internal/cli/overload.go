package cli

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// onFull is what the producer does with a record while its buffer (--buffer-records,
// --buffer-bytes) is full.
type onFull uint8

const (
	onFullBlock onFull = iota // wait for room, up to the enqueue timeout (default: for ever)
	onFullDrop                // drop the record and count it (after waiting the enqueue timeout, default 0)
	onFullError               // fail the command (after waiting the enqueue timeout, default 0)
)

func parseOnFull(s string) (onFull, error) {
	switch s {
	case "block":
		return onFullBlock, nil
	case "drop":
		return onFullDrop, nil
	case "error":
		return onFullError, nil
	}
	return 0, fmt.Errorf("bad --on-full %q: want block, drop or error", s)
}

func (o onFull) String() string {
	return [...]string{"block", "drop", "error"}[o]
}

// errBufferFull is returned by overloadPolicy.produce once a record could not be
// buffered in time under --on-full block or error.
var errBufferFull = errors.New("producer buffer full")

// overloadPolicy applies --on-full, --enqueue-timeout and --rate to the records a
// kgo client produces. The buffer limits themselves are the client's
// (kgo.MaxBufferedRecords, kgo.MaxBufferedBytes); this type decides what happens at
// them: a blocking Produce, a bounded Produce (a context deadline) or TryProduce.
//
// A full buffer is reported through the record's promise, which kgo calls on its own
// goroutine, so under --on-full error a few more records may be accepted before
// produce starts returning the error.
type overloadPolicy struct {
	onFull onFull
	// enqueueTimeout is how long produce waits for buffer room: < 0 for ever,
	// 0 not at all (TryProduce).
	enqueueTimeout time.Duration
	limiter        *tokenBucket // nil when --rate is unlimited

	dropped atomic.Int64 // records dropped under onFullDrop; only grows

	mu  sync.Mutex // guards err
	err error      // the first buffer-full failure under onFullBlock/onFullError; sticky
}

// newOverloadPolicy builds the policy. timeout is the --enqueue-timeout, or nil when
// unset: then block waits for ever and drop and error do not wait. rate is records per
// second, 0 for no limit.
func newOverloadPolicy(mode onFull, timeout *time.Duration, rate float64) *overloadPolicy {
	p := &overloadPolicy{onFull: mode, enqueueTimeout: -1}
	if mode != onFullBlock {
		p.enqueueTimeout = 0
	}
	if timeout != nil {
		p.enqueueTimeout = *timeout
	}
	if rate > 0 {
		p.limiter = newTokenBucket(rate)
	}
	return p
}

// produce waits for the rate limit, then hands r to cl under the policy. promise is
// called for every record that was buffered (as kgo calls it); a record dropped or
// refused for lack of room never reaches promise. produce returns an error, and
// produces nothing, once the policy has failed or ctx is done.
func (p *overloadPolicy) produce(ctx context.Context, cl *kgo.Client, r *kgo.Record, promise func(*kgo.Record, error)) error {
	if err := p.Err(); err != nil {
		return err
	}
	if p.limiter != nil {
		if err := p.limiter.wait(ctx); err != nil {
			return err
		}
	}
	// The record lives as long as the command, not as long as the enqueue wait.
	if r.Context == nil {
		r.Context = ctx
	}
	wrapped := func(r *kgo.Record, err error) {
		if p.isFull(ctx, err) {
			p.full()
			return
		}
		promise(r, err)
	}
	switch {
	case p.enqueueTimeout == 0:
		cl.TryProduce(ctx, r, wrapped)
	case p.enqueueTimeout < 0:
		cl.Produce(ctx, r, wrapped)
	default:
		wctx := newEnqueueContext(ctx, p.enqueueTimeout)
		cl.Produce(wctx, r, wrapped)
		wctx.stop()
	}
	return nil
}

// enqueueContext bounds one blocking kgo Produce call. kgo keeps the context given to
// Produce as the buffered record's canceling context, so a plain context.WithTimeout
// would fail the record once it expired (or once canceled after Produce returned),
// even though it was buffered in time. This context is done only if the timeout
// passes, or the parent is done, before stop is called; after stop it never is.
type enqueueContext struct {
	context.Context               // the parent, for values
	done            chan struct{} // closed when the wait is over early
	once            sync.Once     // closes done
	err             atomic.Pointer[error]
	timer           *time.Timer
	stopParent      func() bool
}

func newEnqueueContext(parent context.Context, d time.Duration) *enqueueContext {
	c := &enqueueContext{Context: parent, done: make(chan struct{})}
	c.timer = time.AfterFunc(d, func() { c.fire(context.DeadlineExceeded) })
	c.stopParent = context.AfterFunc(parent, func() { c.fire(context.Cause(parent)) })
	return c
}

func (c *enqueueContext) fire(err error) {
	c.once.Do(func() {
		c.err.Store(&err)
		close(c.done)
	})
}

// stop ends the wait: the context will never be done after it returns, unless it
// already was. A timer that fires while stop runs may still end it; a record
// buffered at that very moment is then failed as not enqueued in time.
func (c *enqueueContext) stop() {
	c.timer.Stop()
	c.stopParent()
}

func (c *enqueueContext) Deadline() (time.Time, bool) { return time.Time{}, false }
func (c *enqueueContext) Done() <-chan struct{}       { return c.done }

func (c *enqueueContext) Err() error {
	if e := c.err.Load(); e != nil {
		return *e
	}
	return nil
}

// isFull reports whether err means "no buffer room in time": TryProduce's
// ErrMaxBuffered, or the enqueue deadline expiring while ctx itself is live.
func (p *overloadPolicy) isFull(ctx context.Context, err error) bool {
	if errors.Is(err, kgo.ErrMaxBuffered) {
		return true
	}
	return p.enqueueTimeout > 0 && errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil
}

func (p *overloadPolicy) full() {
	if p.onFull == onFullDrop {
		p.dropped.Add(1)
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.err == nil {
		p.err = p.fullError()
	}
}

func (p *overloadPolicy) fullError() error {
	switch {
	case p.enqueueTimeout > 0:
		return fmt.Errorf("%w: no room after waiting %v (--enqueue-timeout)", errBufferFull, p.enqueueTimeout)
	default:
		return fmt.Errorf("%w (--on-full %v)", errBufferFull, p.onFull)
	}
}

// Err returns the buffer-full failure that stopped the policy, if any.
func (p *overloadPolicy) Err() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.err
}

// Dropped is the number of records dropped so far under --on-full drop.
func (p *overloadPolicy) Dropped() int64 { return p.dropped.Load() }

// parseEnqueueTimeout reads --enqueue-timeout: -1 (or any negative) waits for ever, a
// bare integer is milliseconds as Kafka's queue.enqueue.timeout.ms, otherwise a Go
// duration such as 500ms or 2s.
func parseEnqueueTimeout(s string) (time.Duration, error) {
	if ms, err := strconv.ParseInt(s, 10, 64); err == nil {
		if ms < 0 {
			return -1, nil
		}
		return time.Duration(ms) * time.Millisecond, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("bad --enqueue-timeout %q: want -1, milliseconds or a duration like 500ms", s)
	}
	if d < 0 {
		return -1, nil
	}
	return d, nil
}

// tokenBucket limits events to rate per second with bursts of up to burst events.
// Taking a token may put the bucket in debt; the taker then waits until the debt
// would be paid, so the long-run rate holds even when sleeps overshoot.
type tokenBucket struct {
	rate  float64 // tokens added per second; > 0
	burst float64 // most tokens held; >= 1

	mu     sync.Mutex // guards tokens and last
	tokens float64    // tokens at last; <= burst, negative while in debt
	last   time.Time  // when tokens was computed; zero before the first take
}

func newTokenBucket(rate float64) *tokenBucket {
	// Allow 10ms worth of records at once so high rates are not one timer per record.
	return &tokenBucket{rate: rate, burst: math.Max(1, rate/100)}
}

// take takes one token at now and returns how long the caller must wait before
// acting on it.
func (b *tokenBucket) take(now time.Time) time.Duration {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.last.IsZero() {
		b.tokens, b.last = b.burst, now
	}
	if elapsed := now.Sub(b.last); elapsed > 0 {
		b.tokens = math.Min(b.burst, b.tokens+elapsed.Seconds()*b.rate)
		b.last = now
	}
	b.tokens--
	if b.tokens >= 0 {
		return 0
	}
	return time.Duration(-b.tokens / b.rate * float64(time.Second))
}

// wait takes a token and sleeps as long as take says, or until ctx is done.
func (b *tokenBucket) wait(ctx context.Context) error {
	d := b.take(time.Now())
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
