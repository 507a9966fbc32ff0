package link

import (
	"context"
	"sync"
	"time"
)

// minThrottledFetch is the least a throttled fetch asks for: below it, a fetch's
// fixed cost (a round trip to the source) would dominate the byte rate.
const minThrottledFetch = 16 << 10

// throttle is a token bucket of bytes per second shared by every fetcher of one
// link's session on a node (--throttle is per destination node, the KIP-73 way: the
// rate bounds what the node copies, whichever source brokers it fetches from). A
// fetch waits until the bucket is not in debt, then its answer's bytes are taken
// (the bucket may go into debt by at most one fetch's worth, which fetchBytes bounds
// to about a second of the rate). A nil *throttle lets everything through.
type throttle struct {
	rate float64 // bytes per second; > 0

	mu sync.Mutex // guards tokens and last
	// tokens is what may be fetched now without waiting; at most rate (one second's
	// burst), negative while a fetch overshot.
	tokens float64
	last   time.Time
}

// newThrottle returns a bucket of rate bytes per second, full; nil when rate <= 0.
func newThrottle(rate int64) *throttle {
	if rate <= 0 {
		return nil
	}
	return &throttle{rate: float64(rate), tokens: float64(rate), last: time.Now()}
}

// refillLocked adds what accrued since last. Caller holds t.mu.
func (t *throttle) refillLocked(now time.Time) {
	t.tokens = min(t.rate, t.tokens+now.Sub(t.last).Seconds()*t.rate)
	t.last = now
}

// wait blocks until the bucket is out of debt, or ctx ends (its error).
func (t *throttle) wait(ctx context.Context) error {
	if t == nil {
		return nil
	}
	for {
		t.mu.Lock()
		t.refillLocked(time.Now())
		debt := -t.tokens
		t.mu.Unlock()
		if debt <= 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Duration(debt / t.rate * float64(time.Second))):
		}
	}
}

// take charges n fetched bytes.
func (t *throttle) take(n int) {
	if t == nil || n <= 0 {
		return
	}
	t.mu.Lock()
	t.refillLocked(time.Now())
	t.tokens -= float64(n)
	t.mu.Unlock()
}

// fetchBytes bounds one fetch (the request's MaxBytes and each partition's): a
// throttled link asks for about a second of its rate (never less than
// minThrottledFetch), so that one answer cannot overshoot the rate by much; an
// unthrottled one asks for partitionMaxBytes per partition, fetchMaxBytes in all. A source always answers at
// least one whole batch even when it is larger.
func (t *throttle) fetchBytes() (request, partition int32) {
	if t == nil {
		return fetchMaxBytes, partitionMaxBytes
	}
	b := int32(min(max(t.rate, minThrottledFetch), fetchMaxBytes))
	return b, min(b, partitionMaxBytes)
}
