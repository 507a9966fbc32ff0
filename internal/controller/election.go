package controller

import (
	"github.com/runnel-io/runnel/internal/metadata"
)

// chooseLeader picks a partition's leader as Kafka's offline-partition election does:
// the first replica, in assignment order, that is both in the ISR and live. Failing
// that, and only if uncleanAllowed, the first live replica (which may lack
// acknowledged records: unclean). ok is false when no replica qualifies. Within each
// rule a replica whose disk is full (diskFull, nil for none) is passed over while
// another one qualifies: it could not take a write, but it still leads rather than
// leave the partition offline.
//
// Pure: live says whether a broker is registered, unfenced and reachable.
func chooseLeader(replicas, isr []metadata.NodeID, live, diskFull func(metadata.NodeID) bool, uncleanAllowed bool) (leader metadata.NodeID, unclean, ok bool) {
	inSync := func(r metadata.NodeID) bool { return metadata.Contains(isr, r) && live(r) }
	if r, ok := firstWritable(replicas, inSync, diskFull); ok {
		return r, false, true
	}
	if !uncleanAllowed {
		return metadata.NoLeader, false, false
	}
	if r, ok := firstWritable(replicas, live, diskFull); ok {
		return r, true, true
	}
	return metadata.NoLeader, false, false
}

// firstWritable is the first replica that eligible accepts and whose disk is not full,
// else the first that eligible accepts.
func firstWritable(replicas []metadata.NodeID, eligible, diskFull func(metadata.NodeID) bool) (metadata.NodeID, bool) {
	fallback, found := metadata.NoLeader, false
	for _, r := range replicas {
		if !eligible(r) {
			continue
		}
		if diskFull == nil || !diskFull(r) {
			return r, true
		}
		if !found {
			fallback, found = r, true
		}
	}
	return fallback, found
}

// electLeader returns p after removing the brokers that are not live from its ISR and
// electing a leader if the current one is not live. The ISR never becomes empty while
// the partition has a leader, and keeps its last member when the partition goes
// offline (Kafka keeps the last ISR so that member can lead again cleanly). The one
// empty ISR is distrustLastReplicaLocked's (KIP-966): then only an unclean election
// gives the partition a leader. changed is
// false when p stays as it is. The leader epoch grows when the leader changes, and the
// partition epoch on any change. A new leader is chosen by chooseLeader (diskFull: see
// there); a live leader stays, even on a full disk (fullDiskElections moves it).
func electLeader(p metadata.Partition, live, diskFull func(metadata.NodeID) bool, uncleanAllowed bool) (next metadata.Partition, changed bool) {
	isr := make([]metadata.NodeID, 0, len(p.ISR))
	for _, r := range p.ISR {
		if live(r) {
			isr = append(isr, r)
		}
	}
	next = p
	if p.Leader != metadata.NoLeader && live(p.Leader) {
		next.ISR = isr
	} else {
		leader, unclean, ok := chooseLeader(p.Replicas, p.ISR, live, diskFull, uncleanAllowed)
		switch {
		case !ok:
			next.Leader = metadata.NoLeader
			if len(isr) == 0 && len(p.ISR) > 0 {
				isr = []metadata.NodeID{p.ISR[len(p.ISR)-1]}
			}
		case unclean:
			next.Leader, isr = leader, []metadata.NodeID{leader}
		default:
			next.Leader = leader
		}
		next.ISR = isr
	}
	if next.Leader == p.Leader && sameNodes(next.ISR, p.ISR) {
		return p, false
	}
	if next.Leader != p.Leader {
		next.LeaderEpoch++
	}
	next.PartitionEpoch++
	return next, true
}

func sameNodes(a, b []metadata.NodeID) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// liveFunc reports whether a broker may lead a partition or stay in its ISR: registered,
// unfenced and not in controlled shutdown (see Controller.liveLocked).
type liveFunc func(metadata.NodeID) bool

// election is one partition's change of leader or ISR.
type election struct {
	tp         metadata.TopicPartition
	prev, next metadata.Partition
}

// unclean reports whether the new leader was outside the ISR (data may be lost).
func (e election) unclean() bool {
	return e.next.Leader != metadata.NoLeader && e.next.Leader != e.prev.Leader && !metadata.Contains(e.prev.ISR, e.next.Leader)
}

func (e election) record() metadata.Record {
	next := e.next
	return metadata.Record{Type: metadata.PartitionChangeType, TopicName: e.tp.Topic, Partition: e.tp.Partition, PartitionState: &next}
}

