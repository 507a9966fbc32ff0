package interop_test

import (
	"context"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// TestQuotaReport measures client quotas with the defaults (quota.window.size.seconds
// 1): how soon a quota set on a client at full speed throttles it; then a new franz-go
// producer with default settings, at full speed against producer_byte_rate of 1 MiB/s
// from its first record, its acknowledged bytes over the first 20 s and the first
// 60 s (burst included: the bucket's one window, plus the request that crosses the
// bound, which is answered before its throttle), and over 20 s in steady state (from
// 10 s to 30 s); and an unlimited producer beside it. With Kafka's sampled rate
// (quota.window.num 11) the steady 20 s were +23 %. The issue asks for 10 % over 20 s.
// A measurement, run by hand:
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
	createTopic(t, adm, topic, 1)
	const rate = 1 << 20

	// fullSpeed produces from cl until ctx ends, counting acknowledged bytes.
	fullSpeed := func(ctx context.Context, cl *kgo.Client, acked *atomic.Int64) <-chan struct{} {
		done := make(chan struct{})
		go func() {
			defer close(done)
			pool := noise(4 << 20)
			for off := 0; ctx.Err() == nil; off = (off + 4093) % (len(pool) - 4<<10) {
				cl.Produce(ctx, &kgo.Record{Topic: topic, Value: pool[off : off+4<<10]}, func(r *kgo.Record, err error) {
					if err == nil {
						acked.Add(int64(len(r.Value)))
					}
				})
			}
		}()
		return done
	}

	// How soon a quota set on a client at full speed bites.
	{
		h := &throttles{}
		cl := newClient(t, addr, kgo.ClientID("bites"), kgo.WithHooks(h))
		var acked atomic.Int64
		ctx, cancel := context.WithCancel(context.Background())
		done := fullSpeed(ctx, cl, &acked)
		time.Sleep(2 * time.Second)
		setQuota(t, adm, "producer_byte_rate", rate, clientIDEntity("bites"))
		set := time.Now()
		for h.n.Load() == 0 && time.Since(set) < 10*time.Second {
			time.Sleep(time.Millisecond)
		}
		t.Logf("a client at full speed: first throttle %v after AlterClientQuotas answered", time.Since(set))
		cancel()
		<-done
	}

	// The well-behaved producer writes a topic of its own: on the throttled one's
	// partition it would share the fsync of each 1 MB batch the throttle lets through.
	probeTopic := topic + "-steady"
	createTopic(t, adm, probeTopic, 1)
	alone50, alone99 := latencyProbe(t, addr, probeTopic, 5*time.Second)
	setQuota(t, adm, "producer_byte_rate", rate, clientIDEntity("limited"))
	h := &throttles{}
	limited := newClient(t, addr, kgo.ClientID("limited"), kgo.WithHooks(h))
	var acked atomic.Int64
	ctx, cancel := context.WithCancel(context.Background())
	start := time.Now()
	done := fullSpeed(ctx, limited, &acked)
	at := func(d time.Duration) int64 { time.Sleep(time.Until(start.Add(d))); return acked.Load() }
	// Beside the throttled producer, from 2 s (its burst is over) to 7 s, and before
	// the unlimited producer below: the gigabytes that one writes are written back
	// from the page cache in the seconds after, which would be the disk's latency,
	// not the quota's (a first run measured p99 67-83 ms there).
	at(2 * time.Second)
	beside50, beside99 := latencyProbe(t, addr, probeTopic, 5*time.Second)
	b10 := at(10 * time.Second)
	other := newClient(t, addr, kgo.ClientID("unlimited"))
	fast := produceFor(t, other, topic, 5*time.Second)
	b20 := at(20 * time.Second)
	b30 := at(30 * time.Second)
	b60 := at(60 * time.Second)
	cancel()
	<-done

	report := func(what string, bytes int64, over time.Duration) float64 {
		got := float64(bytes) / over.Seconds()
		t.Logf("limited to %d B/s: %.0f B/s %s (%+.1f%%)", rate, got, what, 100*(got-rate)/rate)
		return got
	}
	first20 := report("over its first 20 s", b20, 20*time.Second)
	steady := report("from 10 s to 30 s", b30-b10, 20*time.Second)
	first60 := report("over its first 60 s", b60, 60*time.Second)
	t.Logf("%d throttles, longest %d ms; unlimited producer beside it: %.1f MiB/s", h.n.Load(), h.max.Load(), float64(fast)/5/(1<<20))
	t.Logf("a well-behaved producer (1,000 records/s of 1 KiB, acks=all): p50 %v p99 %v alone, p50 %v p99 %v beside the throttled one",
		alone50, alone99, beside50, beside99)
	for _, g := range []struct {
		span string
		got  float64
	}{{"its first 20 s", first20}, {"20 s in steady state", steady}, {"its first minute", first60}} {
		if d := (g.got - rate) / rate; d > 0.1 || d < -0.1 {
			t.Errorf("limited producer at %.0f B/s over %s, more than 10%% off %d B/s", g.got, g.span, rate)
		}
	}
}

// latencyProbe produces a 1 KiB record every millisecond for d from a client of its own
// (client id "steady", no quota) and returns the p50 and p99 of the time from Produce
// to the acknowledgement.
func latencyProbe(t *testing.T, addr, topic string, d time.Duration) (p50, p99 time.Duration) {
	t.Helper()
	cl := newClient(t, addr, kgo.ClientID("steady"))
	value := noise(1 << 10)
	var mu sync.Mutex
	var lat []time.Duration
	var wg sync.WaitGroup
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	for end := time.Now().Add(d); time.Now().Before(end); <-tick.C {
		sent := time.Now()
		wg.Add(1)
		cl.Produce(context.Background(), &kgo.Record{Topic: topic, Value: value}, func(_ *kgo.Record, err error) {
			defer wg.Done()
			if err != nil {
				t.Errorf("steady producer: %v", err)
				return
			}
			mu.Lock()
			lat = append(lat, time.Since(sent))
			mu.Unlock()
		})
	}
	wg.Wait()
	slices.Sort(lat)
	if len(lat) == 0 {
		t.Fatal("steady producer: nothing acknowledged")
	}
	return lat[len(lat)/2].Round(10 * time.Microsecond), lat[len(lat)*99/100].Round(10 * time.Microsecond)
}
