package txn

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/runnel-io/runnel/internal/coordshard"
	"github.com/runnel-io/runnel/internal/group"
	"github.com/runnel-io/runnel/internal/metadata"
	"github.com/runnel-io/runnel/internal/recordbatch"
	"github.com/runnel-io/runnel/internal/replica"
)

// MarkerWriter writes a transaction marker to a partition through its leader, local
// or remote (WriteTxnMarkers), and returns once the leader's ISR has it.
type MarkerWriter interface {
	WriteMarker(ctx context.Context, tp metadata.TopicPartition, pid int64, epoch int16, coordinatorEpoch int32, commit bool) error
}

// Config configures a Coordinator.
type Config struct {
	// NumPartitions is transaction.state.log.num.partitions (default 50); it must not
	// change once __transaction_state exists.
	NumPartitions int32
	// MaxTimeout is transaction.max.timeout.ms (default 15 min).
	MaxTimeout time.Duration
	// AbortInterval is how often timed-out transactions are aborted
	// (transaction.abort.timed.out.transaction.cleanup.interval.ms, default 10 s;
	// server.Options.TxnAbortInterval, tests use ~100 ms).
	AbortInterval time.Duration
	// OffsetsPartitions is offsets.topic.num.partitions, to map AddOffsetsToTxn's
	// group to its __consumer_offsets partition (default 50).
	OffsetsPartitions int32
	// AppendTimeout bounds each state append and each marker round (default 5 s).
	AppendTimeout time.Duration
	// AllocateProducerID hands out a new producer id (the controller's blocks).
	AllocateProducerID func(ctx context.Context) (int64, error)
	Markers            MarkerWriter
	// RemoteVerify asks the coordinator of txnID on another node whether tp is in the
	// producer's transaction (AddPartitionsToTxn v4 verifyOnly); nil = accept.
	RemoteVerify func(ctx context.Context, txnID string, pid int64, epoch int16, tp metadata.TopicPartition) error
	// RemoteAdd asks the coordinator of txnID on another node to add tp to the
	// producer's transaction (AddPartitionsToTxn v5, transaction version 2's
	// implicit add); nil = verify only (RemoteVerify).
	RemoteAdd func(ctx context.Context, txnID string, pid int64, epoch int16, tp metadata.TopicPartition) error
	// Serving reports whether this node may answer as a coordinator now (its lease
	// from the controller holds); while it says no, every id is NOT_COORDINATOR. Nil: yes.
	Serving func() bool
	Logger  *slog.Logger
	Now     func() time.Time // nil = time.Now
}

// Coordinator is the transaction coordinator of one node. Methods are safe for
// concurrent use.
type Coordinator struct {
	cfg    Config
	logger *slog.Logger

	// shards are the __transaction_state partitions this node leads; it also tracks
	// every goroutine (loads, completion retries, abortLoop, which ends at its Done).
	shards *coordshard.Set[*shard]
}

// shard is one loaded (or loading) __transaction_state partition.
type shard struct {
	partition int32
	log       group.PartitionLog
	source    any
	// coordinatorEpoch is the partition's leader epoch when this node took it.
	coordinatorEpoch int32
	ctx              context.Context // ends at unload
	loaded           chan struct{}   // closed once replayed

	mu   sync.Mutex // guards txns
	txns map[string]*txnEntry
}

// txnEntry is one transactional id.
type txnEntry struct {
	mu   sync.Mutex // serialises operations on the id; held across appends
	meta txnMetadata
}

