package txn

import (
	"context"
	"fmt"
	"math"

	"github.com/runnel-io/runnel/internal/metadata"
)

// Transaction version 2 (KIP-890 part 2).
//
// A client learns from ApiVersions that the cluster finalized the
// transaction.version feature at 2; it then sends Produce v12+, TxnOffsetCommit v5+
// and EndTxn v5+ and no longer AddPartitionsToTxn or AddOffsetsToTxn:
//
//   - a partition joins the transaction implicitly: the partition leader (Produce
//     v12) or the group coordinator (TxnOffsetCommit v5) adds it at the transaction
//     coordinator before appending (AddPartitionImplicit);
//   - EndTxn bumps the producer epoch: the markers carry the bumped epoch, so every
//     partition of the transaction fences a late write of the ended transaction at
//     the log, and the coordinator fences its late adds; the answer carries the new
//     epoch, with which the producer's next transaction runs (sequences from 0);
//   - a retried EndTxn carries the epoch before the bump: it is recognised by its
//     epoch being one below the current one while the transaction is prepared or
//     complete, and answered as the first one was (Kafka's retryOnEpochBump); at an
//     epoch overflow (MaxInt16-1) the producer moves to a new producer id, and the
//     retry is recognised by the previous id;
//   - aborting with nothing in the transaction is allowed and also bumps the epoch
//     (a client whose produces all failed aborts to clear implicit adds).
//
// A transaction-version-1 client (EndTxn v4 and older, e.g. sarama) is served as
// before: same epoch across transactions, retries at the same epoch.

// isProducer reports whether (pid, epoch) names the current producer of the id, or
// the same producer at its epoch before a bump it caused (a retried request whose
// answer was lost), for InitProducerId's KIP-360 check.
func (m *txnMetadata) isProducer(pid int64, epoch int16) bool {
	switch {
	case pid == m.pid:
		return epoch == m.epoch || (m.lastEpoch >= 0 && epoch == m.lastEpoch)
	case pid == m.prevPid:
		return epoch >= math.MaxInt16-1
	}
	return false
}

// isBumpRetry reports whether (pid, epoch) is the producer of the prepared or
// completed transaction before EndTxn bumped its epoch (or moved it to a new id).
func (m *txnMetadata) isBumpRetry(pid int64, epoch int16) bool {
	switch m.state {
	case PrepareCommit, PrepareAbort, CompleteCommit, CompleteAbort:
	default:
		return false
	}
	if pid == m.pid && int32(epoch)+1 == int32(m.epoch) {
		return true
	}
	return m.prevPid >= 0 && pid == m.prevPid && epoch == math.MaxInt16-1 && m.epoch == 0
}

// current is the producer id and epoch the producer goes on with.
func (m *txnMetadata) current() ProducerIDAndEpoch {
	if m.nextPid >= 0 {
		return ProducerIDAndEpoch{ID: m.nextPid, Epoch: 0}
	}
	return ProducerIDAndEpoch{ID: m.pid, Epoch: m.epoch}
}

// endTxnV2Locked is EndTxn of transaction version 2: see the comment at the top of
// this file. The state transitions are Kafka's.
func (c *Coordinator) endTxnV2Locked(ctx context.Context, sh *shard, e *txnEntry, pid int64, epoch int16, commit bool) (ProducerIDAndEpoch, error) {
	m := &e.meta
	st := m.state
	retry := m.isBumpRetry(pid, epoch)
	if !retry {
		if err := checkProducerLocked(m, pid, epoch); err != nil {
			return ProducerIDAndEpoch{}, err
		}
	}
	switch {
	case st == Ongoing:
		return c.finishV2Locked(ctx, sh, e, commit)
	case st == Empty, !retry && (st == CompleteCommit || st == CompleteAbort):
		if commit {
			return ProducerIDAndEpoch{}, fmt.Errorf("%w: nothing to commit in state %s", ErrInvalidTxnState, st)
		}
		return c.finishV2Locked(ctx, sh, e, false)
	case retry && (st == CompleteCommit && commit || st == CompleteAbort && !commit):
		return m.current(), nil
	case retry && st == CompleteAbort && commit:
		// The coordinator aborted on its own (a timeout) while this commit was in
		// flight: the commit did not happen, and the producer is fenced, as Kafka
		// answers since KAFKA-20785 (INVALID_TXN_STATE would be fatal to clients).
		return ProducerIDAndEpoch{}, fmt.Errorf("%w: the transaction was aborted before this commit", ErrProducerFenced)
	case retry && (st == PrepareCommit && commit || st == PrepareAbort && !commit):
		return ProducerIDAndEpoch{}, ErrConcurrentTransactions
	case st == PrepareCommit || st == PrepareAbort:
		// At the current epoch: the last transaction's markers are still being
		// written (a background retry).
		return ProducerIDAndEpoch{}, ErrConcurrentTransactions
	}
	return ProducerIDAndEpoch{}, fmt.Errorf("%w: cannot end with commit=%v in state %s", ErrInvalidTxnState, commit, st)
}

// finishV2Locked prepares the transaction with the epoch bumped (a new producer id
// when the epoch is exhausted), then writes its markers and completes it.
func (c *Coordinator) finishV2Locked(ctx context.Context, sh *shard, e *txnEntry, commit bool) (ProducerIDAndEpoch, error) {
	m := e.meta.clone()
	m.state = PrepareAbort
	if commit {
		m.state = PrepareCommit
	}
	m.tv2 = true
	if m.epoch >= math.MaxInt16-1 {
		id, err := c.cfg.AllocateProducerID(ctx)
		if err != nil {
			return ProducerIDAndEpoch{}, fmt.Errorf("%w: allocating a producer id at epoch overflow: %v", ErrCoordinatorNotAvailable, err)
		}
		m.nextPid = id
	}
	m.lastEpoch = m.epoch
	m.epoch++ // at most MaxInt16, the fencing epoch of an exhausted id
	m.lastUpdate = c.cfg.Now()
	if err := c.persist(sh, e, m); err != nil {
		return ProducerIDAndEpoch{}, err
	}
	next := e.meta.current()
	c.completeOrRetryLocked(sh, e)
	return next, nil
}

// AddPartitionImplicit adds tp to txnID's transaction on behalf of a write of the
// producer (Produce v12+ at tp's leader, TxnOffsetCommit v5+ at the group
// coordinator): the transaction-version-2 replacement of the client's
// AddPartitionsToTxn and AddOffsetsToTxn. When another node coordinates txnID,
// Config.RemoteAdd asks it (without RemoteAdd the write is only verified, as
// Verify).
func (c *Coordinator) AddPartitionImplicit(ctx context.Context, txnID string, pid int64, epoch int16, tp metadata.TopicPartition) error {
	_, err := c.shardFor(txnID)
	if err == ErrNotCoordinator {
		if c.cfg.RemoteAdd == nil {
			return c.Verify(ctx, txnID, pid, epoch, tp)
		}
		return c.cfg.RemoteAdd(ctx, txnID, pid, epoch, tp)
	}
	if err != nil {
		return err
	}
	return c.AddPartitions(txnID, pid, epoch, []metadata.TopicPartition{tp})
}
