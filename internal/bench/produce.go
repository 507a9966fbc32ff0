package bench

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/runnel-io/runnel/client"
	"github.com/runnel-io/runnel/internal/benchfmt"
	"github.com/runnel-io/runnel/internal/clitext"
	"github.com/twmb/franz-go/pkg/kgo"
)

// producer is one producer client of a bench run. It produces records whose
// values carry its id and a sequence number (check.go), carving values and
// kgo.Records out of slabs so that a record costs no allocation of its own.
type producer struct {
	prod     *client.Producer
	id       uint32
	topic    string
	size     int    // bytes per value; >= benchfmt.HeaderSize
	template []byte // size bytes of filler copied into each slab slot

	// Used by the producing goroutine only.
	recs []kgo.Record // the unused rest of the current record slab
	slab []byte       // the unused rest of the current value slab
	sent int64        // records handed to the client (seqs 0..sent-1); only grows

	hist      *benchfmt.LatencyHist    // written only by the promise (kgo runs promises serially per client)
	promiseFn func(*kgo.Record, error) // p.promise, stored once: no method value per record
	acked     *atomic.Int64            // acknowledged records of the whole run; only grows
	ownAcked  atomic.Int64             // this producer's acknowledged records; only grows
	failed    atomic.Bool              // set once a record failed
	// timeline gets each acknowledgement's time (e2e --breakdown); nil: off.
	timeline *e2eTimeline

	mu       sync.Mutex // guards firstErr
	firstErr error
}

// slabBytes is about how much value memory one slab allocation covers.
const slabBytes = 256 << 10

func newProducer(prod *client.Producer, id int, topic string, size int, acked *atomic.Int64) *producer {
	p := &producer{prod: prod, id: uint32(id), topic: topic, size: size,
		template: filler(size), hist: benchfmt.NewLatencyHist(), acked: acked}
	p.promiseFn = p.promise
	return p
}

// filler returns size random upper-case letters, as Kafka's
// producer-perf-test fills its payloads: compressible, but not trivially.
func filler(size int) []byte {
	b := make([]byte, size)
	for i := range b {
		b[i] = 'A' + byte(rand.IntN(26))
	}
	return b
}

// next returns the record with sequence number seq, stamped with the time now.
func (p *producer) next(seq uint64) *kgo.Record {
	if len(p.recs) == 0 {
		n := min(max(slabBytes/p.size, 16), 1024)
		p.recs = make([]kgo.Record, n)
		p.slab = make([]byte, n*p.size)
		for off := 0; off < len(p.slab); off += p.size {
			copy(p.slab[off:], p.template)
		}
	}
	r := &p.recs[0]
	p.recs = p.recs[1:]
	v := p.slab[:p.size:p.size]
	p.slab = p.slab[p.size:]
	now := time.Now()
	benchfmt.PutHeader(v, p.id, seq, now.UnixNano())
	r.Topic, r.Value, r.Timestamp = p.topic, v, now
	return r
}

// run produces n records (n < 0: until stop is set), then flushes the client.
func (p *producer) run(ctx context.Context, n int64, stop *atomic.Bool) error {
	for ; n < 0 || p.sent < n; p.sent++ {
		if p.failed.Load() || stop.Load() {
			break
		}
		err := p.prod.Produce(ctx, p.next(uint64(p.sent)), p.promiseFn)
		if err != nil && !errors.Is(err, client.ErrDropped) { // drops are counted (producerGroup.dropped)
			return fmt.Errorf("produce to %q: %w", p.topic, err)
		}
	}
	if err := p.prod.Flush(ctx); err != nil {
		return fmt.Errorf("produce to %q: %w", p.topic, err)
	}
	return p.err()
}

// promise records the produce latency of an acknowledged record, or the first failure.
func (p *producer) promise(r *kgo.Record, err error) {
	if err != nil {
		p.fail(clitext.RecordError(r, err))
		return
	}
	now := time.Now()
	p.hist.Record(now.Sub(r.Timestamp))
	if p.timeline != nil {
		p.timeline.acked(r, now.UnixNano())
	}
	p.ownAcked.Add(1)
	p.acked.Add(1)
}

