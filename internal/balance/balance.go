package balance

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
)

// Node is a node replicas may be placed on.
type Node struct {
	ID   int32
	Rack string // "" when the node has none (broker.rack unset)
}

// Partition is one partition and its replicas in order; the first replica is the
// preferred leader.
type Partition struct {
	Topic     string
	Partition int32
	Replicas  []int32
}

// Request is what to plan.
type Request struct {
	// Current is the current assignment: every partition the plan may move (the
	// caller leaves out the ones it must not touch, or filters with Include).
	Current []Partition
	// Nodes are the nodes replicas may be placed on, with their racks. A replica on a
	// node that is not listed moves.
	Nodes []Node
	// Drain lists nodes to empty: no included replica stays on them, even when they
	// are in Nodes.
	Drain []int32
	// Include, if set, picks the topics to plan; the others are returned unchanged
	// and count in no share. nil includes every topic.
	Include func(topic string) bool
	// IgnoreRacks plans as if no node had a rack. Without it, racks are used when
	// every target node has one, and a request where only some have one is refused
	// (ErrMixedRacks), as Kafka's rack-aware assignment refuses it.
	IgnoreRacks bool
}

// Load is what a node holds: replicas, and partitions it is the preferred leader of.
type Load struct {
	Replicas int `json:"replicas"`
	Leaders  int `json:"leaders"`
}

// Change is a partition whose replicas (or their order) the plan changes.
type Change struct {
	Topic     string
	Partition int32
	From, To  []int32
}

// Plan is the result of Compute.
type Plan struct {
	// Assignment is every partition of Request.Current, sorted by topic and
	// partition, with its new replicas (excluded topics as they were).
	Assignment []Partition
	// Changes are the included partitions whose replica list changes, in the same
	// order.
	Changes []Change
	// Before and After are the loads per node over the included partitions: Before
	// of every node that held a replica, After of every target node.
	Before, After map[int32]Load
	// Moves counts replicas placed on a node that did not hold them: the copies the
	// plan costs. Moves ≤ Excess + Chains + RackRepairs (equal unless a rack repair
	// undid a balancing move), and Moves = Excess without drained nodes and racks.
	Moves int
	// Excess is the lower bound on Moves: replicas over their node's target share,
	// every replica on a drained or unlisted node included (see the package doc).
	Excess int
	// Chains counts the extra moves forced by a replica leaving a drained or
	// unlisted node for a partition that already had a replica on every node below
	// its target.
	Chains int
	// RackRepairs counts the moves made only to spread partitions over racks.
	RackRepairs int
	// LeaderChanges counts the included partitions whose preferred leader changes.
	LeaderChanges int
	// RackAware is whether racks were used.
	RackAware bool
	// RackViolations is the replicas beyond ⌈RF/racks⌉ in one rack of a partition
	// that remain (0 with racks of equal size; see the package doc).
	RackViolations int
	// LeadersBalanced is whether every target node is the preferred leader of
	// ⌊P/|T|⌋ or ⌈P/|T|⌉ included partitions.
	LeadersBalanced bool
}

// Errors Compute returns, wrapped with the topic, partition or node at fault.
var (
	// ErrNotEnoughNodes: a partition has more replicas than there are target nodes.
	ErrNotEnoughNodes = errors.New("not enough nodes")
	// ErrMixedRacks: some target nodes have a rack and some do not.
	ErrMixedRacks = errors.New("some nodes have a rack and some do not")
	// ErrInvalid: the request itself is wrong (no nodes, a node listed twice, a
	// partition with no replica or with two on one node).
	ErrInvalid = errors.New("invalid request")
)

// Compute plans a balanced assignment for r (see the package doc for what it
// guarantees). It does not modify r.
func Compute(r Request) (*Plan, error) {
	pl, err := newPlanner(r)
	if err != nil {
		return nil, err
	}
	plan := &Plan{Before: pl.loads(false), RackAware: pl.racks > 0}
	plan.Excess = pl.setTargets()
	plan.Chains = pl.placeOrphans()
	pl.shedExcess()
	if pl.racks > 0 {
		plan.RackRepairs = pl.repairRacks()
		plan.RackViolations = pl.totalViolations()
	}
	plan.LeadersBalanced = pl.balanceLeaders()
	pl.finish(plan)
	return plan, nil
}

// finish orders each partition's replicas (leader first) and fills the plan's
// assignment, changes and counts.
func (pl *planner) finish(plan *Plan) {
	for _, p := range pl.parts {
		p.orderLeaderFirst()
		plan.Moves += p.moves()
		if p.cur[0] != p.old[0] {
			plan.LeaderChanges++
		}
		if !slices.Equal(p.cur, p.old) {
			plan.Changes = append(plan.Changes, Change{Topic: p.topic, Partition: p.partition,
				From: slices.Clone(p.old), To: slices.Clone(p.cur)})
		}
	}
	plan.After = pl.loads(true)
	plan.Assignment = slices.Clone(pl.untouched)
	for _, p := range pl.parts {
		plan.Assignment = append(plan.Assignment, Partition{Topic: p.topic, Partition: p.partition, Replicas: slices.Clone(p.cur)})
	}
	slices.SortFunc(plan.Assignment, func(a, b Partition) int {
		return cmp.Or(cmp.Compare(a.Topic, b.Topic), cmp.Compare(a.Partition, b.Partition))
	})
}

// part is one included partition while planning.
type part struct {
	topic     string
	partition int32
	old       []int32 // immutable: the replicas in Request.Current
	cur       []int32 // the planned replicas; a move replaces one in place
	rk        []int   // rk[i] is the rack index of cur[i] (planner.rackIdx); kept by planner.move
	leader    int32   // the planned preferred leader, one of cur (leader phase)
}

func (p *part) has(n int32) bool { return slices.Contains(p.cur, n) }

// replace puts to in from's place.
func (p *part) replace(from, to int32) {
	p.cur[slices.Index(p.cur, from)] = to
}

// moves counts the planned replicas that are not old ones.
func (p *part) moves() int {
	n := 0
	for _, r := range p.cur {
		if !slices.Contains(p.old, r) {
			n++
		}
	}
	return n
}

// orderLeaderFirst moves the leader to the front, the others keeping their order.
func (p *part) orderLeaderFirst() {
	i := slices.Index(p.cur, p.leader)
	copy(p.cur[1:i+1], p.cur[:i])
	p.cur[0] = p.leader
	if len(p.rk) > 0 {
		r := p.rk[i]
		copy(p.rk[1:i+1], p.rk[:i])
		p.rk[0] = r
	}
}

func (p *part) String() string { return fmt.Sprintf("topic %q partition %d", p.topic, p.partition) }
