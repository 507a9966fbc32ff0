package nodenet

import (
	"context"
	"errors"
	"io"
	"net"
	"os"
	"syscall"
	"testing"
	"testing/synctest"
	"time"
)

// pair listens on 10.0.0.1:9092 and dials it from 10.0.0.2.
func pair(t *testing.T, m *Mem) (client, server net.Conn, ln net.Listener) {
	t.Helper()
	ln, err := m.Host("10.0.0.1").Listen("tcp", ":9092")
	if err != nil {
		t.Fatal(err)
	}
	client, err = m.Host("10.0.0.2").DialContext(context.Background(), "tcp", "10.0.0.1:9092")
	if err != nil {
		t.Fatal(err)
	}
	server, err = ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	return client, server, ln
}

func TestMemReadWriteCloseAndAddresses(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := NewMem()
		client, server, ln := pair(t, m)
		if got := ln.Addr().(*net.TCPAddr).String(); got != "10.0.0.1:9092" {
			t.Fatalf("listener address %s", got)
		}
		if got := server.RemoteAddr().(*net.TCPAddr).IP.String(); got != "10.0.0.2" {
			t.Fatalf("server sees the client at %s", got)
		}
		big := make([]byte, 3*pipeBuffer+5) // more than one pipe's buffer: the writer waits for the reader
		for i := range big {
			big[i] = byte(i)
		}
		go func() {
			client.Write(big)
			client.Close()
		}()
		got, err := io.ReadAll(server)
		if err != nil || len(got) != len(big) || got[len(got)-1] != big[len(big)-1] {
			t.Fatalf("read %d bytes, err %v; want %d", len(got), err, len(big))
		}
		if _, err := server.Write([]byte("x")); !errors.Is(err, syscall.EPIPE) {
			t.Fatalf("write to a closed peer: %v, want EPIPE", err)
		}
		server.Close()
		ln.Close()
		if _, err := m.Host("10.0.0.2").DialContext(context.Background(), "tcp", "10.0.0.1:9092"); !errors.Is(err, syscall.ECONNREFUSED) {
			t.Fatalf("dial of a closed listener: %v, want ECONNREFUSED", err)
		}
	})
}

func TestMemDeadlineUsesBubbleClock(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		client, _, _ := pair(t, NewMem())
		start := time.Now()
		client.SetReadDeadline(start.Add(30 * time.Second))
		_, err := client.Read(make([]byte, 1))
		if !errors.Is(err, os.ErrDeadlineExceeded) {
			t.Fatalf("read past its deadline: %v", err)
		}
		var ne net.Error
		if !errors.As(err, &ne) || !ne.Timeout() {
			t.Fatalf("%v is not a timeout", err)
		}
		if d := time.Since(start); d != 30*time.Second {
			t.Fatalf("deadline passed after %v of virtual time, want 30s", d)
		}
	})
}

func TestMemCutHoldsBytesAndDialsUntilHeal(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := NewMem()
		client, server, _ := pair(t, m)
		m.Cut("10.0.0.1", "10.0.0.2")
		client.Write([]byte("held"))
		got := make(chan string, 1)
		go func() {
			b := make([]byte, 4)
			n, _ := io.ReadFull(server, b)
			got <- string(b[:n])
		}()
		synctest.Wait()
		select {
		case s := <-got:
			t.Fatalf("read %q across a cut link", s)
		default:
		}
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		defer cancel()
		if _, err := m.Host("10.0.0.2").DialContext(ctx, "tcp", "10.0.0.1:9092"); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("dial across a cut link: %v, want a timeout", err)
		}
		// A third host still reaches 10.0.0.1.
		if c, err := m.Host("10.0.0.3").DialContext(context.Background(), "tcp", "10.0.0.1:9092"); err != nil {
			t.Fatalf("dial from an uncut host: %v", err)
		} else {
			c.Close()
		}
		m.Heal("10.0.0.1", "10.0.0.2")
		if s := <-got; s != "held" {
			t.Fatalf("after heal read %q", s)
		}
	})
}

func TestMemCrashResetsAndRefuses(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := NewMem()
		client, server, ln := pair(t, m)
		blocked := make(chan error, 1)
		go func() {
			_, err := server.Read(make([]byte, 1))
			blocked <- err
		}()
		synctest.Wait()
		if client.(*conn).PeerClosed() {
			t.Fatal("PeerClosed before the crash")
		}
		m.Crash("10.0.0.1")
		if err := <-blocked; !errors.Is(err, ErrCrashed) {
			t.Fatalf("the crashed host's own read: %v", err)
		}
		if !client.(*conn).PeerClosed() {
			t.Fatal("PeerClosed is false after the peer crashed")
		}
		if _, err := client.Read(make([]byte, 1)); !errors.Is(err, syscall.ECONNRESET) {
			t.Fatalf("peer read after crash: %v, want ECONNRESET", err)
		}
		if _, err := ln.Accept(); !errors.Is(err, net.ErrClosed) {
			t.Fatalf("accept after crash: %v", err)
		}
		if _, err := m.Host("10.0.0.2").DialContext(context.Background(), "tcp", "10.0.0.1:9092"); !errors.Is(err, syscall.ECONNREFUSED) {
			t.Fatalf("dial of a crashed host: %v, want ECONNREFUSED", err)
		}
		if _, err := m.Host("10.0.0.1").Listen("tcp", ":9092"); err == nil {
			t.Fatal("a crashed host listened")
		}
		m.Up("10.0.0.1")
		if _, err := m.Host("10.0.0.1").Listen("tcp", ":9092"); err != nil {
			t.Fatalf("listen after Up: %v", err)
		}
	})
}

