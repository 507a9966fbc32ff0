package balance

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

// TestScaleLargeCluster: a cluster of 24 nodes (3 racks) with 3,000 partitions of RF 3
// on the first 20, one replica per rack, the 4 new nodes empty: the plan is balanced,
// keeps the rack spread, moves exactly the excess, and takes about a second (the
// controller's node_add balancer runs it).
func TestScaleLargeCluster(t *testing.T) {
	if testing.Short() {
		t.Skip("large plan")
	}
	rng := rand.New(rand.NewPCG(7, 8))
	var req Request
	for id := int32(1); id <= 24; id++ {
		req.Nodes = append(req.Nodes, Node{ID: id, Rack: fmt.Sprintf("r%d", id%3)})
	}
	// Rack-aware as placement makes it: one replica in each rack (rack = id mod 3).
	for p := range 3000 {
		var reps []int32
		for _, id := range rng.Perm(20) {
			if !slices.ContainsFunc(reps, func(r int32) bool { return r%3 == int32(id+1)%3 }) {
				reps = append(reps, int32(id+1))
			}
		}
		req.Current = append(req.Current, Partition{Topic: fmt.Sprintf("t%d", p%40), Partition: int32(p / 40), Replicas: reps[:3]})
	}
	start := time.Now()
	plan := mustCompute(t, req)
	took := time.Since(start)
	t.Logf("3,000 partitions over 24 nodes: %d moves (excess %d, rack repairs %d), %d leader changes, %v", plan.Moves, plan.Excess, plan.RackRepairs, plan.LeaderChanges, took)
	if took > 10*time.Second {
		t.Errorf("planning took %v", took)
	}
	// Spread over racks already, the plan keeps it so without extra moves.
	if plan.Moves != plan.Excess || plan.RackViolations != 0 {
		t.Errorf("moves %d, excess %d, rack violations %d; want moves = excess and no violation", plan.Moves, plan.Excess, plan.RackViolations)
	}
}