func (p *producer) fail(err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.firstErr == nil {
		p.firstErr = err
	}
	p.failed.Store(true)
}

func (p *producer) err() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.firstErr
}

// producerGroup is the --producers clients of one run.
type producerGroup struct {
	ps    []*producer
	acked atomic.Int64 // acknowledged records over all producers; only grows
	stop  atomic.Bool  // set to end an unbounded run (e2e)
}

// newProducerGroup connects cfg.Producers clients; the caller closes the group.
func newProducerGroup(cfg *Config) (*producerGroup, error) {
	g := &producerGroup{}
	for i := range cfg.Producers {
		prod, err := cfg.connectProducer()
		if err != nil {
			g.close()
			return nil, err
		}
		g.ps = append(g.ps, newProducer(prod, i, cfg.Topic, cfg.RecordSize, &g.acked))
	}
	return g, nil
}

func (g *producerGroup) close() {
	for _, p := range g.ps {
		p.prod.Close()
	}
}

// run produces total records spread over the producers (total < 0: until g.stop is
// set) and returns the first error.
func (g *producerGroup) run(ctx context.Context, total int64) error {
	errs := make(chan error, len(g.ps))
	for i, p := range g.ps {
		n := total
		if total >= 0 {
			n = total / int64(len(g.ps))
			if int64(i) < total%int64(len(g.ps)) {
				n++
			}
		}
		go func() { errs <- p.run(ctx, n, &g.stop) }()
	}
	var first error
	for range g.ps {
		if err := <-errs; err != nil && first == nil {
			first = err
			g.stop.Store(true)
		}
	}
	return first
}

// latency merges the producers' histograms.
func (g *producerGroup) latency() *benchfmt.LatencyHist {
	h := benchfmt.NewLatencyHist()
	for _, p := range g.ps {
		h.Merge(p.hist)
	}
	return h
}

func (g *producerGroup) dropped() int64 {
	var n int64
	for _, p := range g.ps {
		n += p.prod.Stats().Dropped
	}
	return n
}

// counts returns, per producer, the records acknowledged and the records sent.
func (g *producerGroup) counts() (acked, sent []int64) {
	for _, p := range g.ps {
		acked = append(acked, p.ownAcked.Load())
		sent = append(sent, p.sent)
	}
	return acked, sent
}

// Produce produces cfg.Records records as fast as the producers' options allow,
// then prints the report: throughput and produce latency. A record not acknowledged
// is an error (unless cfg.NoAcks).
func Produce(ctx context.Context, cfg Config) error {
	return cfg.withGCFloor(func() error { return produce(ctx, &cfg) })
}

func produce(ctx context.Context, cfg *Config) error {
	g, err := newProducerGroup(cfg)
	if err != nil {
		return err
	}
	defer g.close()
	var took time.Duration
	stages, err := cfg.Breakdown.around(ctx, func() error {
		prog := startProgress(cfg.Log, "produce", progressCounter{"acked", &g.acked})
		defer prog.stop()
		start := time.Now()
		wctx, stopWatch := watchStall(ctx, cfg.Timeout, progressCount{"acknowledged", &g.acked})
		err := stallCause(wctx, g.run(wctx, cfg.Records))
		stopWatch()
		took = time.Since(start)
		return err
	})
	if err != nil {
		return err
	}
	rep := &benchfmt.Report{Mode: "produce", Topic: cfg.Topic, Partitions: cfg.Partitions, Producers: cfg.Producers,
		RecordSize: cfg.RecordSize, Dropped: g.dropped(), Produce: g.latency().Summary(), Breakdown: stages}
	acked := g.acked.Load()
	rep.SetRate(acked, acked*int64(cfg.RecordSize), took)
	if !cfg.NoAcks && acked+rep.Dropped < cfg.Records {
		return fmt.Errorf("%w: only %d of %s acknowledged", ErrLostRecords, acked, clitext.Plural(cfg.Records, "record", "records"))
	}
	return rep.Write(cfg.Out, cfg.JSON)
}
