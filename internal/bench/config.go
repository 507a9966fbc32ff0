package bench

import (
	"fmt"
	"io"
	"time"

	"github.com/runnel-io/runnel/client"
	"github.com/runnel-io/runnel/internal/gcfloor"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// Config is one run of the generator, as the command checked it.
type Config struct {
	// Client are the options every client of the run starts from: seed brokers,
	// client id, security.
	Client []kgo.Opt
	// Topic exists, with Partitions partitions.
	Topic      string
	Partitions int
	// Records is, for Produce, how many to produce; for Consume, how many must be
	// there (0: whatever the topic holds, checked for holes only).
	Records    int64
	RecordSize int // bytes in each value; >= benchfmt.HeaderSize
	Producers  int // >= 1 and <= benchfmt.MaxProducers when producing
	// Producer are each producer's kgo options (acks, linger, batching, compression).
	Producer []kgo.Opt
	// Overload are each producer's client.Producer options: its buffer, --on-full and
	// its share of Rate.
	Overload []client.Option
	// BufferRecords and BufferBytes are the buffer Overload sets (BufferBytes 0: no
	// limit), for the GC floor's prefault.
	BufferRecords, BufferBytes int
	// NoAcks is acks=0: the producers learn of no loss, so none is reported.
	NoAcks bool
	// Rate is records per second over all producers (0: no limit).
	Rate     float64
	Duration time.Duration // E2E: how long to produce
	// Timeout fails the run when no record is acknowledged or consumed for this long.
	Timeout   time.Duration
	Breakdown Breakdown
	JSON      bool      // the report as one JSON object
	Out       io.Writer // the report
	// Log gets the progress line every second and, for E2E with a breakdown, the
	// tail's records and the bench process's scheduling.
	Log io.Writer
}

// ProducerRate is one producer's share of Rate.
func (c *Config) ProducerRate() float64 {
	return c.Rate / float64(max(c.Producers, 1))
}

// newClient builds a kgo client of the run; the caller closes it.
func (c *Config) newClient(opts ...kgo.Opt) (*kgo.Client, error) {
	cl, err := kgo.NewClient(append(append([]kgo.Opt{}, c.Client...), opts...)...)
	if err != nil {
		return nil, fmt.Errorf("client: %w", err)
	}
	return cl, nil
}

// newAdmin builds a kadm client of the run; the caller closes it.
func (c *Config) newAdmin() (*kadm.Client, error) {
	cl, err := c.newClient()
	if err != nil {
		return nil, err
	}
	return kadm.NewClient(cl), nil
}

// connectProducer connects one producer with the Producer and Overload options.
func (c *Config) connectProducer() (*client.Producer, error) {
	kopts := append(append([]kgo.Opt{}, c.Client...), c.Producer...)
	p, err := client.NewProducer(append([]client.Option{client.WithClientOptions(kopts...)}, c.Overload...)...)
	if err != nil {
		return nil, fmt.Errorf("client: %w", err)
	}
	return p, nil
}

// consumerOpts are the kgo options of the bench consumer: large fetches.
func consumerOpts() []kgo.Opt {
	return []kgo.Opt{kgo.FetchMaxBytes(64 << 20),
		kgo.FetchMaxPartitionBytes(16 << 20), kgo.BrokerMaxReadBytes(128 << 20),
		kgo.FetchMaxWait(500 * time.Millisecond)}
}

// gcFloor is the load generator's GC ballast (see package gcfloor): franz-go
// allocates per record (records fetched, promises), and with a small live heap the
// generator's own collections would be part of the e2e tail it reports.
// bench/natsbench keeps the same one, so the comparison stays fair. It is prefaulted
// (gcfloor.Prefault) so that the first touch of the garbage filling the floor does
// not slow the run's first second. Measurements: docs/benchmarks.md.
const gcFloor = 256 << 20

func (c *Config) withGCFloor(fn func() error) error {
	return gcfloor.RunPrefaulted(gcFloor, c.prefaultBytes(), fn)
}

// prefaultBytes is how much heap the generator is expected to touch: the floor, and
// twice what its producers may buffer (live records, then as much garbage again
// before a collection; see gcfloor.RunPrefaulted), at most maxPrefault, so that a
// run's resident set does not grow a page fault at a time while it measures.
func (c *Config) prefaultBytes() int {
	buffered := int64(c.BufferRecords) * int64(c.RecordSize+recordOverhead)
	if b := int64(c.BufferBytes); b > 0 && (buffered <= 0 || b < buffered) {
		buffered = b
	}
	n := int64(gcFloor) + 2*int64(max(c.Producers, 1))*max(buffered, 0)
	return int(min(n, maxPrefault))
}

// recordOverhead is the heap a buffered record costs beside its value: franz-go's
// record, promise and batch bookkeeping (an estimate).
const recordOverhead = 128

// maxPrefault bounds what a run touches before it starts.
const maxPrefault = 1 << 30
