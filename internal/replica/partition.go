package replica

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/runnel-io/runnel/internal/log"
	"github.com/runnel-io/runnel/internal/metadata"
)

// Partition is one local replica of a partition (Kafka's cluster.Partition).
type Partition struct {
	// Immutable after construction.
	tp     metadata.TopicPartition
	node   metadata.NodeID
	log    *log.Log
	logger *slog.Logger

	// hw is the high watermark: consumers never see offsets at or above it.
	// Invariant: log.LogStartOffset() <= hw <= min(durable end of every ISR member).
	// Only grows while this node leads the current epoch. Written under stateMu,
	// read lock-free.
	hw atomic.Int64

	// leaderIsrLock guards the role fields below. Appends take it for reading, so a
	// leadership change never interleaves with an append (Kafka's leaderIsrUpdateLock).
	leaderIsrLock  sync.RWMutex
	leader         metadata.NodeID
	leaderEpoch    int32
	partitionEpoch int32
	replicas       []metadata.NodeID
	isr            []metadata.NodeID
	minISR         int32
	// pendingISR is the ISR proposed to the controller and not yet confirmed (nil when
	// none is in flight). The high watermark counts the union of isr and pendingISR
	// (Kafka's "maximal ISR"), so an expansion is safe before it commits and a shrink
	// takes effect only once it has.
	pendingISR []metadata.NodeID
	// epochStartOffset is the log end offset when this node became leader of the
	// current epoch; a follower joins the ISR only once it has reached it.
	epochStartOffset int64
	// syncOnAppend: the topic's flush policy fsyncs every acknowledged batch, so the
	// leader only counts durable offsets toward the high watermark.
	syncOnAppend bool

	// stateMu guards followers and serialises high watermark updates.
	stateMu   sync.Mutex
	followers map[metadata.NodeID]*followerState

	// onFollowerFetch is called (no lock held) when a follower's fetch shows it may
	// rejoin the ISR. Set once by the Manager before the partition is shared.
	onFollowerFetch func(p *Partition, follower metadata.NodeID)

	waitersMu sync.Mutex
	// waiters are woken (non-blocking send) whenever the high watermark moves.
	waiters map[chan struct{}]struct{}
}

// followerState is what the leader knows of one follower (Kafka's ReplicaState).
type followerState struct {
	// logEndOffset is the follower's fetch offset: it holds every offset below, durably.
	logEndOffset       int64
	lastCaughtUpTimeMs int64
	lastFetchTimeMs    int64
	// lastFetchLeaderEnd is the leader's log end at the follower's previous fetch.
	lastFetchLeaderEnd int64
}

func newPartition(tp metadata.TopicPartition, node metadata.NodeID, l *log.Log, logger *slog.Logger) *Partition {
	p := &Partition{
		tp:        tp,
		node:      node,
		log:       l,
		logger:    logger.With("topic", tp.Topic, "partition", tp.Partition),
		leader:    metadata.NoLeader,
		followers: map[metadata.NodeID]*followerState{},
		waiters:   map[chan struct{}]struct{}{},
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
	return p.leader == p.node
}

// LeaderEpoch is the current leader epoch known to this replica.
func (p *Partition) LeaderEpoch() int32 {
	p.leaderIsrLock.RLock()
	defer p.leaderIsrLock.RUnlock()
	return p.leaderEpoch
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
		Leader: p.leader, LeaderEpoch: p.leaderEpoch, ISR: p.isr, Replicas: p.replicas,
		HighWatermark: p.hw.Load(), LogStartOffset: p.log.LogStartOffset(),
		LogEndOffset: p.log.LogEndOffset(), MinISR: p.minISR,
	}
	if p.leader == p.node {
		p.stateMu.Lock()
		st.FollowerLag = make(map[metadata.NodeID]int64, len(p.followers))
		for id, f := range p.followers {
			st.FollowerLag[id] = max(0, st.LogEndOffset-max(f.logEndOffset, 0))
		}
		p.stateMu.Unlock()
	}
	return st
}

