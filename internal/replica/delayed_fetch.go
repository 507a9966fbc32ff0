package replica

import (
	"context"
	"time"
)

// DelayedFetch is one fetch request's long poll, Kafka's DelayedFetch in its fetch
// purgatory: after a first read that found too little, it waits for the fetch's
// partitions to move and reads again, until a read completes the fetch, the deadline
// passes, Abort closes or ctx ends.
//
// Each round registers for the partitions' wake-ups first and only then reads: an
// append landing between the previous read and the registration would otherwise go
// unnoticed, and the fetch (a follower's: a producer's acks=all waits on it) would
// sleep until its deadline with data available. The reads are the caller's (Read); the
// latest one is what the fetch answers with.
type DelayedFetch struct {
	// Partitions are the fetch's partitions hosted here.
	Partitions []*Partition
	// LogEnd is set for a follower's fetch, which reads up to the log end: an append
	// wakes it, not only the high watermark moving (WatchLogEnd).
	LogEnd bool
	// Deadline is when the fetch answers with what it has (MaxWaitMillis).
	Deadline time.Time
	// Abort ends the wait early when it closes (nil: never); the fetch then reads once
	// more and answers.
	Abort <-chan struct{}
	// Also, when set, is asked each round, before the read, for the other events that
	// can complete the fetch: a channel that closes on one (nil: none) and a time at
	// which to read again (zero: none). Either ends the park and the fetch reads again,
	// as a partition's wake-up does (a share fetch: records another member released,
	// an acquisition lock expiring).
	Also func() (wake <-chan struct{}, readAt time.Time)
	// Read reads the partitions once and reports whether the fetch is complete: enough
	// bytes, or an answer the client must act on at once.
	Read func() (complete bool)
	// Parked, when set, is told of each park once it ends: waited is from the
	// registration to resuming (the re-read included), parked the time spent parked.
	Parked func(waited, parked time.Duration)
	// Woken, when set, is told of each park that a partition's wake-up ended: the
	// delay from that wake-up to the fetch running again.
	Woken func(delay time.Duration)
}

// Poll runs the long poll of a fetch whose first read did not complete it. It
// returns the wake-up (Unix ns) that preceded the latest read, 0 when none did (the
// poll ended on its deadline, Abort or ctx, or found the data before parking).
func (d *DelayedFetch) Poll(ctx context.Context) (woken int64) {
	for time.Now().Before(d.Deadline) {
		ch, stop := d.register()
		var also <-chan struct{}
		var readAt time.Time
		if d.Also != nil {
			also, readAt = d.Also()
		}
		registered := time.Now()
		if d.Read() || !time.Now().Before(d.Deadline) {
			stop()
			return woken
		}
		parkedAt := time.Now()
		moved := d.park(ctx, ch, also, readAt)
		resumed := time.Now()
		stop()
		if d.Parked != nil {
			d.Parked(resumed.Sub(registered), resumed.Sub(parkedAt))
		}
		if !moved {
			d.Read()
			return 0
		}
		if at := d.firstNotifiedSince(registered.UnixNano()); at > 0 {
			woken = at
			if d.Woken != nil {
				d.Woken(resumed.Sub(time.Unix(0, at)))
			}
		}
		// The read before the park did not complete the fetch: the next round
		// registers again and reads what woke it.
	}
	return woken
}

// register signs the fetch up for its partitions' wake-ups: their high watermarks
// moving and, for a follower, their log ends.
func (d *DelayedFetch) register() (<-chan struct{}, func()) {
	if d.LogEnd {
		return WatchLogEnd(d.Partitions)
	}
	return Watch(d.Partitions)
}

// park waits until ch signals that a partition moved, also closes or readAt comes
// (true: read again), or the deadline passes, Abort closes or ctx ends (false).
func (d *DelayedFetch) park(ctx context.Context, ch, also <-chan struct{}, readAt time.Time) bool {
	until, again := d.Deadline, false
	if !readAt.IsZero() && readAt.Before(until) {
		until, again = readAt, true
	}
	t := time.NewTimer(time.Until(until))
	defer t.Stop()
	select {
	case <-ch:
		return true
	case <-also:
		return true
	case <-t.C:
		return again
	case <-d.Abort:
	case <-ctx.Done():
	}
	return false
}

// firstNotifiedSince is when the earliest partition that woke its waiters at or after
// since (Unix ns) did so, or 0: the wake-up a parked fetch got (a later one may have
// overwritten a partition's time; the earliest remaining is the closest bound).
func (d *DelayedFetch) firstNotifiedSince(since int64) int64 {
	first := int64(0)
	for _, p := range d.Partitions {
		if at := p.NotifiedAt(); at >= since && (first == 0 || at < first) {
			first = at
		}
	}
	return first
}
