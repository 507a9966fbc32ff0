package cli

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
)

// fullBuffer starts a cluster whose Produce requests are parked and a client that
// buffers at most two records, so the third record finds the buffer full.
func fullBuffer(t *testing.T) (cl *kgo.Client, release func()) {
	t.Helper()
	c, bootstrap := newCluster(t, kfake.SeedTopics(1, "t"))
	release = holdProduce(c)
	t.Cleanup(release)
	cl = newProducer(t, bootstrap, kgo.MaxBufferedRecords(2), kgo.DefaultProduceTopic("t"))
	return cl, release
}

// acks counts promises that reported success and failure.
type acks struct{ ok, failed atomic.Int64 }

func (a *acks) promise(_ *kgo.Record, err error) {
	if err != nil {
		a.failed.Add(1)
		return
	}
	a.ok.Add(1)
}

func produceN(t *testing.T, p *overloadPolicy, cl *kgo.Client, n int, a *acks) error {
	t.Helper()
	for range n {
		if err := p.produce(context.Background(), cl, &kgo.Record{Value: []byte("v")}, a.promise); err != nil {
			return err
		}
	}
	return nil
}

func TestOverloadDrop(t *testing.T) {
	cl, release := fullBuffer(t)
	p := newOverloadPolicy(onFullDrop, nil, 0)
	var a acks
	if err := produceN(t, p, cl, 5, &a); err != nil {
		t.Fatal(err)
	}
	eventually(t, 5*time.Second, func() error {
		return errIf(p.Dropped() != 3, "dropped %d records, want 3", p.Dropped())
	})
	release()
	if err := cl.Flush(ctxTimeout(t, 10*time.Second)); err != nil {
		t.Fatal(err)
	}
	if a.ok.Load() != 2 || a.failed.Load() != 0 || p.Err() != nil {
		t.Errorf("acked %d, failed %d, policy err %v; want 2 acked, 0 failed, no error", a.ok.Load(), a.failed.Load(), p.Err())
	}
}

func TestOverloadError(t *testing.T) {
	cl, _ := fullBuffer(t)
	p := newOverloadPolicy(onFullError, nil, 0)
	var a acks
	if err := produceN(t, p, cl, 3, &a); err != nil {
		t.Fatal(err)
	}
	eventually(t, 5*time.Second, func() error { return errIf(p.Err() == nil, "no buffer-full error") })
	err := produceN(t, p, cl, 1, &a)
	if !errors.Is(err, errBufferFull) {
		t.Errorf("produce after a full buffer = %v, want errBufferFull", err)
	}
	if p.Dropped() != 0 {
		t.Errorf("dropped %d under --on-full error", p.Dropped())
	}
}

func TestOverloadBlockEnqueueTimeout(t *testing.T) {
	cl, _ := fullBuffer(t)
	timeout := 50 * time.Millisecond
	p := newOverloadPolicy(onFullBlock, &timeout, 0)
	var a acks
	start := time.Now()
	if err := produceN(t, p, cl, 3, &a); err != nil {
		t.Fatal(err)
	}
	if elapsed := time.Since(start); elapsed < timeout {
		t.Errorf("third record returned after %v, want it to wait the %v enqueue timeout", elapsed, timeout)
	}
	eventually(t, 5*time.Second, func() error {
		return errIf(!errors.Is(p.Err(), errBufferFull), "policy error %v, want errBufferFull", p.Err())
	})
}

func TestOverloadBlockForever(t *testing.T) {
	cl, release := fullBuffer(t)
	p := newOverloadPolicy(onFullBlock, nil, 0)
	var a acks
	done := make(chan error, 1)
	go func() { done <- produceN(t, p, cl, 3, &a) }()
	select {
	case err := <-done:
		t.Fatalf("produce into a full buffer returned (%v) before there was room", err)
	case <-time.After(150 * time.Millisecond):
	}
	release()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if err := cl.Flush(ctxTimeout(t, 10*time.Second)); err != nil {
		t.Fatal(err)
	}
	if a.ok.Load() != 3 {
		t.Errorf("acked %d records, want 3", a.ok.Load())
	}
}

func TestOverloadBlockHonoursContext(t *testing.T) {
	cl, _ := fullBuffer(t)
	p := newOverloadPolicy(onFullBlock, nil, 0)
	var a acks
	ctx, cancel := context.WithCancel(context.Background())
	for range 2 {
		if err := p.produce(ctx, cl, &kgo.Record{Value: []byte("v")}, a.promise); err != nil {
			t.Fatal(err)
		}
	}
	time.AfterFunc(50*time.Millisecond, cancel)
	// Produce blocks until ctx is canceled, then fails the record through its promise.
	if err := p.produce(ctx, cl, &kgo.Record{Value: []byte("v")}, a.promise); err != nil {
		t.Fatal(err)
	}
	eventually(t, 5*time.Second, func() error { return errIf(a.failed.Load() != 1, "failed %d, want 1", a.failed.Load()) })
	if p.Err() != nil || p.Dropped() != 0 {
		t.Errorf("a canceled wait counted as overload: err %v, dropped %d", p.Err(), p.Dropped())
	}
}

