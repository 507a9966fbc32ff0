package replica

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/runnel-io/runnel/internal/invariants"
	"github.com/runnel-io/runnel/internal/log"
	"github.com/runnel-io/runnel/internal/metadata"
)

// Partition is one local replica of a partition (Kafka's cluster.Partition).
//
// Locks, in this order (never two Partitions' at once):
//
//	leaderIsrLock (RW) -> stateMu -> waitersMu, and the log's own locks inside either.
//
// leaderIsrLock guards the role in rs (everything but rs.followers): a role change
// takes it for writing; every write to the log (a leader's append, a follower's append,
// a truncation) holds it for reading, so a role change never interleaves with one.
// stateMu guards rs.followers and serialises the writes of hw, which go through
// setHighWatermarkLocked alone.
type Partition struct {
	// Immutable after construction.
	tp     metadata.TopicPartition
	node   metadata.NodeID
	log    *log.Log
	logger *slog.Logger
	// maxLagMs is replica.lag.time.max.ms: the ISR rules' lag window.
	maxLagMs int64
	// leaderThrottled and followerThrottled: this node's replica is listed in the
	// topic's leader/follower.replication.throttled.replicas (throttle.go). Set on
	// every image.
	leaderThrottled, followerThrottled atomic.Bool
	// onFollowerFetch is called (no lock held) when a follower's fetch shows it may
	// join the ISR. Set once by the Manager before the partition is shared.
	onFollowerFetch func(p *Partition, follower metadata.NodeID)
	// promoteEpoch is 1 + the leader epoch from which this promoted mirror partition
	// is writable, 0 when it is not one (mirror.go). Set by the Manager on every image.
	promoteEpoch atomic.Int32
	// mirror is the cluster-link state of a mirror partition (mirror.go).
	mirror mirrorState

	// hw is the high watermark: consumers never see offsets at or above it. Read
	// lock-free; written only by setHighWatermarkLocked.
	// Invariant (leader): log start <= hw <= min(log end of every maximal-ISR member),
	// and hw only grows within a leader epoch. Invariant (follower): hw <= the leader's
	// high watermark and hw <= its own log end.
	hw atomic.Int64

	leaderIsrLock sync.RWMutex
	stateMu       sync.Mutex
	// rs is the replication state (core.go): its role under leaderIsrLock, its
	// followers under stateMu.
	rs replicationState

	waitersMu sync.Mutex
	// waiters are woken (non-blocking send) whenever the high watermark moves: the
	// long polls of consumers and the acks=all produces waiting for the ISR.
	waiters map[chan struct{}]struct{}
	// endWaiters are woken whenever the high watermark or the log end moves: the long
	// polls of followers, which read up to the log end (WatchLogEnd). An append wakes
	// only these: a consumer or a producer woken by it would find the high watermark
	// where it was and park again.
	endWaiters map[chan struct{}]struct{}
	// notifiedAt is when waiters were last woken (Unix ns; 0: never), for the fetch
	// breakdown's wake stage: how long a woken long poll took to run again.
	notifiedAt atomic.Int64
}

func newPartition(tp metadata.TopicPartition, node metadata.NodeID, l *log.Log, maxLag time.Duration, logger *slog.Logger) *Partition {
	p := &Partition{
		tp:         tp,
		node:       node,
		log:        l,
		maxLagMs:   maxLag.Milliseconds(),
		logger:     logger.With("topic", tp.Topic, "partition", tp.Partition),
		rs:         replicationState{self: node, leader: metadata.NoLeader, followers: map[metadata.NodeID]*followerState{}},
		waiters:    map[chan struct{}]struct{}{},
		endWaiters: map[chan struct{}]struct{}{},
	}
	p.hw.Store(l.LogStartOffset())
	return p
}

// TopicPartition names the partition.
func (p *Partition) TopicPartition() metadata.TopicPartition { return p.tp }

// Log is the partition's local log.
func (p *Partition) Log() *log.Log { return p.log }

// HighWatermark is the offset below which records are committed.
func (p *Partition) HighWatermark() int64 { return p.hw.Load() }

// IsLeader reports whether this node leads the partition.
func (p *Partition) IsLeader() bool {
	p.leaderIsrLock.RLock()
	defer p.leaderIsrLock.RUnlock()
	return p.rs.isLeader()
}

