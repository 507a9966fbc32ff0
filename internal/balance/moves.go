package balance

import "slices"

// score ranks a candidate move of p's replica from node from to node to; lower is
// better. Compared field by field: rack spread, the topic's spread, keeping the
// preferred leader in place, then the destination's deficit. Equal scores keep the
// first candidate found, in node and partition order.
type score [4]int

func (a score) less(b score) bool {
	for i := range a {
		if a[i] != b[i] {
			return a[i] < b[i]
		}
	}
	return false
}

func (pl *planner) score(p *part, from, to int32) score {
	tc := pl.topicCount[p.topic]
	leader := 0
	if p.cur[0] == from {
		leader = 1
	}
	return score{pl.rackDelta(p, from, to), -(tc[from] - tc[to]), leader, -(pl.want[to] - pl.count[to])}
}

// placeOrphans moves every replica on a node outside T (drained or unlisted) to a
// target node, below its target when one is free for the partition; it returns the
// chains: replicas that had to go to a node at its target (see the package doc).
func (pl *planner) placeOrphans() (chains int) {
	for _, p := range pl.parts {
		for i := 0; i < len(p.cur); i++ {
			from := p.cur[i]
			if pl.target[from] {
				continue
			}
			to, ok := pl.bestDestination(p, from, true)
			if !ok {
				to, ok = pl.swapTarget(p, from)
			}
			if !ok {
				to, _ = pl.bestDestination(p, from, false)
				chains++ // to is now over its target: shedExcess moves one replica off it
			}
			pl.move(p, from, to)
		}
	}
	return chains
}

// bestDestination picks the best target node for p's replica on from among the nodes
// without a replica of p (and, if underOnly, below their target).
func (pl *planner) bestDestination(p *part, from int32, underOnly bool) (int32, bool) {
	var best int32
	var bestScore score
	found := false
	for _, to := range pl.ids {
		if p.has(to) || underOnly && pl.count[to] >= pl.want[to] {
			continue
		}
		if s := pl.score(p, from, to); !found || s.less(bestScore) {
			best, bestScore, found = to, s, true
		}
	}
	return best, found
}

// swapTarget handles an orphan of p when every node below its target already has a
// replica of p: a node y without one, at the lower share, and a node z given the
// upper share but holding no more than the lower one trade targets, which leaves the
// excess as it was and puts y below its target.
func (pl *planner) swapTarget(p *part, from int32) (int32, bool) {
	z := int32(-1)
	for _, n := range pl.ids {
		if pl.want[n] == pl.base+1 && pl.count[n] <= pl.base {
			z = n
			break
		}
	}
	if z < 0 {
		return 0, false
	}
	var best int32
	var bestScore score
	found := false
	for _, y := range pl.ids {
		if p.has(y) || pl.want[y] != pl.base || pl.count[y] != pl.base {
			continue
		}
		if s := pl.score(p, from, y); !found || s.less(bestScore) {
			best, bestScore, found = y, s, true
		}
	}
	if found {
		pl.want[best], pl.want[z] = pl.base+1, pl.base
	}
	return best, found
}

// shedExcess moves replicas off the nodes over their target, one move per replica
// of excess: while a node x is over its target some node d is under its own, and x
// is a replica of more partitions than d, so one of them can move from x to d.
func (pl *planner) shedExcess() {
	for {
		x, ok := pl.mostOver()
		if !ok {
			return
		}
		p, to, ok := pl.bestShed(x)
		if !ok {
			return // unreachable (see above); the property tests would see the imbalance
		}
		pl.move(p, x, to)
	}
}

// mostOver returns the target node furthest over its target, the lowest id first.
func (pl *planner) mostOver() (int32, bool) {
	var x int32
	over := 0
	for _, n := range pl.ids {
		if e := pl.count[n] - pl.want[n]; e > over {
			x, over = n, e
		}
	}
	return x, over > 0
}

// bestShed picks the partition and destination of a move off node x.
func (pl *planner) bestShed(x int32) (*part, int32, bool) {
	var bestP *part
	var bestTo int32
	var bestScore score
	var under []int32 // the nodes below their target, ascending
	for _, to := range pl.ids {
		if pl.count[to] < pl.want[to] {
			under = append(under, to)
		}
	}
	for _, p := range pl.parts {
		if !p.has(x) {
			continue
		}
		for _, to := range under {
			if p.has(to) {
				continue
			}
			if s := pl.score(p, x, to); bestP == nil || s.less(bestScore) {
				bestP, bestTo, bestScore = p, to, s
			}
		}
	}
	return bestP, bestTo, bestP != nil
}

// upper is the largest share a node may hold: ⌈R/|T|⌉.
func (pl *planner) upper() int {
	total := 0
	for _, n := range pl.ids {
		total += pl.count[n]
	}
	if total%len(pl.ids) == 0 {
		return pl.base
	}
	return pl.base + 1
}

// holders returns the replicas of p, the followers first (in order) and the
// preferred leader last, so that a repair that may take any replica moves a
// follower and leaves the leader in place when it can.
func (p *part) holders() []int32 { return append(slices.Clone(p.cur[1:]), p.cur[0]) }
