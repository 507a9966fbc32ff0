package bench

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/runnel-io/runnel/internal/benchfmt"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// consumer reads a bench topic from given offsets, checking each record's
// header and, in e2e runs, measuring the time from produce to consume.
type consumer struct {
	cl      *kgo.Client
	topic   string
	timeout time.Duration // ErrStalled after this long without a record

	// target receives where to stop once it is known: at the start for bench
	// consume, after the producers finish for e2e.
	target chan consumeTarget

	received atomic.Int64 // records received; only grows
	bytes    atomic.Int64 // value bytes received; only grows

	// Used by the consuming goroutine only (read by others after run returns).
	parts map[int32]*partitionCount
	seqs  seqTracker
	e2e   *benchfmt.LatencyHist // nil unless end-to-end latency is measured
	// timeline follows each record through the clients (e2e --breakdown); nil: off.
	timeline *e2eTimeline
}

// newConsumer starts consuming cfg.Topic from starts (partition → offset).
func newConsumer(cfg *Config, starts map[int32]int64, extra ...kgo.Opt) (*consumer, error) {
	offsets := make(map[int32]kgo.Offset, len(starts))
	parts := make(map[int32]*partitionCount, len(starts))
	for p, o := range starts {
		offsets[p] = kgo.NewOffset().At(o)
		parts[p] = &partitionCount{start: o, end: -1, next: o}
	}
	opts := append(append(consumerOpts(), extra...), kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{cfg.Topic: offsets}))
	cl, err := cfg.newClient(opts...)
	if err != nil {
		return nil, err
	}
	return &consumer{cl: cl, topic: cfg.Topic, timeout: cfg.Timeout, target: make(chan consumeTarget, 1), parts: parts}, nil
}

// consumeTarget is where a bench consumer stops: once every partition reached its
// end offset and at least want distinct records arrived.
type consumeTarget struct {
	ends map[int32]int64
	want int64
}

// run consumes until it reached the target sent on c.target, or fails when nothing
// arrives for c.timeout.
func (c *consumer) run(ctx context.Context) error {
	lastProgress := time.Now()
	var target *consumeTarget
	for target == nil || !c.reached(target) {
		if target == nil {
			select {
			case t := <-c.target:
				target = &t
				c.setEnds(t.ends)
				continue
			default:
			}
		}
		n, err := c.poll(ctx)
		if err != nil {
			return err
		}
		switch {
		case n > 0:
			lastProgress = time.Now()
		case time.Since(lastProgress) > c.timeout:
			return fmt.Errorf("%w: no record for %v with %d consumed", ErrStalled, c.timeout, c.received.Load())
		}
	}
	return nil
}

// reached reports whether the consumer got to t.
func (c *consumer) reached(t *consumeTarget) bool {
	if c.seqs.total() < t.want {
		return false
	}
	for _, pc := range c.parts {
		if pc.next < pc.end {
			return false
		}
	}
	return true
}

func (c *consumer) setEnds(ends map[int32]int64) {
	for p, pc := range c.parts {
		pc.end = ends[p]
	}
}

// poll handles one fetch, waiting at most a second so run can check for a stall.
func (c *consumer) poll(ctx context.Context) (int, error) {
	pctx, cancel := context.WithTimeout(ctx, time.Second)
	fs := c.cl.PollFetches(pctx)
	cancel()
	if err := ctx.Err(); err != nil {
		return 0, fmt.Errorf("consume %q: %w", c.topic, err)
	}
	var ferr error
	fs.EachError(func(t string, p int32, err error) {
		if !errors.Is(err, context.DeadlineExceeded) && ferr == nil {
			ferr = fmt.Errorf("consume %q partition %d: %w", t, p, err)
		}
	})
	if ferr != nil {
		return 0, ferr
	}
	now := time.Now().UnixNano()
	n := 0
	fs.EachRecord(func(r *kgo.Record) {
		n++
		c.record(r, now)
	})
	c.received.Add(int64(n))
	return n, nil
}

