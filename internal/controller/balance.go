package controller

// The node_add balancer (partition.autobalancing.mode): a broker that registers for the
// first time gets its even share of replicas and preferred leaders, as soon as it is
// live, by ordinary reassignments (reassign.go) planned by internal/balance, which
// moves as little as possible. It runs on the active controller's liveness tick; a
// controller that takes over does not know which nodes were new (an operator then
// runs `runnel reassign plan` and `execute`). It waits while any reassignment is in
// progress, so that it never plans over moves it cannot see the end of, and while any
// registered node is down, so that it never moves a down node's replicas away.

import (
	"context"
	"slices"

	"github.com/runnel-io/runnel/internal/balance"
	"github.com/runnel-io/runnel/internal/metadata"
)

// noteNewNode records that broker id registered for the first time.
func (c *Controller) noteNewNode(id metadata.NodeID) {
	if !c.cfg.BalanceOnNodeAdd {
		return
	}
	c.balanceMu.Lock()
	defer c.balanceMu.Unlock()
	if c.newNodes == nil {
		c.newNodes = map[metadata.NodeID]bool{}
	}
	c.newNodes[id] = true
}

// balanceNewNodesLocked starts the reassignments that give every new, live node its
// share. Caller holds proposeMu (withLeader).
func (c *Controller) balanceNewNodesLocked(ctx context.Context, im *metadata.Image) error {
	c.balanceMu.Lock()
	var ready []metadata.NodeID
	live := c.liveLocked(im)
	for id := range c.newNodes {
		if live(id) {
			ready = append(ready, id)
		}
	}
	c.balanceMu.Unlock()
	if len(ready) == 0 || reassigning(im) || anyDown(im, live) {
		return nil
	}
	plan, err := balance.Compute(balanceRequest(im, live))
	if err != nil {
		c.log.Warn("cannot plan the balance of new nodes; leaving placement as it is", "nodes", ready, "err", err)
		c.forgetNewNodes(ready)
		return nil
	}
	full := diskFull(im)
	var recs []metadata.Record
	scratch := im
	for _, ch := range plan.Changes {
		tp := metadata.TopicPartition{Topic: ch.Topic, Partition: ch.Partition}
		p, ok := scratch.Partition(tp)
		if !ok {
			continue
		}
		next, err := startReassignment(p, nodeIDs(ch.To), live, full)
		if err != nil {
			c.log.Warn("balance: cannot move partition", "topic", ch.Topic, "partition", ch.Partition, "to", ch.To, "err", err)
			continue
		}
		rec := metadata.Record{Type: metadata.PartitionChangeType, TopicName: ch.Topic, Partition: ch.Partition, PartitionState: &next}
		recs = append(recs, rec)
		scratch = scratch.Apply(rec, scratch.Offset)
	}
	if len(recs) > 0 {
		if _, err := c.proposeLocked(ctx, recs); err != nil {
			return err
		}
	}
	c.log.Info("balancing replicas onto new nodes (partition.autobalancing.mode=node_add)", "nodes", ready,
		"partitions_moved", len(recs), "replicas_moved", plan.Moves, "preferred_leaders_changed", plan.LeaderChanges)
	c.forgetNewNodes(ready)
	return nil
}

func (c *Controller) forgetNewNodes(ids []metadata.NodeID) {
	c.balanceMu.Lock()
	defer c.balanceMu.Unlock()
	for _, id := range ids {
		delete(c.newNodes, id)
	}
}

// anyDown reports whether a registered broker is not live. The balancer then waits: it
// plans over the live nodes, so it would move the replicas of a node that is merely
// down (restarting, paused) onto the others, which is not what a node's joining asks
// for (TestNotEnoughReplicas caught it healing a partition whose two replicas had been
// killed a moment before).
func anyDown(im *metadata.Image, live liveFunc) bool {
	for id := range im.Brokers {
		if !live(id) {
			return true
		}
	}
	return false
}

// reassigning reports whether any partition of im is being reassigned.
func reassigning(im *metadata.Image) bool {
	for _, t := range im.Topics {
		for _, p := range t.Partitions {
			if p.Reassigning() {
				return true
			}
		}
	}
	return false
}

// balanceRequest is the planner's view of im: every partition, over the live nodes
// (with their racks).
func balanceRequest(im *metadata.Image, live liveFunc) balance.Request {
	var r balance.Request
	for _, name := range im.TopicNames() {
		for i, p := range im.Topics[name].Partitions {
			r.Current = append(r.Current, balance.Partition{Topic: name, Partition: int32(i), Replicas: int32IDs(p.Replicas)})
		}
	}
	ids := make([]metadata.NodeID, 0, len(im.Brokers))
	for id := range im.Brokers {
		if live(id) {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	for _, id := range ids {
		r.Nodes = append(r.Nodes, balance.Node{ID: int32(id), Rack: im.Brokers[id].Rack})
	}
	return r
}

func int32IDs(ids []metadata.NodeID) []int32 {
	out := make([]int32, len(ids))
	for i, id := range ids {
		out[i] = int32(id)
	}
	return out
}

func nodeIDs(ids []int32) []metadata.NodeID {
	out := make([]metadata.NodeID, len(ids))
	for i, id := range ids {
		out[i] = metadata.NodeID(id)
	}
	return out
}
