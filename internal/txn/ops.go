package txn

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/runnel-io/runnel/internal/group"
	"github.com/runnel-io/runnel/internal/metadata"
)

// ProducerIDAndEpoch is InitProducerId's answer.
type ProducerIDAndEpoch struct {
	ID    int64
	Epoch int16
}

// InitProducerID (re)initialises txnID's producer: the first call allocates a producer
// id; later ones bump the epoch, which fences every older producer of the id. An
// ongoing transaction of the previous producer is aborted first. reqPID and reqEpoch
// (KIP-360, -1 when absent) must name the current producer.
func (c *Coordinator) InitProducerID(ctx context.Context, txnID string, timeout time.Duration, reqPID int64, reqEpoch int16) (ProducerIDAndEpoch, error) {
	if timeout <= 0 || timeout > c.cfg.MaxTimeout {
		return ProducerIDAndEpoch{}, ErrInvalidTimeout
	}
	sh, err := c.shardFor(txnID)
	if err != nil {
		return ProducerIDAndEpoch{}, err
	}
	e := sh.entry(txnID, true)
	e.mu.Lock()
	defer e.mu.Unlock()
	m := e.meta.clone()
	if reqPID >= 0 && !m.isProducer(reqPID, reqEpoch) {
		return ProducerIDAndEpoch{}, ErrProducerFenced
	}
	ownEpoch := int16(-1) // the request's epoch when it names the current producer id
	if reqPID >= 0 && reqPID == m.pid {
		ownEpoch = reqEpoch
	}
	if err := c.settleLocked(sh, e, ownEpoch); err != nil {
		return ProducerIDAndEpoch{}, err
	}
	m = e.meta.clone()
	if m.pid < 0 || m.epoch >= math.MaxInt16-1 {
		id, err := c.cfg.AllocateProducerID(ctx)
		if err != nil {
			return ProducerIDAndEpoch{}, err
		}
		m.pid, m.epoch = id, 0
	} else {
		m.epoch++
	}
	m.lastEpoch, m.nextPid = -1, -1
	if reqPID >= 0 && m.pid == reqPID && reqEpoch >= 0 {
		m.lastEpoch = reqEpoch // the same producer: its retry is recognised
	}
	m.timeout, m.state, m.partitions = timeout, Empty, nil
	m.lastUpdate, m.start = c.cfg.Now(), time.Time{}
	if err := c.persist(sh, e, m); err != nil {
		return ProducerIDAndEpoch{}, err
	}
	return ProducerIDAndEpoch{ID: m.pid, Epoch: m.epoch}, nil
}

// settleLocked finishes what the previous producer left: it aborts an ongoing
// transaction (bumping the epoch so that its producer is fenced at the partitions)
// and completes a prepared one. ownEpoch (-1 when none) is the epoch of an
// InitProducerId of the current producer itself (KIP-360): after the fencing bump a
// retry of that request at ownEpoch is still recognised. When a marker cannot be
// written now the abort goes on in the background and the caller gets
// ErrConcurrentTransactions, which clients retry.
func (c *Coordinator) settleLocked(sh *shard, e *txnEntry, ownEpoch int16) error {
	switch e.meta.state {
	case Ongoing:
		if err := c.prepareLocked(sh, e, false, true); err != nil {
			return err
		}
		if ownEpoch >= 0 {
			e.meta.lastEpoch = ownEpoch
		}
		if err := c.completeOrRetryLocked(sh, e); err != nil {
			return ErrConcurrentTransactions
		}
	case PrepareCommit, PrepareAbort:
		if err := c.completeLocked(sh, e); err != nil {
			return ErrConcurrentTransactions
		}
	}
	return nil
}

// checkProducerLocked validates a request's producer against the id's.
func checkProducerLocked(m *txnMetadata, pid int64, epoch int16) error {
	switch {
	case m.pid != pid:
		return ErrInvalidProducerIDMapping
	case epoch != m.epoch:
		return ErrProducerFenced
	}
	return nil
}