func TestOverloadRate(t *testing.T) {
	_, bootstrap := newCluster(t, kfake.SeedTopics(1, "t"))
	cl := newProducer(t, bootstrap, kgo.DefaultProduceTopic("t"))
	p := newOverloadPolicy(onFullBlock, nil, 200)
	var a acks
	start := time.Now()
	if err := produceN(t, p, cl, 41, &a); err != nil {
		t.Fatal(err)
	}
	// burst is 2 at 200/s, so 41 records need at least 39/200 s.
	if elapsed := time.Since(start); elapsed < 190*time.Millisecond {
		t.Errorf("41 records at 200/s took %v, want at least 190ms", elapsed)
	}
}

func TestTokenBucket(t *testing.T) {
	t0 := time.Unix(1000, 0)
	b := newTokenBucket(10) // burst 1
	steps := []struct {
		at   time.Duration
		want time.Duration
	}{
		{0, 0},
		{0, 100 * time.Millisecond},
		{0, 200 * time.Millisecond},
		{50 * time.Millisecond, 250 * time.Millisecond}, // the 4th event is due at +300ms
		{time.Second, 0}, // refilled, capped at burst
		{time.Second, 100 * time.Millisecond},
		{-time.Second, 200 * time.Millisecond}, // a clock going back changes nothing
	}
	for i, s := range steps {
		if got := b.take(t0.Add(s.at)); got != s.want {
			t.Errorf("step %d: take at +%v = %v, want %v", i, s.at, got, s.want)
		}
	}
	fast := newTokenBucket(1000) // burst 10
	for i := range 10 {
		if d := fast.take(t0); d != 0 {
			t.Fatalf("take %d within the burst waits %v", i, d)
		}
	}
	if d := fast.take(t0); d != time.Millisecond {
		t.Errorf("first take past the burst waits %v, want 1ms", d)
	}
}

func TestParseEnqueueTimeout(t *testing.T) {
	tests := []struct {
		in   string
		want time.Duration
	}{
		{"-1", -1}, {"0", 0}, {"250", 250 * time.Millisecond}, {"2s", 2 * time.Second},
		{"1m30s", 90 * time.Second}, {"-5s", -1},
	}
	for _, tt := range tests {
		if got, err := parseEnqueueTimeout(tt.in); err != nil || got != tt.want {
			t.Errorf("parseEnqueueTimeout(%q) = %v, %v; want %v", tt.in, got, err, tt.want)
		}
	}
	for _, bad := range []string{"", "soon", "1x"} {
		if _, err := parseEnqueueTimeout(bad); err == nil {
			t.Errorf("parseEnqueueTimeout(%q) succeeded", bad)
		}
	}
}

func TestParseOnFull(t *testing.T) {
	for _, s := range []string{"block", "drop", "error"} {
		m, err := parseOnFull(s)
		if err != nil || m.String() != s {
			t.Errorf("parseOnFull(%q) = %v, %v", s, m, err)
		}
	}
	if _, err := parseOnFull("wait"); err == nil {
		t.Error("parseOnFull(wait) succeeded")
	}
}

// --rate applies before --on-full: every record first waits for its turn under the
// rate (a record over the rate is delayed, never dropped), and only then meets the
// buffer, where --on-full drop drops it if the buffer is still full.
func TestOverloadRateBeforeDrop(t *testing.T) {
	t.Run("over the rate is delayed, not dropped", func(t *testing.T) {
		_, bootstrap := newCluster(t, kfake.SeedTopics(1, "t"))
		cl := newProducer(t, bootstrap, kgo.DefaultProduceTopic("t"))
		p := newOverloadPolicy(onFullDrop, nil, 200)
		var a acks
		start := time.Now()
		if err := produceN(t, p, cl, 41, &a); err != nil {
			t.Fatal(err)
		}
		elapsed := time.Since(start)
		if err := cl.Flush(ctxTimeout(t, 10*time.Second)); err != nil {
			t.Fatal(err)
		}
		if p.Dropped() != 0 || a.ok.Load() != 41 || elapsed < 190*time.Millisecond {
			t.Errorf("41 records at 200/s with --on-full drop: %d dropped, %d acked in %v; want 0 dropped, 41 acked, at least 190ms",
				p.Dropped(), a.ok.Load(), elapsed)
		}
	})
	t.Run("a dropped record waited for the rate first", func(t *testing.T) {
		cl, release := fullBuffer(t)
		p := newOverloadPolicy(onFullDrop, nil, 100) // burst 1
		var a acks
		start := time.Now()
		if err := produceN(t, p, cl, 6, &a); err != nil {
			t.Fatal(err)
		}
		// 6 records at 100/s take 50 ms whether they are buffered or dropped; were the
		// buffer checked first, the 4 dropped ones would not wait and it took ~10 ms.
		if elapsed := time.Since(start); elapsed < 45*time.Millisecond {
			t.Errorf("6 records at 100/s, 4 of them dropped, took %v; want at least 45ms", elapsed)
		}
		eventually(t, 5*time.Second, func() error {
			return errIf(p.Dropped() != 4, "dropped %d records, want 4", p.Dropped())
		})
		release()
	})
	r := mustRun(t, "", "produce", "--help")
	if !strings.Contains(r.stdout, "--rate applies first") {
		t.Errorf("produce --help does not say which of --rate and --on-full applies first:\n%s", r.stdout)
	}
}
