package balance

import (
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
)

func nodes(ids ...int32) []Node {
	ns := make([]Node, len(ids))
	for i, id := range ids {
		ns[i] = Node{ID: id}
	}
	return ns
}

func parts(topic string, replicas ...[]int32) []Partition {
	ps := make([]Partition, len(replicas))
	for i, r := range replicas {
		ps[i] = Partition{Topic: topic, Partition: int32(i), Replicas: r}
	}
	return ps
}

func r(ids ...int32) []int32 { return ids }

func mustCompute(t *testing.T, req Request) *Plan {
	t.Helper()
	plan, err := Compute(req)
	if err != nil {
		t.Fatalf("Compute: %v", err)
	}
	checkInvariants(t, req, plan)
	return plan
}

func TestComputeTable(t *testing.T) {
	for _, tc := range []struct {
		name                   string
		req                    Request
		moves, leaderChanges   int
		want                   [][]int32 // the new replicas of the partitions, in order
		chains, rackViolations int
	}{{
		name:  "balanced stays",
		req:   Request{Current: parts("t", r(1, 2), r(2, 3), r(3, 1)), Nodes: nodes(1, 2, 3)},
		want:  [][]int32{{1, 2}, {2, 3}, {3, 1}},
		moves: 0,
	}, {
		name: "a new node takes its share, one replica per excess",
		req: Request{Current: parts("t", r(1, 2, 3), r(2, 3, 1), r(3, 1, 2), r(1, 3, 2)),
			Nodes: nodes(1, 2, 3, 4)},
		// 12 replicas over 4 nodes: 3 each; nodes 1..3 hold 4, so 3 moves, and node 4
		// leads one partition.
		moves: 3, leaderChanges: 1,
		want: [][]int32{{4, 1, 3}, {2, 3, 4}, {3, 1, 2}, {1, 4, 2}},
	}, {
		name:  "drain moves every replica of the node and only those",
		req:   Request{Current: parts("t", r(1, 2), r(2, 3), r(3, 1), r(1, 3)), Nodes: nodes(1, 2, 3), Drain: []int32{3}},
		moves: 3, leaderChanges: 1,
		// 3/0 [3,1] loses its leader: node 2 leads fewer and takes it.
		want: [][]int32{{1, 2}, {2, 1}, {2, 1}, {1, 2}},
	}, {
		name:  "a replica on an unlisted node moves",
		req:   Request{Current: parts("t", r(9), r(1), r(2)), Nodes: nodes(1, 2, 3)},
		moves: 1, leaderChanges: 1,
		want: [][]int32{{3}, {1}, {2}},
	}, {
		name: "target swap: the node given the larger share already holds the partition",
		// 4 replicas over nodes 1..3 (9 is unlisted): shares 2,1,1, the 2 to node 1
		// (lowest id of the most loaded). Node 1 already holds partition 0, so node 2
		// takes the larger share instead, and one move suffices.
		req:   Request{Current: parts("t", r(9, 1), r(2), r(3)), Nodes: nodes(1, 2, 3)},
		moves: 1, leaderChanges: 1,
		want: [][]int32{{1, 2}, {2}, {3}},
	}, {
		name: "chain: every node under its share already holds the partition",
		// Nodes 1 and 2, shares 2 and 2. The replica of partition 0 on unlisted node
		// 9 cannot go to node 2 (under its share, but already a replica), so it goes
		// to node 1, which passes partition 1 on to node 2: two moves, excess one.
		req:   Request{Current: parts("t", r(9, 2), r(1), r(1)), Nodes: nodes(1, 2)},
		moves: 2, leaderChanges: 2, chains: 1,
		want: [][]int32{{2, 1}, {2}, {1}},
	}, {
		name: "racks: a partition in one rack spreads over two",
		req: Request{Current: parts("t", r(1, 2), r(3, 4)),
			Nodes: []Node{{1, "a"}, {2, "a"}, {3, "b"}, {4, "b"}}},
		moves: 2,
		want:  [][]int32{{1, 4}, {3, 2}}, // followers swapped: counts and leaders stay
	}, {
		name:  "include picks topics; the others are untouched and count nowhere",
		req:   Request{Current: append(parts("a", r(1), r(1)), parts("b", r(1), r(1))...), Nodes: nodes(1, 2), Include: func(t string) bool { return t == "a" }},
		moves: 1, leaderChanges: 1,
		want: [][]int32{{2}, {1}, {1}, {1}},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			plan := mustCompute(t, tc.req)
			var got [][]int32
			for _, p := range plan.Assignment {
				got = append(got, p.Replicas)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("assignment %v, want %v", got, tc.want)
			}
			if plan.Moves != tc.moves || plan.LeaderChanges != tc.leaderChanges || plan.Chains != tc.chains || plan.RackViolations != tc.rackViolations {
				t.Errorf("moves %d, leader changes %d, chains %d, rack violations %d; want %d, %d, %d, %d",
					plan.Moves, plan.LeaderChanges, plan.Chains, plan.RackViolations, tc.moves, tc.leaderChanges, tc.chains, tc.rackViolations)
			}
		})
	}
}

