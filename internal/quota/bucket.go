package quota

import "time"

// bucket is one quota entity's account: a token bucket that refills at the quota's
// bound, holds at most one window's worth of it (quota.window.size.seconds), and goes
// negative when a request overshoots, which the throttle then pays back.
//
// Kafka measures client quotas with a sampled rate (SampledStat/Rate over
// quota.window.num windows, measured over at least n-1 of them). That lets a client
// send n-1 windows' worth in a first burst, and let another burst through each time an
// old sample expires: a producer limited to 1 MiB/s moved 23 % more than its quota over
// 20 s with the defaults and converged (+1.2 %) only over a minute. A bucket gives the
// exact long-run rate and a first burst of one window, so over any span T a client
// moves at most bound * (T + window) plus the request that crosses the bound. Kafka
// took the same step for its controller mutation quota (KIP-599's TokenBucket).
type bucket struct {
	// tokens may still be spent now; negative after an overshoot. Invariant:
	// tokens <= the capacity at the bound last used.
	tokens float64
	last   time.Time // when tokens were brought up to date; zero: never used
}

// refill brings the bucket up to now at bound per second, capped at capacity. A bucket
// never used starts full, so a new quota first allows one window's worth; a bound
// lowered since the last refill takes effect at once, as the cap applies here.
func (b *bucket) refill(bound, capacity float64, now time.Time) {
	if b.last.IsZero() {
		b.tokens, b.last = capacity, now
		return
	}
	if dt := now.Sub(b.last); dt > 0 {
		b.tokens += bound * dt.Seconds()
		b.last = now
	}
	b.tokens = min(b.tokens, capacity)
}

// record spends v (negative v gives back what was spent) and returns how long nothing
// more may be spent for the bucket to be back at zero: the debt over the bound; 0 while
// the bucket is not in debt. The throttle is capped at limit; a longer debt stays in
// the bucket and throttles the next request too, so the long-run rate stays exact.
func (b *bucket) record(v, bound, capacity float64, now time.Time, limit time.Duration) time.Duration {
	b.refill(bound, capacity, now)
	b.tokens = min(b.tokens-v, capacity)
	if b.tokens >= 0 || bound <= 0 {
		return 0
	}
	d := time.Duration(-b.tokens / bound * float64(time.Second))
	if d > limit {
		d = limit
	}
	// Rounded up to the millisecond throttle_time_ms carries: a throttle shorter than
	// the debt would let the next request in early.
	return (d + time.Millisecond - 1).Truncate(time.Millisecond)
}
