package mirror

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/runnel-io/runnel/client"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// batch is what one fetch brought for a partition.
type batch struct {
	gen  uint64 // the seek generation it was fetched under
	recs []*kgo.Record
	err  error
}

// worker mirrors one source partition it owns. Its state (st, omap) is what the
// target has committed, except inside commit, where it runs ahead until the
// transaction ends; after any failure it is read again from the target.
type worker struct {
	m        *Mirror
	tp       TopicPartition // immutable
	tgtTopic string         // immutable
	inbox    chan batch
	stop     chan struct{} // closed by stopWorkers
	done     chan struct{} // closed when run returns

	// Owned by the worker goroutine.
	prod      *client.Producer
	st        PartitionState
	omap      *offsetMap
	gen       uint64 // the seek generation whose batches are taken
	trimmed   []chunkKey
	lastTrim  time.Time
	written   map[string]Checkpoint // group checkpoints last committed, by group
	recreated chan string           // the topic loop sends the new topic id
	// dupCounted is set once this owner (since its last init) has counted, under
	// AtLeastOnce, the records a previous owner wrote past the committed state.
	dupCounted bool
	// nextTarget is, under ExactlyOnce, the target offset this owner's next records
	// are expected at (after its last records and their commit marker); -1: not
	// known since init. predictOff counts down transactions written without
	// prediction after a miss.
	nextTarget int64
	predictOff int
	// predicted and missed count the transactions written by commitPredicted and
	// those it aborted (for tests and measurements).
	predicted, missed atomic.Int64
	txns              atomic.Int64 // transactions with records committed

	mu sync.Mutex // guards the fields below, read by the poll loop and the collector
	// pollGen is the generation the poll loop tags batches with.
	pollGen uint64
	// live is st as last committed, plus hw, for metrics and the poll loop.
	live       PartitionState
	hw         int64     // source high watermark last fetched
	behindFrom time.Time // timestamp of the oldest source record not yet committed
	groupsIn   map[string]int64
}

func newWorker(m *Mirror, tp TopicPartition) *worker {
	return &worker{m: m, tp: tp, tgtTopic: m.targetName(tp.Topic), inbox: make(chan batch, 32),
		stop: make(chan struct{}), done: make(chan struct{}), written: map[string]Checkpoint{},
		recreated: make(chan string, 1), hw: -1, nextTarget: -1,
		live: PartitionState{Topic: tp.Topic, Partition: tp.Partition, State: "starting"}}
}

func (w *worker) setPollGen(g uint64) {
	w.mu.Lock()
	w.pollGen = g
	w.mu.Unlock()
}

// deliver hands a fetch to the worker; it runs on the poll loop.
func (w *worker) deliver(ctx context.Context, p kgo.FetchPartition) {
	w.mu.Lock()
	gen := w.pollGen
	if p.HighWatermark > w.hw {
		w.hw = p.HighWatermark
	}
	if len(p.Records) > 0 && w.behindFrom.IsZero() {
		w.behindFrom = p.Records[0].Timestamp
	}
	w.mu.Unlock()
	select {
	case w.inbox <- batch{gen: gen, recs: p.Records, err: p.Err}:
	case <-w.stop:
	case <-ctx.Done():
	}
}

// Errors a worker stops on without retrying.
var (
	errStopped = errors.New("stopped")
	// errDataLoss marks a partition stopped because the source lost records.
	errDataLoss = errors.New("source data loss")
	// errFenced marks a worker whose transactional id another owner initialised.
	errFenced = errors.New("fenced by a newer owner of the partition")
)

// run owns the partition until stop closes: init (fence, read the position, seek),
// then mirror; any failure starts again from init after a backoff, except a fence
// (another process owns the partition now) and a data loss under OnDataLossStop.
func (w *worker) run(ctx context.Context) {
	defer close(w.done)
	defer func() {
		if w.prod != nil {
			w.prod.Close()
		}
	}()
	backoff := 100 * time.Millisecond
	for {
		err := w.init(ctx)
		if err == nil {
			err = w.loop(ctx)
		}
		if errors.Is(err, errStopped) || ctx.Err() != nil {
			return
		}
		w.setError(err)
		if errors.Is(err, errDataLoss) || errors.Is(err, errFenced) {
			w.m.log.Error("partition stopped", "topic", w.tp.Topic, "partition", w.tp.Partition, "err", err)
			w.m.requestSeek(w.tp, seekReq{pause: true, gen: w.gen + 1})
			select {
			case <-w.stop:
			case <-ctx.Done():
			}
			return
		}
		w.m.log.Warn("partition restarting from the target's committed position", "topic", w.tp.Topic, "partition", w.tp.Partition, "err", err)
		select {
		case <-w.stop:
			return
		case <-ctx.Done():
			return
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, 5*time.Second)
	}
}

func (w *worker) setError(err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.live.State, w.live.Error = "error", err.Error()
	if errors.Is(err, errFenced) {
		w.live.State = "stopped"
	}
}

