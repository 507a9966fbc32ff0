package kafka

import (
	"context"
	"sync"
	"testing"
	"time"
)

// TestConnOrderAppliesInReadOrder starts every request's goroutine in reverse read
// order, as the scheduler may, and checks that their effects still land in read order:
// each handler appends its index after waiting for its turn.
func TestConnOrderAppliesInReadOrder(t *testing.T) {
	const n = 200
	var o connOrder
	turns := make([]*turn, n)
	for i := range turns {
		turns[i] = o.next()
	}
	var mu sync.Mutex
	var applied []int
	var wg sync.WaitGroup
	for i := n - 1; i >= 0; i-- {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			defer turns[i].end()
			if err := turns[i].wait(context.Background()); err != nil {
				t.Errorf("request %d: %v", i, err)
				return
			}
			mu.Lock()
			applied = append(applied, i)
			mu.Unlock()
		}(i)
	}
	wg.Wait()
	for i, got := range applied {
		if got != i {
			t.Fatalf("effect %d was request %d's: requests took effect out of read order: %v", i, got, applied)
		}
	}
	if len(applied) != n {
		t.Fatalf("%d of %d requests took effect", len(applied), n)
	}
}

// TestTurnEndedEarlyLetsTheNextRun: a request that ends its turn before it is done
// (a produce once appended, a fetch before its long poll) lets the next one take
// effect while it still runs; one that has not ended its turn holds the next back.
func TestTurnEndedEarlyLetsTheNextRun(t *testing.T) {
	var o connOrder
	first, second := o.next(), o.next()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if err := second.wait(ctx); err == nil {
		t.Fatal("the second request took effect while the first held its turn")
	}
	first.end()
	first.end() // idempotent: the handler's own end and conn.handle's deferred one
	if err := second.wait(context.Background()); err != nil {
		t.Fatalf("the second request did not take effect after the first ended its turn: %v", err)
	}
	var none *turn // a request not read from a connection
	if err := none.wait(context.Background()); err != nil {
		t.Fatalf("nil turn: %v", err)
	}
	none.end()
}

// TestOnlyProduceAndFetchOverlap pins which APIs may end their turn before their
// handler returns: adding one is a decision about Kafka's per-connection order
// (pipeline.go), not a registration detail.
func TestOnlyProduceAndFetchOverlap(t *testing.T) {
	for key, reg := range handlers {
		want := key == 0 || key == 1
		if reg.overlapping != want {
			t.Errorf("%s: overlapping = %v, want %v", apiName(key), reg.overlapping, want)
		}
	}
}
