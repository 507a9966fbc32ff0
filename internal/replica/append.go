package replica

import (
	"context"
	"errors"
	"time"

	"github.com/runnel-io/runnel/internal/log"
	"github.com/runnel-io/runnel/internal/metadata"
)

// AppendToLeader appends records (one or more v2 batches, stamped in place) as leader
// and returns once the write satisfies acks:
//
//   - acks=0 or 1: appended, and fsynced when the topic's flush policy asks for it
//     (the default: every acknowledged batch is durable, with group commit);
//   - acks=-1 (all): additionally every ISR member has it (the high watermark passed it),
//     and the ISR had at least min.insync.replicas members when it was appended.
//
// The append itself holds only the read side of leaderIsrLock; the fsync and the wait
// for followers hold no partition lock, so other producers proceed meanwhile and share
// the fsync (group commit).
func (p *Partition) AppendToLeader(ctx context.Context, records []byte, acks int16) (log.AppendInfo, error) {
	info, err := p.Append(records, acks)
	if err != nil {
		return info, err
	}
	return info, p.CompleteAppend(ctx, info, acks, nil)
}

// Append is the first half of AppendToLeader: validate and append to the log (page
// cache) as leader. It is quick and never waits for a disk or a follower, so the
// protocol layer can run the appends of one connection's requests strictly in order
// (an idempotent producer pipelines them and its sequence numbers depend on that
// order) while their fsyncs and replication waits overlap. CompleteAppend finishes.
func (p *Partition) Append(records []byte, acks int16) (log.AppendInfo, error) {
	if acks != 0 && acks != 1 && acks != -1 {
		return log.AppendInfo{}, ErrInvalidRequiredAcks
	}
	return p.appendAsLeader(records, acks)
}

// CompleteAppend is the second half of AppendToLeader: it makes the append durable per
// the flush policy and, for acks=-1, waits for the ISR. When st is not nil it gets how
// long each of the two waits took.
func (p *Partition) CompleteAppend(ctx context.Context, info log.AppendInfo, acks int16, st *AppendStages) error {
	return p.completeAppend(ctx, info, acks, st)
}

// AppendStages are how long the waits of CompleteAppend took: Flush, the fsync (the
// flush policy's, shared with the other appends of the same group commit; 0 when none
// was needed), and Replicate, the wait for the ISR to pass the append (acks=-1 only).
type AppendStages struct {
	Flush, Replicate time.Duration
}

// AppendTxnMarker appends a COMMIT or ABORT marker for producer pid as leader
// (WriteTxnMarkers) and returns once every ISR member has it, as for acks=-1 (Kafka
// writes markers with acks=all). Errors are log.AppendControl's and AppendToLeader's.
func (p *Partition) AppendTxnMarker(ctx context.Context, t log.ControlType, pid int64, epoch int16, coordinatorEpoch int32) (log.AppendInfo, error) {
	p.leaderIsrLock.RLock()
	if !p.rs.isLeader() {
		p.leaderIsrLock.RUnlock()
		return log.AppendInfo{}, ErrNotLeader
	}
	info, err := p.log.AppendControl(t, pid, epoch, coordinatorEpoch, p.rs.leaderEpoch)
	p.leaderIsrLock.RUnlock()
	if err != nil {
		return info, err
	}
	return info, p.completeAppend(ctx, info, -1, nil)
}

// completeAppend flushes, moves the high watermark and waits for acks.
func (p *Partition) completeAppend(ctx context.Context, info log.AppendInfo, acks int16, st *AppendStages) error {
	if !info.Duplicate && p.hasFollowers() {
		// Followers long-polling for new data wake on the log end moving.
		p.notifyLogEnd()
	}
	end := info.LastOffset + 1
	if p.log.NeedsFlush(info) || (info.Duplicate && p.log.RecoveryPoint() < end) {
		start := time.Now()
		err := p.log.Flush(end)
		if st != nil {
			st.Flush = time.Since(start)
		}
		if err != nil {
			return err
		}
	}
	p.leaderIsrLock.RLock()
	if p.rs.isLeader() {
		p.maybeIncrementHWLocked()
	}
	p.leaderIsrLock.RUnlock()
	if acks != -1 {
		return nil
	}
	start := time.Now()
	err := p.waitForHW(ctx, end)
	if st != nil {
		st.Replicate = time.Since(start)
	}
	if err != nil {
		return err
	}
	p.leaderIsrLock.RLock()
	short := int32(len(p.rs.isr)) < p.rs.minISR
	p.leaderIsrLock.RUnlock()
	if short {
		return ErrNotEnoughReplicasAfterAppend
	}
	return nil
}

// appendAsLeader appends to the log as leader of the current epoch, holding
// leaderIsrLock for reading so that no role change interleaves.
func (p *Partition) appendAsLeader(records []byte, acks int16) (log.AppendInfo, error) {
	p.leaderIsrLock.RLock()
	defer p.leaderIsrLock.RUnlock()
	if !p.rs.isLeader() {
		return log.AppendInfo{}, ErrNotLeader
	}
	if acks == -1 && int32(len(p.rs.isr)) < p.rs.minISR {
		return log.AppendInfo{}, ErrNotEnoughReplicas
	}
	return p.log.AppendAsLeader(records, p.rs.leaderEpoch)
}

