package client

import (
	"context"
	"math"
	"sync"
	"time"
)

// tokenBucket limits events to rate tokens per second with bursts of up to burst
// tokens. Taking tokens may put the bucket in debt; the taker then waits until the
// debt would be paid, so the long-run rate holds even when sleeps overshoot, and an
// event larger than the burst (a big record under WithByteRate) still passes.
type tokenBucket struct {
	rate  float64 // tokens added per second; > 0
	burst float64 // most tokens held; >= 1

	mu     sync.Mutex // guards tokens and last
	tokens float64    // tokens at last; <= burst, negative while in debt
	last   time.Time  // when tokens was computed; zero before the first take
}

// newTokenBucket allows 10 ms worth of tokens at once, so that high rates are not
// one timer per record.
func newTokenBucket(rate float64) *tokenBucket {
	return &tokenBucket{rate: rate, burst: math.Max(1, rate/100)}
}

// take takes n tokens at now and returns how long the caller must wait before acting
// on them.
func (b *tokenBucket) take(now time.Time, n float64) time.Duration {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.last.IsZero() {
		b.tokens, b.last = b.burst, now
	}
	if elapsed := now.Sub(b.last); elapsed > 0 {
		b.tokens = math.Min(b.burst, b.tokens+elapsed.Seconds()*b.rate)
		b.last = now
	}
	b.tokens -= n
	if b.tokens >= 0 {
		return 0
	}
	return time.Duration(-b.tokens / b.rate * float64(time.Second))
}

// wait takes n tokens and sleeps as long as take says, or until ctx is done. It
// returns how long it slept.
func (b *tokenBucket) wait(ctx context.Context, n float64) (time.Duration, error) {
	d := b.take(time.Now(), n)
	if d <= 0 {
		return 0, ctx.Err()
	}
	start := time.Now()
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return time.Since(start), nil
	case <-ctx.Done():
		return time.Since(start), ctx.Err()
	}
}
