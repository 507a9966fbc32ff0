package interop_test

import (
	"context"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// TestQuotaReport measures client quotas with Kafka's default windows (11 of 1 s): a
// franz-go producer limited to 1 MiB/s, its rate over 20 s and over 60 s from 10 s
// after the quota was set (the first 10 s hold the burst the windows allow; each time
// a sample of the burst expires, another one goes through, so the rate over 20 s is
// above the bound and converges only over longer runs), an unlimited producer beside
// it, and how soon a new quota bites. A measurement, not a test:
//
//	RUNNEL_REPORT=1 go test -run TestQuotaReport -v ./internal/interop/
func TestQuotaReport(t *testing.T) {
	if os.Getenv("RUNNEL_REPORT") != "1" {
		t.Skip("a measurement, not a test: set RUNNEL_REPORT=1")
	}
	n := startNode(t)
	addr := bootstrap(n)
	adm := newAdmin(t, addr)
	topic := topicName(t)
	createTopic(t, adm, topic, 2)
	const rate = 1 << 20

	// How soon a quota set on a client at full speed throttles it.
	h := &throttles{}
	limited := newClient(t, addr, kgo.ClientID("limited"), kgo.WithHooks(h), kgo.DefaultProduceTopic(topic))
	var acked atomic.Int64
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		pool := noise(4 << 20)
		for off := 0; ctx.Err() == nil; off = (off + 4093) % (len(pool) - 4<<10) {
			limited.Produce(ctx, &kgo.Record{Value: pool[off : off+4<<10]}, func(r *kgo.Record, err error) {
				if err == nil {
					acked.Add(int64(len(r.Value)))
				}
			})
		}
	}()
	time.Sleep(2 * time.Second) // unlimited for a while: the measured rate is high
	setQuota(t, adm, "producer_byte_rate", rate, clientIDEntity("limited"))
	set := time.Now()
	for h.n.Load() == 0 && time.Since(set) < 10*time.Second {
		time.Sleep(time.Millisecond)
	}
	t.Logf("first throttle %v after AlterClientQuotas answered", time.Since(set))

	at := func() (time.Time, int64) { return time.Now(), acked.Load() }
	time.Sleep(10 * time.Second)
	t0, b0 := at()
	other := newClient(t, addr, kgo.ClientID("unlimited"), kgo.DefaultProduceTopic(topic))
	fast := produceFor(t, other, topic, 5*time.Second)
	time.Sleep(15 * time.Second)
	t1, b1 := at()
	time.Sleep(40 * time.Second)
	t2, b2 := at()
	cancel()
	<-done
	report := func(ta, tb time.Time, ba, bb int64) float64 {
		got := float64(bb-ba) / tb.Sub(ta).Seconds()
		t.Logf("limited to %d B/s: %.0f B/s over %v from %v after the quota (%+.1f%%)",
			rate, got, tb.Sub(ta).Round(time.Second), ta.Sub(set).Round(time.Second), 100*(got-rate)/rate)
		return got
	}
	report(t0, t1, b0, b1)
	got := report(t0, t2, b0, b2)
	t.Logf("%d throttles, longest %d ms; unlimited producer beside it: %.1f MiB/s", h.n.Load(), h.max.Load(), float64(fast)/5/(1<<20))
	if d := (got - rate) / rate; d > 0.1 || d < -0.1 {
		t.Errorf("limited producer at %.0f B/s over a minute, more than 10%% off %d B/s", got, rate)
	}
}
