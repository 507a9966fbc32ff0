package controller

// Continuous mode (partition.autobalancing.mode=continuous), beside node_add:
//
//   - Dead nodes. A registered node fenced for longer than
//     BalancerConfig.NodeAvailabilityTimeout (since Broker.FencedAtMs: its session
//     expired, or it shut down) is taken for gone: the partitions it is a replica of
//     get a new replica each on the eligible nodes, planned by internal/balance as a
//     drain of the dead node over those partitions (racks kept, the new replicas spread
//     evenly), and the dead replica leaves when the new one is in the ISR. The node
//     stays registered: if it comes back it holds nothing the metadata names (it
//     deletes the copies it finds of partitions it is no longer a replica of) and
//     node_add does not count it as new.
//   - Full disks. The active controller asks every live node for its data directory's
//     usage every BalancerConfig.DiskPollInterval (BalancerConfig.DiskUsage: the
//     server sends DescribeLogDirs, whose v4 carries TotalBytes and UsableBytes,
//     KIP-827; no new protocol). A node used past BalancerConfig.MaxDiskUsedPercent
//     gets no new replica, and has replicas moved off it, largest first (the sizes
//     DescribeLogDirs gave), as many as bring it below the threshold by their bytes
//     or all of them; a new sample after those moves decides whether more go.
//
// Dead nodes come first (they restore redundancy), then full disks, then new nodes. A
// partition is moved only when it has a leader and enough eligible nodes for its
// replication factor; one that cannot be is logged once and left.

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/runnel-io/runnel/internal/balance"
	"github.com/runnel-io/runnel/internal/metadata"
)

// deadNodeMoves plans the moves of the replicas of every node fenced past the timeout.
func (c *Controller) deadNodeMoves(b *balancer, im *metadata.Image, live liveFunc, now time.Time) balancerMoves {
	var dead []metadata.NodeID
	for id, br := range im.Brokers {
		if !live(id) && br.Fenced && br.FencedAtMs > 0 &&
			now.Sub(time.UnixMilli(br.FencedAtMs)) >= b.cfg.NodeAvailabilityTimeout && holdsReplica(im, id) {
			dead = append(dead, id)
		}
	}
	if len(dead) == 0 {
		return balancerMoves{}
	}
	slices.Sort(dead)
	why := fmt.Sprintf("nodes %v fenced longer than %v (partition.autobalancing.node.availability.timeout.sec)", dead, b.cfg.NodeAvailabilityTimeout)
	return c.drainMoves(b, im, live, dead, why, nil)
}

// fullDiskMoves plans the moves off the nodes whose disks are past the threshold.
func (c *Controller) fullDiskMoves(b *balancer, im *metadata.Image, live liveFunc) balancerMoves {
	b.mu.Lock()
	lastMoving := b.lastMoving
	samples := make(map[metadata.NodeID]diskSample, len(b.disk))
	for id, s := range b.disk {
		samples[id] = s
	}
	b.mu.Unlock()
	limit := float64(b.cfg.MaxDiskUsedPercent)
	var over []metadata.NodeID
	for id, s := range samples {
		// A sample taken before the last moves ended may count bytes that have moved
		// away since: only a later one decides.
		if live(id) && s.at.After(lastMoving) && s.UsedPercent() > limit && holdsReplica(im, id) {
			over = append(over, id)
		}
	}
	if len(over) == 0 {
		return balancerMoves{}
	}
	slices.Sort(over)
	why := fmt.Sprintf("nodes %v have their disks used past %d%% (partition.autobalancing.max.disk.usage.percent)", over, b.cfg.MaxDiskUsedPercent)
	// Of each full node's replicas, the largest first, as many as bring it below the
	// threshold by their bytes: the partitions to move.
	pick := map[metadata.TopicPartition]bool{}
	for _, id := range over {
		s := samples[id]
		excess := s.TotalBytes - s.UsableBytes - int64(limit/100*float64(s.TotalBytes))
		var tps []metadata.TopicPartition
		for _, name := range im.TopicNames() {
			for i, p := range im.Topics[name].Partitions {
				if slices.Contains(p.Replicas, id) {
					tps = append(tps, metadata.TopicPartition{Topic: name, Partition: int32(i)})
				}
			}
		}
		slices.SortStableFunc(tps, func(a, b metadata.TopicPartition) int { return cmp.Compare(s.Partitions[b], s.Partitions[a]) })
		var freed int64
		for _, tp := range tps {
			if freed > excess {
				break
			}
			pick[tp] = true
			freed += s.Partitions[tp]
		}
	}
	return c.drainMoves(b, im, live, over, why, func(tp metadata.TopicPartition) bool { return pick[tp] })
}

