package replica

import (
	"context"
	"slices"
	"time"

	"github.com/runnel-io/runnel/internal/metadata"
)

// IsrChanger sends ISR changes to the active controller (Kafka's AlterPartition). The
// server implements it; the replica layer never talks to Raft itself.
type IsrChanger interface {
	AlterPartition(ctx context.Context, tp metadata.TopicPartition, leader metadata.NodeID, leaderEpoch, partitionEpoch int32, newISR []metadata.NodeID) (metadata.Partition, error)
}

// isCaughtUp is Kafka's ReplicaState.isCaughtUp: a follower is in sync if it has
// reached the leader's log end at some point within maxLag.
func isCaughtUp(f *followerState, leaderEnd int64, nowMs, maxLagMs int64) bool {
	return f.logEndOffset >= leaderEnd || nowMs-f.lastCaughtUpTimeMs <= maxLagMs
}

// outOfSyncReplicas returns the ISR members (other than the leader) that are no longer
// caught up. A follower whose disk is full (diskFull, from the metadata; nil for none)
// is out of sync as soon as it is behind the leader's log end: its appends fail, so
// waiting replica.lag.time.max.ms for it would only hold back acks=all. Pure: time is
// an argument.
func outOfSyncReplicas(isr []metadata.NodeID, self metadata.NodeID, followers map[metadata.NodeID]*followerState, leaderEnd, nowMs, maxLagMs int64, diskFull func(metadata.NodeID) bool) []metadata.NodeID {
	var out []metadata.NodeID
	for _, r := range isr {
		if r == self {
			continue
		}
		f := followers[r]
		if f == nil || !isCaughtUp(f, leaderEnd, nowMs, maxLagMs) || (diskFull != nil && diskFull(r) && f.logEndOffset < leaderEnd) {
			out = append(out, r)
		}
	}
	return out
}

// canJoinISR reports whether a follower outside the ISR may be added: it has every
// record up to the high watermark and at least the start of the current leader epoch,
// so it holds everything acknowledged in this epoch (Kafka's isFollowerInSync).
func canJoinISR(f *followerState, hw, epochStartOffset int64) bool {
	return f.logEndOffset >= hw && f.logEndOffset >= epochStartOffset
}

// updateFollowerFetchState records a follower's fetch: fetchOffset is its log end
// offset (everything below is durable on the follower). It returns whether the ISR
// should be expanded to include the follower.
func (p *Partition) updateFollowerFetchState(id metadata.NodeID, fetchOffset int64, now time.Time) (expand bool) {
	p.leaderIsrLock.RLock()
	defer p.leaderIsrLock.RUnlock()
	if p.leader != p.node {
		return false
	}
	nowMs := now.UnixMilli()
	leaderEnd := p.log.LogEndOffset()
	p.stateMu.Lock()
	f := p.followers[id]
	if f == nil {
		f = &followerState{logEndOffset: -1}
		p.followers[id] = f
	}
	switch {
	case fetchOffset >= leaderEnd:
		f.lastCaughtUpTimeMs = nowMs
	case fetchOffset >= f.lastFetchLeaderEnd:
		f.lastCaughtUpTimeMs = max(f.lastCaughtUpTimeMs, f.lastFetchTimeMs)
	}
	f.logEndOffset, f.lastFetchTimeMs, f.lastFetchLeaderEnd = fetchOffset, nowMs, leaderEnd
	inISR := slices.Contains(p.isr, id) || slices.Contains(p.pendingISR, id)
	expand = !inISR && slices.Contains(p.replicas, id) && canJoinISR(f, p.hw.Load(), p.epochStartOffset)
	p.stateMu.Unlock()
	p.maybeIncrementHWLocked()
	return expand
}
