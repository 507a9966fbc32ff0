package liveness

import (
	"context"
	"io"
	"net"
	"sync"
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

// echoPing writes one byte and reads one back.
func echoPing(ctx context.Context, c net.Conn) error {
	if d, ok := ctx.Deadline(); ok {
		c.SetDeadline(d)
		defer c.SetDeadline(time.Time{})
	}
	if _, err := c.Write([]byte{1}); err != nil {
		return err
	}
	var b [1]byte
	_, err := io.ReadFull(c, b[:])
	return err
}

// TestGoneAnsweringNeedsAnAnswer: a process that answers is alive (Answered); one
// whose address refuses is Gone; a listener that accepts but whose connections never
// answer and are then closed, and that stops accepting a moment later (a process
// being killed: its sockets go one by one), is Gone once the listener refuses, not
// alive because a dial succeeded; one that accepts and never answers nor closes
// (paused) is Silent when the context ends: not proven gone, nor alive.
func TestGoneAnsweringNeedsAnAnswer(t *testing.T) {
	answering, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer answering.Close()
	go func() {
		for {
			c, err := answering.Accept()
			if err != nil {
				return
			}
			go func() { io.Copy(c, c) }()
		}
	}()
	p := New()
	defer p.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if v := p.Answering(ctx, answering.Addr().String(), echoPing); v != Answered {
		t.Errorf("a process that answers: %v", v)
	}
	refusing, kill := listen(t)
	kill()
	if !p.GoneAnswering(ctx, refusing, echoPing) {
		t.Error("a refusing address not counted as gone")
	}

	// Dying, as a killed process's sockets go: it has stopped running (nothing is
	// answered or accepted any more, so new handshakes wait in the listener's queue),
	// the connections it had are closed after 30 ms and the listener after 60 ms
	// (which resets the queued ones).
	dying, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	held, err := net.Dial("tcp", dying.Addr().String()) // the watch's peer, accepted while it ran
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	watchPeer, err := dying.Accept()
	if err != nil {
		t.Fatal(err)
	}
	if p.Gone(ctx, dying.Addr().String()) { // opens the prober's watch while the process runs
		t.Fatal("a listening process counted as gone")
	}
	var mu sync.Mutex
	time.AfterFunc(30*time.Millisecond, func() {
		mu.Lock()
		defer mu.Unlock()
		watchPeer.Close()
	})
	time.AfterFunc(60*time.Millisecond, func() { dying.Close() })
	start := time.Now()
	if !p.GoneAnswering(ctx, dying.Addr().String(), echoPing) {
		t.Errorf("a process whose listener closed %v after its connections, during the check, not counted as gone", 30*time.Millisecond)
	} else if took := time.Since(start); took < 50*time.Millisecond {
		t.Errorf("gone after %v, before the listener closed (60 ms)", took)
	}

	// Paused: accepts and holds every connection, never answers.
	paused, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer paused.Close()
	go func() {
		for {
			if _, err := paused.Accept(); err != nil {
				return
			}
		}
	}()
	pctx, pcancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer pcancel()
	if v := p.Answering(pctx, paused.Addr().String(), echoPing); v != Silent {
		t.Errorf("a process that accepts but does not answer (paused): %v", v)
	}
}