// reelect runs electLeader on every partition of im that touch selects, in topic
// and partition order, and returns the partitions that change. Brokers whose disk im
// marks full, and damaged replicas, are elected only when no other replica can be.
func reelect(im *metadata.Image, touch func(metadata.Partition) bool, live liveFunc, unclean func(topic string) bool) []election {
	var out []election
	for _, name := range im.TopicNames() {
		for i, p := range im.Topics[name].Partitions {
			if !touch(p) {
				continue
			}
			tp := metadata.TopicPartition{Topic: name, Partition: int32(i)}
			if next, changed := electLeader(p, live, unfit(im, tp), unclean(name)); changed {
				out = append(out, election{tp, p, next})
			}
		}
	}
	return out
}

// involves selects the partitions that id leads or whose ISR it is in.
func involves(id metadata.NodeID) func(metadata.Partition) bool {
	return func(p metadata.Partition) bool { return p.Leader == id || metadata.Contains(p.ISR, id) }
}

func offline(p metadata.Partition) bool { return p.Leader == metadata.NoLeader }

// without is live minus id.
func without(live liveFunc, id metadata.NodeID) liveFunc {
	return func(r metadata.NodeID) bool { return r != id && live(r) }
}

// fenceElections is what fencing id does to the partitions (Kafka
// handleBrokerFenced): a new leader from the ISR for each partition it leads (offline,
// keeping it as the last ISR member, when there is none and unclean election is off),
// and id out of every ISR it is in.
func fenceElections(im *metadata.Image, id metadata.NodeID, live liveFunc, unclean func(string) bool) []election {
	return reelect(im, involves(id), without(live, id), unclean)
}

// unfenceElections is what unfencing id does: every offline partition that can elect a
// leader once id is live again gets one (id itself if it is in the ISR, or another
// replica that was waiting for nothing but an election).
func unfenceElections(im *metadata.Image, id metadata.NodeID, live liveFunc, unclean func(string) bool) []election {
	withID := func(r metadata.NodeID) bool { return r == id || live(r) }
	return reelect(im, offline, withID, unclean)
}

// shutdownElections is what a controlled shutdown of id does (Kafka
// handleBrokerInControlledShutdown): leadership moves to another live ISR member, never
// uncleanly, and id leaves every ISR. A partition with no other live ISR member keeps id
// as its leader and ISR: there is nowhere to move it.
func shutdownElections(im *metadata.Image, id metadata.NodeID, live liveFunc) []election {
	all := reelect(im, involves(id), without(live, id), func(string) bool { return false })
	out := all[:0]
	for _, e := range all {
		if e.prev.Leader == id && e.next.Leader == metadata.NoLeader {
			continue
		}
		out = append(out, e)
	}
	return out
}

// preferredElections moves leadership back to each partition's preferred replica (the
// first) when it is live, in the ISR, its disk is not full and its replica is not
// damaged, but does not lead
// (Kafka's preferred leader election, auto.leader.rebalance.enable), for the nodes
// whose imbalance (the share of the partitions they are the preferred replica of that
// another node leads) is above ratio (leader.imbalance.per.broker.percentage; 0: any).
func preferredElections(im *metadata.Image, live liveFunc, ratio float64) []election {
	preferred := map[metadata.NodeID]int{} // partitions each node is the preferred replica of
	misplaced := map[metadata.NodeID]int{} // ... of which another node leads
	for _, name := range im.TopicNames() {
		for _, p := range im.Topics[name].Partitions {
			if len(p.Replicas) == 0 {
				continue
			}
			preferred[p.Replicas[0]]++
			if p.Leader != p.Replicas[0] {
				misplaced[p.Replicas[0]]++
			}
		}
	}
	imbalanced := func(id metadata.NodeID) bool {
		return preferred[id] > 0 && float64(misplaced[id])/float64(preferred[id]) > ratio
	}
	var out []election
	for _, name := range im.TopicNames() {
		for i, p := range im.Topics[name].Partitions {
			if len(p.Replicas) == 0 {
				continue
			}
			pref := p.Replicas[0]
			tp := metadata.TopicPartition{Topic: name, Partition: int32(i)}
			if p.Leader == pref || !live(pref) || !metadata.Contains(p.ISR, pref) || unfit(im, tp)(pref) || !imbalanced(pref) {
				continue
			}
			next := p
			next.Leader = pref
			next.LeaderEpoch++
			next.PartitionEpoch++
			out = append(out, election{metadata.TopicPartition{Topic: name, Partition: int32(i)}, p, next})
		}
	}
	return out
}

// applyElections returns im with es applied, at im's offset: a scratch image for
// planning further records in the same Raft entry.
func applyElections(im *metadata.Image, es []election) *metadata.Image {
	for _, e := range es {
		im = im.Apply(e.record(), im.Offset)
	}
	return im
}
