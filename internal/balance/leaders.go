package balance

// Preferred leaders. Every partition keeps its preferred leader if that node still
// holds a replica; the others take the replica that leads fewest so far. Then, while
// a node leads more than ⌈P/|T|⌉ (or fewer than ⌊P/|T|⌋), leadership shifts along the
// shortest chain of partitions x → … → z, each step handing one partition's
// leadership to another of its replicas, to a node z that can take one more (or from
// one that can give one up). A chain moves one leadership off x and onto z and leaves
// the nodes between as they were, so each one mends one unit of imbalance; with no
// chain left the balance is as good as the replica sets allow (the augmenting-path
// argument of bipartite matching).

// step is one link of a chain: p's leadership passes from p.leader to node to.
type step struct {
	p  *part
	to int32
}

func (pl *planner) balanceLeaders() bool {
	lcount := map[int32]int{}
	var orphans []*part
	for _, p := range pl.parts {
		p.leader = -1
		if p.has(p.old[0]) {
			p.leader = p.old[0]
			lcount[p.leader]++
		} else {
			orphans = append(orphans, p)
		}
	}
	for _, p := range orphans {
		p.leader = p.cur[0]
		for _, n := range p.cur[1:] {
			if lcount[n] < lcount[p.leader] {
				p.leader = n
			}
		}
		lcount[p.leader]++
	}
	lo := len(pl.parts) / len(pl.ids)
	hi := lo
	if len(pl.parts)%len(pl.ids) != 0 {
		hi++
	}
	for pl.shiftLeaders(lcount, func(n int32) bool { return lcount[n] > hi }, func(n int32) bool { return lcount[n] < hi }, false) {
	}
	for pl.shiftLeaders(lcount, func(n int32) bool { return lcount[n] < lo }, func(n int32) bool { return lcount[n] > lo }, true) {
	}
	for _, n := range pl.ids {
		if lcount[n] < lo || lcount[n] > hi {
			return false
		}
	}
	return true
}

// shiftLeaders finds, for the first node (in id order) that start accepts, a
// shortest chain to a node goal accepts and applies it; it reports whether it did.
// Forward chains go from the start node's partitions to their replicas; backward
// ones (reverse) end at the start node, coming from a node goal accepts.
func (pl *planner) shiftLeaders(lcount map[int32]int, start, goal func(int32) bool, reverse bool) bool {
	for _, s := range pl.ids {
		if !start(s) {
			continue
		}
		var chain []step
		if reverse {
			chain = pl.chainInto(s, goal)
		} else {
			chain = pl.chainFrom(s, goal)
		}
		if chain == nil {
			continue
		}
		first, last := chain[0].p.leader, chain[len(chain)-1].to
		for _, st := range chain {
			st.p.leader = st.to
		}
		lcount[first]--
		lcount[last]++
		return true
	}
	return false
}

// chainFrom is a breadth-first search from x along "a leads p, b is a replica of p"
// to the nearest node goal accepts; the chain runs from x.
func (pl *planner) chainFrom(x int32, goal func(int32) bool) []step {
	led := map[int32][]*part{}
	for _, p := range pl.parts {
		led[p.leader] = append(led[p.leader], p)
	}
	via := map[int32]step{x: {}}
	for queue := []int32{x}; len(queue) > 0; queue = queue[1:] {
		a := queue[0]
		for _, p := range led[a] {
			for _, b := range p.cur {
				if _, seen := via[b]; seen {
					continue
				}
				via[b] = step{p: p, to: b}
				if goal(b) {
					return unwind(via, x, b)
				}
				queue = append(queue, b)
			}
		}
	}
	return nil
}

// chainInto is the backward search: from d against the links to the nearest node
// goal accepts; the chain runs from that node to d.
func (pl *planner) chainInto(d int32, goal func(int32) bool) []step {
	into := map[int32][]*part{} // into[b]: the partitions b is a follower of
	for _, p := range pl.parts {
		for _, b := range p.cur {
			if b != p.leader {
				into[b] = append(into[b], p)
			}
		}
	}
	next := map[int32]step{d: {}} // next[a]: the step from a towards d
	for queue := []int32{d}; len(queue) > 0; queue = queue[1:] {
		b := queue[0]
		for _, p := range into[b] {
			a := p.leader
			if _, seen := next[a]; seen {
				continue
			}
			next[a] = step{p: p, to: b}
			if goal(a) {
				var chain []step
				for n := a; n != d; n = next[n].to {
					chain = append(chain, next[n])
				}
				return chain
			}
			queue = append(queue, a)
		}
	}
	return nil
}

// unwind rebuilds the chain from x to end from the search's back links.
func unwind(via map[int32]step, x, end int32) []step {
	var chain []step
	for n := end; n != x; n = via[n].p.leader {
		chain = append(chain, via[n])
	}
	for i, j := 0, len(chain)-1; i < j; i, j = i+1, j-1 {
		chain[i], chain[j] = chain[j], chain[i]
	}
	return chain
}