// LeaderEpoch is the current leader epoch known to this replica.
func (p *Partition) LeaderEpoch() int32 {
	p.leaderIsrLock.RLock()
	defer p.leaderIsrLock.RUnlock()
	return p.rs.leaderEpoch
}

// State is a snapshot of the replication state, for metrics and admin.
type State struct {
	Leader         metadata.NodeID
	LeaderEpoch    int32
	ISR            []metadata.NodeID
	Replicas       []metadata.NodeID
	HighWatermark  int64
	LogStartOffset int64
	LogEndOffset   int64
	MinISR         int32
	// FollowerLag is, on the leader, how many offsets each follower is behind the log
	// end (as of its last fetch); nil on a follower.
	FollowerLag map[metadata.NodeID]int64
}

// State returns a snapshot of the partition's replication state.
func (p *Partition) State() State {
	p.leaderIsrLock.RLock()
	defer p.leaderIsrLock.RUnlock()
	st := State{
		Leader: p.rs.leader, LeaderEpoch: p.rs.leaderEpoch, ISR: p.rs.isr, Replicas: p.rs.replicas,
		HighWatermark: p.hw.Load(), LogStartOffset: p.log.LogStartOffset(),
		LogEndOffset: p.log.LogEndOffset(), MinISR: p.rs.minISR,
	}
	if p.rs.isLeader() {
		p.stateMu.Lock()
		st.FollowerLag = make(map[metadata.NodeID]int64, len(p.rs.followers))
		for id, f := range p.rs.followers {
			st.FollowerLag[id] = max(0, st.LogEndOffset-max(f.logEndOffset, 0))
		}
		p.stateMu.Unlock()
	}
	return st
}

// applyState installs the controller's view of the partition. It returns whether this
// node became leader with this change. checkpointHW is the high watermark this node
// wrote before it restarted (-1: none): a new leader starts from it if its own is lower.
func (p *Partition) applyState(st metadata.Partition, minISR int32, syncOnAppend bool, checkpointHW int64) bool {
	p.leaderIsrLock.Lock()
	defer p.leaderIsrLock.Unlock()
	p.stateMu.Lock()
	becameLeader := p.rs.become(st, minISR, syncOnAppend, p.log.LogEndOffset(), time.Now().UnixMilli())
	if becameLeader {
		if hw, ok := leaderStartHighWatermark(checkpointHW, p.log.LogStartOffset(), p.log.LogEndOffset(), p.hw.Load()); ok {
			p.setHighWatermarkLocked(hw, hwLeaderStart)
		}
		p.sealPromotedLocked()
	}
	p.stateMu.Unlock()
	if p.rs.isLeader() {
		p.maybeIncrementHWLocked()
	} else {
		// Producers and fetches waiting on this replica as leader must notice.
		defer p.notifyWaiters()
	}
	return becameLeader
}

// leaderEndLocked is the leader's own contribution to the high watermark: its durable
// end when every acknowledged batch must be fsynced, its log end otherwise. Caller
// holds leaderIsrLock.
func (p *Partition) leaderEndLocked() int64 {
	if p.rs.syncOnAppend {
		return p.log.RecoveryPoint()
	}
	return p.log.LogEndOffset()
}

// maybeIncrementHWLocked raises the high watermark to what the maximal ISR holds.
// Caller holds leaderIsrLock (either mode), not stateMu.
func (p *Partition) maybeIncrementHWLocked() {
	p.stateMu.Lock()
	hw, raised := p.rs.advanceHighWatermark(p.hw.Load(), p.leaderEndLocked())
	if raised {
		p.setHighWatermarkLocked(hw, hwLeaderAdvance)
	}
	p.stateMu.Unlock()
	if raised {
		p.notifyWaiters()
	}
}

// hwChange says why the high watermark is written, for its invariant checks.
type hwChange uint8

const (
	// hwLeaderAdvance: the maximal ISR holds more (advanceHighWatermark).
	hwLeaderAdvance hwChange = iota
	// hwLeaderStart: a new leader resumes from its checkpointed high watermark.
	hwLeaderStart
	// hwFollower: a follower adopts its leader's (followerHighWatermark).
	hwFollower
	// hwTruncate: a follower cut its divergent tail below its high watermark.
	hwTruncate
)

