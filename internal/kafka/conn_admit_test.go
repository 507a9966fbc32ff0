package kafka

import (
	"net"
	"testing"
	"testing/synctest"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/runnel-io/runnel/internal/config"
)

// renewIdle closes a connection only when the idle period that ended saw no byte read,
// no request read, no response written and none pending; any of those renews it.
func TestRenewIdle(t *testing.T) {
	for _, tc := range []struct {
		name                  string
		readSome              bool
		reads, writes         int64
		seenReads, seenWrites int64
		renew                 bool
	}{
		{name: "quiet", reads: 3, writes: 3, seenReads: 3, seenWrites: 3, renew: false},
		{name: "read part of a frame", readSome: true, reads: 3, writes: 3, seenReads: 3, seenWrites: 3, renew: true},
		{name: "read a request", reads: 4, writes: 4, seenReads: 3, seenWrites: 4, renew: true},
		{name: "wrote a response", reads: 4, writes: 4, seenReads: 4, seenWrites: 3, renew: true},
		{name: "response pending", reads: 4, writes: 3, seenReads: 4, seenWrites: 3, renew: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, b := net.Pipe()
			defer a.Close()
			defer b.Close()
			c := &conn{nc: a, idle: time.Minute, reads: tc.reads, seenReads: tc.seenReads, seenWrites: tc.seenWrites}
			c.writes.Store(tc.writes)
			if got := c.renewIdle(tc.readSome); got != tc.renew {
				t.Fatalf("renewIdle = %v, want %v", got, tc.renew)
			}
			if tc.renew && (c.seenReads != tc.reads || c.seenWrites != tc.writes) {
				t.Errorf("renewed with seen %d/%d, want the counts now %d/%d", c.seenReads, c.seenWrites, tc.reads, tc.writes)
			}
		})
	}
}

// admit holds a request slot and the request's bytes until releaseAdmission: a
// request that does not fit waits, and gives its slot back when the server closes.
func TestAdmitHoldsSlotAndBytes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfg := config.Default()
		cfg.QueuedMaxRequests, cfg.QueuedMaxRequestBytes = 2, 100
		s := NewServer(Config{Broker: cfg}, nil, nil, NewMetrics(prometheus.NewRegistry()))
		if !s.admit(90) {
			t.Fatal("the first request was not admitted")
		}
		admitted := make(chan bool, 1)
		go func() { admitted <- s.admit(20) }()
		synctest.Wait()
		select {
		case <-admitted:
			t.Fatal("a request of 20 bytes was admitted with 90 of queued.max.request.bytes=100 held")
		default:
		}
		s.releaseAdmission(90)
		if !<-admitted {
			t.Fatal("the waiting request was not admitted once the bytes were given back")
		}
		go func() { admitted <- s.admit(90) }()
		synctest.Wait()
		s.cancel()
		if <-admitted {
			t.Fatal("a request waiting for bytes was admitted after the server closed")
		}
		if n := len(s.slots); n != 1 {
			t.Errorf("%d request slots held, want 1 (the admitted request's): the refused one keeps none", n)
		}
	})
}
