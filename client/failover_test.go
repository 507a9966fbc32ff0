package client_test

import (
	"context"
	"crypto/rand"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/runnel-io/runnel/client"
	"github.com/runnel-io/runnel/internal/clustertest"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// defaultKgo is franz-go with its defaults (metadata max age, retries, idempotence)
// and only the seeds: what a user's program has. cluster.ClientDefaults refreshes
// metadata every 100 ms, which would hide how long a default client takes to find a
// new leader.
func defaultKgo(c *clustertest.Cluster, topic string) []kgo.Opt {
	return []kgo.Opt{kgo.SeedBrokers(strings.Split(c.Bootstrap(), ",")...), kgo.Dialer(c.Dial()),
		kgo.DefaultProduceTopic(topic)}
}

// delivered counts acknowledged records over time, so that a test can see how long
// deliveries stopped and at what rate they came back.
type delivered struct {
	mu    sync.Mutex
	times []time.Time
}

func (d *delivered) add(t time.Time) {
	d.mu.Lock()
	d.times = append(d.times, t)
	d.mu.Unlock()
}

// between counts deliveries in [from, to).
func (d *delivered) between(from, to time.Time) int {
	d.mu.Lock()
	defer d.mu.Unlock()
	n := 0
	for _, t := range d.times {
		if !t.Before(from) && t.Before(to) {
			n++
		}
	}
	return n
}

// longestGap is the longest time after from with no delivery.
func (d *delivered) longestGap(from time.Time) time.Duration {
	d.mu.Lock()
	defer d.mu.Unlock()
	var gap time.Duration
	prev := from
	for _, t := range d.times {
		if t.Before(from) {
			continue
		}
		gap = max(gap, t.Sub(prev))
		prev = t
	}
	return gap
}

// TestProducerAcrossLeaderFailover kills -9 the leader node of a replicated topic
// under a Block producer with franz-go's default settings: nothing buffered is lost
// or written twice, the buffer drains, and throughput comes back.
func TestProducerAcrossLeaderFailover(t *testing.T) {
	c := clustertest.Start(t, clustertest.Options{Nodes: 3})
	const topic = "failover"
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if resp, err := c.Admin(t).CreateTopic(ctx, 3, 3, nil, topic); err != nil || resp.Err != nil {
		t.Fatalf("create topic %s: %v %v", topic, err, resp.Err)
	}
	for p := range int32(3) {
		c.WaitISR(t, topic, p, 3, 20*time.Second)
	}
	l := newLedger()
	var d delivered
	p, err := client.NewProducer(client.WithClientOptions(defaultKgo(c, topic)...),
		client.WithMaxBufferedRecords(500))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()

	var stop atomic.Bool
	done := make(chan struct{})
	go func() {
		defer close(done)
		for !stop.Load() {
			r, seq := l.record()
			err := p.Produce(context.Background(), r, func(r *kgo.Record, err error) {
				if err == nil {
					d.add(time.Now())
				}
				l.promise(r, err)
			})
			l.mu.Lock()
			if err != nil {
				l.refused[seq] = err
			} else {
				l.accepted[seq] = true
			}
			l.mu.Unlock()
			if err != nil {
				t.Errorf("Produce under Block: %v", err)
				return
			}
		}
	}()

	time.Sleep(2 * time.Second)
	leader, _ := c.WaitLeader(t, topic, 0, 10*time.Second)
	killed := time.Now()
	c.Kill(int(leader))
	time.Sleep(8 * time.Second)
	stop.Store(true)
	<-done
	fctx, fcancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer fcancel()
	if err := p.Flush(fctx); err != nil {
		t.Fatalf("flush after the failover: %v (stats %+v)", err, p.Stats())
	}
	end := time.Now()

	before := float64(d.between(killed.Add(-time.Second), killed))
	after := float64(d.between(end.Add(-2*time.Second), end)) / 2
	gap := d.longestGap(killed)
	st := p.Stats()
	t.Logf("killed node %d (leader of %s-0): %.0f records/s in the second before, %.0f/s in the last two seconds; longest pause in deliveries %v; stats %+v",
		leader, topic, before, after, gap.Round(time.Millisecond), st)
	if st.BufferedRecords != 0 || st.Failed+st.Refused+st.Dropped+st.Canceled != 0 {
		t.Errorf("after the failover: %+v; want nothing buffered, failed, refused, dropped or canceled", st)
	}
	if after < before/4 {
		t.Errorf("throughput did not recover after the failover: %.0f records/s, %.0f before the kill", after, before)
	}
	l.checkLog(t, &node{c: c}, topic)
}

// TestProducerUnderQuota throttles a Block producer with a producer_byte_rate quota
// on its client id: the buffer fills and drains at the quota's rate (the producer is
// slowed, nothing is lost), and once the quota is removed throughput comes back.
func TestProducerUnderQuota(t *testing.T) {
	n := startNode(t)
	topic := n.topic(t, "quota")
	const clientID, rate, size = "throttled-producer", 256 << 10, 1 << 10
	adm := n.c.Admin(t)
	setQuota := func(v float64, remove bool) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		alt := kadm.AlterClientQuotaEntry{
			Entity: []kadm.ClientQuotaEntityComponent{{Type: "client-id", Name: kmsg.StringPtr(clientID)}},
			Ops:    []kadm.AlterClientQuotaOp{{Key: "producer_byte_rate", Value: v, Remove: remove}},
		}
		res, err := adm.AlterClientQuotas(ctx, []kadm.AlterClientQuotaEntry{alt})
		if err == nil {
			for _, r := range res {
				err = r.Err
			}
		}
		if err != nil {
			t.Fatalf("alter client quota: %v", err)
		}
	}
	setQuota(rate, false)

	kopts := append(defaultKgo(n.c, topic), kgo.ClientID(clientID), kgo.ProducerLinger(time.Millisecond))
	p, err := client.NewProducer(client.WithClientOptions(kopts...), client.WithMaxBufferedRecords(64))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	l := newLedger()
	produce := func(n int) time.Duration {
		start := time.Now()
		for range n {
			r, seq := l.record()
			// The ledger reads a record's sequence number from its value: the
			// padding to the record size goes in a header. Random, since quotas
			// count the bytes on the wire and franz-go compresses by default.
			pad := make([]byte, size-len(r.Value))
			rand.Read(pad)
			r.Headers = []kgo.RecordHeader{{Key: "pad", Value: pad}}
			err := p.Produce(context.Background(), r, l.promise)
			l.mu.Lock()
			if err != nil {
				l.refused[seq] = err
			} else {
				l.accepted[seq] = true
			}
			l.mu.Unlock()
			if err != nil {
				t.Fatalf("Produce under a quota: %v", err)
			}
		}
		flush(t, p)
		return time.Since(start)
	}

	const total = 1024 // 1 MiB: four seconds of the quota
	took := produce(total)
	got := float64(total*size) / took.Seconds()
	st := p.Stats()
	t.Logf("1 MiB under a %d KiB/s quota: %v (%.0f KiB/s), blocked %v", rate>>10, took.Round(time.Millisecond), got/1024, st.Blocked.Round(time.Millisecond))
	// The quota allows a burst of one window (quota.window.size.seconds=1) on top of
	// the rate: 1 MiB takes at least (1 MiB - 256 KiB) / 256 KiB/s = 3 s.
	if took < 2500*time.Millisecond {
		t.Errorf("1 MiB under a 256 KiB/s quota took %v: the quota did not slow the producer", took)
	}
	if st.Blocked <= 0 {
		t.Errorf("the producer never blocked under the quota: %+v", st)
	}

	setQuota(0, true)
	took = produce(total)
	t.Logf("1 MiB with the quota removed: %v", took.Round(time.Millisecond))
	if took > 2*time.Second {
		t.Errorf("1 MiB took %v after the quota was removed: throughput did not come back", took)
	}
	st = p.Stats()
	if st.BufferedRecords != 0 || st.Failed+st.Refused+st.Dropped+st.Canceled != 0 {
		t.Errorf("stats %+v; want nothing buffered, failed, refused, dropped or canceled", st)
	}
	l.checkLog(t, n, topic)
}