func TestComputeErrors(t *testing.T) {
	for _, tc := range []struct {
		req  Request
		err  error
		want string
	}{
		{Request{Current: parts("t", r(1, 2, 3)), Nodes: nodes(1, 2, 3), Drain: []int32{3}}, ErrNotEnoughNodes,
			`topic "t" partition 0 has 3 replicas but only 2 nodes are left to place them on ([1 2])`},
		{Request{Current: parts("t", r(1, 1)), Nodes: nodes(1, 2)}, ErrInvalid, `topic "t" partition 0 has two replicas on node 1`},
		{Request{Current: parts("t", r()), Nodes: nodes(1)}, ErrInvalid, `topic "t" partition 0 has no replica`},
		{Request{Current: parts("t", r(1)), Nodes: nil}, ErrInvalid, "no nodes"},
		{Request{Current: parts("t", r(1)), Nodes: nodes(1, 1)}, ErrInvalid, "node 1 is listed twice"},
		{Request{Current: parts("t", r(1)), Nodes: nodes(1), Drain: []int32{1}}, ErrInvalid, "every node listed is drained"},
		{Request{Current: parts("t", r(1)), Nodes: []Node{{1, "a"}, {2, ""}}}, ErrMixedRacks, "1 of the 2 target nodes have a rack"},
		{Request{Current: append(parts("t", r(1)), parts("t", r(2))...), Nodes: nodes(1, 2)}, ErrInvalid, `topic "t" partition 0 is listed twice`},
	} {
		_, err := Compute(tc.req)
		if !errors.Is(err, tc.err) || err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Compute(%+v) = %v; want %v naming %q", tc.req, err, tc.err, tc.want)
		}
	}
	// IgnoreRacks accepts mixed racks.
	if _, err := Compute(Request{Current: parts("t", r(1)), Nodes: []Node{{1, "a"}, {2, ""}}, IgnoreRacks: true}); err != nil {
		t.Errorf("IgnoreRacks: %v", err)
	}
}

// checkInvariants checks what the package doc promises of any plan.
func checkInvariants(t *testing.T, req Request, plan *Plan) {
	t.Helper()
	var targets []int32
	for _, n := range req.Nodes {
		if !slices.Contains(req.Drain, n.ID) {
			targets = append(targets, n.ID)
		}
	}
	old := map[string][]int32{}
	for _, p := range req.Current {
		old[fmt.Sprintf("%s/%d", p.Topic, p.Partition)] = p.Replicas
	}
	count, lead := map[int32]int{}, map[int32]int{}
	total, nparts, moves, leaderChanges := 0, 0, 0, 0
	for _, p := range plan.Assignment {
		key := fmt.Sprintf("%s/%d", p.Topic, p.Partition)
		was := old[key]
		if req.Include != nil && !req.Include(p.Topic) {
			if !slices.Equal(was, p.Replicas) {
				t.Errorf("%s excluded but changed %v → %v", key, was, p.Replicas)
			}
			continue
		}
		if len(p.Replicas) != len(was) {
			t.Errorf("%s replication factor %d → %d", key, len(was), len(p.Replicas))
		}
		for i, n := range p.Replicas {
			if !slices.Contains(targets, n) {
				t.Errorf("%s has a replica on node %d, not a target", key, n)
			}
			if slices.Contains(p.Replicas[:i], n) {
				t.Errorf("%s has two replicas on node %d", key, n)
			}
			if !slices.Contains(was, n) {
				moves++
			}
			count[n]++
		}
		if p.Replicas[0] != was[0] {
			leaderChanges++
		}
		lead[p.Replicas[0]]++
		total += len(p.Replicas)
		nparts++
	}
	if len(plan.Assignment) != len(req.Current) {
		t.Errorf("assignment has %d partitions, current %d", len(plan.Assignment), len(req.Current))
	}
	lo, hi := total/len(targets), (total+len(targets)-1)/len(targets)
	llo, lhi := nparts/len(targets), (nparts+len(targets)-1)/len(targets)
	for _, n := range targets {
		if count[n] < lo || count[n] > hi {
			t.Errorf("node %d holds %d replicas, want %d..%d (%v)", n, count[n], lo, hi, count)
		}
		if plan.LeadersBalanced && (lead[n] < llo || lead[n] > lhi) {
			t.Errorf("node %d leads %d, want %d..%d though LeadersBalanced", n, lead[n], llo, lhi)
		}
		if plan.After[n] != (Load{count[n], lead[n]}) {
			t.Errorf("After[%d] = %+v, counted %d replicas %d leaders", n, plan.After[n], count[n], lead[n])
		}
	}
	if moves != plan.Moves || leaderChanges != plan.LeaderChanges {
		t.Errorf("plan says %d moves %d leader changes, counted %d and %d", plan.Moves, plan.LeaderChanges, moves, leaderChanges)
	}
	if plan.Moves < plan.Excess || plan.Moves > plan.Excess+plan.Chains+plan.RackRepairs {
		t.Errorf("moves %d outside [excess %d, excess + chains %d + rack repairs %d]", plan.Moves, plan.Excess, plan.Chains, plan.RackRepairs)
	}
}
