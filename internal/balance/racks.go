package balance

import "slices"

// Rack spread as Kafka's rack-aware placement: a partition with RF replicas over k
// racks should have at most ⌈RF/k⌉ in any rack. violations counts the replicas
// beyond that.

func (pl *planner) rackCap(p *part) int { return (len(p.cur) + pl.racks - 1) / pl.racks }

func (pl *planner) violations(p *part) int {
	if pl.racks == 0 {
		return 0
	}
	v, limit := 0, pl.rackCap(p)
	for i, r := range p.rk {
		if r >= 0 && !slices.Contains(p.rk[:i], r) { // each rack once
			v += max(0, inRack(p, r)-limit)
		}
	}
	return v
}

// inRack counts p's replicas in rack r (replication factors are small: no map).
func inRack(p *part, r int) int {
	c := 0
	for _, x := range p.rk {
		if x == r {
			c++
		}
	}
	return c
}

// rackDelta is how the violations of p change if its replica on from moves to to
// (to not a replica of p): only the two racks' counts change. Nodes off T (rack -1)
// count in no rack.
func (pl *planner) rackDelta(p *part, from, to int32) int {
	if pl.racks == 0 {
		return 0
	}
	rf, rt := p.rk[slices.Index(p.cur, from)], pl.rackOf(to)
	if rf == rt {
		return 0
	}
	limit := pl.rackCap(p)
	delta := 0
	if rf >= 0 && inRack(p, rf) > limit {
		delta--
	}
	if rt >= 0 && inRack(p, rt) >= limit {
		delta++
	}
	return delta
}

func (pl *planner) totalViolations() int {
	v := 0
	for _, p := range pl.parts {
		v += pl.violations(p)
	}
	return v
}

// repairRacks spreads partitions over more racks after the counts are balanced: by
// one move between a node at the upper share and one at the lower share (the counts
// stay within one of even), or else by swapping replicas between two partitions
// (the counts do not change). Each repair lowers the total violations, so it ends.
// It returns the moves made.
func (pl *planner) repairRacks() (moves int) {
	for repaired := true; repaired; {
		repaired = false
		for _, p := range pl.parts {
			if pl.violations(p) == 0 {
				continue
			}
			if pl.repairByMove(p) {
				moves++
				repaired = true
			} else if pl.repairBySwap(p) {
				moves += 2
				repaired = true
			}
		}
	}
	return moves
}

func (pl *planner) repairByMove(p *part) bool {
	up := pl.upper()
	for _, x := range p.holders() {
		if pl.count[x]-1 < pl.base {
			continue
		}
		for _, to := range pl.ids {
			if p.has(to) || pl.count[to]+1 > up {
				continue
			}
			if pl.rackDelta(p, x, to) < 0 {
				pl.move(p, x, to)
				return true
			}
		}
	}
	return false
}

func (pl *planner) repairBySwap(p *part) bool {
	for _, x := range p.holders() {
		for _, q := range pl.parts {
			if q == p || q.has(x) {
				continue
			}
			for _, y := range q.holders() {
				if p.has(y) || pl.rackDelta(p, x, y)+pl.rackDelta(q, y, x) >= 0 {
					continue
				}
				pl.move(p, x, y)
				pl.move(q, y, x)
				return true
			}
		}
	}
	return false
}
