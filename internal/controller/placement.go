package controller

import (
	"fmt"
	"slices"
	"sort"

	"github.com/runnel-io/runnel/internal/metadata"
)

// placeReplicas chooses the replicas of partitions first..first+count-1 over brokers
// (the unfenced ones; their order does not matter). It is a pure function: start and
// shift seed the round robin and the caller picks them at random, as Kafka's AdminUtils
// does, so that topics do not all lead on the same broker.
//
// The pattern, with n brokers in a fixed order b[0..n-1]:
//   - the leader (first replica) of partition p is b[(p+start) mod n], so leaders are
//     balanced: any n consecutive partitions have n different leaders;
//   - follower j (0-based) sits 1 + (s+j) mod (n-1) places after the leader, where
//     s = shift + p/n grows by one every n partitions, so that the followers of a
//     broker's partitions move to other brokers instead of always pairing the same
//     two. Within each run of n partitions every broker holds exactly rf replicas.
//
// When every broker has a Rack, the order is rack-alternating (one broker of each
// rack in turn) and followers prefer racks that hold no replica of the partition yet,
// so a partition spans min(rf, racks) racks. A mix of brokers with and without a rack
// is placed ignoring racks.
//
// A replication factor above len(brokers) is ErrInvalidReplicationFactor.
func placeReplicas(brokers []metadata.Broker, first, count int32, rf int16, start, shift int) ([][]metadata.NodeID, error) {
	n := len(brokers)
	if rf <= 0 {
		return nil, fmt.Errorf("%w: replication factor must be positive, got %d", ErrInvalidReplicationFactor, rf)
	}
	if int(rf) > n {
		return nil, fmt.Errorf("%w: replication factor %d is larger than the %d available broker(s)",
			ErrInvalidReplicationFactor, rf, n)
	}
	order, racks := placementOrder(brokers)
	out := make([][]metadata.NodeID, 0, count)
	for k := int32(0); k < count; k++ {
		p := int(first + k)
		leader := (p + start) % n
		s := shift + p/n
		cand := make([]int, 0, n-1) // the other brokers, in this partition's follower order
		for j := 0; j < n-1; j++ {
			cand = append(cand, (leader+1+(s+j)%(n-1))%n)
		}
		out = append(out, pickReplicas(order, racks, leader, cand, int(rf)))
	}
	return out, nil
}

// placementOrder sorts brokers by id, or rack-alternating when every one has a rack.
// It returns the order and each position's rack ("" for all when racks are ignored).
func placementOrder(brokers []metadata.Broker) ([]metadata.NodeID, []string) {
	bs := slices.Clone(brokers)
	sort.Slice(bs, func(i, j int) bool { return bs[i].ID < bs[j].ID })
	rackAware := len(bs) > 0
	byRack := map[string][]metadata.NodeID{}
	for _, b := range bs {
		rackAware = rackAware && b.Rack != ""
		byRack[b.Rack] = append(byRack[b.Rack], b.ID)
	}
	ids := make([]metadata.NodeID, 0, len(bs))
	racks := make([]string, 0, len(bs))
	if !rackAware {
		for _, b := range bs {
			ids = append(ids, b.ID)
			racks = append(racks, "")
		}
		return ids, racks
	}
	names := make([]string, 0, len(byRack))
	for r := range byRack {
		names = append(names, r)
	}
	sort.Strings(names)
	for i := 0; len(ids) < len(bs); i++ {
		for _, r := range names {
			if i < len(byRack[r]) {
				ids = append(ids, byRack[r][i])
				racks = append(racks, r)
			}
		}
	}
	return ids, racks
}

// pickReplicas returns the leader and then rf-1 followers from cand (positions in
// order): first those on racks without a replica yet, in cand order, then the rest.
func pickReplicas(order []metadata.NodeID, racks []string, leader int, cand []int, rf int) []metadata.NodeID {
	replicas := make([]metadata.NodeID, 0, rf)
	replicas = append(replicas, order[leader])
	used := map[string]bool{racks[leader]: true}
	taken := make([]bool, len(order))
	for pass := 0; pass < 2 && len(replicas) < rf; pass++ {
		for _, c := range cand {
			if len(replicas) == rf {
				break
			}
			if taken[c] || (pass == 0 && used[racks[c]]) {
				continue
			}
			taken[c] = true
			used[racks[c]] = true
			replicas = append(replicas, order[c])
		}
	}
	return replicas
}

// liveBrokers returns the image's unfenced brokers.
func liveBrokers(im *metadata.Image) []metadata.Broker {
	var out []metadata.Broker
	for _, id := range im.BrokerIDs() {
		if b := im.Brokers[id]; !b.Fenced {
			out = append(out, b)
		}
	}
	return out
}
