package client

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

var (
	// ErrBufferFull is returned by Produce when the buffer had no room for the record
	// in time: at once under Error, after the enqueue timeout under Block (or under
	// Error with a timeout). The record was not buffered.
	ErrBufferFull = errors.New("producer buffer full")
	// ErrDropped is returned by Produce under Drop when the record was dropped for
	// lack of buffer room. It is counted in Stats().Dropped.
	ErrDropped = errors.New("record dropped: producer buffer full")
	// ErrRecordTooLarge is returned by Produce for a record larger than
	// WithMaxBufferedBytes, which could never be buffered.
	ErrRecordTooLarge = errors.New("record larger than the producer buffer")
	// ErrClosed is returned by Produce once Close was called.
	ErrClosed = errors.New("producer closed")
)

// producerConfig is what the Options of NewProducer set.
type producerConfig struct {
	kgoOpts              []kgo.Opt
	maxRecords           int64
	maxBytes             int64 // 0: no bound
	onFull               OnFull
	enqueueTimeout       time.Duration // < 0 for ever, 0 not at all
	timeoutSet           bool          // enqueueTimeout was given; else it follows onFull
	recordRate, byteRate float64       // 0: no limit
	onDrop               func(*kgo.Record)
}

func (c *producerConfig) validate() error {
	switch {
	case c.maxRecords < 1:
		return fmt.Errorf("client: WithMaxBufferedRecords(%d): want at least 1", c.maxRecords)
	case c.maxBytes < 0:
		return fmt.Errorf("client: WithMaxBufferedBytes(%d): want 0 (no bound) or more", c.maxBytes)
	case c.onFull > Error:
		return fmt.Errorf("client: WithOnFull(%v): want Block, Drop or Error", c.onFull)
	case c.recordRate < 0 || c.byteRate < 0:
		return fmt.Errorf("client: a negative rate: want 0 (no limit) or more")
	}
	return nil
}

// Producer produces records through a kgo.Client under a bounded buffer and an
// OnFull policy. Its methods are safe for concurrent use.
type Producer struct {
	cl          *kgo.Client    // immutable
	cfg         producerConfig // immutable
	recordLimit *tokenBucket   // nil: no WithRate
	byteLimit   *tokenBucket   // nil: no WithByteRate

	mu      sync.Mutex    // guards records, bytes, room and closed
	records int64         // buffered: admitted and not yet promised; <= cfg.maxRecords
	bytes   int64         // their keys, values and headers; <= cfg.maxBytes when bounded
	room    chan struct{} // closed (and replaced) whenever room is freed or Close runs
	closed  bool

	// Counters for Stats; each only grows.
	enqueued, delivered, failed, refused, dropped, canceled atomic.Int64
	blocked, rateWait                                       atomic.Int64 // nanoseconds
}

// NewProducer builds a Producer and its kgo.Client. See the Options for the defaults:
// a buffer of 10,000 records, Block for ever, no rate limit.
func NewProducer(opts ...Option) (*Producer, error) {
	cfg := producerConfig{maxRecords: DefaultMaxBufferedRecords, onFull: Block}
	for _, o := range opts {
		if o.producer == nil {
			return nil, fmt.Errorf("client: %s applies to a Consumer, not a Producer", o.name)
		}
		o.producer(&cfg)
	}
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	if !cfg.timeoutSet {
		cfg.enqueueTimeout = 0
		if cfg.onFull == Block {
			cfg.enqueueTimeout = -1
		}
	}
	// The bound is enforced here, before kgo sees a record. kgo calls a promise before
	// it releases the record's room, so it may hold one record more than this
	// producer counts: its own bound is set one above, so that it never blocks.
	kopts := append(cfg.kgoOpts[:len(cfg.kgoOpts):len(cfg.kgoOpts)],
		kgo.MaxBufferedRecords(int(cfg.maxRecords)+1), kgo.MaxBufferedBytes(0))
	cl, err := kgo.NewClient(kopts...)
	if err != nil {
		return nil, fmt.Errorf("client: %w", err)
	}
	p := &Producer{cl: cl, cfg: cfg, room: make(chan struct{})}
	if cfg.recordRate > 0 {
		p.recordLimit = newTokenBucket(cfg.recordRate)
	}
	if cfg.byteRate > 0 {
		p.byteLimit = newTokenBucket(cfg.byteRate)
	}
	return p, nil
}

// Client is the underlying kgo.Client, for metadata and admin requests (kadm). Records
// produced on it directly bypass the buffer bound and the policy.
func (p *Producer) Client() *kgo.Client { return p.cl }

// Produce waits for the rate limits, then buffers r under the OnFull policy. If it
// returns nil, r is buffered and promise (if not nil) is called once when r is
// acknowledged or fails, as kgo calls promises: serially, on kgo's goroutine. If it
// returns an error, r was not buffered and promise is never called: ErrBufferFull,
// ErrDropped (under Drop), ErrRecordTooLarge, ErrClosed, or ctx's error. ctx bounds
// the wait and, as in kgo.Client.Produce, becomes r.Context when that is nil: a
// buffered record whose context ends is failed.
func (p *Producer) Produce(ctx context.Context, r *kgo.Record, promise func(*kgo.Record, error)) error {
	size := recordSize(r)
	if p.cfg.maxBytes > 0 && size > p.cfg.maxBytes {
		p.failed.Add(1)
		return fmt.Errorf("%w: %d bytes, the buffer holds %d", ErrRecordTooLarge, size, p.cfg.maxBytes)
	}
	if err := p.waitRate(ctx, size); err != nil {
		p.canceled.Add(1)
		return err
	}
	if err := p.admit(ctx, size); err != nil {
		return p.notAdmitted(r, err)
	}
	p.enqueued.Add(1)
	p.cl.Produce(ctx, r, func(r *kgo.Record, err error) {
		p.release(size)
		if err != nil {
			p.failed.Add(1)
		} else {
			p.delivered.Add(1)
		}
		if promise != nil {
			promise(r, err)
		}
	})
	return nil
}