// applyState installs the controller's view of the partition. It returns whether this
// node became leader with this change.
func (p *Partition) applyState(st metadata.Partition, minISR int32, syncOnAppend bool, checkpointHW int64) bool {
	p.leaderIsrLock.Lock()
	defer p.leaderIsrLock.Unlock()
	wasLeader := p.leader == p.node
	epochChanged := p.leaderEpoch != st.LeaderEpoch
	p.leader, p.leaderEpoch, p.partitionEpoch = st.Leader, st.LeaderEpoch, st.PartitionEpoch
	p.replicas, p.isr = st.Replicas, st.ISR
	p.pendingISR = nil
	p.minISR, p.syncOnAppend = minISR, syncOnAppend
	becameLeader := st.Leader == p.node && (!wasLeader || epochChanged)
	if becameLeader {
		p.stateMu.Lock()
		p.epochStartOffset = p.log.LogEndOffset()
		nowMs := time.Now().UnixMilli()
		p.followers = map[metadata.NodeID]*followerState{}
		for _, r := range st.Replicas {
			if r != p.node {
				// A new leader gives every follower a full lag window to catch up
				// before it may be dropped from the ISR (Kafka resets ReplicaState).
				p.followers[r] = &followerState{logEndOffset: -1, lastCaughtUpTimeMs: nowMs}
			}
		}
		hw := min(max(checkpointHW, p.log.LogStartOffset()), p.log.LogEndOffset())
		if hw > p.hw.Load() {
			p.hw.Store(hw)
		}
		p.stateMu.Unlock()
	}
	if st.Leader == p.node {
		p.maybeIncrementHWLocked()
	} else {
		// Producers and fetches waiting on this replica as leader must notice.
		defer p.notifyWaiters()
	}
	return becameLeader
}

// leaderEndLocked is the leader's own contribution to the high watermark: its durable
// end when every acknowledged batch must be fsynced, its log end otherwise.
func (p *Partition) leaderEndLocked() int64 {
	if p.syncOnAppend {
		return p.log.RecoveryPoint()
	}
	return p.log.LogEndOffset()
}

// maybeIncrementHWLocked raises the high watermark to the minimum end offset over the
// ISR. Caller holds leaderIsrLock (read or write).
func (p *Partition) maybeIncrementHWLocked() {
	p.stateMu.Lock()
	newHW := highWatermark(p.leaderEndLocked(), p.node, p.maximalISRLocked(), p.followers)
	raised := false
	if newHW > p.hw.Load() {
		p.hw.Store(newHW)
		// Retention must never delete what consumers have not been allowed to see.
		p.log.SetHighWatermark(newHW)
		raised = true
	}
	p.stateMu.Unlock()
	if raised {
		p.notifyWaiters()
	}
}

// maximalISRLocked is the ISR plus any member a pending change adds.
func (p *Partition) maximalISRLocked() []metadata.NodeID {
	if p.pendingISR == nil {
		return p.isr
	}
	out := append([]metadata.NodeID(nil), p.isr...)
	for _, r := range p.pendingISR {
		if !metadata.Contains(out, r) {
			out = append(out, r)
		}
	}
	return out
}

// highWatermark is the minimum of the leader's end and every other ISR member's log end
// offset. A follower the leader has not heard from yet counts as -1 (holds the HW).
func highWatermark(leaderEnd int64, self metadata.NodeID, isr []metadata.NodeID, followers map[metadata.NodeID]*followerState) int64 {
	hw := leaderEnd
	for _, r := range isr {
		if r == self {
			continue
		}
		f := followers[r]
		if f == nil {
			return -1
		}
		hw = min(hw, f.logEndOffset)
	}
	return hw
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

func (p *Partition) notifyWaiters() {
	p.waitersMu.Lock()
	for ch := range p.waiters {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
	p.waitersMu.Unlock()
}

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
