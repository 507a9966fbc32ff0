package controller

// The partition balancer (partition.autobalancing.mode), run by the active controller
// on its liveness tick (checkSessionsLocked), under proposeMu:
//
//   - node_add (the default): a broker that registers for the first time gets its even
//     share of replicas and preferred leaders, as soon as it is live, by ordinary
//     reassignments (reassign.go) planned by internal/balance, which moves as little as
//     possible. The first registration marks the broker (Broker.AwaitsShare) in the
//     metadata and the proposal that starts the moves clears the mark, so that a
//     controller that takes over in between still plans the share.
//   - continuous: node_add, and the replicas of a node fenced longer than
//     BalancerConfig.NodeAvailabilityTimeout move to the other nodes, and replicas
//     move off a node whose disk is used past BalancerConfig.MaxDiskUsedPercent
//     (balance_continuous.go).
//
// Every move the balancer starts is throttled (balance_throttle.go): the moving
// replicas are listed in their topics' throttled replicas and the rates set to
// BalancerConfig.ThrottleRate, unless an operator set them; the balancer removes what
// it added once nothing moves.
//
// Rules every tick keeps:
//   - It starts nothing while any reassignment is in progress (its own or an
//     operator's), so it never plans over moves it cannot see the end of; the throttles
//     it set are cleared only then too.
//   - It never places a replica on a node that is not live, whose disk is full, or (in
//     continuous mode) whose disk is used past the threshold.
//   - Racks: every plan comes from internal/balance with the nodes' racks.
//   - No move lowers a partition's ISR: a reassignment adds the new replicas first and
//     removes the old ones only once every target replica is in the ISR
//     (completeReassignment), so the ISR then holds the whole target, at least
//     min.insync.replicas whenever the replication factor is; a partition without a
//     leader is never moved (the new replicas would have nothing to copy from, and the
//     move would block every later one).
//   - node_add waits while a registered node that holds replicas is down, so that it
//     never moves the replicas of a node that is only restarting away (it plans over
//     the live nodes); continuous moves them once the node has been down past the
//     timeout.

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/runnel-io/runnel/internal/balance"
	"github.com/runnel-io/runnel/internal/metadata"
)

// Balancer modes (partition.autobalancing.mode).
const (
	BalanceOff        = "off"
	BalanceNodeAdd    = "node_add"
	BalanceContinuous = "continuous"
)

// Defaults of BalancerConfig's zero values, the documented defaults of the
// partition.autobalancing.* properties (checked against internal/config by a test).
const (
	DefaultBalancerThrottleRate  = 100 << 20 // bytes/s
	DefaultNodeAvailability      = 900 * time.Second
	DefaultMaxDiskUsedPercent    = 80
	DefaultBalancerDiskPollEvery = 10 * time.Second
)

// BalancerConfig configures the partition balancer (ConfigureBalancer).
type BalancerConfig struct {
	// Mode is BalanceOff, BalanceNodeAdd or BalanceContinuous.
	Mode string
	// ThrottleRate is the bytes/s the balancer's moves copy at
	// (partition.autobalancing.throttled.rate). 0: DefaultBalancerThrottleRate.
	ThrottleRate int64
	// NodeAvailabilityTimeout is how long a node stays fenced before continuous mode
	// moves its replicas away (partition.autobalancing.node.availability.timeout.sec).
	// 0: DefaultNodeAvailability.
	NodeAvailabilityTimeout time.Duration
	// MaxDiskUsedPercent is the disk use past which continuous mode moves replicas off
	// a node and places none on it (partition.autobalancing.max.disk.usage.percent).
	// 0: DefaultMaxDiskUsedPercent.
	MaxDiskUsedPercent int
	// DiskPollInterval is how often, in continuous mode, the active controller asks
	// each live node for its disk usage (partition.autobalancing.tick.interval.ms).
	// 0: DefaultBalancerDiskPollEvery.
	DiskPollInterval time.Duration
	// DiskUsage asks broker b for its data directory's usage (the server does it with
	// DescribeLogDirs; the controller calls no broker itself). Nil: disk usage is not
	// known, and only the dead-node rule of continuous mode acts.
	DiskUsage func(ctx context.Context, b metadata.Broker) (DiskUsage, error)
}