// setHighWatermarkLocked is the one writer of the high watermark. Caller holds stateMu
// (inside leaderIsrLock, either mode). In invariants builds it checks the rules that
// make the high watermark safe to expose.
func (p *Partition) setHighWatermarkLocked(hw int64, why hwChange) {
	if invariants.Enabled {
		p.checkHighWatermarkLocked(hw, why)
	}
	p.hw.Store(hw)
	// Retention must never delete what consumers have not been allowed to see.
	p.log.SetHighWatermark(hw)
}

func (p *Partition) checkHighWatermarkLocked(hw int64, why hwChange) {
	old, leo := p.hw.Load(), p.log.LogEndOffset()
	switch why {
	case hwLeaderAdvance:
		if !p.rs.isLeader() || hw < old {
			invariants.Failf("partition %s/%d: leader high watermark moved from %d to %d (leader %v of epoch %d)",
				p.tp.Topic, p.tp.Partition, old, hw, p.rs.isLeader(), p.rs.leaderEpoch)
		}
		if end := p.leaderEndLocked(); hw > end {
			invariants.Failf("partition %s/%d: high watermark %d above the leader's end %d", p.tp.Topic, p.tp.Partition, hw, end)
		}
		for _, r := range p.rs.maximalISR() {
			if f := p.rs.followers[r]; r != p.node && (f == nil || f.logEndOffset < hw) {
				invariants.Failf("partition %s/%d: high watermark %d above ISR member %d's log end (%+v)", p.tp.Topic, p.tp.Partition, hw, r, f)
			}
		}
	case hwLeaderStart:
		if !p.rs.isLeader() || hw > leo || hw < old {
			invariants.Failf("partition %s/%d: new leader's high watermark %d (was %d, log end %d)", p.tp.Topic, p.tp.Partition, hw, old, leo)
		}
	case hwFollower, hwTruncate:
		if p.rs.isLeader() || hw > leo {
			invariants.Failf("partition %s/%d: follower high watermark %d above its log end %d (leader %v)", p.tp.Topic, p.tp.Partition, hw, leo, p.rs.isLeader())
		}
	}
}

// addWaiter registers ch to be signalled when the high watermark moves.
func (p *Partition) addWaiter(ch chan struct{}) {
	p.waitersMu.Lock()
	p.waiters[ch] = struct{}{}
	p.waitersMu.Unlock()
}

func (p *Partition) removeWaiter(ch chan struct{}) {
	p.waitersMu.Lock()
	delete(p.waiters, ch)
	p.waitersMu.Unlock()
}

// notifyWaiters wakes every waiter: the high watermark moved (or the role changed).
func (p *Partition) notifyWaiters() {
	p.waitersMu.Lock()
	if len(p.waiters)+len(p.endWaiters) > 0 {
		p.notifiedAt.Store(time.Now().UnixNano())
	}
	wake(p.waiters)
	wake(p.endWaiters)
	p.waitersMu.Unlock()
}

// notifyLogEnd wakes the followers' long polls: the log end moved.
func (p *Partition) notifyLogEnd() {
	p.waitersMu.Lock()
	if len(p.endWaiters) > 0 {
		p.notifiedAt.Store(time.Now().UnixNano())
	}
	wake(p.endWaiters)
	p.waitersMu.Unlock()
}

func wake(chs map[chan struct{}]struct{}) {
	for ch := range chs {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
}

// NotifiedAt is when the partition last woke its waiters (a high watermark or, with
// followers, a log end move), in Unix nanoseconds; 0 if never.
func (p *Partition) NotifiedAt() int64 { return p.notifiedAt.Load() }

// waitForHW blocks until the high watermark reaches offset, the partition loses
// leadership, or ctx ends.
func (p *Partition) waitForHW(ctx context.Context, offset int64) error {
	if p.hw.Load() >= offset {
		return nil
	}
	ch := make(chan struct{}, 1)
	p.addWaiter(ch)
	defer p.removeWaiter(ch)
	for {
		if p.hw.Load() >= offset {
			return nil
		}
		if !p.IsLeader() {
			return ErrNotLeader
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return ErrTimeout
		case <-time.After(time.Second):
			// Re-check leadership periodically; a leadership change does not move the HW.
		}
	}
}
