package kafka

import (
	"context"
	"testing"
	"time"
)

func TestByteBudgetBlocksAndReleases(t *testing.T) {
	b := newByteBudget(100)
	if !b.acquire(context.Background(), 60) {
		t.Fatal("first acquire failed")
	}
	got := make(chan bool, 1)
	go func() { got <- b.acquire(context.Background(), 60) }()
	select {
	case <-got:
		t.Fatal("acquire past the budget did not wait")
	case <-time.After(30 * time.Millisecond):
	}
	b.release(60)
	if !<-got {
		t.Fatal("acquire after release failed")
	}
	// Larger than the whole budget: admitted alone once nothing else is held.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Millisecond)
	defer cancel()
	if b.acquire(ctx, 500) {
		t.Fatal("oversized request admitted while 60 bytes were held")
	}
	b.release(60)
	if !b.acquire(context.Background(), 500) {
		t.Fatal("oversized request not admitted alone")
	}
}