// DiskUsage is one node's data directory as DescribeLogDirs reports it (KIP-827).
type DiskUsage struct {
	TotalBytes, UsableBytes int64
	// Partitions are the bytes of each partition's log on the node.
	Partitions map[metadata.TopicPartition]int64
}

// UsedPercent is the share of the file system in use, 0-100 (-1: unknown).
func (d DiskUsage) UsedPercent() float64 {
	if d.TotalBytes <= 0 || d.UsableBytes < 0 {
		return -1
	}
	return 100 * float64(d.TotalBytes-d.UsableBytes) / float64(d.TotalBytes)
}

// balancer is a Controller's balancer state (Controller.bal); ConfigureBalancer sets
// it, before Start.
type balancer struct {
	cfg BalancerConfig // immutable after ConfigureBalancer

	mu sync.Mutex
	// disk is the last disk usage each live node reported (continuous mode), with
	// when; entries of nodes that are no longer live are dropped by the poller.
	disk map[metadata.NodeID]diskSample
	// warned holds the messages already logged, so that a condition the balancer
	// cannot act on (too few nodes to move a dead node's replicas to) is logged once
	// per controller, not every tick.
	warned map[string]bool
	// lastMoving is the last time a tick saw a reassignment in progress (or started
	// one): a disk sample older than it may count bytes that have moved since.
	lastMoving time.Time
}

type diskSample struct {
	DiskUsage
	at time.Time
}

// ConfigureBalancer sets the partition balancer's settings; call it before Start.
// Without it the balancer runs node_add (Config.BalanceOnNodeAdd) throttled at
// DefaultBalancerThrottleRate.
func (c *Controller) ConfigureBalancer(cfg BalancerConfig) {
	if cfg.ThrottleRate <= 0 {
		cfg.ThrottleRate = DefaultBalancerThrottleRate
	}
	if cfg.NodeAvailabilityTimeout <= 0 {
		cfg.NodeAvailabilityTimeout = DefaultNodeAvailability
	}
	if cfg.MaxDiskUsedPercent <= 0 {
		cfg.MaxDiskUsedPercent = DefaultMaxDiskUsedPercent
	}
	if cfg.DiskPollInterval <= 0 {
		cfg.DiskPollInterval = DefaultBalancerDiskPollEvery
	}
	c.cfg.BalanceOnNodeAdd = cfg.Mode != BalanceOff
	b := &balancer{cfg: cfg}
	c.bal.Store(b)
	if cfg.Mode == BalanceContinuous && cfg.DiskUsage != nil {
		c.wg.Add(1)
		go func() {
			defer c.wg.Done()
			c.pollDiskUsage(b)
		}()
	}
}

// balancer returns c's balancer state (the defaults when ConfigureBalancer was not
// called).
func (c *Controller) balancer() *balancer {
	if b := c.bal.Load(); b != nil {
		return b
	}
	mode := BalanceOff
	if c.cfg.BalanceOnNodeAdd {
		mode = BalanceNodeAdd
	}
	b := &balancer{cfg: BalancerConfig{Mode: mode, ThrottleRate: DefaultBalancerThrottleRate,
		NodeAvailabilityTimeout: DefaultNodeAvailability, MaxDiskUsedPercent: DefaultMaxDiskUsedPercent}}
	if c.bal.CompareAndSwap(nil, b) {
		return b
	}
	return c.bal.Load()
}

// warnOnce logs msg once per controller.
func (c *Controller) warnOnce(b *balancer, msg string, args ...any) {
	b.mu.Lock()
	if b.warned == nil {
		b.warned = map[string]bool{}
	}
	seen := b.warned[msg]
	b.warned[msg] = true
	b.mu.Unlock()
	if !seen {
		c.log.Warn(msg, args...)
	}
}

