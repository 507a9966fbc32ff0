package main

import (
	"context"

	"fmt"
	"math/rand/v2"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/runnel-io/runnel/internal/benchfmt"
)

// publisher publishes bench messages asynchronously and records, in the ack handler
// (one goroutine), the time from publish to acknowledgement.
type publisher struct {
	c        *config
	js       jetstream.JetStream
	nc       *nats.Conn
	template []byte
	stall    jetstream.PublishOpt  // waits out a full window of unacknowledged publishes
	hist     *benchfmt.LatencyHist // written by the ack handler only
	acked    atomic.Int64          // only grows
	sent     int64                 // used by the publishing goroutine only
	mu       sync.Mutex            // guards firstErr
	firstErr error
}

func newPublisher(c *config) (*publisher, error) {
	nc, err := nats.Connect(c.url)
	if err != nil {
		return nil, err
	}
	p := &publisher{c: c, nc: nc, hist: benchfmt.NewLatencyHist(), template: make([]byte, c.size),
		stall: jetstream.WithStallWait(c.timeout)}
	for i := range p.template {
		p.template[i] = 'A' + byte(rand.IntN(26))
	}
	p.js, err = jetstream.New(nc, jetstream.WithPublishAsyncMaxPending(c.maxPending),
		jetstream.WithPublishAsyncAckHandler(p.onAck), jetstream.WithPublishAsyncErrHandler(p.onErr))
	if err != nil {
		nc.Close()
		return nil, err
	}
	return p, nil
}

func (p *publisher) onAck(_ jetstream.JetStream, m *nats.Msg, _ *jetstream.PubAck) {
	if _, _, ts, ok := benchfmt.ParseHeader(m.Data); ok {
		p.hist.Record(time.Duration(time.Now().UnixNano() - ts))
	}
	p.acked.Add(1)
}

func (p *publisher) onErr(_ jetstream.JetStream, _ *nats.Msg, err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.firstErr == nil {
		p.firstErr = err
	}
}

func (p *publisher) err() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.firstErr
}

// ensureStream creates the stream (file storage) unless it exists.
func ensureStream(ctx context.Context, js jetstream.JetStream, c *config) error {
	_, err := js.CreateOrUpdateStream(ctx, jetstream.StreamConfig{Name: c.stream, Subjects: []string{c.stream},
		Storage: jetstream.FileStorage, Replicas: c.replicas})
	return err
}

// publish sends n messages (n < 0: until stop), paced to rate when rate > 0, then
// waits for every acknowledgement.
func (p *publisher) publish(n int64, rate float64, stop *atomic.Bool) error {
	start := time.Now()
	for ; (n < 0 || p.sent < n) && !stop.Load() && p.err() == nil; p.sent++ {
		if rate > 0 {
			if ahead := time.Duration(float64(p.sent)/rate*1e9) - time.Since(start); ahead > time.Millisecond {
				time.Sleep(ahead)
			}
		}
		v := make([]byte, p.c.size) // the client keeps the message until it is acknowledged
		copy(v, p.template)
		benchfmt.PutHeader(v, 0, uint64(p.sent), time.Now().UnixNano())
		if _, err := p.js.PublishAsync(p.c.stream, v, p.stall); err != nil {
			return fmt.Errorf("publish: %w", err)
		}
	}
	select {
	case <-p.js.PublishAsyncComplete():
	case <-time.After(p.c.timeout):
		return fmt.Errorf("publish: %d of %d not acknowledged after %v", p.sent-p.acked.Load(), p.sent, p.c.timeout)
	}
	if err := p.err(); err != nil {
		return fmt.Errorf("publish: %w", err)
	}
	return nil
}

func produce(c *config) (*benchfmt.Report, error) {
	p, err := newPublisher(c)
	if err != nil {
		return nil, err
	}
	defer p.nc.Close()
	if err := ensureStream(context.Background(), p.js, c); err != nil {
		return nil, err
	}
	stopProgress := progress("produce", &p.acked)
	start := time.Now()
	err = p.publish(c.records, 0, new(atomic.Bool))
	took := time.Since(start)
	stopProgress()
	if err != nil {
		return nil, err
	}
	rep := &benchfmt.Report{Mode: "produce", Topic: c.stream, Partitions: 1, Producers: 1, RecordSize: c.size, Produce: p.hist.Summary()}
	rep.SetRate(p.acked.Load(), p.acked.Load()*int64(c.size), took)
	return rep, nil
}

// receiver counts and checks the messages an ordered consumer delivers.
type receiver struct {
	seqs     seqSet                // used by the consume callback only
	hist     *benchfmt.LatencyHist // nil unless e2e
	received atomic.Int64          // only grows
	bytes    atomic.Int64
}