// drainMoves plans moving every replica on from (of the partitions include accepts;
// nil: all) to the eligible nodes, over just those partitions.
func (c *Controller) drainMoves(b *balancer, im *metadata.Image, live liveFunc, from []metadata.NodeID, why string,
	include func(metadata.TopicPartition) bool) balancerMoves {
	targets := slices.DeleteFunc(c.eligibleNodes(b, im, live), func(id metadata.NodeID) bool { return slices.Contains(from, id) })
	var r balance.Request
	for _, name := range im.TopicNames() {
		for i, p := range im.Topics[name].Partitions {
			tp := metadata.TopicPartition{Topic: name, Partition: int32(i)}
			if !slices.ContainsFunc(p.Replicas, func(id metadata.NodeID) bool { return slices.Contains(from, id) }) ||
				(include != nil && !include(tp)) {
				continue
			}
			switch {
			case p.Leader == metadata.NoLeader:
				c.warnOnce(b, "balancer: cannot move the replicas of a partition without a leader (nothing to copy from)",
					"topic", name, "partition", i, "replicas", p.Replicas, "reason", why)
				continue
			case len(p.Replicas) > len(targets):
				c.warnOnce(b, "balancer: too few eligible nodes to move a partition's replicas to",
					"topic", name, "partition", i, "replicas", p.Replicas, "eligible_nodes", targets, "reason", why)
				continue
			}
			r.Current = append(r.Current, balance.Partition{Topic: name, Partition: int32(i), Replicas: int32IDs(p.Replicas)})
		}
	}
	if len(r.Current) == 0 {
		return balancerMoves{}
	}
	r.Nodes = planNodes(im, targets)
	r.Drain = int32IDs(from)
	plan, err := balance.Compute(r)
	if err != nil {
		c.warnOnce(b, "balancer: cannot plan the moves", "reason", why, "err", err)
		return balancerMoves{}
	}
	return balancerMoves{why: why, changes: plan.Changes, replicas: plan.Moves, leaders: plan.LeaderChanges}
}

// overThreshold is the set of nodes whose last disk sample is past the threshold
// (continuous mode only; empty otherwise).
func (b *balancer) overThreshold() map[metadata.NodeID]bool {
	if b.cfg.Mode != BalanceContinuous {
		return nil
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	out := map[metadata.NodeID]bool{}
	for id, s := range b.disk {
		if s.UsedPercent() > float64(b.cfg.MaxDiskUsedPercent) {
			out[id] = true
		}
	}
	return out
}

// pollDiskUsage asks every live node for its disk usage every DiskPollInterval while
// this node is the active controller, and keeps the answers in b.disk (the tick reads
// them; no lock is held across the calls). A node that does not answer keeps no
// sample: it counts as below the threshold until it answers, and is not moved off for
// its disk.
func (c *Controller) pollDiskUsage(b *balancer) {
	t := time.NewTicker(b.cfg.DiskPollInterval)
	defer t.Stop()
	for {
		select {
		case <-c.done:
			return
		case <-t.C:
		}
		if !c.IsLeader() {
			b.mu.Lock()
			b.disk = nil
			b.mu.Unlock()
			continue
		}
		im := c.Image()
		got := map[metadata.NodeID]diskSample{}
		for id, br := range im.Brokers {
			if br.Fenced { // liveLocked reads the sessions, which proposeMu guards
				continue
			}
			ctx, cancel := context.WithTimeout(context.Background(), b.cfg.DiskPollInterval)
			u, err := b.cfg.DiskUsage(ctx, br)
			cancel()
			if err != nil {
				c.warnOnce(b, fmt.Sprintf("balancer: no disk usage from node %d (it counts as below the threshold until it answers)", id), "broker", id, "err", err)
				continue
			}
			got[id] = diskSample{DiskUsage: u, at: time.Now()}
		}
		b.mu.Lock()
		prev := b.disk
		b.disk = got
		b.mu.Unlock()
		limit := float64(b.cfg.MaxDiskUsedPercent)
		for id, s := range got { // log the crossings, not every poll
			was, had := prev[id]
			if over := s.UsedPercent() > limit; !had || over != (was.UsedPercent() > limit) {
				if over {
					c.log.Warn("balancer: node's disk is used past the threshold: no replica is placed on it and replicas move off it",
						"broker", id, "used_percent", fmt.Sprintf("%.1f", s.UsedPercent()), "max_percent", b.cfg.MaxDiskUsedPercent,
						"total_bytes", s.TotalBytes, "usable_bytes", s.UsableBytes)
				} else if had {
					c.log.Info("balancer: node's disk is below the threshold again", "broker", id,
						"used_percent", fmt.Sprintf("%.1f", s.UsedPercent()), "max_percent", b.cfg.MaxDiskUsedPercent)
				}
			}
		}
	}
}
