package client

import (
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// OnFull is what a Producer does with a record while its buffer (WithMaxBufferedRecords,
// WithMaxBufferedBytes) is full.
type OnFull uint8

const (
	// Block waits for room, for the enqueue timeout (default: for ever), then fails
	// the record with ErrBufferFull.
	Block OnFull = iota
	// Drop waits the enqueue timeout (default: not at all), then drops the record:
	// Produce returns ErrDropped, Stats counts it and the WithOnDrop callback sees it.
	Drop
	// Error waits the enqueue timeout (default: not at all), then fails the record
	// with ErrBufferFull.
	Error
)

// ParseOnFull reads "block", "drop" or "error".
func ParseOnFull(s string) (OnFull, error) {
	switch s {
	case "block":
		return Block, nil
	case "drop":
		return Drop, nil
	case "error":
		return Error, nil
	}
	return 0, fmt.Errorf("bad OnFull %q: want block, drop or error", s)
}

func (o OnFull) String() string {
	switch o {
	case Block:
		return "block"
	case Drop:
		return "drop"
	case Error:
		return "error"
	}
	return fmt.Sprintf("OnFull(%d)", uint8(o))
}

// DefaultMaxBufferedRecords is the Producer's buffer bound in records unless
// WithMaxBufferedRecords sets another (kgo's own default).
const DefaultMaxBufferedRecords = 10000

// Option configures a Producer (NewProducer) or a Consumer (NewConsumer). Options that
// apply to only one of them say so; giving one to the other is an error.
type Option struct {
	name     string
	producer func(*producerConfig)
	consumer func(*consumerConfig)
}

func producerOption(name string, fn func(*producerConfig)) Option {
	return Option{name: name, producer: fn}
}

// WithSeedBrokers gives the addresses (HOST:PORT) of brokers to bootstrap from. The
// default is kgo's: localhost:9092. Producer and Consumer.
func WithSeedBrokers(addrs ...string) Option {
	return WithClientOptions(kgo.SeedBrokers(addrs...))
}

// WithClientOptions passes options to the underlying kgo.Client (acks, linger, TLS,
// SASL, client id...), in order, after the package's own. A Producer's buffer bound
// is its own: kgo.MaxBufferedRecords and kgo.MaxBufferedBytes given here are
// overridden. The default is none. Producer and Consumer.
func WithClientOptions(opts ...kgo.Opt) Option {
	return Option{name: "WithClientOptions",
		producer: func(c *producerConfig) { c.kgoOpts = append(c.kgoOpts, opts...) },
		consumer: func(c *consumerConfig) { c.kgoOpts = append(c.kgoOpts, opts...) },
	}
}

// WithMaxBufferedRecords bounds the records buffered in the Producer: produced and not
// yet acknowledged or failed. The default is DefaultMaxBufferedRecords (10,000). n
// must be at least 1. Producer only.
func WithMaxBufferedRecords(n int) Option {
	return producerOption("WithMaxBufferedRecords", func(c *producerConfig) { c.maxRecords = int64(n) })
}

// WithMaxBufferedBytes bounds the bytes (keys, values and headers) buffered in the
// Producer. The default is 0: no bound in bytes. A record larger than the bound is
// failed with ErrRecordTooLarge. Producer only.
func WithMaxBufferedBytes(n int64) Option {
	return producerOption("WithMaxBufferedBytes", func(c *producerConfig) { c.maxBytes = n })
}

// WithOnFull chooses what Produce does while the buffer is full. The default is Block.
// Producer only.
func WithOnFull(o OnFull) Option {
	return producerOption("WithOnFull", func(c *producerConfig) { c.onFull = o })
}

// WithEnqueueTimeout is how long Produce waits for buffer room before the OnFull
// policy fails or drops the record. A negative value waits for ever, 0 not at all.
// The default is -1 (for ever) under Block and 0 under Drop and Error. Producer only.
func WithEnqueueTimeout(d time.Duration) Option {
	return producerOption("WithEnqueueTimeout", func(c *producerConfig) { c.enqueueTimeout, c.timeoutSet = d, true })
}

// WithRate limits Produce to perSecond records per second, before the buffer: a
// record over the rate waits for its turn (it is delayed, never dropped), in bursts
// of at most perSecond/100 (at least 1). The default is 0: no limit. Producer only.
func WithRate(perSecond float64) Option {
	return producerOption("WithRate", func(c *producerConfig) { c.recordRate = perSecond })
}

// WithByteRate limits Produce to perSecond bytes (keys, values and headers) per
// second, as WithRate does records. The default is 0: no limit. Producer only.
func WithByteRate(perSecond float64) Option {
	return producerOption("WithByteRate", func(c *producerConfig) { c.byteRate = perSecond })
}

// WithOnDrop calls fn with every record dropped under Drop, on the goroutine that
// called Produce, before Produce returns ErrDropped. fn must not block. The default is
// none (drops are still counted in Stats and returned by Produce). Producer only.
func WithOnDrop(fn func(*kgo.Record)) Option {
	return producerOption("WithOnDrop", func(c *producerConfig) { c.onDrop = fn })
}
