package replica

import (
	"errors"

	"github.com/runnel-io/runnel/internal/log"
)

// errRoleChanged: a follower write was refused because the replica no longer follows
// the leader epoch the fetcher worked for (it leads now, or follows a newer epoch). The
// fetcher drops what it fetched; the new role's divergence check comes first.
var errRoleChanged = errors.New("the partition's role changed since the fetch was sent")

// followsLocked reports whether this replica follows leaderEpoch. Caller holds
// leaderIsrLock.
func (p *Partition) followsLocked(leaderEpoch int32) bool {
	return !p.rs.isLeader() && p.rs.leaderEpoch == leaderEpoch
}

// appendAsFollower appends batches fetched from the leader of leaderEpoch, as they are.
// It holds leaderIsrLock for reading, so it never lands after a role change.
func (p *Partition) appendAsFollower(records []byte, leaderEpoch int32) (log.AppendInfo, error) {
	p.leaderIsrLock.RLock()
	defer p.leaderIsrLock.RUnlock()
	if !p.followsLocked(leaderEpoch) {
		return log.AppendInfo{}, errRoleChanged
	}
	return p.log.AppendAsFollower(records)
}

// truncateAsFollower cuts the log's divergent tail at to (divergencePoint) before
// following the leader of leaderEpoch, and lowers the high watermark with it.
func (p *Partition) truncateAsFollower(to int64, leaderEpoch int32) error {
	p.leaderIsrLock.RLock()
	defer p.leaderIsrLock.RUnlock()
	if !p.followsLocked(leaderEpoch) {
		return errRoleChanged
	}
	if err := p.log.Truncate(to); err != nil {
		return err
	}
	p.stateMu.Lock()
	if hw := p.hw.Load(); hw > p.log.LogEndOffset() {
		p.setHighWatermarkLocked(p.log.LogEndOffset(), hwTruncate)
	}
	p.stateMu.Unlock()
	return nil
}

// restartAsFollowerAt empties the log and restarts it at the leader's log start off:
// this replica was away while the leader deleted everything it has and more. Every
// offset below off was committed on the leader, so the high watermark starts there.
func (p *Partition) restartAsFollowerAt(off int64, leaderEpoch int32) error {
	p.leaderIsrLock.RLock()
	defer p.leaderIsrLock.RUnlock()
	if !p.followsLocked(leaderEpoch) {
		return errRoleChanged
	}
	if err := p.log.TruncateFullyAndStartAt(off); err != nil {
		return err
	}
	p.stateMu.Lock()
	p.setHighWatermarkLocked(off, hwTruncate)
	p.stateMu.Unlock()
	return nil
}

// adoptLeaderHighWatermark takes the leader's high watermark from a fetch answer
// (followerHighWatermark). A fetch of an earlier role must not touch the high
// watermark of the current one (a new leader maintains its own), so it is ignored then.
// A move wakes the waiters: consumers long-polling on this follower (KIP-392), whose
// records became readable (Kafka completes the delayed fetches of the partitions whose
// follower high watermark moved).
func (p *Partition) adoptLeaderHighWatermark(leaderHW int64, leaderEpoch int32) {
	p.leaderIsrLock.RLock()
	defer p.leaderIsrLock.RUnlock()
	if !p.followsLocked(leaderEpoch) {
		return
	}
	hw := followerHighWatermark(leaderHW, p.log.LogEndOffset())
	if hw < 0 {
		return
	}
	p.stateMu.Lock()
	moved := hw != p.hw.Load()
	p.setHighWatermarkLocked(hw, hwFollower)
	p.stateMu.Unlock()
	if moved {
		p.notifyWaiters()
	}
}
