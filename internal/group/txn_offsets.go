package group

// Transactional offset commits (TxnOffsetCommit, KIP-98).
//
// A transactional producer commits a group's offsets as part of its transaction: the
// offset records are appended to the group's __consumer_offsets partition as a
// transactional batch of the producer (its id and epoch), and the offsets are held
// pending per producer in the group (groupMetadata.txnOffsets) instead of becoming the
// group's committed offsets. The transaction coordinator then writes the
// transaction's marker to that partition (the partition was added with
// AddOffsetsToTxn); the partition leader tells the coordinator (CompleteTxn): a
// COMMIT marker makes the producer's pending offsets committed, an ABORT marker drops
// them. Replay does the same from the log: the records of a transactional batch are
// held per producer until the producer's next marker.
//
// Pending offsets become committed at the marker, after any plain commit made
// in between (Kafka instead orders them by their record offsets); a live coordinator
// and a replay agree, since both apply them at the marker.

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"maps"
	"math"
	"time"

	"github.com/runnel-io/runnel/internal/recordbatch"
	"github.com/runnel-io/runnel/internal/replica"
)

// ErrProducerFenced: a TxnOffsetCommit from a producer epoch older than the
// partition's (PRODUCER_FENCED, INVALID_PRODUCER_EPOCH for old request versions).
var ErrProducerFenced = errors.New("transactional producer fenced")

// TxnCommitRequest is a TxnOffsetCommit. MemberID, InstanceID and Generation (v3+)
// are checked when set; "" and -1 skip the member check (v0-2 clients).
type TxnCommitRequest struct {
	TransactionalID string
	GroupID         string
	ProducerID      int64
	ProducerEpoch   int16
	MemberID        string
	InstanceID      *string
	Generation      int32
	Offsets         []OffsetCommit
}

// txnProducer is the transactional producer a write belongs to.
type txnProducer struct {
	id    int64
	epoch int16
}

// txnCompletion is a marker seen while its shard was loading, applied after replay.
type txnCompletion struct {
	pid    int64
	commit bool
}

// CommitTxnOffsets handles a TxnOffsetCommit: one error per offset, in request order.
// It returns once the records are replicated; the offsets stay pending until the
// producer's transaction ends (CompleteTxn).
func (c *Coordinator) CommitTxnOffsets(ctx context.Context, req TxnCommitRequest) []error {
	sh, err := c.shardFor(req.GroupID)
	var errs []error
	if err == nil {
		errs, err = call(ctx, c, req.GroupID, true, func(md *groupMetadata, now time.Time, reply func([]error)) {
			// Tracked before the write is issued, so that a marker racing the
			// append finds the group.
			sh.mu.Lock()
			sh.trackTxnGroup(req.ProducerID, req.GroupID)
			sh.mu.Unlock()
			md.txnCommit(now, req, reply)
		})
	}
	if err != nil {
		errs = sameError(len(req.Offsets), err)
	}
	return errs
}

// trackTxnGroup notes that groupID may hold pending offsets of pid. sh.mu must be
// held.
func (sh *shard) trackTxnGroup(pid int64, groupID string) {
	if sh.txnGroups == nil {
		sh.txnGroups = map[int64]map[string]struct{}{}
	}
	if sh.txnGroups[pid] == nil {
		sh.txnGroups[pid] = map[string]struct{}{}
	}
	sh.txnGroups[pid][groupID] = struct{}{}
}

// CompleteTxn applies a marker appended to __consumer_offsets partition: the pending
// offsets of producer pid in the partition's groups become committed (commit) or are
// dropped. The partition leader calls it once the marker is replicated; it returns
// once every group has applied it. A partition this node does not coordinate is
// ignored: its coordinator replays the marker when it loads. An error means some
// group could not apply it yet: the marker should be written again (a repeated
// marker changes nothing in the log), which calls CompleteTxn again.
func (c *Coordinator) CompleteTxn(ctx context.Context, partition int32, pid int64, commit bool) error {
	sh, ok := c.shards.Get(partition)
	if !ok {
		return nil
	}
	sh.mu.Lock()
	select {
	case <-sh.loaded:
	default: // the load applies it after replaying the log
		sh.loadCompletions = append(sh.loadCompletions, txnCompletion{pid: pid, commit: commit})
		sh.mu.Unlock()
		return nil
	}
	ids := sh.txnGroups[pid]
	delete(sh.txnGroups, pid)
	sh.mu.Unlock()
	var errs []error
	for id := range ids {
		_, err := call(ctx, c, id, false, func(md *groupMetadata, _ time.Time, reply func(struct{})) {
			md.completeTxn(pid, commit)
			reply(struct{}{})
		})
		if err == nil || errors.Is(err, errNoGroup) || sh.ctx.Err() != nil {
			continue // applied, gone, or replayed by the next coordinator
		}
		sh.mu.Lock()
		sh.trackTxnGroup(pid, id)
		sh.mu.Unlock()
		errs = append(errs, fmt.Errorf("group %s: %w", id, err))
	}
	return errors.Join(errs...)
}

