package replica

import (
	"context"
	"errors"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/runnel-io/runnel/internal/metadata"
)

// maybeShrinkIsr proposes to drop followers that have not caught up within maxLag, or
// that are behind on a full disk (diskFull). Called periodically for every partition
// this node leads.
func (m *Manager) maybeShrinkIsr(p *Partition, now time.Time, maxLag time.Duration, diskFull func(metadata.NodeID) bool) {
	p.leaderIsrLock.RLock()
	p.stateMu.Lock()
	newISR, drop := p.rs.shrinkISR(p.log.LogEndOffset(), now.UnixMilli(), maxLag.Milliseconds(), diskFull)
	p.stateMu.Unlock()
	isr := p.rs.isr
	p.leaderIsrLock.RUnlock()
	if newISR == nil {
		return
	}
	m.logger.Info("shrinking ISR: followers are not caught up", "topic", p.tp.Topic, "partition", p.tp.Partition,
		"isr", isr, "new_isr", newISR, "out_of_sync", drop, "replica_lag_time_max", maxLag)
	m.metrics.isrShrinks.Add(1)
	m.proposeISR(p, newISR)
}

// maybeExpandIsr proposes to add a follower that has caught up.
func (m *Manager) maybeExpandIsr(p *Partition, follower metadata.NodeID) {
	p.leaderIsrLock.RLock()
	newISR := p.rs.expandISR(follower)
	isr := p.rs.isr
	p.leaderIsrLock.RUnlock()
	if newISR == nil {
		return
	}
	m.logger.Info("expanding ISR: follower caught up", "topic", p.tp.Topic, "partition", p.tp.Partition,
		"isr", isr, "new_isr", newISR, "follower", follower)
	m.metrics.isrExpands.Add(1)
	m.proposeISR(p, newISR)
}

// proposeISR sends one ISR change to the controller in the background. At most one
// change per partition is in flight (replicationState.pendingISR), and the high
// watermark counts the maximal ISR meanwhile. An answer that does not settle what the
// ISR is (a timeout, no controller) is retried with the same change, as Kafka's
// AlterPartitionManager does: the change may have been committed.
func (m *Manager) proposeISR(p *Partition, newISR []metadata.NodeID) {
	if m.opts.IsrChanger == nil {
		return
	}
	p.leaderIsrLock.Lock()
	seq := p.rs.isrChangeSent(newISR)
	leader, epoch, pepoch := p.rs.leader, p.rs.leaderEpoch, p.rs.partitionEpoch
	p.leaderIsrLock.Unlock()
	if seq == 0 {
		return
	}
	m.goTracked(func(ctx context.Context) {
		for backoff := 100 * time.Millisecond; ; backoff = min(2*backoff, 2*time.Second) {
			actx, cancel := context.WithTimeout(ctx, 10*time.Second)
			st, err := m.opts.IsrChanger.AlterPartition(actx, p.tp, leader, epoch, pepoch, newISR)
			cancel()
			answer := isrCommitted
			switch {
			case err == nil:
			case errors.Is(err, kerr.IneligibleReplica), errors.Is(err, kerr.InvalidRequest), errors.Is(err, kerr.UnknownTopicOrPartition):
				answer = isrRefused
			case errors.Is(err, kerr.FencedLeaderEpoch), errors.Is(err, kerr.InvalidUpdateVersion):
				answer = isrStale
			default:
				// Unknown outcome: ask again, while this change is still the one in
				// flight (an image applied meanwhile settles it) and the node runs.
				p.leaderIsrLock.RLock()
				current := p.rs.isrChangeSeq == seq && p.rs.pendingISR != nil
				p.leaderIsrLock.RUnlock()
				if !current || ctx.Err() != nil {
					return
				}
				m.logger.Warn("ISR change unanswered; asking the controller again", "topic", p.tp.Topic, "partition", p.tp.Partition,
					"new_isr", newISR, "retry_in", backoff, "err", err)
				select {
				case <-ctx.Done():
					return
				case <-time.After(backoff):
				}
				continue
			}
			var committed *metadata.Partition
			if err == nil {
				committed = &st
			}
			p.leaderIsrLock.Lock()
			p.rs.isrChangeAnswered(seq, answer, committed)
			p.leaderIsrLock.Unlock()
			if err != nil {
				m.logger.Warn("ISR change rejected; the next metadata update or check proposes again",
					"topic", p.tp.Topic, "partition", p.tp.Partition, "new_isr", newISR, "err", err)
				return
			}
			p.leaderIsrLock.RLock()
			if p.rs.isLeader() {
				p.maybeIncrementHWLocked()
			}
			p.leaderIsrLock.RUnlock()
			return
		}
	})
}

// isrLoop checks every partition this node leads for lagging followers.
func (m *Manager) isrLoop(ctx context.Context) {
	maxLag := m.opts.ReplicaLagTimeMax
	t := time.NewTicker(max(maxLag/2, 50*time.Millisecond))
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			m.mu.Lock()
			im := m.image
			m.mu.Unlock()
			diskFull := func(r metadata.NodeID) bool { return im.Brokers[r].DiskFull }
			for _, p := range m.Partitions() {
				m.maybeShrinkIsr(p, now, maxLag, diskFull)
			}
		}
	}
}
