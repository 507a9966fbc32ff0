package client

import (
	"testing"
	"time"
)

func TestTokenBucket(t *testing.T) {
	t0 := time.Unix(1000, 0)
	b := newTokenBucket(10) // burst 1
	steps := []struct {
		at   time.Duration
		n    float64
		want time.Duration
	}{
		{0, 1, 0},
		{0, 1, 100 * time.Millisecond},
		{0, 1, 200 * time.Millisecond},
		{50 * time.Millisecond, 1, 250 * time.Millisecond}, // the 4th event is due at +300ms
		{time.Second, 1, 0},                                // refilled, capped at burst
		{time.Second, 1, 100 * time.Millisecond},
		{-time.Second, 1, 200 * time.Millisecond}, // a clock going back changes nothing
		{-time.Second, 5, 700 * time.Millisecond}, // more than the burst: debt
	}
	for i, s := range steps {
		if got := b.take(t0.Add(s.at), s.n); got != s.want {
			t.Errorf("step %d: take(%v) at +%v = %v, want %v", i, s.n, s.at, got, s.want)
		}
	}
	fast := newTokenBucket(1000) // burst 10
	for i := range 10 {
		if d := fast.take(t0, 1); d != 0 {
			t.Fatalf("take %d within the burst waits %v", i, d)
		}
	}
	if d := fast.take(t0, 1); d != time.Millisecond {
		t.Errorf("first take past the burst waits %v, want 1ms", d)
	}
}