// NewCoordinator returns a coordinator with no partitions loaded and starts its
// timeout goroutine.
func NewCoordinator(cfg Config) *Coordinator {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.NumPartitions <= 0 {
		cfg.NumPartitions = 50
	}
	if cfg.MaxTimeout <= 0 {
		cfg.MaxTimeout = 15 * time.Minute
	}
	if cfg.AbortInterval <= 0 {
		cfg.AbortInterval = 10 * time.Second
	}
	if cfg.AppendTimeout <= 0 {
		cfg.AppendTimeout = 5 * time.Second
	}
	if cfg.OffsetsPartitions <= 0 {
		cfg.OffsetsPartitions = 50
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	c := &Coordinator{cfg: cfg, logger: cfg.Logger.With("component", "txn-coordinator"),
		shards: coordshard.New[*shard]()}
	c.goFunc(c.abortLoop)
	return c
}

// NumPartitions is the partition count of __transaction_state.
func (c *Coordinator) NumPartitions() int32 { return c.cfg.NumPartitions }

// PartitionFor is the __transaction_state partition of a transactional id.
func (c *Coordinator) PartitionFor(txnID string) int32 {
	return group.PartitionFor(txnID, c.cfg.NumPartitions)
}

// OnLeadershipChange is the replica hook: it loads a __transaction_state partition
// when this node becomes its leader and unloads it when it stops.
func (c *Coordinator) OnLeadershipChange(p *replica.Partition, leader bool, leaderEpoch int32) {
	tp := p.TopicPartition()
	if tp.Topic != StateTopic {
		return
	}
	if leader {
		c.Load(tp.Partition, group.ReplicaLog{P: p}, p, leaderEpoch)
	} else {
		c.Unload(tp.Partition)
	}
}

// Load starts coordinating the ids of partition from log, replayed in the background.
func (c *Coordinator) Load(partition int32, log group.PartitionLog, source any, leaderEpoch int32) {
	current := func(old *shard) bool { return old.source == source && old.coordinatorEpoch == leaderEpoch }
	c.shards.Load(partition, current, func(ctx context.Context) *shard {
		return &shard{partition: partition, log: log, source: source, coordinatorEpoch: leaderEpoch,
			ctx: ctx, loaded: make(chan struct{}), txns: map[string]*txnEntry{}}
	}, c.loadShard)
}

// Unload stops coordinating partition's ids.
func (c *Coordinator) Unload(partition int32) { c.shards.Unload(partition) }

// Close unloads everything and waits for every goroutine.
func (c *Coordinator) Close() error {
	c.shards.Close()
	return nil
}

// goFunc runs fn on a tracked goroutine; false when closed.
func (c *Coordinator) goFunc(fn func()) bool { return c.shards.Go(fn) }

// shardFor returns the loaded shard of txnID.
func (c *Coordinator) shardFor(txnID string) (*shard, error) {
	sh, ok := c.shards.Get(c.PartitionFor(txnID))
	if !ok || c.cfg.Serving != nil && !c.cfg.Serving() {
		return nil, ErrNotCoordinator
	}
	select {
	case <-sh.loaded:
		return sh, nil
	default:
		return nil, ErrLoadInProgress
	}
}

// entry returns txnID's entry, creating an empty one when create is set.
func (sh *shard) entry(txnID string, create bool) *txnEntry {
	sh.mu.Lock()
	defer sh.mu.Unlock()
	e := sh.txns[txnID]
	if e == nil && create {
		e = &txnEntry{meta: txnMetadata{id: txnID, pid: -1, epoch: -1, state: Empty, prevPid: -1, nextPid: -1, lastEpoch: -1}}
		sh.txns[txnID] = e
	}
	return e
}

// persist appends m to sh's partition and, once replicated, makes it e's state.
func (c *Coordinator) persist(sh *shard, e *txnEntry, m txnMetadata) error {
	if sh.ctx.Err() != nil {
		return ErrNotCoordinator
	}
	ctx, cancel := context.WithTimeout(sh.ctx, c.cfg.AppendTimeout)
	defer cancel()
	if err := sh.log.Append(ctx, m.record()); err != nil {
		if errors.Is(err, replica.ErrNotLeader) || sh.ctx.Err() != nil {
			return fmt.Errorf("%w: %v", ErrNotCoordinator, err)
		}
		return fmt.Errorf("%w: %v", ErrCoordinatorNotAvailable, err)
	}
	e.meta = m
	return nil
}

// loadShard replays sh's partition up to its log end, then resumes the transactions
// that were preparing.
func (c *Coordinator) loadShard(sh *shard) {
	_, _, target := sh.log.Offsets()
	var off int64
	var buf []byte
	for {
		logStart, hw, _ := sh.log.Offsets()
		off = max(off, logStart)
		if off >= target {
			break
		}
		if off < hw {
			var err error
			if buf, err = sh.log.Read(buf[:0], off, 1<<20); err == nil && len(buf) > 0 {
				off = c.replay(sh, buf, off)
				continue
			}
		}
		select {
		case <-sh.ctx.Done():
			return
		case <-time.After(10 * time.Millisecond):
		}
	}
	close(sh.loaded)
	sh.mu.Lock()
	var preparing []*txnEntry
	for _, e := range sh.txns {
		if e.meta.state == PrepareCommit || e.meta.state == PrepareAbort {
			preparing = append(preparing, e)
		}
	}
	n := len(sh.txns)
	sh.mu.Unlock()
	c.logger.Info("loaded transactions", "partition", sh.partition, "transactional_ids", n, "coordinator_epoch", sh.coordinatorEpoch)
	for _, e := range preparing {
		c.goFunc(func() { c.retryComplete(sh, e) })
	}
}

// replay applies the batches in buf; it returns the offset after the last one.
func (c *Coordinator) replay(sh *shard, buf []byte, off int64) int64 {
	for len(buf) > 0 {
		b, rest, err := recordbatch.Next(buf, 0)
		if err != nil {
			break
		}
		buf, off = rest, b.NextOffset()
		if b.IsControl() || b.Compression() != 0 {
			continue
		}
		err = forEachRecord(b, func(key, value []byte) error {
			id, m, err := decodeRecord(key, value)
			if err != nil {
				return err
			}
			if m == nil {
				delete(sh.txns, id)
			} else {
				sh.txns[id] = &txnEntry{meta: *m}
			}
			return nil
		})
		if err != nil {
			c.logger.Error("skipping undecodable "+StateTopic+" batch", "partition", sh.partition, "offset", b.BaseOffset(), "err", err)
		}
	}
	return off
}
