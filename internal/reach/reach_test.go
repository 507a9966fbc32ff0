package reach

import (
	"context"
	"net"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

func TestGone(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	live := ln.Addr().String()
	dead, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	deadAddr := dead.Addr().String()
	dead.Close() // nothing listens there now: connections are refused
	defer ln.Close()

	p := New()
	ctx := context.Background()
	if p.Gone(ctx, live) {
		t.Errorf("Gone(%s) = true for a listening port", live)
	}
	if !p.Gone(ctx, deadAddr) {
		t.Errorf("Gone(%s) = false for a closed port", deadAddr)
	}
}

// Answers are reused for the TTL, concurrent callers share one probe, and Forget
// makes the next call probe again.
func TestGoneCachesAndShares(t *testing.T) {
	var dials atomic.Int32
	release := make(chan struct{})
	clock := time.Unix(0, 0)
	p := New()
	p.now = func() time.Time { return clock }
	p.dial = func(ctx context.Context, addr string) (net.Conn, error) {
		dials.Add(1)
		<-release
		return nil, &net.OpError{Op: "dial", Err: syscall.ECONNREFUSED}
	}
	results := make(chan bool, 3)
	for range 3 {
		go func() { results <- p.Gone(context.Background(), "node:9092") }()
	}
	time.Sleep(20 * time.Millisecond)
	close(release)
	for range 3 {
		if !<-results {
			t.Fatal("a concurrent caller got false for a refused probe")
		}
	}
	if n := dials.Load(); n != 1 {
		t.Fatalf("%d dials for 3 concurrent callers, want 1", n)
	}
	p.Gone(context.Background(), "node:9092")
	if n := dials.Load(); n != 1 {
		t.Fatalf("a call within the TTL dialled again (%d dials)", n)
	}
	clock = clock.Add(DefaultTTL)
	p.Gone(context.Background(), "node:9092")
	if n := dials.Load(); n != 2 {
		t.Fatalf("a call after the TTL did not dial again (%d dials)", n)
	}
	p.Forget("node:9092")
	p.Gone(context.Background(), "node:9092")
	if n := dials.Load(); n != 3 {
		t.Fatalf("a call after Forget did not dial again (%d dials)", n)
	}
}
