package controller

import (
	"github.com/runnel-io/runnel/internal/metadata"
)

// chooseLeader picks a partition's leader as Kafka's offline-partition election does:
// the first replica, in assignment order, that is both in the ISR and live. Failing
// that, and only if uncleanAllowed, the first live replica (which may lack
// acknowledged records: unclean). ok is false when no replica qualifies.
//
// Pure: live says whether a broker is registered, unfenced and reachable.
func chooseLeader(replicas, isr []metadata.NodeID, live func(metadata.NodeID) bool, uncleanAllowed bool) (leader metadata.NodeID, unclean, ok bool) {
	for _, r := range replicas {
		if metadata.Contains(isr, r) && live(r) {
			return r, false, true
		}
	}
	if !uncleanAllowed {
		return metadata.NoLeader, false, false
	}
	for _, r := range replicas {
		if live(r) {
			return r, true, true
		}
	}
	return metadata.NoLeader, false, false
}

// electLeader returns p after removing the brokers that are not live from its ISR and
// electing a leader if the current one is not live. The ISR never becomes empty while
// the partition has a leader, and keeps its last member when the partition goes
// offline (Kafka keeps the last ISR so that member can lead again cleanly). changed is
// false when p stays as it is. The leader epoch grows when the leader changes, and the
// partition epoch on any change.
func electLeader(p metadata.Partition, live func(metadata.NodeID) bool, uncleanAllowed bool) (next metadata.Partition, changed bool) {
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
		leader, unclean, ok := chooseLeader(p.Replicas, p.ISR, live, uncleanAllowed)
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
