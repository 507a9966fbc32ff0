package liveness

import (
	"context"
	"net"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// TestConcurrentGoneOnABlackholedAddressInVirtualTime asks Gone of one address from
// several goroutines inside a synctest bubble while every dial hangs until its context
// ends (a cut link). The callers after the first wait for the first's dial; if they
// waited in sync.Mutex.Lock, the bubble's clock could not move (such a goroutine is
// not durably blocked), the dial's timeout would never pass, and the test would hang.
// Every call must say "not gone" (no refusal), within a few dial timeouts of virtual
// time.
func TestConcurrentGoneOnABlackholedAddressInVirtualTime(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := NewDialer(func(ctx context.Context, _, _ string) (net.Conn, error) {
			<-ctx.Done()
			return nil, ctx.Err()
		})
		defer p.Close()
		start := time.Now()
		var wg sync.WaitGroup
		for range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if p.Gone(context.Background(), "10.0.0.9:9092") {
					t.Error("Gone says a blackholed address's process is gone: only a refusal proves that")
				}
			}()
		}
		wg.Wait()
		if d := time.Since(start); d > 4*DefaultDialTimeout {
			t.Errorf("4 callers took %v of virtual time, want at most 4 dial timeouts (%v)", d, 4*DefaultDialTimeout)
		}
	})
}
