package balance

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"
)

// genOpts shape a random cluster.
type genOpts struct {
	maxNodes, maxTopics, maxPartitions, maxRF int
	orphans, drain, racks, uniformRF          bool
}

// randomRequest builds a random current assignment over random nodes. With orphans
// some replicas sit on nodes outside Nodes (ids above the listed ones).
func randomRequest(rng *rand.Rand, o genOpts) Request {
	n := 1 + rng.IntN(o.maxNodes)
	var req Request
	racks := 1 + rng.IntN(3)
	for id := int32(1); id <= int32(n); id++ {
		nd := Node{ID: id}
		if o.racks {
			nd.Rack = fmt.Sprintf("r%d", rng.IntN(racks))
		}
		req.Nodes = append(req.Nodes, nd)
	}
	targets := n
	if o.drain && n > 1 && rng.IntN(2) == 0 {
		req.Drain = []int32{1 + rng.Int32N(int32(n))}
		targets--
	}
	universe := n
	if o.orphans {
		universe += rng.IntN(3)
	}
	rf := 1 + rng.IntN(min(targets, o.maxRF))
	for ti := range 1 + rng.IntN(o.maxTopics) {
		if !o.uniformRF {
			rf = 1 + rng.IntN(min(targets, o.maxRF))
		}
		for p := range rng.IntN(o.maxPartitions + 1) {
			perm := rng.Perm(universe)[:rf]
			reps := make([]int32, rf)
			for i, x := range perm {
				reps[i] = int32(x + 1)
			}
			req.Current = append(req.Current, Partition{Topic: fmt.Sprintf("t%d", ti), Partition: int32(p), Replicas: reps})
		}
	}
	return req
}

// shuffled is req with its partitions and nodes in another order.
func shuffled(rng *rand.Rand, req Request) Request {
	out := req
	out.Current = slices.Clone(req.Current)
	out.Nodes = slices.Clone(req.Nodes)
	rng.Shuffle(len(out.Current), func(i, j int) { out.Current[i], out.Current[j] = out.Current[j], out.Current[i] })
	rng.Shuffle(len(out.Nodes), func(i, j int) { out.Nodes[i], out.Nodes[j] = out.Nodes[j], out.Nodes[i] })
	return out
}

// TestPropertyRandomClusters: on random clusters (drains, replicas on unlisted
// nodes, racks, mixed replication factors) every plan keeps the invariants, is the
// same for the same input in any order, and is a fixed point: planning its result
// moves nothing.
func TestPropertyRandomClusters(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	o := genOpts{maxNodes: 9, maxTopics: 4, maxPartitions: 12, maxRF: 4, orphans: true, drain: true, racks: true}
	unbalancedLeaders := 0
	for i := range 3000 {
		o.racks = i%2 == 0
		req := randomRequest(rng, o)
		plan := mustCompute(t, req)
		if again := mustCompute(t, shuffled(rng, req)); !reflect.DeepEqual(plan, again) {
			t.Fatalf("case %d: same input in another order gave another plan:\n%+v\n%+v", i, plan, again)
		}
		next := Request{Current: plan.Assignment, Nodes: req.Nodes, Drain: req.Drain}
		if fixed := mustCompute(t, next); fixed.Moves != 0 || len(fixed.Changes) != 0 {
			t.Fatalf("case %d: planning the plan's result moves %d, changes %+v\nrequest %+v", i, fixed.Moves, fixed.Changes, next)
		}
		if !plan.LeadersBalanced {
			unbalancedLeaders++
		}
		if t.Failed() {
			t.Fatalf("case %d: request %+v\nplan %+v", i, req, plan)
		}
	}
	t.Logf("leaders not balanceable in %d of 3000 random clusters (mixed replication factors)", unbalancedLeaders)
}

// TestPropertyMovesEqualExcess: without drains, unlisted nodes and racks, a plan
// moves exactly the excess over the even share, the least any balanced plan can,
// and with one replication factor per cluster the leaders always balance.
func TestPropertyMovesEqualExcess(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	o := genOpts{maxNodes: 12, maxTopics: 5, maxPartitions: 20, maxRF: 4, uniformRF: true}
	for i := range 2000 {
		req := randomRequest(rng, o)
		plan := mustCompute(t, req)
		if plan.Moves != plan.Excess || plan.Chains != 0 || plan.RackRepairs != 0 {
			t.Fatalf("case %d: moves %d, excess %d, chains %d, rack repairs %d\nrequest %+v", i, plan.Moves, plan.Excess, plan.Chains, plan.RackRepairs, req)
		}
		if !plan.LeadersBalanced {
			t.Fatalf("case %d: leaders not balanced with one replication factor: %+v\nrequest %+v", i, plan.After, req)
		}
	}
}

