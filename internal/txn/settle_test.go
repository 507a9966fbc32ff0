package txn

import (
	"context"
	"errors"
	"math"
	"sync/atomic"
	"testing"
	"time"

	"github.com/runnel-io/runnel/internal/metadata"
)

// flakyMarkers fails every marker while fail is set.
type flakyMarkers struct {
	markerLog
	fail atomic.Bool
}

var errNoLeader = errors.New("partition leader unavailable")

func (m *flakyMarkers) WriteMarker(ctx context.Context, tp metadata.TopicPartition, pid int64, epoch int16, ce int32, commit bool) error {
	if m.fail.Load() {
		return errNoLeader
	}
	return m.markerLog.WriteMarker(ctx, tp, pid, epoch, ce, commit)
}

func flakyCoordinator(t *testing.T, log *memLog, markers *flakyMarkers, id string) *Coordinator {
	t.Helper()
	return startCoordinator(t, Config{Markers: markers, AllocateProducerID: func(context.Context) (int64, error) { return 7, nil }}, log, id)
}

// startCoordinator starts a coordinator with cfg, loads the state partition of id
// from log, and waits until it serves id. It is closed when the test ends.
func startCoordinator(t *testing.T, cfg Config, log *memLog, id string) *Coordinator {
	t.Helper()
	c := NewCoordinator(cfg)
	t.Cleanup(func() { c.Close() })
	c.Load(c.PartitionFor(id), log, log, 1)
	deadline := time.Now().Add(5 * time.Second)
	for _, err := c.shardFor(id); err != nil; _, err = c.shardFor(id) {
		if time.Now().After(deadline) {
			t.Fatalf("shard not loaded: %v", err)
		}
		time.Sleep(time.Millisecond)
	}
	return c
}

// withMeta runs fn on id's transaction metadata under its lock (tests that set up a
// state the protocol takes too long to reach: an old epoch, an expired transaction).
func withMeta(c *Coordinator, id string, fn func(m *txnMetadata)) {
	sh, _ := c.shardFor(id)
	e := sh.entry(id, false)
	e.mu.Lock()
	defer e.mu.Unlock()
	fn(&e.meta)
}

func stateOf(c *Coordinator, id string) (s State) {
	withMeta(c, id, func(m *txnMetadata) { s = m.state })
	return s
}

// newProducer is InitProducerId for a new transactional producer id with timeout.
func newProducer(t *testing.T, c *Coordinator, id string, timeout time.Duration) ProducerIDAndEpoch {
	t.Helper()
	p, err := c.InitProducerID(context.Background(), id, timeout, -1, -1)
	if err != nil {
		t.Fatalf("InitProducerId %s: %v", id, err)
	}
	return p
}

// testTP is the one data partition of these tests' transactions.
var testTP = metadata.TopicPartition{Topic: "t", Partition: 0}

// addTestPartition adds testTP to id's transaction as producer pid at epoch.
func addTestPartition(t *testing.T, c *Coordinator, id string, pid int64, epoch int16) {
	t.Helper()
	if err := c.AddPartitions(id, pid, epoch, []metadata.TopicPartition{testTP}); err != nil {
		t.Fatalf("AddPartitions %s as %d/%d: %v", id, pid, epoch, err)
	}
}