// validateTxnCommit is Kafka's check for transactional commits: laxer than
// validateCommit, a commit without member id or generation is accepted in any phase.
func (g *groupMetadata) validateTxnCommit(memberID string, instanceID *string, generation int32) error {
	if g.consumer != nil {
		if memberID == "" && generation < 0 {
			return nil
		}
		gerr, _ := g.validateConsumerCommit(CommitRequest{MemberID: memberID, InstanceID: instanceID, Generation: generation}, true)
		if gerr == nil && generation != g.consumer.members[memberID].epoch {
			gerr = ErrStaleMemberEpoch // no per-partition relaxation for transactions
		}
		return gerr
	}
	switch {
	case g.phase == Dead:
		return ErrCoordinatorNotAvailable
	case instanceID != nil && g.static[*instanceID] != memberID:
		return ErrFencedInstanceID
	case memberID != "" && g.members[memberID] == nil:
		return ErrUnknownMemberID
	case generation >= 0 && generation != g.generation:
		return ErrIllegalGeneration
	}
	return nil
}

// txnCommit handles a TxnOffsetCommit: the offsets are pending from the moment the
// write is issued (so that a marker racing the append finds them) and dropped again
// if the append fails.
func (g *groupMetadata) txnCommit(now time.Time, req TxnCommitRequest, reply func([]error)) {
	if err := g.validateTxnCommit(req.MemberID, req.InstanceID, req.Generation); err != nil {
		reply(sameError(len(req.Offsets), err))
		return
	}
	errs := make([]error, len(req.Offsets))
	records, accepted := g.offsetRecords(req.Offsets, now, errs)
	if len(records) == 0 {
		reply(errs)
		return
	}
	if g.txnOffsets == nil {
		g.txnOffsets = map[int64]map[TopicPartition]offsetAndMetadata{}
	}
	pending := g.txnOffsets[req.ProducerID]
	if pending == nil {
		pending = map[TopicPartition]offsetAndMetadata{}
		g.txnOffsets[req.ProducerID] = pending
	}
	for _, i := range accepted {
		o := req.Offsets[i]
		pending[TopicPartition{o.Topic, o.Partition}] = toOffset(o, now)
	}
	p := &txnProducer{id: req.ProducerID, epoch: req.ProducerEpoch}
	g.writes = append(g.writes, write{records: records, producer: p, done: func(err error) {
		if err != nil {
			g.dropTxnOffsets(req.ProducerID, req.Offsets, accepted)
		}
		for _, i := range accepted {
			errs[i] = err
		}
		reply(errs)
	}})
}

func (g *groupMetadata) dropTxnOffsets(pid int64, offsets []OffsetCommit, accepted []int) {
	pending := g.txnOffsets[pid]
	for _, i := range accepted {
		delete(pending, TopicPartition{offsets[i].Topic, offsets[i].Partition})
	}
	if len(pending) == 0 {
		delete(g.txnOffsets, pid)
	}
}

// hasPendingTxnOffset reports whether some transaction holds a pending offset of tp.
func (g *groupMetadata) hasPendingTxnOffset(tp TopicPartition) bool {
	for _, pending := range g.txnOffsets {
		if _, ok := pending[tp]; ok {
			return true
		}
	}
	return false
}

// completeTxn applies producer pid's marker to its pending offsets.
func (g *groupMetadata) completeTxn(pid int64, commit bool) {
	applyTxnMarker(g.txnOffsets, g.offsets, pid, commit)
}

// replayTxnMarker applies a marker met in replay to the loaded groups.
func replayTxnMarker(groups map[string]*loadedGroup, pid int64, commit bool) {
	for _, lg := range groups {
		applyTxnMarker(lg.txnOffsets, lg.offsets, pid, commit)
	}
}

// applyTxnMarker applies producer pid's marker to a group's pending offsets
// (txnOffsets): a commit makes them committed (offsets), and either marker drops
// them. The live group and the replay share it, so that they agree.
func applyTxnMarker(txnOffsets map[int64]map[TopicPartition]offsetAndMetadata, offsets map[TopicPartition]offsetAndMetadata, pid int64, commit bool) {
	pending, ok := txnOffsets[pid]
	if !ok {
		return
	}
	delete(txnOffsets, pid)
	if commit {
		maps.Copy(offsets, pending)
	}
}

