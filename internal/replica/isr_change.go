package replica

import (
	"context"
	"slices"
	"time"

	"github.com/runnel-io/runnel/internal/metadata"
)

// maybeShrinkIsr proposes to drop followers that have not caught up within maxLag, or
// that are behind on a full disk (diskFull). Called periodically for every partition
// this node leads.
func (m *Manager) maybeShrinkIsr(p *Partition, now time.Time, maxLag time.Duration, diskFull func(metadata.NodeID) bool) {
	p.leaderIsrLock.RLock()
	if p.leader != p.node || p.pendingISR != nil {
		p.leaderIsrLock.RUnlock()
		return
	}
	p.stateMu.Lock()
	drop := outOfSyncReplicas(p.isr, p.node, p.followers, p.log.LogEndOffset(), now.UnixMilli(), maxLag.Milliseconds(), diskFull)
	p.stateMu.Unlock()
	isr := p.isr
	p.leaderIsrLock.RUnlock()
	if len(drop) == 0 {
		return
	}
	newISR := slices.DeleteFunc(slices.Clone(isr), func(r metadata.NodeID) bool { return slices.Contains(drop, r) })
	m.logger.Info("shrinking ISR: followers are not caught up", "topic", p.tp.Topic, "partition", p.tp.Partition,
		"isr", isr, "new_isr", newISR, "out_of_sync", drop, "replica_lag_time_max", maxLag)
	m.metrics.isrShrinks.Add(1)
	m.proposeISR(p, newISR, false)
}

// maybeExpandIsr proposes to add a follower that has caught up.
func (m *Manager) maybeExpandIsr(p *Partition, follower metadata.NodeID) {
	p.leaderIsrLock.RLock()
	if p.leader != p.node || p.pendingISR != nil || slices.Contains(p.isr, follower) {
		p.leaderIsrLock.RUnlock()
		return
	}
	newISR := append(slices.Clone(p.isr), follower)
	isr := p.isr
	p.leaderIsrLock.RUnlock()
	m.logger.Info("expanding ISR: follower caught up", "topic", p.tp.Topic, "partition", p.tp.Partition,
		"isr", isr, "new_isr", newISR, "follower", follower)
	m.metrics.isrExpands.Add(1)
	m.proposeISR(p, newISR, true)
}

// proposeISR sends one ISR change to the controller in the background. At most one
// change per partition is in flight (pendingISR). For an expansion the pending ISR
// counts toward the high watermark at once; for a shrink only once committed.
func (m *Manager) proposeISR(p *Partition, newISR []metadata.NodeID, expansion bool) {
	if m.opts.IsrChanger == nil {
		return
	}
	p.leaderIsrLock.Lock()
	if p.leader != p.node || p.pendingISR != nil {
		p.leaderIsrLock.Unlock()
		return
	}
	if expansion {
		p.pendingISR = newISR
	} else {
		p.pendingISR = p.isr // shrinking: keep counting the current ISR until committed
	}
	leader, epoch, pepoch := p.leader, p.leaderEpoch, p.partitionEpoch
	p.leaderIsrLock.Unlock()
	m.goTracked(func(ctx context.Context) {
		ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		st, err := m.opts.IsrChanger.AlterPartition(ctx, p.tp, leader, epoch, pepoch, newISR)
		p.leaderIsrLock.Lock()
		if err == nil && st.LeaderEpoch == p.leaderEpoch && st.PartitionEpoch > p.partitionEpoch {
			p.isr, p.partitionEpoch = st.ISR, st.PartitionEpoch
		}
		p.pendingISR = nil
		p.leaderIsrLock.Unlock()
		if err != nil {
			m.logger.Warn("ISR change rejected; will retry after the next metadata update",
				"topic", p.tp.Topic, "partition", p.tp.Partition, "new_isr", newISR, "err", err)
			return
		}
		p.leaderIsrLock.RLock()
		if p.leader == p.node {
			p.maybeIncrementHWLocked()
		}
		p.leaderIsrLock.RUnlock()
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
