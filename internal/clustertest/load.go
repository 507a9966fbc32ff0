package clustertest

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// LoadOptions describe a background producer. The zero value of a field gives its
// default.
type LoadOptions struct {
	Topic      string
	Partitions int32 // written round-robin, 0..Partitions-1 (default 1)
	// Rate is the records per second over all partitions (default 500). When the
	// client's buffer is full (MaxBufferedRecords 2000) a record is skipped, not waited
	// for, so that the producer goroutine never blocks and a stall shows in MaxStall.
	Rate int
	// Opts are extra client options, after LoadDefaults.
	Opts []kgo.Opt
}

// LoadDefaults are the producer options of a Load and of the tests' producers:
// acks=all with idempotence (kgo's default), no compression (Check decodes batches
// with logtest), records placed on the partition they name, a bounded buffer, and a
// produce request given up after 5+3 s (kgo's default is 10+10 s), so that a request
// stuck on a paused node is retried on the new leader within seconds.
func LoadDefaults() []kgo.Opt {
	return []kgo.Opt{
		kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.ProducerBatchCompression(kgo.NoCompression()),
		kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.MaxBufferedRecords(2000),
		kgo.ProducerLinger(5 * time.Millisecond),
		kgo.ProduceRequestTimeout(5 * time.Second),
		kgo.RequestTimeoutOverhead(3 * time.Second),
	}
}

// Load is a producer writing unique values into a History in the background.
type Load struct {
	cl      *kgo.Client // immutable
	h       *History    // immutable
	o       LoadOptions // immutable
	started time.Time   // immutable
	stop    chan struct{}
	done    chan struct{} // closed when the producing goroutine returned

	mu sync.Mutex // guards the fields below
	// lastAck[p] is the last acknowledgement of partition p (started before any).
	lastAck []time.Time
	// maxGap[p] is the longest time partition p went without an acknowledgement.
	maxGap  []time.Duration
	skipped int       // records not produced because the buffer was full
	stopped time.Time // when Stop was called; zero before
}

// StartLoad starts producing into h; call Stop before checking h.
func (c *Cluster) StartLoad(t testing.TB, h *History, o LoadOptions) *Load {
	t.Helper()
	if o.Partitions <= 0 {
		o.Partitions = 1
	}
	if o.Rate <= 0 {
		o.Rate = 500
	}
	l := &Load{h: h, o: o, started: time.Now(), stop: make(chan struct{}), done: make(chan struct{}),
		lastAck: make([]time.Time, o.Partitions), maxGap: make([]time.Duration, o.Partitions)}
	for i := range l.lastAck {
		l.lastAck[i] = l.started
	}
	l.cl = c.Client(t, append(LoadDefaults(), o.Opts...)...)
	go l.run()
	return l
}

// run produces Rate records per second in ticks of 10 ms until stop is closed.
func (l *Load) run() {
	defer close(l.done)
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	perTick := max(1, l.o.Rate/100)
	var p int32
	for {
		select {
		case <-l.stop:
			return
		case <-tick.C:
		}
		for range perTick {
			r := &kgo.Record{Topic: l.o.Topic, Partition: p, Value: l.h.NextValue(p)}
			l.cl.TryProduce(context.Background(), r, l.promise)
			p = (p + 1) % l.o.Partitions
		}
	}
}

func (l *Load) promise(r *kgo.Record, err error) {
	if errors.Is(err, kgo.ErrMaxBuffered) {
		l.mu.Lock()
		l.skipped++
		l.mu.Unlock()
		return
	}
	l.h.Record(r, err)
	if err != nil {
		return
	}
	now := time.Now()
	l.mu.Lock()
	defer l.mu.Unlock()
	l.maxGap[r.Partition] = max(l.maxGap[r.Partition], now.Sub(l.lastAck[r.Partition]))
	l.lastAck[r.Partition] = now
}

// Stop stops producing and waits up to timeout for every record already buffered to
// be acknowledged or failed. It returns the flush error (context.DeadlineExceeded when
// records were still pending).
func (l *Load) Stop(timeout time.Duration) error {
	select {
	case <-l.stop:
	default:
		l.mu.Lock()
		l.stopped = time.Now()
		l.mu.Unlock()
		close(l.stop)
	}
	<-l.done
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	return l.cl.Flush(ctx)
}

// MaxStall returns the longest time a partition went without an acknowledgement since
// the load started (or ResetStalls), up to now or Stop, and that partition.
func (l *Load) MaxStall() (time.Duration, int32) {
	l.mu.Lock()
	defer l.mu.Unlock()
	end := time.Now()
	if !l.stopped.IsZero() {
		end = l.stopped
	}
	var worst time.Duration
	var at int32
	for p, g := range l.maxGap {
		g = max(g, end.Sub(l.lastAck[p]))
		if g > worst {
			worst, at = g, int32(p)
		}
	}
	return worst, at
}

// ResetStalls forgets the gaps measured so far (for instance those of the start).
func (l *Load) ResetStalls() {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := time.Now()
	for p := range l.maxGap {
		l.maxGap[p], l.lastAck[p] = 0, now
	}
}

// Skipped is the number of records not produced because the client's buffer was full.
func (l *Load) Skipped() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.skipped
}