// recordSize is what a record takes of the buffer, as kgo counts it.
func recordSize(r *kgo.Record) int64 {
	n := len(r.Key) + len(r.Value)
	for _, h := range r.Headers {
		n += len(h.Key) + len(h.Value)
	}
	return int64(n)
}

func (p *Producer) waitRate(ctx context.Context, size int64) error {
	for _, b := range []struct {
		limit *tokenBucket
		n     float64
	}{{p.recordLimit, 1}, {p.byteLimit, float64(size)}} {
		if b.limit == nil {
			continue
		}
		slept, err := b.limit.wait(ctx, b.n)
		p.rateWait.Add(int64(slept))
		if err != nil {
			return err
		}
	}
	return nil
}

// errNoRoom is admit's answer when the enqueue timeout passed without room.
var errNoRoom = errors.New("no room")

// admit takes room for a record of size bytes, waiting up to the enqueue timeout.
func (p *Producer) admit(ctx context.Context, size int64) error {
	var timeout <-chan time.Time
	var start time.Time
	for {
		p.mu.Lock()
		switch {
		case p.closed:
			p.mu.Unlock()
			return ErrClosed
		case p.fits(size):
			p.records++
			p.bytes += size
			p.mu.Unlock()
			return nil
		}
		room := p.room
		p.mu.Unlock()
		if p.cfg.enqueueTimeout == 0 {
			return errNoRoom
		}
		if start.IsZero() {
			start = time.Now()
			defer func() { p.blocked.Add(int64(time.Since(start))) }()
			if p.cfg.enqueueTimeout > 0 {
				t := time.NewTimer(p.cfg.enqueueTimeout)
				defer t.Stop()
				timeout = t.C
			}
		}
		select {
		case <-room:
		case <-timeout:
			return errNoRoom
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// fits reports whether a record of size bytes fits now; p.mu is held.
func (p *Producer) fits(size int64) bool {
	if p.records >= p.cfg.maxRecords {
		return false
	}
	return p.cfg.maxBytes == 0 || p.bytes+size <= p.cfg.maxBytes
}

// release gives back a promised record's room and wakes the waiters.
func (p *Producer) release(size int64) {
	p.mu.Lock()
	p.records--
	p.bytes -= size
	close(p.room)
	p.room = make(chan struct{})
	p.mu.Unlock()
}

// notAdmitted applies the policy to a record admit refused with err.
func (p *Producer) notAdmitted(r *kgo.Record, err error) error {
	switch {
	case err != errNoRoom:
		p.canceled.Add(1)
		return err
	case p.cfg.onFull == Drop:
		p.dropped.Add(1)
		if p.cfg.onDrop != nil {
			p.cfg.onDrop(r)
		}
		return ErrDropped
	}
	p.refused.Add(1)
	if p.cfg.enqueueTimeout > 0 {
		return fmt.Errorf("%w: no room after waiting %v", ErrBufferFull, p.cfg.enqueueTimeout)
	}
	return ErrBufferFull
}

// Flush waits until every buffered record is acknowledged or failed, or ctx is done.
func (p *Producer) Flush(ctx context.Context) error { return p.cl.Flush(ctx) }

// Close stops the producer: a Produce waiting for room returns ErrClosed, and kgo
// fails the records still buffered (their promises see kgo.ErrClientClosed). Flush
// first to deliver them.
func (p *Producer) Close() {
	p.mu.Lock()
	if !p.closed {
		p.closed = true
		close(p.room)
		p.room = make(chan struct{})
	}
	p.mu.Unlock()
	p.cl.Close()
}

// ProducerStats are a Producer's counters. Every Produce call ends as exactly one of
// Enqueued (then, in time, Delivered or Failed), Refused, Dropped, Canceled, or a
// too-large record counted in Failed.
type ProducerStats struct {
	BufferedRecords int64 // records buffered now: enqueued, not yet delivered or failed
	BufferedBytes   int64 // their keys, values and headers
	// Blocked is the time Produce calls spent waiting for buffer room, summed over
	// concurrent calls; RateWait the time they spent waiting for WithRate and
	// WithByteRate.
	Blocked, RateWait time.Duration
	Enqueued          int64 // records buffered
	Delivered         int64 // records acknowledged
	Failed            int64 // records whose promise saw an error, or too large to buffer
	Refused           int64 // records failed with ErrBufferFull
	Dropped           int64 // records dropped with ErrDropped
	Canceled          int64 // Produce calls ended by their context (or Close) while waiting
}

// Stats returns the counters now.
func (p *Producer) Stats() ProducerStats {
	p.mu.Lock()
	s := ProducerStats{BufferedRecords: p.records, BufferedBytes: p.bytes}
	p.mu.Unlock()
	s.Blocked, s.RateWait = time.Duration(p.blocked.Load()), time.Duration(p.rateWait.Load())
	s.Enqueued, s.Delivered, s.Failed = p.enqueued.Load(), p.delivered.Load(), p.failed.Load()
	s.Refused, s.Dropped, s.Canceled = p.refused.Load(), p.dropped.Load(), p.canceled.Load()
	return s
}