func (r *receiver) handle(m jetstream.Msg) {
	data := m.Data()
	r.seqs.add(data)
	if _, _, ts, ok := benchfmt.ParseHeader(data); ok && r.hist != nil {
		r.hist.Record(time.Duration(time.Now().UnixNano() - ts))
	}
	r.bytes.Add(int64(len(data)))
	r.received.Add(1)
}

// startReceiver starts an ordered consumer of the stream from policy.
func startReceiver(ctx context.Context, js jetstream.JetStream, c *config, policy jetstream.DeliverPolicy, r *receiver) (jetstream.ConsumeContext, error) {
	cons, err := js.OrderedConsumer(ctx, c.stream, jetstream.OrderedConsumerConfig{DeliverPolicy: policy})
	if err != nil {
		return nil, err
	}
	return cons.Consume(r.handle, jetstream.PullMaxMessages(10000))
}

// waitFor waits until r received want messages, failing after c.timeout without one.
func (r *receiver) waitFor(want int64, timeout time.Duration) error {
	last, lastAt := int64(-1), time.Now()
	for {
		n := r.received.Load()
		if n >= want {
			return nil
		}
		if n != last {
			last, lastAt = n, time.Now()
		} else if time.Since(lastAt) > timeout {
			return fmt.Errorf("records lost: consumer stalled at %d of %d for %v", n, want, timeout)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

func consume(c *config) (*benchfmt.Report, error) {
	nc, err := nats.Connect(c.url)
	if err != nil {
		return nil, err
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		return nil, err
	}
	ctx := context.Background()
	s, err := js.Stream(ctx, c.stream)
	if err != nil {
		return nil, fmt.Errorf("stream %q: %w", c.stream, err)
	}
	want := c.records
	if info, err := s.Info(ctx); err == nil && want == 0 {
		want = int64(info.State.Msgs)
	}
	r := &receiver{}
	stopProgress := progress("consume", &r.received)
	start := time.Now()
	cc, err := startReceiver(ctx, js, c, jetstream.DeliverAllPolicy, r)
	if err != nil {
		stopProgress()
		return nil, err
	}
	err = r.waitFor(want, c.timeout)
	took := time.Since(start)
	cc.Stop()
	stopProgress()
	if err == nil {
		err = r.seqs.check(want)
	}
	if err != nil {
		return nil, err
	}
	_ = js.DeleteStream(ctx, c.stream) // keep the servers' disks small across runs
	rep := &benchfmt.Report{Mode: "consume", Topic: c.stream, Partitions: 1, Duplicates: r.seqs.duplicates}
	rep.SetRate(r.received.Load(), r.bytes.Load(), took)
	return rep, nil
}

func e2e(c *config) (*benchfmt.Report, error) {
	p, err := newPublisher(c)
	if err != nil {
		return nil, err
	}
	defer p.nc.Close()
	ctx := context.Background()
	if err := ensureStream(ctx, p.js, c); err != nil {
		return nil, err
	}
	r := &receiver{hist: benchfmt.NewLatencyHist()}
	cc, err := startReceiver(ctx, p.js, c, jetstream.DeliverNewPolicy, r)
	if err != nil {
		return nil, err
	}
	defer cc.Stop()
	stop := new(atomic.Bool)
	timer := time.AfterFunc(c.duration, func() { stop.Store(true) })
	defer timer.Stop()
	stopProgress := progress("e2e", &p.acked, &r.received)
	start := time.Now()
	err = p.publish(-1, c.rate, stop)
	took := time.Since(start)
	if err == nil {
		err = r.waitFor(p.acked.Load(), c.timeout)
	}
	stopProgress()
	if err == nil {
		err = r.seqs.check(p.acked.Load())
	}
	if err != nil {
		return nil, err
	}
	_ = p.js.DeleteStream(ctx, c.stream)
	rep := &benchfmt.Report{Mode: "e2e", Topic: c.stream, Partitions: 1, Producers: 1, RecordSize: c.size,
		Consumed: r.received.Load(), Duplicates: r.seqs.duplicates, Produce: p.hist.Summary(), EndToEnd: r.hist.Summary()}
	rep.SetRate(p.acked.Load(), p.acked.Load()*int64(c.size), took)
	return rep, nil
}

// progress prints the counters every second on stderr until the returned function
// is called.
func progress(mode string, counters ...*atomic.Int64) (stop func()) {
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(time.Second)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				fmt.Fprintf(os.Stderr, "natsbench %s:", mode)
				for _, c := range counters {
					fmt.Fprintf(os.Stderr, " %d", c.Load())
				}
				fmt.Fprintln(os.Stderr)
			}
		}
	}()
	return func() { close(done); wg.Wait() }
}
