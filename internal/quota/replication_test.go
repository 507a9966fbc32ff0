package quota

import (
	"testing"
	"time"
)

// A throttled mover that sends whenever Exceeded allows moves at most the burst plus
// the rate times the time, whatever its chunk size, and no throttle means no limit.
func TestReplicationThrottleRate(t *testing.T) {
	q := NewReplication(time.Second) // a burst of one second's worth
	now := time.Unix(1_700_000_000, 0)
	if q.Exceeded(now) {
		t.Fatal("an unthrottled quota said exceeded")
	}
	const rate = 1 << 20
	q.SetRate(rate)
	moved := 0
	for step := 0; step < 10_000; step++ { // 10 s in 1 ms steps
		now = now.Add(time.Millisecond)
		if !q.Exceeded(now) {
			n := int(q.Chunk(1 << 20))
			q.Record(n, now)
			moved += n
		}
	}
	// 10 s at the rate plus a one-second burst, plus at most one chunk of overshoot.
	if limit := 11*rate + rate/8; moved > limit {
		t.Fatalf("moved %d bytes in 10 s at %d B/s: more than the burst and the rate allow (%d)", moved, rate, limit)
	}
	if floor := 10 * rate; moved < floor {
		t.Fatalf("moved %d bytes in 10 s at %d B/s: the throttle held back more than it should (%d)", moved, rate, floor)
	}
	q.SetRate(0)
	if q.Exceeded(now) {
		t.Fatal("a removed throttle still said exceeded")
	}
}
