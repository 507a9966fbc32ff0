package replica

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/runnel-io/runnel/internal/log/logtest"
	"github.com/runnel-io/runnel/internal/metadata"
)

// delayedFetchProbe counts what a DelayedFetch did: its reads, parks and wake-ups.
type delayedFetchProbe struct {
	reads, wakes int
	waited       []time.Duration
}

func (pr *delayedFetchProbe) fetch(p *Partition, logEnd bool, complete func() bool, abort <-chan struct{}) *DelayedFetch {
	return &DelayedFetch{
		Partitions: []*Partition{p}, LogEnd: logEnd, Deadline: time.Now().Add(time.Minute), Abort: abort,
		Read:   func() bool { pr.reads++; return complete() },
		Parked: func(waited, _ time.Duration) { pr.waited = append(pr.waited, waited) },
		Woken:  func(time.Duration) { pr.wakes++ },
	}
}

// pollAsync runs d.Poll on a goroutine of the bubble and returns its result channel.
func pollAsync(d *DelayedFetch) <-chan int64 {
	done := make(chan int64, 1)
	go func() { done <- d.Poll(context.Background()) }()
	return done
}

func appendRecords(t *testing.T, p *Partition, n int) {
	t.Helper()
	if _, err := p.AppendToLeader(context.Background(), logtest.Batch(n, 10), 1); err != nil {
		t.Fatal(err)
	}
}

// A consumer's fetch parks through an append (its high watermark has not moved) and is
// woken by the high watermark moving, reads once more and answers at once, reporting
// the wake-up.
func TestDelayedFetchConsumerWokenByHighWatermark(t *testing.T) {
	_, p := newTestPartition(t, []metadata.NodeID{1, 2}, 1)
	synctest.Test(t, func(t *testing.T) {
		var pr delayedFetchProbe
		start := time.Now()
		done := pollAsync(pr.fetch(p, false, func() bool { return p.HighWatermark() > 0 }, nil))
		synctest.Wait()
		appendRecords(t, p, 5)
		synctest.Wait()
		select {
		case <-done:
			t.Fatalf("a consumer's fetch answered after an append that left the high watermark at %d", p.HighWatermark())
		default:
		}
		if err := p.RecordFollowerFetch(2, 5, -1, -1, time.Now()); err != nil {
			t.Fatal(err)
		}
		woken := <-done
		if woken == 0 || pr.wakes != 1 {
			t.Errorf("woken at %d with %d wake-ups reported, want the high watermark's wake-up", woken, pr.wakes)
		}
		if pr.reads != 2 || len(pr.waited) != 1 {
			t.Errorf("%d reads and %d parks, want 2 reads (before parking, after the wake-up) and 1 park", pr.reads, len(pr.waited))
		}
		if d := time.Since(start); d != 0 {
			t.Errorf("answered after %v of virtual time, want at once on the wake-up", d)
		}
	})
}

// A follower's fetch (LogEnd) is woken by an append alone.
func TestDelayedFetchFollowerWokenByAppend(t *testing.T) {
	_, p := newTestPartition(t, []metadata.NodeID{1, 2}, 1)
	synctest.Test(t, func(t *testing.T) {
		var pr delayedFetchProbe
		start := time.Now()
		done := pollAsync(pr.fetch(p, true, func() bool { return p.Log().LogEndOffset() > 0 }, nil))
		synctest.Wait()
		appendRecords(t, p, 3)
		if woken := <-done; woken == 0 {
			t.Error("no wake-up reported for the append that ended the poll")
		}
		if d := time.Since(start); d != 0 {
			t.Errorf("answered after %v of virtual time, want at once on the append", d)
		}
	})
}

