package bench

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"time"
)

// ErrStalled is returned by Produce, Consume and E2E when the run made no progress
// for Config.Timeout: no record acknowledged or consumed (the error says which
// counters stood still, and at what), or, for the consumer, no record while ones it
// waits for are still missing.
var ErrStalled = errors.New("consumer stalled")

// progressCount is one counter a stall watch follows.
type progressCount struct {
	name string
	n    *atomic.Int64
}

// watchStall returns a context that is cancelled, with an ErrStalled cause, once none
// of counts grew for timeout: --timeout of bench produce and e2e. Producers blocked on
// a full buffer or on a broker that never answers, and a consumer waiting for records
// that never come, all end then. stop releases the watch.
func watchStall(ctx context.Context, timeout time.Duration, counts ...progressCount) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancelCause(ctx)
	tick := min(max(timeout/10, time.Millisecond), time.Second)
	go func() {
		last := make([]int64, len(counts))
		lastProgress := time.Now()
		t := time.NewTicker(tick)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case now := <-t.C:
				moved := false
				for i, c := range counts {
					if v := c.n.Load(); v != last[i] {
						last[i], moved = v, true
					}
				}
				if moved {
					lastProgress = now
				} else if now.Sub(lastProgress) >= timeout {
					cancel(noProgressError(describeStall(timeout, counts)))
					return
				}
			}
		}
	}()
	return ctx, func() { cancel(context.Canceled) }
}

// describeStall says what did not happen: "no record acknowledged or consumed for 1m0s
// (--timeout): 10 acknowledged, 8 consumed so far".
func describeStall(timeout time.Duration, counts []progressCount) string {
	var names, values []string
	for _, c := range counts {
		names = append(names, c.name)
		values = append(values, fmt.Sprintf("%d %s", c.n.Load(), c.name))
	}
	return fmt.Sprintf("no record %s for %v (--timeout): %s so far",
		strings.Join(names, " or "), timeout, strings.Join(values, ", "))
}

// stallCause returns ctx's ErrStalled cause if the watch fired, else err.
func stallCause(ctx context.Context, err error) error {
	if err == nil {
		return nil
	}
	if cause := context.Cause(ctx); cause != nil && cause != ctx.Err() {
		return cause
	}
	return err
}

// noProgressError is the cause a stall watch cancels with; it is an ErrStalled.
type noProgressError string

func (e noProgressError) Error() string        { return string(e) }
func (e noProgressError) Is(target error) bool { return target == ErrStalled }