// ReadOptions describe one partition of a fetch.
type ReadOptions struct {
	FetchOffset int64
	MaxBytes    int32
	// MinOneBatch returns a whole first batch even when it exceeds MaxBytes (KIP-74),
	// so a consumer always makes progress.
	MinOneBatch bool
	// CurrentLeaderEpoch from the client (KIP-320); -1 skips the check.
	CurrentLeaderEpoch int32
	// ReplicaID is the fetching follower's node id, or -1 for a consumer. A follower
	// reads up to the log end; its fetch is recorded by RecordFollowerFetch, not here.
	ReplicaID metadata.NodeID
	// ReadCommitted (IsolationLevel 1) stops a consumer's read at the last stable
	// offset and returns the aborted transactions of the range read.
	ReadCommitted bool
	// FromFollower lets a consumer (ReplicaID -1) read from this replica while it
	// follows: Kafka's fetchOnlyLeader is false for a consumer's Fetch v11+ (KIP-392,
	// whatever replica.selector.class is: a client reads from a follower only when a
	// leader sent it there). A follower serves up to its own high watermark, which it
	// learns from its leader and which never exceeds its log end: never past what the
	// leader had committed when it last answered this follower.
	FromFollower bool
}

// ReadResult is one partition's fetched range and the offsets a fetch response reports.
type ReadResult struct {
	Info             log.ReadInfo
	HighWatermark    int64
	LastStableOffset int64
	LogStartOffset   int64
	LogEndOffset     int64
	// AbortedTransactions overlap the range read (read_committed only): the client
	// drops their producers' batches below each marker.
	AbortedTransactions []log.AbortedTxn
	// Follower says this replica answered as a follower (ReadOptions.FromFollower), its
	// high watermark and last stable offset its own.
	Follower bool
}

// Read returns the batches at o.FetchOffset. Consumers read below the high watermark
// (read_committed: below the last stable offset); followers read up to the log end. An
// offset between that bound and the log end is valid and yields no records; one past
// the log end is log.ErrOffsetOutOfRange (on a follower too, as Kafka: the consumer
// then goes back to the leader). Read only reads: a long-polling fetch may call it
// several times for one request. On a replica that does not lead, only a consumer's
// read with FromFollower is served; anything else is ErrNotLeader.
func (p *Partition) Read(o ReadOptions) (ReadResult, error) {
	p.leaderIsrLock.RLock()
	leading, epoch := p.rs.isLeader(), p.rs.leaderEpoch
	p.leaderIsrLock.RUnlock()
	if !leading && (!o.FromFollower || o.ReplicaID >= 0) {
		return ReadResult{}, ErrNotLeader
	}
	// On a follower the epoch is the leader epoch it follows (Kafka checks the
	// consumer's against it just the same): an older one is fenced, a newer one is
	// not known here yet and the client retries.
	if err := checkEpoch(o.CurrentLeaderEpoch, epoch); err != nil {
		return ReadResult{}, err
	}
	// A follower's high watermark is its leader's as of the last fetch answer, capped
	// by its own log end when stored (followerHighWatermark): everything below it was
	// committed, so a follower never exposes what a leader could still lose.
	hw := p.hw.Load()
	res := ReadResult{
		HighWatermark: hw, LastStableOffset: p.log.LastStableOffset(hw),
		LogStartOffset: p.log.LogStartOffset(), LogEndOffset: p.log.LogEndOffset(),
		Follower: !leading,
	}
	maxOffset := hw
	if o.ReplicaID >= 0 {
		maxOffset = res.LogEndOffset
	} else if o.ReadCommitted {
		maxOffset = res.LastStableOffset
	}
	if o.FetchOffset < res.LogStartOffset || o.FetchOffset > res.LogEndOffset {
		return res, log.ErrOffsetOutOfRange
	}
	if o.FetchOffset >= maxOffset {
		return res, nil
	}
	read := p.log.Read
	if o.ReplicaID >= 0 {
		// A follower reads on past a damaged range of this replica: it may hold the
		// range intact, and must catch up to take the leadership over (log.ReadForReplica).
		read = p.log.ReadForReplica
	}
	info, err := read(o.FetchOffset, o.MaxBytes, maxOffset, o.MinOneBatch)
	if err != nil {
		return res, err
	}
	res.Info = info
	if o.ReadCommitted && o.ReplicaID < 0 {
		res.AbortedTransactions = p.log.AbortedTransactions(o.FetchOffset, maxOffset)
	}
	return res, nil
}

// OffsetSnapshot is what a fetch response reports of this leader's offsets, without
// reading (Kafka's fetchOffsetSnapshot): the answer to a consumer sent to a preferred
// read replica (KIP-392). Errors: ErrNotLeader when this replica no longer leads, and
// the epoch check's as Read.
func (p *Partition) OffsetSnapshot(currentLeaderEpoch int32) (ReadResult, error) {
	p.leaderIsrLock.RLock()
	leading, epoch := p.rs.isLeader(), p.rs.leaderEpoch
	p.leaderIsrLock.RUnlock()
	if !leading {
		return ReadResult{}, ErrNotLeader
	}
	if err := checkEpoch(currentLeaderEpoch, epoch); err != nil {
		return ReadResult{}, err
	}
	hw := p.hw.Load()
	return ReadResult{
		HighWatermark: hw, LastStableOffset: p.log.LastStableOffset(hw),
		LogStartOffset: p.log.LogStartOffset(), LogEndOffset: p.log.LogEndOffset(),
	}, nil
}

func checkEpoch(requested, current int32) error {
	switch {
	case requested < 0 || requested == current:
		return nil
	case requested < current:
		return ErrFencedLeaderEpoch
	default:
		return ErrUnknownLeaderEpoch
	}
}

// IsRetriable reports errors a client fixes by refreshing metadata and retrying.
func IsRetriable(err error) bool {
	return errors.Is(err, ErrNotLeader) || errors.Is(err, ErrNotEnoughReplicas) ||
		errors.Is(err, ErrUnknownLeaderEpoch)
}

// hasFollowers reports whether other replicas fetch from this one.
func (p *Partition) hasFollowers() bool {
	p.leaderIsrLock.RLock()
	defer p.leaderIsrLock.RUnlock()
	return len(p.rs.replicas) > 1
}
