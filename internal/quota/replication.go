package quota

import (
	"math"
	"sync"
	"time"
)

// Replication is a replication throttle (KIP-73, Kafka's ReplicationQuotaManager): the
// bytes/s that a leader sends to, or a follower fetches for, the replicas a
// reassignment moves (those listed in the topics' leader/follower
// .replication.throttled.replicas and not in the ISR). It delays nothing itself: the
// replica layer asks Exceeded before it reads or fetches a throttled partition, leaves
// the partition out while the throttle is spent, and Records what it moved. The traffic
// of replicas in the ISR is never recorded, so ordinary replication is never throttled.
//
// It is a token bucket rather than Kafka's sampled rate: an exact long-run rate, where
// the sampled rate lets a further burst through each time an old sample expires (a move
// throttled to T bytes/s ran at about 1.25 T), and a burst of one window's worth of the
// rate, where Kafka's minimum measuring span of samples-1 windows lets 10 s of it go at
// full speed with the defaults (a 256 MiB move throttled to 20 MiB/s took 3 s instead
// of 13). Safe for concurrent use.
type Replication struct {
	mu    sync.Mutex
	burst time.Duration // how much of the rate may go at once
	bound float64       // bytes/s; +Inf: not throttled
	// tokens are the bytes that may still go now; negative after an overshoot, which
	// later traffic pays back. Invariant: tokens <= bound * burst.
	tokens  float64
	last    time.Time // when tokens were last brought up to date
	total   float64   // bytes recorded, ever
	skipped int64     // times Exceeded said yes
}

// NewReplication returns an unthrottled replication quota whose burst is burst's worth
// of its rate (replication.quota.window.size.seconds).
func NewReplication(burst time.Duration) *Replication {
	return &Replication{burst: burst, bound: math.Inf(1)}
}

// SetRate sets the bound in bytes/s; a value <= 0 or math.MaxInt64 (Kafka's default,
// Long.MAX_VALUE) means not throttled. A throttle that starts starts with a full burst.
func (q *Replication) SetRate(bytesPerSec int64) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if bytesPerSec <= 0 || bytesPerSec == math.MaxInt64 {
		q.bound = math.Inf(1)
		return
	}
	was := q.bound
	q.bound = float64(bytesPerSec)
	if math.IsInf(was, 1) {
		q.tokens, q.last = q.capacityLocked(), time.Time{}
	}
	q.tokens = min(q.tokens, q.capacityLocked())
}

func (q *Replication) capacityLocked() float64 { return q.bound * q.burst.Seconds() }

// refillLocked brings tokens up to now.
func (q *Replication) refillLocked(now time.Time) {
	if !q.last.IsZero() && now.After(q.last) {
		q.tokens = min(q.capacityLocked(), q.tokens+now.Sub(q.last).Seconds()*q.bound)
	}
	if q.last.IsZero() || now.After(q.last) {
		q.last = now
	}
}

// Rate is the bound in bytes/s, 0 when not throttled.
func (q *Replication) Rate() int64 {
	q.mu.Lock()
	defer q.mu.Unlock()
	if math.IsInf(q.bound, 1) {
		return 0
	}
	return int64(q.bound)
}

// Chunk bounds the bytes one read or fetch of a throttled partition may move, so that
// a single answer cannot overshoot by much: an eighth of a second's worth (at least
// 16 KiB), or max when not throttled or when that is smaller.
func (q *Replication) Chunk(max int32) int32 {
	q.mu.Lock()
	defer q.mu.Unlock()
	if math.IsInf(q.bound, 1) {
		return max
	}
	return int32(min(float64(max), math.Max(q.bound/8, 16<<10)))
}

// Exceeded reports whether the throttle is spent at now: the caller leaves the
// throttled partitions out of this read or fetch.
func (q *Replication) Exceeded(now time.Time) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	if math.IsInf(q.bound, 1) {
		return false
	}
	q.refillLocked(now)
	if q.tokens <= 0 {
		q.skipped++
		return true
	}
	return false
}

// Record adds bytes of throttled traffic moved at now.
func (q *Replication) Record(bytes int, now time.Time) {
	if bytes <= 0 {
		return
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	q.total += float64(bytes)
	if math.IsInf(q.bound, 1) {
		return
	}
	q.refillLocked(now)
	q.tokens -= float64(bytes)
}

// Totals are the throttled bytes recorded and the times a read or fetch left
// throttled partitions out, since the start.
func (q *Replication) Totals() (bytes float64, skipped int64) {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.total, q.skipped
}