func (c *consumer) record(r *kgo.Record, now int64) {
	pc := c.parts[r.Partition]
	if pc == nil {
		return
	}
	pc.next = max(pc.next, r.Offset+1)
	if pc.end >= 0 && r.Offset >= pc.end {
		return // past the offsets this run checks
	}
	pc.count++
	c.bytes.Add(int64(len(r.Value)))
	c.seqs.add(r.Value)
	if c.e2e != nil {
		if _, _, sent, ok := benchfmt.ParseHeader(r.Value); ok {
			c.e2e.Record(time.Duration(now - sent))
		}
		if c.timeline != nil {
			c.timeline.polled(r, now)
		}
	}
}

// counted is the number of records received within the target offsets; call it once
// run returned.
func (c *consumer) counted() int64 {
	var n int64
	for _, pc := range c.parts {
		n += pc.count
	}
	return n
}

// listOffsetsRetry is how long listOffsets retries retriable errors: a topic just
// created may not be known yet to every leader (metadata reaches brokers
// asynchronously).
const listOffsetsRetry = 15 * time.Second

// listOffsets returns each partition's start and end offset.
func listOffsets(ctx context.Context, cfg *Config) (starts, ends map[int32]int64, err error) {
	topic := cfg.Topic
	adm, err := cfg.newAdmin()
	if err != nil {
		return nil, nil, err
	}
	defer adm.Close()
	deadline := time.Now().Add(listOffsetsRetry)
	for {
		starts, ends, err = listOffsetsOnce(ctx, adm, topic)
		if err == nil || !kerr.IsRetriable(err) || time.Now().After(deadline) {
			break
		}
		select {
		case <-ctx.Done():
			return nil, nil, ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
	if err != nil {
		return nil, nil, fmt.Errorf("list offsets of %q: %w", topic, err)
	}
	return starts, ends, nil
}

func listOffsetsOnce(ctx context.Context, adm *kadm.Client, topic string) (starts, ends map[int32]int64, err error) {
	s, err := adm.ListStartOffsets(ctx, topic)
	if err == nil {
		err = s.Error()
	}
	if err != nil {
		return nil, nil, err
	}
	e, err := adm.ListEndOffsets(ctx, topic)
	if err == nil {
		err = e.Error()
	}
	if err != nil {
		return nil, nil, err
	}
	return offsetMap(s, topic), offsetMap(e, topic), nil
}

func offsetMap(l kadm.ListedOffsets, topic string) map[int32]int64 {
	m := make(map[int32]int64)
	for p, o := range l[topic] {
		m[p] = o.Offset
	}
	return m
}

// Consume reads cfg.Topic from its start to its end offsets as of now, checks that
// every record bench produce wrote is there (ErrLostRecords otherwise), and prints
// the report: throughput.
func Consume(ctx context.Context, cfg Config) error {
	return cfg.withGCFloor(func() error { return consume(ctx, &cfg) })
}

func consume(ctx context.Context, cfg *Config) error {
	starts, ends, err := listOffsets(ctx, cfg)
	if err != nil {
		return err
	}
	c, err := newConsumer(cfg, starts)
	if err != nil {
		return err
	}
	defer c.cl.Close()
	c.target <- consumeTarget{ends: ends}
	prog := startProgress(cfg.Log, "consume", progressCounter{"consumed", &c.received})
	start := time.Now()
	err = c.run(ctx)
	took := time.Since(start)
	prog.stop()
	if err != nil {
		return err
	}
	return reportConsume(cfg, c, took)
}

// reportConsume checks the delivery and prints the report; a loss is an error.
func reportConsume(cfg *Config, c *consumer, took time.Duration) error {
	if err := checkPartitions(c.parts); err != nil {
		return err
	}
	if err := c.seqs.checkTotal(cfg.Records); err != nil {
		return err
	}
	rep := &benchfmt.Report{Mode: "consume", Topic: cfg.Topic, Partitions: cfg.Partitions, Duplicates: c.seqs.duplicates}
	rep.SetRate(c.counted(), c.bytes.Load(), took)
	return rep.Write(cfg.Out, cfg.JSON)
}