// replayTxnBatch holds the offset records of transactional batch b pending.
func replayTxnBatch(groups map[string]*loadedGroup, pid int64, r decodedRecord) {
	if !r.isOffset || r.offset == nil {
		return // Runnel writes neither group metadata nor tombstones transactionally
	}
	lg := groups[r.group]
	if lg == nil {
		lg = &loadedGroup{offsets: map[TopicPartition]offsetAndMetadata{}}
		groups[r.group] = lg
	}
	if lg.txnOffsets == nil {
		lg.txnOffsets = map[int64]map[TopicPartition]offsetAndMetadata{}
	}
	if lg.txnOffsets[pid] == nil {
		lg.txnOffsets[pid] = map[TopicPartition]offsetAndMetadata{}
	}
	lg.txnOffsets[pid][r.tp] = *r.offset
}

// replayControl applies a control batch of the replay.
func replayControl(groups map[string]*loadedGroup, b recordbatch.Batch) {
	if t, _, ok := replica.ParseControl(b); ok {
		replayTxnMarker(groups, b.ProducerID(), t == replica.ControlCommit)
	}
}

// Header fields of a v2 batch that a transactional write stamps.
const (
	batchOffCRC        = 17
	batchOffAttributes = 21
	batchOffProducerID = 43
	batchOffEpoch      = 51
	batchOffSequence   = 53
)

// stampProducer makes b a transactional batch of p, sequence 0 (appendTxn sets the
// real one).
func stampProducer(b recordbatch.Batch, p *txnProducer) {
	attrs := uint16(b.Attributes()) | recordbatch.TransactionalFlag
	binary.BigEndian.PutUint16(b[batchOffAttributes:], attrs)
	binary.BigEndian.PutUint64(b[batchOffProducerID:], uint64(p.id))
	binary.BigEndian.PutUint16(b[batchOffEpoch:], uint16(p.epoch))
	binary.BigEndian.PutUint32(b[batchOffSequence:], 0)
	binary.BigEndian.PutUint32(b[batchOffCRC:], b.ComputeCRC())
}

// producerStater is implemented by logs that know their producers' sequences
// (ReplicaLog); an in-memory test log need not.
type producerStater interface {
	ProducerState(pid int64) (epoch int16, lastSeq int32, ok bool)
}

// ProducerState returns the epoch and last sequence of producer pid in the log.
func (r ReplicaLog) ProducerState(pid int64) (int16, int32, bool) {
	return r.P.Log().ProducerState(pid)
}

// appendWrites appends encoded writes; those with transactional batches are
// serialised per shard and get the sequence the log expects next of their producer,
// since the producer itself never writes to __consumer_offsets.
func (sh *shard) appendWrites(ctx context.Context, batches []byte, txn bool) error {
	if !txn {
		return appendError(sh.log.Append(ctx, batches))
	}
	sh.txnAppendMu.Lock()
	defer sh.txnAppendMu.Unlock()
	next := map[int64]int32{}
	for rest := batches; len(rest) > 0; {
		b, r, err := recordbatch.Next(rest, 0)
		if err != nil {
			return fmt.Errorf("%w: %v", ErrCoordinatorNotAvailable, err)
		}
		rest = r
		if !b.IsTransactional() {
			continue
		}
		pid := b.ProducerID()
		seq, ok := next[pid]
		if !ok {
			seq = sh.nextSequence(pid, b.ProducerEpoch())
		}
		binary.BigEndian.PutUint32(b[batchOffSequence:], uint32(seq))
		binary.BigEndian.PutUint32(b[batchOffCRC:], b.ComputeCRC())
		next[pid] = int32((int64(seq) + int64(b.LastOffsetDelta()) + 1) % (math.MaxInt32 + 1))
	}
	err := sh.log.Append(ctx, batches)
	if errors.Is(err, replica.ErrInvalidProducerEpoch) {
		return fmt.Errorf("%w: %v", ErrProducerFenced, err)
	}
	return appendError(err)
}

// nextSequence is the sequence the log accepts next from producer pid at epoch.
func (sh *shard) nextSequence(pid int64, epoch int16) int32 {
	ps, ok := sh.log.(producerStater)
	if !ok {
		return 0
	}
	e, last, known := ps.ProducerState(pid)
	if !known || e != epoch || last == math.MaxInt32 {
		return 0
	}
	return last + 1
}