// isFenced reports whether err says another producer took the transactional id.
func isFenced(err error) bool {
	return errors.Is(err, kerr.ProducerFenced) || errors.Is(err, kerr.InvalidProducerEpoch) ||
		errors.Is(err, kerr.TransactionalIDAuthorizationFailed)
}

// newProducer builds the partition's producer: transactional under ExactlyOnce.
func (w *worker) newProducer() (*client.Producer, error) {
	kopts := append([]kgo.Opt{kgo.SeedBrokers(w.m.cfg.Target...)}, w.m.cfg.TargetOptions...)
	// No kgo.RecordDeliveryTimeout: kgo measures it from each record's timestamp,
	// and a mirror keeps the source's (old) timestamps. A transaction's context
	// (txnTimeout) bounds the wait instead.
	kopts = append(kopts, kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerLinger(0),
		kgo.ProducerBatchMaxBytes(1048588), kgo.ClientID("runnel-mirror"))
	if w.m.cfg.Delivery == ExactlyOnce {
		kopts = append(kopts, kgo.TransactionalID(transactionalID(w.m.cfg.Name, w.tp.Topic, w.tp.Partition)),
			kgo.TransactionTimeout(w.m.cfg.TransactionTimeout))
	}
	opts := append([]client.Option{client.WithClientOptions(kopts...)}, w.m.cfg.Producer...)
	return client.NewProducer(opts...)
}

// produceSync produces rs through the partition's producer and waits for them.
func (w *worker) produceSync(ctx context.Context, rs []*kgo.Record) error {
	var (
		mu   sync.Mutex
		ferr error
	)
	for _, r := range rs {
		err := w.prod.Produce(ctx, r, func(r *kgo.Record, err error) {
			if err != nil {
				mu.Lock()
				if ferr == nil {
					ferr = fmt.Errorf("produce to %s/%d on the target: %w", r.Topic, r.Partition, err)
				}
				mu.Unlock()
			}
		})
		if err != nil {
			return fmt.Errorf("produce to %s/%d on the target: %w", r.Topic, r.Partition, err)
		}
	}
	if err := w.prod.Flush(ctx); err != nil {
		return err
	}
	mu.Lock()
	defer mu.Unlock()
	return ferr
}

// fence initialises the transactional id, which aborts a transaction a previous
// owner left open and fails that owner's next request. kgo initialises the id on
// the first record of a transaction, so one record is produced and aborted.
func (w *worker) fence(ctx context.Context) error {
	if err := w.prod.Client().BeginTransaction(); err != nil {
		return err
	}
	r := &kgo.Record{Topic: ProgressTopic(w.m.cfg.Name), Partition: 0,
		Key: []byte("f/" + w.tp.String())}
	err := w.produceSync(ctx, []*kgo.Record{r})
	if aerr := w.prod.Client().EndTransaction(ctx, kgo.TryAbort); err == nil {
		err = aerr
	}
	if err != nil {
		return fmt.Errorf("fencing transactional id %s on the target: %w",
			transactionalID(w.m.cfg.Name, w.tp.Topic, w.tp.Partition), err)
	}
	return nil
}

// BeginTransaction and EndTransaction are on the producer's kgo client.
func (w *worker) beginTxn() error {
	if w.m.cfg.Delivery != ExactlyOnce {
		return nil
	}
	return w.prod.Client().BeginTransaction()
}

func (w *worker) endTxn(ctx context.Context, commit kgo.TransactionEndTry) error {
	if w.m.cfg.Delivery != ExactlyOnce {
		return nil
	}
	return w.prod.Client().EndTransaction(ctx, commit)
}

// hasBeenOn reports whether a record's path header names cluster id.
func hasBeenOn(r *kgo.Record, id string) bool {
	for _, h := range r.Headers {
		if h.Key == PathHeader {
			for c := range strings.SplitSeq(string(h.Value), ",") {
				if c == id {
					return true
				}
			}
		}
	}
	return false
}

// targetRecord is r as the mirror writes it: same partition, key, value, headers
// and timestamp, with the source cluster added to the path header.
func (w *worker) targetRecord(r *kgo.Record) *kgo.Record {
	out := &kgo.Record{Topic: w.tgtTopic, Partition: r.Partition, Key: r.Key, Value: r.Value,
		Timestamp: r.Timestamp, Headers: make([]kgo.RecordHeader, 0, len(r.Headers)+1)}
	path := ""
	for _, h := range r.Headers {
		if h.Key == PathHeader {
			path = string(h.Value)
			continue
		}
		out.Headers = append(out.Headers, h)
	}
	if path == "" {
		path = w.m.srcID
	} else if !hasBeenOn(r, w.m.srcID) {
		path += "," + w.m.srcID
	}
	out.Headers = append(out.Headers, kgo.RecordHeader{Key: PathHeader, Value: []byte(path)})
	return out
}