// A connection closed from one end while its link is cut delivers its EOF once the
// link heals, as TCP retransmits a FIN: the peer does not wait forever.
func TestMemCloseDuringCutArrivesAtHeal(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := NewMem()
		client, server, _ := pair(t, m)
		m.Cut("10.0.0.1", "10.0.0.2")
		client.Write([]byte("last"))
		client.Close()
		got := make(chan error, 1)
		var b []byte
		go func() {
			var err error
			b, err = io.ReadAll(server)
			got <- err
		}()
		synctest.Wait()
		select {
		case err := <-got:
			t.Fatalf("read ended across a cut link: %q, %v", b, err)
		default:
		}
		m.Heal("10.0.0.1", "10.0.0.2")
		if err := <-got; err != nil || string(b) != "last" {
			t.Fatalf("after heal: %q, %v; want \"last\" then EOF", b, err)
		}
	})
}

// A paused host keeps its connections: nothing crosses them either way, nothing is
// reset, dials to it connect but carry nothing and its own dials wait; after Resume
// everything that waited arrives in order. A paused host can still crash.
func TestMemPauseHoldsBothWaysUntilResume(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := NewMem()
		client, server, ln := pair(t, m) // server is on 10.0.0.1
		m.Pause("10.0.0.1")
		if !m.IsPaused("10.0.0.1") || m.IsPaused("10.0.0.2") {
			t.Fatal("IsPaused wrong after Pause(10.0.0.1)")
		}
		client.Write([]byte("to"))
		server.Write([]byte("from"))
		toServer, toClient := make(chan string, 1), make(chan string, 1)
		go func() {
			b := make([]byte, 2)
			n, _ := io.ReadFull(server, b)
			toServer <- string(b[:n])
		}()
		go func() {
			b := make([]byte, 4)
			n, _ := io.ReadFull(client, b)
			toClient <- string(b[:n])
		}()
		// A dial to the paused host connects; one from it waits.
		late, err := m.Host("10.0.0.3").DialContext(context.Background(), "tcp", "10.0.0.1:9092")
		if err != nil {
			t.Fatalf("dial to a paused host: %v, want it to connect", err)
		}
		late.Write([]byte("x"))
		acceptedLate, err := ln.Accept()
		if err != nil {
			t.Fatal(err)
		}
		lateGot := make(chan string, 1)
		go func() {
			b := make([]byte, 1)
			n, _ := acceptedLate.Read(b)
			lateGot <- string(b[:n])
		}()
		out, err := m.Host("10.0.0.4").Listen("tcp", ":1")
		if err != nil {
			t.Fatal(err)
		}
		defer out.Close()
		dialed := make(chan error, 1)
		go func() {
			c, err := m.Host("10.0.0.1").DialContext(context.Background(), "tcp", "10.0.0.4:1")
			if err == nil {
				c.Close()
			}
			dialed <- err
		}()
		time.Sleep(time.Minute)
		synctest.Wait()
		select {
		case s := <-toServer:
			t.Fatalf("the paused host read %q", s)
		case s := <-toClient:
			t.Fatalf("read %q from the paused host", s)
		case s := <-lateGot:
			t.Fatalf("the paused host read %q from a connection made while paused", s)
		case err := <-dialed:
			t.Fatalf("the paused host dialed: %v", err)
		default:
		}
		if client.(*conn).PeerClosed() {
			t.Fatal("a connection of the paused host looks closed")
		}
		m.Resume("10.0.0.1")
		if s := <-toServer; s != "to" {
			t.Fatalf("after resume the host read %q", s)
		}
		if s := <-toClient; s != "from" {
			t.Fatalf("after resume the peer read %q", s)
		}
		if s := <-lateGot; s != "x" {
			t.Fatalf("after resume the late connection carried %q", s)
		}
		if err := <-dialed; err != nil {
			t.Fatalf("the resumed host's dial: %v", err)
		}

		m.Pause("10.0.0.1")
		m.Crash("10.0.0.1")
		if _, err := client.Read(make([]byte, 1)); !errors.Is(err, syscall.ECONNRESET) {
			t.Fatalf("peer of a paused host that crashed: %v, want ECONNRESET", err)
		}
	})
}
