package replica

import (
	"time"

	"github.com/runnel-io/runnel/internal/metadata"
)

// Fetch from the closest replica (KIP-392): the leader's choice of the replica a
// consumer should read from, Kafka's ReplicaManager.findPreferredReadReplica with the
// RackAwareReplicaSelector. Like the rest of the core (core.go) the rule is a pure
// function of the replication state, the time and what the metadata says of the
// brokers; Partition.PreferredReadReplica gathers its inputs under the partition's
// locks.

// BrokerView is what the selector needs of a replica's node from the metadata image:
// its broker.rack, and whether a consumer can be sent there at all (registered, not
// fenced, and with an endpoint on the listener the consumer connected on: Kafka's
// replica endpoints, which leave out fenced brokers and those without that listener).
type BrokerView func(id metadata.NodeID) (rack string, ok bool)

// replicaView is one candidate of the selection (Kafka's ReplicaView).
type replicaView struct {
	id   metadata.NodeID
	rack string
	// logEndOffset is the replica's log end (a follower's: as of its last fetch).
	logEndOffset int64
	// sinceCaughtUpMs is how long ago the replica last held everything the leader
	// had (0 for the leader itself).
	sinceCaughtUpMs int64
}

// moreCaughtUp is Kafka's ReplicaView.comparator: the larger log end wins, then the
// more recently caught up, then the larger node id (so that ties break the same way on
// every call).
func moreCaughtUp(a, b replicaView) bool {
	if a.logEndOffset != b.logEndOffset {
		return a.logEndOffset > b.logEndOffset
	}
	if a.sinceCaughtUpMs != b.sinceCaughtUpMs {
		return a.sinceCaughtUpMs < b.sinceCaughtUpMs
	}
	return a.id > b.id
}

// rackAwareSelect is Kafka's RackAwareReplicaSelector: with no client rack, or no
// replica in it, the leader; the leader too when it is in the client's rack; else the
// most caught-up replica of the client's rack. candidates exclude the leader.
func rackAwareSelect(clientRack string, leader replicaView, candidates []replicaView) metadata.NodeID {
	if clientRack == "" || leader.rack == clientRack {
		return leader.id
	}
	best, found := replicaView{}, false
	for _, c := range candidates {
		if c.rack == clientRack && (!found || moreCaughtUp(c, best)) {
			best, found = c, true
		}
	}
	if !found {
		return leader.id
	}
	return best.id
}

// preferredReadReplica is, on the leader, the replica a consumer in clientRack fetching
// at fetchOffset should read from, or NoLeader (-1) for the leader itself: what a
// Fetch v11+ answers as PreferredReadReplica. The candidates are Kafka's: the followers
// in the committed ISR (one outside it may lag for ever, and the consumer with it),
// holding fetchOffset as of their last fetch (log start <= fetchOffset <= log end: a
// follower asked for an offset it lacks answers OFFSET_OUT_OF_RANGE and the client
// comes back), and that broker says a client can reach. leaderEnd is the leader's log
// end.
func (s *replicationState) preferredReadReplica(clientRack string, fetchOffset, leaderEnd, nowMs int64, broker BrokerView) metadata.NodeID {
	if !s.isLeader() || clientRack == "" {
		return metadata.NoLeader
	}
	leader := replicaView{id: s.self, logEndOffset: leaderEnd}
	leader.rack, _ = broker(s.self)
	var stack [7]replicaView // RF <= 7 needs no allocation
	candidates := stack[:0]
	for _, id := range s.isr {
		f := s.followers[id]
		if id == s.self || f == nil || f.logEndOffset < fetchOffset || f.logStartOffset > fetchOffset {
			continue
		}
		rack, ok := broker(id)
		if !ok {
			continue
		}
		candidates = append(candidates, replicaView{id: id, rack: rack, logEndOffset: f.logEndOffset,
			sinceCaughtUpMs: nowMs - f.lastCaughtUpTimeMs})
	}
	if chosen := rackAwareSelect(clientRack, leader, candidates); chosen != s.self {
		return chosen
	}
	return metadata.NoLeader
}

// PreferredReadReplica is, while this replica leads, the replica a consumer in
// clientRack (Fetch v11+ RackID) fetching at fetchOffset should read from instead of
// this leader, or metadata.NoLeader (-1) to read here (preferredReadReplica). broker
// tells the racks and reachability of the nodes from the metadata image. Only the
// rack-aware replica.selector.class calls it.
func (p *Partition) PreferredReadReplica(clientRack string, fetchOffset int64, now time.Time, broker BrokerView) metadata.NodeID {
	if clientRack == "" {
		return metadata.NoLeader
	}
	p.leaderIsrLock.RLock()
	defer p.leaderIsrLock.RUnlock()
	p.stateMu.Lock()
	defer p.stateMu.Unlock()
	return p.rs.preferredReadReplica(clientRack, fetchOffset, p.log.LogEndOffset(), now.UnixMilli(), broker)
}