// Records appended after the first read (the caller's) and before the poll registered
// are found by the read that follows the registration: the fetch answers without
// parking, rather than sleeping to its deadline with data available.
func TestDelayedFetchReadsAgainAfterRegistering(t *testing.T) {
	_, p := newTestPartition(t, []metadata.NodeID{1, 2}, 1)
	synctest.Test(t, func(t *testing.T) {
		var pr delayedFetchProbe
		d := pr.fetch(p, true, func() bool { return p.Log().LogEndOffset() > 0 }, nil)
		appendRecords(t, p, 3) // lands between the caller's first read and Poll
		start := time.Now()
		if woken := d.Poll(context.Background()); woken != 0 {
			t.Errorf("woken at %d, want 0: nothing woke the fetch", woken)
		}
		if d := time.Since(start); d != 0 || len(pr.waited) != 0 {
			t.Errorf("parked %d times for %v of virtual time with the records already there", len(pr.waited), d)
		}
	})
}

// With nothing arriving the fetch answers at its deadline, after one last read; Abort
// ends it at once, also after one last read.
func TestDelayedFetchDeadlineAndAbort(t *testing.T) {
	_, p := newTestPartition(t, []metadata.NodeID{1, 2}, 1)
	never := func() bool { return false }
	synctest.Test(t, func(t *testing.T) {
		var pr delayedFetchProbe
		start := time.Now()
		if woken := pr.fetch(p, false, never, nil).Poll(context.Background()); woken != 0 {
			t.Errorf("woken at %d with nothing arriving", woken)
		}
		if d := time.Since(start); d != time.Minute {
			t.Errorf("answered after %v, want the deadline (1m)", d)
		}
		if pr.reads != 2 || len(pr.waited) != 1 || pr.waited[0] != time.Minute {
			t.Errorf("%d reads, parks %v; want 2 reads (before parking, at the deadline) and one park of 1m", pr.reads, pr.waited)
		}
	})
	synctest.Test(t, func(t *testing.T) {
		var pr delayedFetchProbe
		abort := make(chan struct{})
		start := time.Now()
		done := pollAsync(pr.fetch(p, true, never, abort))
		synctest.Wait()
		close(abort)
		if woken := <-done; woken != 0 {
			t.Errorf("woken at %d by an abort", woken)
		}
		if d := time.Since(start); d != 0 || pr.reads != 2 {
			t.Errorf("aborted poll answered after %v with %d reads, want at once after 2", d, pr.reads)
		}
	})
}

// Also's events end a park as a partition's wake-up does, and the fetch goes on: its
// channel closing (a share fetch: records released) and its read time coming (a lock
// expiring) each bring one more read, taken each round anew; the deadline still ends
// the poll.
func TestDelayedFetchAlso(t *testing.T) {
	_, p := newTestPartition(t, []metadata.NodeID{1, 2}, 1)
	synctest.Test(t, func(t *testing.T) {
		var pr delayedFetchProbe
		released := make(chan struct{})
		lockExpires := time.Now().Add(10 * time.Second)
		rounds := 0
		d := pr.fetch(p, false, func() bool { return false }, nil)
		d.Also = func() (<-chan struct{}, time.Time) {
			rounds++
			switch rounds {
			case 1:
				return released, time.Time{} // the first park ends on the release
			case 2:
				return nil, lockExpires // the second at the lock's expiry
			}
			return nil, time.Time{} // the last one at the deadline
		}
		start := time.Now()
		done := pollAsync(d)
		synctest.Wait()
		close(released)
		<-done
		if took := time.Since(start); took != time.Minute {
			t.Errorf("answered after %v, want the deadline (1m): Also's events read again, they do not end the fetch", took)
		}
		if rounds != 3 || pr.reads != 4 {
			t.Errorf("%d rounds and %d reads, want 3 rounds (release, lock expiry, deadline) and 4 reads", rounds, pr.reads)
		}
		if len(pr.waited) != 3 || pr.waited[0] != 0 || pr.waited[1] != 10*time.Second || pr.waited[2] != 50*time.Second {
			t.Errorf("parks %v, want 0s (released at once), 10s (the lock) and 50s (to the deadline)", pr.waited)
		}
	})
}
