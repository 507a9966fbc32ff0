package reach

import (
	"context"
	"net"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// listen returns a listener that accepts and holds every connection until closed,
// like a node's Kafka listener, and a func that closes it and every connection (the
// node's process exits).
func listen(t *testing.T) (string, func()) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	conns := make(chan net.Conn, 16)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			conns <- c
		}
	}()
	kill := func() {
		ln.Close()
		for {
			select {
			case c := <-conns:
				c.Close()
			default:
				return
			}
		}
	}
	t.Cleanup(kill)
	return ln.Addr().String(), kill
}

func TestGoneSeesAKill(t *testing.T) {
	addr, kill := listen(t)
	p := New()
	defer p.Close()
	ctx := context.Background()
	if p.Gone(ctx, addr) {
		t.Fatalf("Gone(%s) = true while it listens", addr)
	}
	if p.Gone(ctx, addr) {
		t.Fatalf("Gone(%s) = true on the open watch", addr)
	}
	time.Sleep(10 * time.Millisecond) // the watch is accepted
	kill()
	deadline := time.Now().Add(2 * time.Second)
	for !p.Gone(ctx, addr) {
		if time.Now().After(deadline) {
			t.Fatalf("Gone(%s) still false 2 s after its process closed the listener and every connection", addr)
		}
		time.Sleep(time.Millisecond)
	}
}

// An open watch answers without dialling; a refusal is reused for the TTL.
func TestGoneDials(t *testing.T) {
	addr, _ := listen(t)
	var dials atomic.Int32
	clock := time.Unix(0, 0)
	p := New()
	defer p.Close()
	p.now = func() time.Time { return clock }
	real := p.dial
	refuse := false
	p.dial = func(ctx context.Context, a string) (net.Conn, error) {
		dials.Add(1)
		if refuse {
			return nil, &net.OpError{Op: "dial", Err: syscall.ECONNREFUSED}
		}
		return real(ctx, a)
	}
	ctx := context.Background()
	for range 5 {
		if p.Gone(ctx, addr) {
			t.Fatal("Gone = true for a listening address")
		}
	}
	if n := dials.Load(); n != 1 {
		t.Fatalf("%d dials for 5 calls with an open watch within DefaultDialEvery, want 1", n)
	}
	clock = clock.Add(DefaultDialEvery)
	if p.Gone(ctx, addr) || p.Gone(ctx, addr) {
		t.Fatal("Gone = true for a listening address")
	}
	if n := dials.Load(); n != 2 {
		t.Fatalf("%d dials after DefaultDialEvery, want 2 (one check of the listener beside the watch)", n)
	}
	refuse = true
	if !p.Gone(ctx, "127.0.0.1:1") || !p.Gone(ctx, "127.0.0.1:1") {
		t.Fatal("Gone = false for a refused address")
	}
	if n := dials.Load(); n != 3 {
		t.Fatalf("a refusal within the TTL dialled again (%d dials, want 3)", n)
	}
	clock = clock.Add(DefaultRefusedTTL)
	p.Gone(ctx, "127.0.0.1:1")
	if n := dials.Load(); n != 4 {
		t.Fatalf("a call after the TTL did not dial again (%d dials, want 4)", n)
	}
}

// A process being killed closes its listener before its other sockets: with the watch
// still open, a refused dial (at most DefaultDialEvery after the last) says gone.
func TestGoneSeesAClosedListenerBesideAnOpenWatch(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	accepted := make(chan net.Conn, 1)
	go func() {
		if c, err := ln.Accept(); err == nil {
			accepted <- c
		}
	}()
	addr := ln.Addr().String()
	p := New()
	defer p.Close()
	ctx := context.Background()
	if p.Gone(ctx, addr) {
		t.Fatal("Gone = true while it listens")
	}
	watch := <-accepted
	defer watch.Close() // held open: only the listener goes
	ln.Close()
	time.Sleep(DefaultDialEvery)
	if !p.Gone(ctx, addr) {
		t.Fatal("Gone = false with the listener closed and the watch still open")
	}
}