// TestPropertyMinimalByBruteForce: on tiny clusters, every balanced assignment is
// enumerated; the plan's moves equal the least of them, drains and unlisted nodes
// included.
func TestPropertyMinimalByBruteForce(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	o := genOpts{maxNodes: 4, maxTopics: 2, maxPartitions: 2, maxRF: 3, orphans: true, drain: true}
	for i := range 1500 {
		req := randomRequest(rng, o)
		plan := mustCompute(t, req)
		if best := bruteForceMoves(req); plan.Moves != best {
			t.Fatalf("case %d: plan moves %d (excess %d, chains %d), the best balanced plan moves %d\nrequest %+v\nplan %+v",
				i, plan.Moves, plan.Excess, plan.Chains, best, req, plan.Assignment)
		}
	}
}

// bruteForceMoves returns the fewest moves of any assignment with every target node
// within one replica of the even share (replica sets only; order is free).
func bruteForceMoves(req Request) int {
	var targets []int32
	for _, n := range req.Nodes {
		if !slices.Contains(req.Drain, n.ID) {
			targets = append(targets, n.ID)
		}
	}
	total := 0
	for _, p := range req.Current {
		total += len(p.Replicas)
	}
	lo, hi := total/len(targets), (total+len(targets)-1)/len(targets)
	count := map[int32]int{}
	best := -1
	var walk func(i, moves int)
	walk = func(i, moves int) {
		if best >= 0 && moves >= best {
			return
		}
		if i == len(req.Current) {
			for _, n := range targets {
				if count[n] < lo || count[n] > hi {
					return
				}
			}
			best = moves
			return
		}
		old := req.Current[i].Replicas
		subsets(targets, len(old), func(set []int32) {
			m := 0
			for _, n := range set {
				count[n]++
				if !slices.Contains(old, n) {
					m++
				}
			}
			walk(i+1, moves+m)
			for _, n := range set {
				count[n]--
			}
		})
	}
	walk(0, 0)
	return best
}

// subsets calls fn with every k-element subset of ids.
func subsets(ids []int32, k int, fn func([]int32)) {
	var cur []int32
	var rec func(from int)
	rec = func(from int) {
		if len(cur) == k {
			fn(cur)
			return
		}
		for i := from; i < len(ids); i++ {
			cur = append(cur, ids[i])
			rec(i + 1)
			cur = cur[:len(cur)-1]
		}
	}
	rec(0)
}

// TestPropertyRackSpread: with racks of equal size, every plan spreads every
// partition over the racks (no rack holds more than ⌈RF/racks⌉ of its replicas),
// whatever the start: replicas in one rack, on unlisted nodes, or anywhere.
func TestPropertyRackSpread(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	for i := range 2000 {
		racks, per := 2+rng.IntN(3), 1+rng.IntN(3)
		var req Request
		for id := range racks * per {
			req.Nodes = append(req.Nodes, Node{ID: int32(id + 1), Rack: fmt.Sprintf("r%d", id%racks)})
		}
		rf := 1 + rng.IntN(min(racks*per, 4))
		for p := range rng.IntN(30) {
			reps := make([]int32, rf)
			for j, x := range rng.Perm(racks*per + 2)[:rf] { // some on unlisted nodes
				reps[j] = int32(x + 1)
			}
			req.Current = append(req.Current, Partition{Topic: "t", Partition: int32(p), Replicas: reps})
		}
		plan := mustCompute(t, req)
		if plan.RackViolations != 0 {
			t.Fatalf("case %d: %d rack violations left\nrequest %+v\nplan %+v", i, plan.RackViolations, req, plan.Assignment)
		}
		perRack := func(reps []int32) map[string]int {
			m := map[string]int{}
			for _, n := range reps {
				m[req.Nodes[n-1].Rack]++
			}
			return m
		}
		for _, p := range plan.Assignment {
			for rack, c := range perRack(p.Replicas) {
				if limit := (len(p.Replicas) + racks - 1) / racks; c > limit {
					t.Fatalf("case %d: %s/%d has %d replicas in rack %s, more than %d", i, p.Topic, p.Partition, c, rack, limit)
				}
			}
		}
	}
}