// withProducer runs fn with txnID's entry in sh locked, once pid and epoch are
// checked to be its current producer; an id sh does not know has no producer
// (ErrInvalidProducerIDMapping).
func withProducer(sh *shard, txnID string, pid int64, epoch int16, fn func(e *txnEntry) error) error {
	e := sh.entry(txnID, false)
	if e == nil {
		return ErrInvalidProducerIDMapping
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if err := checkProducerLocked(&e.meta, pid, epoch); err != nil {
		return err
	}
	return fn(e)
}

// AddPartitions adds partitions to txnID's transaction, starting it if needed.
func (c *Coordinator) AddPartitions(txnID string, pid int64, epoch int16, tps []metadata.TopicPartition) error {
	sh, err := c.shardFor(txnID)
	if err != nil {
		return err
	}
	return withProducer(sh, txnID, pid, epoch, func(e *txnEntry) error {
		return c.addPartitionsLocked(sh, e, tps)
	})
}

// addPartitionsLocked is AddPartitions once the producer is checked.
func (c *Coordinator) addPartitionsLocked(sh *shard, e *txnEntry, tps []metadata.TopicPartition) error {
	switch e.meta.state {
	case PrepareCommit, PrepareAbort:
		return ErrConcurrentTransactions
	case Dead:
		return ErrInvalidTxnState
	}
	m := e.meta.clone()
	added := false
	for _, tp := range tps {
		if _, ok := m.partitions[tp]; !ok {
			m.partitions[tp], added = struct{}{}, true
		}
	}
	if !added && m.state == Ongoing {
		return nil
	}
	now := c.cfg.Now()
	if m.state != Ongoing {
		m.state, m.start = Ongoing, now
	}
	m.lastUpdate = now
	return c.persist(sh, e, m)
}

// AddOffsets adds the __consumer_offsets partition of groupID to the transaction.
func (c *Coordinator) AddOffsets(txnID string, pid int64, epoch int16, groupID string) error {
	tp := metadata.TopicPartition{Topic: group.OffsetsTopic, Partition: group.PartitionFor(groupID, c.cfg.OffsetsPartitions)}
	return c.AddPartitions(txnID, pid, epoch, []metadata.TopicPartition{tp})
}

// Verify checks that tp is part of pid's ongoing transaction (KIP-890: a
// transactional write to a partition never added is refused, so that a late write
// cannot slip into the next transaction). When another node coordinates txnID,
// Config.RemoteVerify asks it; without RemoteVerify the write is accepted unverified
// (Kafka before 3.6).
func (c *Coordinator) Verify(ctx context.Context, txnID string, pid int64, epoch int16, tp metadata.TopicPartition) error {
	sh, err := c.shardFor(txnID)
	if err == ErrNotCoordinator {
		if c.cfg.RemoteVerify == nil {
			return nil
		}
		return c.cfg.RemoteVerify(ctx, txnID, pid, epoch, tp)
	}
	if err != nil {
		return err
	}
	return withProducer(sh, txnID, pid, epoch, func(e *txnEntry) error {
		if _, ok := e.meta.partitions[tp]; !ok || e.meta.state != Ongoing {
			return ErrInvalidTxnState
		}
		return nil
	})
}

// EndTxn commits or aborts txnID's transaction: it returns once the decision is
// durable and the markers are written (or being retried in the background), with
// the producer id and epoch the producer goes on with. tv2 (EndTxn v5+, KIP-890
// part 2) bumps the epoch at the end of every transaction (see endTxnV2Locked);
// without it the epoch stays.
func (c *Coordinator) EndTxn(ctx context.Context, txnID string, pid int64, epoch int16, commit, tv2 bool) (ProducerIDAndEpoch, error) {
	sh, err := c.shardFor(txnID)
	if err != nil {
		return ProducerIDAndEpoch{}, err
	}
	e := sh.entry(txnID, false)
	if e == nil {
		return ProducerIDAndEpoch{}, ErrInvalidProducerIDMapping
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if tv2 {
		return c.endTxnV2Locked(ctx, sh, e, pid, epoch, commit)
	}
	return ProducerIDAndEpoch{ID: pid, Epoch: epoch}, c.endTxnV1Locked(sh, e, pid, epoch, commit)
}

// endTxnV1Locked is EndTxn of transaction version 0 or 1: the epoch stays, and a
// retry carries the same epoch.
func (c *Coordinator) endTxnV1Locked(sh *shard, e *txnEntry, pid int64, epoch int16, commit bool) error {
	if err := checkProducerLocked(&e.meta, pid, epoch); err != nil {
		return err
	}
	switch st := e.meta.state; {
	case st == Ongoing:
	case st == CompleteCommit && commit, st == CompleteAbort && !commit:
		return nil // a retry of the last EndTxn
	case st == PrepareCommit && commit, st == PrepareAbort && !commit:
		return ErrConcurrentTransactions
	case st == Empty && !commit:
		return nil // nothing was added: nothing to abort
	default:
		return ErrInvalidTxnState
	}
	if err := c.prepareLocked(sh, e, commit, false); err != nil {
		return err
	}
	c.completeOrRetryLocked(sh, e)
	return nil
}

// completeOrRetryLocked completes a prepared transaction, or leaves it to a
// background retry when a marker cannot be written now (the error says why).
func (c *Coordinator) completeOrRetryLocked(sh *shard, e *txnEntry) error {
	err := c.completeLocked(sh, e)
	if err != nil {
		c.logger.Warn("transaction markers not written yet; retrying in the background", "transactional_id", e.meta.id, "err", err)
		c.goFunc(func() { c.retryComplete(sh, e) })
	}
	return err
}

// prepareLocked persists PrepareCommit or PrepareAbort; bump (timeouts and fencing)
// raises the epoch first, so that markers fence the producer.
func (c *Coordinator) prepareLocked(sh *shard, e *txnEntry, commit, bump bool) error {
	m := e.meta.clone()
	m.state = PrepareAbort
	if commit {
		m.state = PrepareCommit
	}
	if bump && m.epoch < math.MaxInt16-1 {
		m.epoch++
		m.lastEpoch, m.tv2 = -1, false // a fence: the old epoch is no longer the producer's
	}
	m.lastUpdate = c.cfg.Now()
	return c.persist(sh, e, m)
}

// completeLocked writes the markers of a prepared transaction to every partition,
// then persists CompleteCommit or CompleteAbort.
func (c *Coordinator) completeLocked(sh *shard, e *txnEntry) error {
	m := e.meta.clone()
	commit := m.state == PrepareCommit
	ctx, cancel := context.WithTimeout(sh.ctx, c.cfg.AppendTimeout)
	defer cancel()
	for _, tp := range m.sortedPartitions() {
		if err := c.cfg.Markers.WriteMarker(ctx, tp, m.pid, m.epoch, sh.coordinatorEpoch, commit); err != nil {
			return fmt.Errorf("marker of transactional id %q (producer %d, epoch %d) to %s-%d: %w", m.id, m.pid, m.epoch, tp.Topic, tp.Partition, err)
		}
	}
	m.state = CompleteAbort
	if commit {
		m.state = CompleteCommit
	}
	m.partitions, m.lastUpdate, m.start = nil, c.cfg.Now(), time.Time{}
	if m.nextPid >= 0 { // the epoch overflowed: the producer goes on with a new id
		m.prevPid, m.pid, m.epoch, m.nextPid, m.lastEpoch = m.pid, m.nextPid, 0, -1, -1
	}
	return c.persist(sh, e, m)
}

// retryComplete retries completeLocked until it succeeds or sh is unloaded.
func (c *Coordinator) retryComplete(sh *shard, e *txnEntry) {
	for backoff := 100 * time.Millisecond; ; backoff = min(2*backoff, 5*time.Second) {
		e.mu.Lock()
		st := e.meta.state
		err := error(nil)
		if st == PrepareCommit || st == PrepareAbort {
			err = c.completeLocked(sh, e)
		}
		e.mu.Unlock()
		if err == nil {
			return
		}
		select {
		case <-sh.ctx.Done():
			return
		case <-time.After(backoff):
		}
	}
}

// abortLoop aborts the transactions open longer than their timeout.
func (c *Coordinator) abortLoop() {
	t := time.NewTicker(c.cfg.AbortInterval)
	defer t.Stop()
	for {
		select {
		case <-c.shards.Done():
			return
		case <-t.C:
			c.abortTimedOut()
		}
	}
}

func (c *Coordinator) abortTimedOut() {
	for _, sh := range c.loadedShards() {
		for _, e := range sh.entries() {
			e.mu.Lock()
			m := &e.meta
			if m.state == Ongoing && c.cfg.Now().Sub(m.start) > m.timeout {
				c.logger.Info("aborting timed out transaction", "transactional_id", m.id, "producer_id", m.pid, "epoch", m.epoch)
				if err := c.prepareLocked(sh, e, false, true); err == nil {
					if err := c.completeLocked(sh, e); err != nil {
						c.goFunc(func() { c.retryComplete(sh, e) })
					}
				}
			}
			e.mu.Unlock()
		}
	}
}

// loadedShards returns the shards done loading.
func (c *Coordinator) loadedShards() []*shard {
	var out []*shard
	for _, sh := range c.shards.All() {
		select {
		case <-sh.loaded:
			out = append(out, sh)
		default:
		}
	}
	return out
}

func (sh *shard) entries() []*txnEntry {
	sh.mu.Lock()
	defer sh.mu.Unlock()
	out := make([]*txnEntry, 0, len(sh.txns))
	for _, e := range sh.txns {
		out = append(out, e)
	}
	return out
}