// A KIP-360 InitProducerId that aborts the producer's own ongoing transaction while a
// partition cannot take its marker: the producer is told to retry
// (CONCURRENT_TRANSACTIONS), the abort completes in the background, and the retry
// at the same epoch is the same producer, not a fenced one.
func TestInitProducerIDRetryWhileItsAbortWaitsForMarkers(t *testing.T) {
	const id = "settle"
	log, markers := &memLog{}, &flakyMarkers{}
	c := flakyCoordinator(t, log, markers, id)
	ctx := context.Background()
	p := newProducer(t, c, id, time.Minute)
	addTestPartition(t, c, id, p.ID, p.Epoch)
	markers.fail.Store(true)
	if _, err := c.InitProducerID(ctx, id, time.Minute, p.ID, p.Epoch); !errors.Is(err, ErrConcurrentTransactions) {
		t.Fatalf("InitProducerId while the abort's marker fails: %v, want %v", err, ErrConcurrentTransactions)
	}
	markers.fail.Store(false)
	deadline := time.Now().Add(5 * time.Second)
	for stateOf(c, id) != CompleteAbort {
		if time.Now().After(deadline) {
			t.Fatalf("the abort did not complete in the background: state %v", stateOf(c, id))
		}
		time.Sleep(5 * time.Millisecond)
	}
	got, err := c.InitProducerID(ctx, id, time.Minute, p.ID, p.Epoch)
	if err != nil || got.ID != p.ID || got.Epoch != p.Epoch+2 {
		t.Fatalf("retried InitProducerId: %+v, %v; want %d at epoch %d", got, err, p.ID, p.Epoch+2)
	}
	if len(markers.written) != 1 || markers.written[0] != (ProducerIDAndEpoch{ID: p.ID, Epoch: p.Epoch + 1}) {
		t.Fatalf("markers %+v, want one abort at the fencing epoch %d", markers.written, p.Epoch+1)
	}
}

// A coordinator that loads a version-2 EndTxn prepared at an epoch overflow
// recognises the producer's KIP-360 retry under the old id, as the coordinator that
// prepared it does.
func TestTV2OverflowPrepareReloadedRecognisesInitProducerIDRetry(t *testing.T) {
	const id = "overflow-prepare"
	log, markers := &memLog{}, &flakyMarkers{}
	c := flakyCoordinator(t, log, markers, id)
	ctx := context.Background()
	p := newProducer(t, c, id, time.Minute)
	withMeta(c, id, func(m *txnMetadata) { m.epoch = math.MaxInt16 - 1 })
	addTestPartition(t, c, id, p.ID, math.MaxInt16-1)
	markers.fail.Store(true)
	if _, err := c.EndTxn(ctx, id, p.ID, math.MaxInt16-1, true, true); err != nil {
		t.Fatal(err)
	}
	c.Close() // the coordinator dies with the commit prepared
	reloaded := flakyCoordinator(t, log, markers, id)
	if got := stateOf(reloaded, id); got != PrepareCommit {
		t.Fatalf("reloaded state %v, want %v", got, PrepareCommit)
	}
	if _, err := reloaded.InitProducerID(ctx, id, time.Minute, p.ID, math.MaxInt16-1); !errors.Is(err, ErrConcurrentTransactions) {
		t.Fatalf("InitProducerId retry under the old id at the reloaded coordinator: %v, want %v", err, ErrConcurrentTransactions)
	}
}

// A commit still in flight when the coordinator aborted the transaction on its own
// (a timeout) carries the epoch before the abort's bump: it is answered
// PRODUCER_FENCED, not INVALID_TXN_STATE (KAFKA-20785), and the abort of the same
// epoch is recognised as a retry that goes on at the bumped epoch.
func TestTV2CommitAfterTimeoutAbortIsFenced(t *testing.T) {
	const id = "timeout-commit"
	log, markers := &memLog{}, &flakyMarkers{}
	c := flakyCoordinator(t, log, markers, id)
	ctx := context.Background()
	p := newProducer(t, c, id, time.Second)
	addTestPartition(t, c, id, p.ID, p.Epoch)
	withMeta(c, id, func(m *txnMetadata) { m.start = time.Now().Add(-time.Minute) })
	c.abortTimedOut()
	if got := stateOf(c, id); got != CompleteAbort {
		t.Fatalf("state after the timeout %v, want %v", got, CompleteAbort)
	}
	if _, err := c.EndTxn(ctx, id, p.ID, p.Epoch, true, true); !errors.Is(err, ErrProducerFenced) {
		t.Fatalf("commit after the timeout abort: %v, want %v", err, ErrProducerFenced)
	}
	got, err := c.EndTxn(ctx, id, p.ID, p.Epoch, false, true)
	if err != nil || got != (ProducerIDAndEpoch{ID: p.ID, Epoch: p.Epoch + 1}) {
		t.Fatalf("abort after the timeout abort: %+v, %v; want epoch %d", got, err, p.Epoch+1)
	}
}