// balanceNewNodesLocked is the balancer's tick (the name is the node_add balancer's,
// which the liveness loop calls): it clears the throttles of finished moves, then
// starts the moves one rule asks for, the first that has any of: a dead node's
// replicas, a full disk's, a new node's share. Caller holds proposeMu (withLeader).
func (c *Controller) balanceNewNodesLocked(ctx context.Context, im *metadata.Image) error {
	b := c.balancer()
	if b.cfg.Mode == BalanceOff && !hasBalancerThrottles(im) {
		return nil
	}
	if reassigning(im) {
		b.mu.Lock()
		b.lastMoving = time.Now()
		b.mu.Unlock()
		return nil
	}
	if hasBalancerThrottles(im) {
		return c.clearBalancerThrottlesLocked(ctx, im)
	}
	if b.cfg.Mode == BalanceOff {
		return nil
	}
	live := c.liveLocked(im)
	if b.cfg.Mode == BalanceContinuous {
		if moves := c.deadNodeMoves(b, im, live, time.Now()); len(moves.changes) > 0 {
			return c.startBalancerMovesLocked(ctx, b, im, moves)
		}
		if moves := c.fullDiskMoves(b, im, live); len(moves.changes) > 0 {
			return c.startBalancerMovesLocked(ctx, b, im, moves)
		}
	}
	return c.nodeAddMovesLocked(ctx, b, im, live)
}

// nodeAddMovesLocked starts the reassignments that give every new, live node (one
// that awaits its share) its share, and clears the nodes' marks in the same proposal.
func (c *Controller) nodeAddMovesLocked(ctx context.Context, b *balancer, im *metadata.Image, live liveFunc) error {
	var ready []metadata.NodeID
	for id, br := range im.Brokers {
		if br.AwaitsShare && live(id) {
			ready = append(ready, id)
		}
	}
	if len(ready) == 0 || anyDownHolding(im, live) {
		return nil
	}
	slices.Sort(ready)
	// node_add plans over every live node, as it always has: leaving a node out of the
	// plan would drain it. Continuous mode leaves out the nodes past the disk threshold
	// (and with a full disk), which it drains anyway.
	targets := liveNodes(im, live)
	if b.cfg.Mode == BalanceContinuous {
		targets = c.eligibleNodes(b, im, live)
	}
	plan, err := balance.Compute(balanceRequest(im, targets))
	if err != nil {
		c.log.Warn("cannot plan the balance of new nodes; leaving placement as it is", "nodes", ready, "err", err)
		_, err := c.proposeLocked(ctx, shareRecords(ready))
		return err
	}
	moves := balancerMoves{why: fmt.Sprintf("new nodes %v", ready), changes: plan.Changes, replicas: plan.Moves,
		leaders: plan.LeaderChanges, shared: ready}
	return c.startBalancerMovesLocked(ctx, b, im, moves)
}

// shareRecords clear the AwaitsShare marks of ids.
func shareRecords(ids []metadata.NodeID) []metadata.Record {
	recs := make([]metadata.Record, 0, len(ids))
	for _, id := range ids {
		recs = append(recs, metadata.Record{Type: metadata.BrokerShareType, BrokerID: id})
	}
	return recs
}

// balancerMoves is what one tick moves, and why (for the log).
type balancerMoves struct {
	why               string
	changes           []balance.Change
	replicas, leaders int
	// shared are the new nodes whose share these moves are: their AwaitsShare marks
	// are cleared in the proposal that starts the moves (alone if nothing moves).
	shared []metadata.NodeID
}

