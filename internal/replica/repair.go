package replica

import (
	"slices"

	"github.com/runnel-io/runnel/internal/log"
	"github.com/runnel-io/runnel/internal/metadata"
)

// Repair of a damaged replica (a range of its log failed its CRC: log/damage.go).
//
// The node reports its damaged replicas in every heartbeat (Manager.Damaged); the
// controller then moves a damaged leader's leadership to an intact in-sync replica
// and takes the damaged replica out of the ISR (controller/degraded.go). Only then
// does the replica, now a follower outside the ISR, repair itself: it truncates its
// log to the first damaged offset (the quarantined copy of the segment stays) and
// fetches from there, so that its bytes become the leader's again, checked by CRC on
// the way in as every fetched batch is. Its next heartbeat reports no damage, and its
// leader brings it back into the ISR once it has caught up, as for any follower.
//
// The order matters: a follower in the ISR that truncated below the high watermark
// could be elected without records the ISR acknowledged. Outside the ISR it is never
// elected while an in-sync replica lives (unclean election aside), and the records it
// dropped are on the leader and the other in-sync replicas.
//
// A replica that is the partition's only copy in the ISR keeps leading with its
// damage: it serves what comes before it, answers KAFKA_STORAGE_ERROR at and past it
// to consumers, and serves followers past it (log.ReadForReplica) so that one holding
// the range intact can catch up and take over. With no intact copy anywhere the
// operator decides (runnel topic repair --accept-loss: log.DropDamaged).

// blockingDamage returns the damaged ranges of l that hold offsets (garbage between
// two batches holds none, blocks no read, and needs no repair from a replica).
func blockingDamage(l *log.Log) []log.DamagedRange {
	ds := l.Damaged()
	return slices.DeleteFunc(ds, func(d log.DamagedRange) bool { return d.Offsets() == 0 })
}

// repairDamagedAsFollower truncates a damaged follower's log to its first damaged
// offset once the replica is out of the ISR the controller published (see above), and
// lowers the high watermark with it. It reports whether it truncated; it does nothing
// for an intact replica, one still in the ISR, or one whose role changed.
func (p *Partition) repairDamagedAsFollower(leaderEpoch int32) (bool, error) {
	p.leaderIsrLock.RLock()
	defer p.leaderIsrLock.RUnlock()
	if !p.followsLocked(leaderEpoch) || slices.Contains(p.rs.isr, p.rs.self) || len(blockingDamage(p.log)) == 0 {
		return false, nil
	}
	if _, err := p.log.TruncateDamaged(); err != nil {
		return false, err
	}
	p.stateMu.Lock()
	if hw := p.hw.Load(); hw > p.log.LogEndOffset() {
		p.setHighWatermarkLocked(p.log.LogEndOffset(), hwTruncate)
	}
	p.stateMu.Unlock()
	return true, nil
}

// Damaged lists this node's replicas whose logs hold a damaged range that holds
// offsets, as the heartbeats report them (sorted by metadata.SortDamage; nil when
// none).
func (m *Manager) Damaged() []metadata.DamagedReplica {
	var out []metadata.DamagedReplica
	for _, p := range m.Partitions() {
		for _, d := range blockingDamage(p.log) {
			out = append(out, metadata.DamagedReplica{Topic: p.tp.Topic, Partition: p.tp.Partition,
				FirstOffset: d.FirstOffset, LastOffset: d.LastOffset, File: d.Segment})
		}
	}
	metadata.SortDamage(out)
	return out
}

// repairDamaged runs repairDamagedAsFollower for the fetcher's partitions; a replica
// it truncated fetches from its new log end in the same round.
func (f *Fetcher) repairDamaged(parts []*fetchState) {
	for _, s := range parts {
		repaired, err := s.p.repairDamagedAsFollower(s.leaderEpoch)
		switch {
		case err != nil:
			f.m.logger.Warn("could not truncate a damaged replica to fetch the range again; retrying",
				"topic", s.p.tp.Topic, "partition", s.p.tp.Partition, "leader", f.source, "err", err)
		case repaired:
			f.m.logger.Warn("damaged replica truncated to its first damaged offset: fetching the rest again from the leader (the damaged segment stays in quarantine)",
				"topic", s.p.tp.Topic, "partition", s.p.tp.Partition, "leader", f.source, "log_end", s.p.log.LogEndOffset())
		}
	}
}

// Unrepairable counts the partitions whose replica here is damaged and that this
// node leads with no other in-sync replica: there is no intact copy in the ISR to
// repair from (the controller would have moved the leadership to one).
func (m *Manager) Unrepairable() int {
	n := 0
	for _, p := range m.Partitions() {
		if len(blockingDamage(p.log)) == 0 {
			continue
		}
		p.leaderIsrLock.RLock()
		alone := p.rs.isLeader() && len(p.rs.isr) <= 1
		p.leaderIsrLock.RUnlock()
		if alone {
			n++
		}
	}
	return n
}
