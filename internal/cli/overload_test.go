package cli

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/runnel-io/runnel/client"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
)

// The policies themselves are tested in the client package, against a real node;
// these tests check that the flags build them as INTERFACE.md and the README say.

// flagProducer builds the Producer `runnel produce` builds from f, to topic t of the
// cluster at bootstrap.
func flagProducer(t *testing.T, bootstrap string, f produceFlags) *client.Producer {
	t.Helper()
	if f.bufferRecords == 0 {
		f.bufferRecords = 2
	}
	opts, err := f.overloadOptions(f.rate)
	if err != nil {
		t.Fatal(err)
	}
	p, err := newOverloadProducer(&connFlags{bootstrap: bootstrap}, []kgo.Opt{kgo.DefaultProduceTopic("t")}, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	return p
}

// fullBuffer starts a cluster whose Produce requests are parked and a producer from
// f that buffers at most two records, so the third record finds the buffer full.
func fullBuffer(t *testing.T, f produceFlags) (p *client.Producer, release func()) {
	t.Helper()
	c, bootstrap := newCluster(t, kfake.SeedTopics(1, "t"))
	release = holdProduce(c)
	t.Cleanup(release)
	return flagProducer(t, bootstrap, f), release
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

// produceN produces n records and returns how many Produce dropped and the first
// other error.
func produceN(p *client.Producer, n int, a *acks) (dropped int, err error) {
	for range n {
		switch err := p.Produce(context.Background(), &kgo.Record{Value: []byte("v")}, a.promise); {
		case errors.Is(err, client.ErrDropped):
			dropped++
		case err != nil:
			return dropped, err
		}
	}
	return dropped, nil
}

func TestOverloadFlags(t *testing.T) {
	t.Run("drop", func(t *testing.T) {
		p, release := fullBuffer(t, produceFlags{onFull: "drop"})
		var a acks
		if d, err := produceN(p, 5, &a); d != 3 || err != nil {
			t.Fatalf("5 records into a buffer of 2: %d dropped, %v; want 3 dropped", d, err)
		}
		release()
		if err := p.Flush(ctxTimeout(t, 10*time.Second)); err != nil {
			t.Fatal(err)
		}
		if st := p.Stats(); a.ok.Load() != 2 || st.Dropped != 3 {
			t.Errorf("acked %d, stats %+v; want 2 acked, 3 dropped", a.ok.Load(), st)
		}
	})
	t.Run("error", func(t *testing.T) {
		f := produceFlags{onFull: "error"}
		p, _ := fullBuffer(t, f)
		var a acks
		_, err := produceN(p, 3, &a)
		if !errors.Is(err, client.ErrBufferFull) || overloadError(err, &f).Error() != "producer buffer full (--on-full error)" {
			t.Errorf("third record into a buffer of 2 = %v, want ErrBufferFull naming --on-full error", err)
		}
	})
	t.Run("block with an enqueue timeout", func(t *testing.T) {
		f := produceFlags{onFull: "block", enqueueTimeout: "50ms"}
		p, _ := fullBuffer(t, f)
		var a acks
		start := time.Now()
		_, err := produceN(p, 3, &a)
		if elapsed := time.Since(start); elapsed < 50*time.Millisecond || !errors.Is(err, client.ErrBufferFull) {
			t.Errorf("third record: %v after %v, want ErrBufferFull after the 50ms enqueue timeout", err, elapsed)
		}
		if got := overloadError(err, &f).Error(); !strings.HasSuffix(got, "(--enqueue-timeout)") {
			t.Errorf("error %q does not name --enqueue-timeout", got)
		}
	})
	t.Run("block for ever", func(t *testing.T) {
		p, release := fullBuffer(t, produceFlags{onFull: "block"})
		var a acks
		done := make(chan error, 1)
		go func() { _, err := produceN(p, 3, &a); done <- err }()
		select {
		case err := <-done:
			t.Fatalf("produce into a full buffer returned (%v) before there was room", err)
		case <-time.After(150 * time.Millisecond):
		}
		release()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		if err := p.Flush(ctxTimeout(t, 10*time.Second)); err != nil || a.ok.Load() != 3 {
			t.Errorf("flush %v, acked %d; want 3", err, a.ok.Load())
		}
	})
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
		p := flagProducer(t, bootstrap, produceFlags{bufferRecords: 50000, onFull: "drop", rate: 200})
		var a acks
		start := time.Now()
		dropped, err := produceN(p, 41, &a)
		if err != nil {
			t.Fatal(err)
		}
		elapsed := time.Since(start)
		if err := p.Flush(ctxTimeout(t, 10*time.Second)); err != nil {
			t.Fatal(err)
		}
		// burst is 2 at 200/s, so 41 records need at least 39/200 s.
		if dropped != 0 || a.ok.Load() != 41 || elapsed < 190*time.Millisecond {
			t.Errorf("41 records at 200/s with --on-full drop: %d dropped, %d acked in %v; want 0 dropped, 41 acked, at least 190ms",
				dropped, a.ok.Load(), elapsed)
		}
	})
	t.Run("a dropped record waited for the rate first", func(t *testing.T) {
		p, release := fullBuffer(t, produceFlags{onFull: "drop", rate: 100}) // burst 1
		var a acks
		start := time.Now()
		dropped, err := produceN(p, 6, &a)
		if err != nil {
			t.Fatal(err)
		}
		// 6 records at 100/s take 50 ms whether they are buffered or dropped; were the
		// buffer checked first, the 4 dropped ones would not wait and it took ~10 ms.
		if elapsed := time.Since(start); elapsed < 45*time.Millisecond || dropped != 4 {
			t.Errorf("6 records at 100/s into a buffer of 2: %d dropped in %v; want 4 dropped, at least 45ms", dropped, elapsed)
		}
		release()
	})
	r := mustRun(t, "", "produce", "--help")
	if !strings.Contains(r.stdout, "--rate applies first") {
		t.Errorf("produce --help does not say which of --rate and --on-full applies first:\n%s", r.stdout)
	}
}
