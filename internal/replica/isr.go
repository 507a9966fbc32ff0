package replica

import (
	"context"
	"time"

	"github.com/runnel-io/runnel/internal/log"
	"github.com/runnel-io/runnel/internal/metadata"
)

// IsrChanger sends ISR changes to the active controller (Kafka's AlterPartition). The
// server implements it; the replica layer never talks to Raft itself.
type IsrChanger interface {
	AlterPartition(ctx context.Context, tp metadata.TopicPartition, leader metadata.NodeID, leaderEpoch, partitionEpoch int32, newISR []metadata.NodeID) (metadata.Partition, error)
}

// RecordFollowerFetch records, on the leader, that follower fetches from fetchOffset
// (its log end: it holds every offset below, durably) in a fetch naming
// currentLeaderEpoch (-1: unchecked); logStartOffset is the follower's log start the
// fetch sent (-1: unknown), which the preferred read replica rule needs. Call it once per fetch request, before reading:
// it updates what the leader knows of the follower (Kafka's updateFollowerFetchState),
// advances the high watermark, and may propose the follower for the ISR. It fails,
// recording nothing, as a read of the same fetch would: ErrNotLeader,
// ErrFencedLeaderEpoch, ErrUnknownLeaderEpoch, log.ErrOffsetOutOfRange.
func (p *Partition) RecordFollowerFetch(follower metadata.NodeID, fetchOffset, logStartOffset int64, currentLeaderEpoch int32, now time.Time) error {
	p.leaderIsrLock.RLock()
	if !p.rs.isLeader() {
		p.leaderIsrLock.RUnlock()
		return ErrNotLeader
	}
	if err := checkEpoch(currentLeaderEpoch, p.rs.leaderEpoch); err != nil {
		p.leaderIsrLock.RUnlock()
		return err
	}
	leaderEnd := p.log.LogEndOffset()
	if fetchOffset < p.log.LogStartOffset() || fetchOffset > leaderEnd {
		p.leaderIsrLock.RUnlock()
		return log.ErrOffsetOutOfRange
	}
	p.stateMu.Lock()
	expand := p.rs.recordFetch(follower, fetchOffset, leaderEnd, p.hw.Load(), now.UnixMilli(), p.maxLagMs)
	p.rs.followers[follower].logStartOffset = logStartOffset
	p.stateMu.Unlock()
	p.maybeIncrementHWLocked()
	p.leaderIsrLock.RUnlock()
	if expand && p.onFollowerFetch != nil {
		p.onFollowerFetch(p, follower)
	}
	return nil
}