// startBalancerMovesLocked starts moves' reassignments with their throttles, in one
// proposal. A partition that cannot start (its leader would have no successor) is
// logged and left.
func (c *Controller) startBalancerMovesLocked(ctx context.Context, b *balancer, im *metadata.Image, moves balancerMoves) error {
	live := c.liveLocked(im)
	var recs []metadata.Record
	var started []metadata.TopicPartition
	scratch := im
	for _, ch := range moves.changes {
		tp := metadata.TopicPartition{Topic: ch.Topic, Partition: ch.Partition}
		p, ok := scratch.Partition(tp)
		if !ok {
			continue
		}
		next, err := startReassignment(p, nodeIDs(ch.To), live, unfit(im, tp))
		if err != nil {
			c.log.Warn("balance: cannot move partition", "topic", ch.Topic, "partition", ch.Partition, "to", ch.To, "err", err)
			continue
		}
		if samePartitionState(p, next) {
			continue
		}
		rec := metadata.Record{Type: metadata.PartitionChangeType, TopicName: ch.Topic, Partition: ch.Partition, PartitionState: &next}
		recs = append(recs, rec)
		scratch = scratch.Apply(rec, scratch.Offset)
		if next.Reassigning() {
			started = append(started, tp)
		}
	}
	if len(recs) == 0 {
		if len(moves.shared) > 0 {
			_, err := c.proposeLocked(ctx, shareRecords(moves.shared))
			return err
		}
		return nil
	}
	recs = append(recs, balancerThrottleRecords(im, scratch, started, b.cfg.ThrottleRate)...)
	recs = append(recs, shareRecords(moves.shared)...)
	if _, err := c.proposeLocked(ctx, recs); err != nil {
		return err
	}
	b.mu.Lock()
	b.lastMoving = time.Now()
	b.mu.Unlock()
	c.log.Info("balancer moving replicas", "mode", b.cfg.Mode, "reason", moves.why, "partitions_moved", len(started),
		"replicas_moved", moves.replicas, "preferred_leaders_changed", moves.leaders, "throttle_bytes_per_sec", b.cfg.ThrottleRate)
	return nil
}

// anyDownHolding reports whether a registered broker that holds a replica is not
// live. node_add then waits: it plans over the live nodes, so it would move the
// replicas of a node that is merely down (restarting, paused) onto the others, which is
// not what a node's joining asks for (TestNotEnoughReplicas caught it healing a
// partition whose two replicas had been killed a moment before). A down node that
// holds nothing (drained, or emptied by continuous mode) loses nothing by a plan.
func anyDownHolding(im *metadata.Image, live liveFunc) bool {
	for id := range im.Brokers {
		if !live(id) && holdsReplica(im, id) {
			return true
		}
	}
	return false
}

// holdsReplica reports whether node id is a replica of any partition.
func holdsReplica(im *metadata.Image, id metadata.NodeID) bool {
	for _, t := range im.Topics {
		for _, p := range t.Partitions {
			if slices.Contains(p.Replicas, id) {
				return true
			}
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

// eligibleNodes are the nodes a plan may place replicas on, sorted: live, disk not
// full, and in continuous mode not used past the threshold (by the last sample).
func (c *Controller) eligibleNodes(b *balancer, im *metadata.Image, live liveFunc) []metadata.NodeID {
	over := b.overThreshold()
	var ids []metadata.NodeID
	for id, br := range im.Brokers {
		if live(id) && !br.DiskFull && !over[id] {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	return ids
}

// liveNodes are the live registered nodes, sorted.
func liveNodes(im *metadata.Image, live liveFunc) []metadata.NodeID {
	var ids []metadata.NodeID
	for id := range im.Brokers {
		if live(id) {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	return ids
}

// balanceRequest is the planner's view of im: every partition, over nodes (with their
// racks).
func balanceRequest(im *metadata.Image, nodes []metadata.NodeID) balance.Request {
	var r balance.Request
	for _, name := range im.TopicNames() {
		for i, p := range im.Topics[name].Partitions {
			r.Current = append(r.Current, balance.Partition{Topic: name, Partition: int32(i), Replicas: int32IDs(p.Replicas)})
		}
	}
	r.Nodes = planNodes(im, nodes)
	return r
}

// planNodes are nodes as the planner takes them, with their racks.
func planNodes(im *metadata.Image, nodes []metadata.NodeID) []balance.Node {
	out := make([]balance.Node, 0, len(nodes))
	for _, id := range nodes {
		out = append(out, balance.Node{ID: int32(id), Rack: im.Brokers[id].Rack})
	}
	return out
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
