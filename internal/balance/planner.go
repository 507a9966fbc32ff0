package balance

import (
	"cmp"
	"fmt"
	"slices"
)

// planner is the state of one Compute call.
type planner struct {
	parts     []*part     // included partitions, by topic then partition
	untouched []Partition // excluded partitions, as given
	ids       []int32     // the target nodes T, ascending
	target    map[int32]bool
	rack      map[int32]string // rack of each target node ("" when not rack aware)
	racks     int              // distinct racks in T; 0 when not rack aware
	// rackIdx numbers the racks densely (every node of Current too: -1 off T), so
	// that per-partition rack counts compare ints (part.rk).
	rackIdx map[int32]int
	// count is the replicas each node holds in the planned assignment (every node,
	// target or not); want is each target node's target share t(n).
	count, want map[int32]int
	// topicCount[topic][node] is count restricted to one topic.
	topicCount map[string]map[int32]int
	base       int // ⌊R/|T|⌋
}

func newPlanner(r Request) (*planner, error) {
	pl := &planner{target: map[int32]bool{}, rack: map[int32]string{}, rackIdx: map[int32]int{}, count: map[int32]int{},
		want: map[int32]int{}, topicCount: map[string]map[int32]int{}}
	if err := pl.setNodes(r); err != nil {
		return nil, err
	}
	for _, cp := range r.Current {
		if r.Include != nil && !r.Include(cp.Topic) {
			pl.untouched = append(pl.untouched, Partition{Topic: cp.Topic, Partition: cp.Partition, Replicas: slices.Clone(cp.Replicas)})
			continue
		}
		p := &part{topic: cp.Topic, partition: cp.Partition, old: slices.Clone(cp.Replicas), cur: slices.Clone(cp.Replicas)}
		if err := pl.check(p); err != nil {
			return nil, err
		}
		pl.parts = append(pl.parts, p)
		for _, n := range p.cur {
			pl.add(p, n, 1)
			p.rk = append(p.rk, pl.rackOf(n))
		}
	}
	slices.SortFunc(pl.parts, func(a, b *part) int {
		return cmp.Or(cmp.Compare(a.topic, b.topic), cmp.Compare(a.partition, b.partition))
	})
	for i := 1; i < len(pl.parts); i++ {
		if a, b := pl.parts[i-1], pl.parts[i]; a.topic == b.topic && a.partition == b.partition {
			return nil, fmt.Errorf("%v is listed twice: %w", b, ErrInvalid)
		}
	}
	return pl, nil
}

// setNodes fills the target set T (Nodes minus Drain) and decides rack awareness.
func (pl *planner) setNodes(r Request) error {
	if len(r.Nodes) == 0 {
		return fmt.Errorf("no nodes to place replicas on: %w", ErrInvalid)
	}
	seen := map[int32]bool{}
	withRack := 0
	for _, n := range r.Nodes {
		if seen[n.ID] {
			return fmt.Errorf("node %d is listed twice: %w", n.ID, ErrInvalid)
		}
		seen[n.ID] = true
		if slices.Contains(r.Drain, n.ID) {
			continue
		}
		pl.ids = append(pl.ids, n.ID)
		pl.target[n.ID] = true
		pl.rack[n.ID] = n.Rack
		if n.Rack != "" {
			withRack++
		}
	}
	if len(pl.ids) == 0 {
		return fmt.Errorf("every node listed is drained, none is left to place replicas on: %w", ErrInvalid)
	}
	slices.Sort(pl.ids)
	switch {
	case r.IgnoreRacks || withRack == 0:
		clear(pl.rack)
	case withRack < len(pl.ids):
		return fmt.Errorf("%d of the %d target nodes have a rack: %w", withRack, len(pl.ids), ErrMixedRacks)
	default:
		distinct := map[string]int{}
		for _, id := range pl.ids {
			if _, ok := distinct[pl.rack[id]]; !ok {
				distinct[pl.rack[id]] = len(distinct)
			}
			pl.rackIdx[id] = distinct[pl.rack[id]]
		}
		pl.racks = len(distinct)
	}
	return nil
}

// rackOf is n's rack index; -1 (a rack of its own kind, never counted as shared
// with a target) off T or when not rack aware.
func (pl *planner) rackOf(n int32) int {
	if i, ok := pl.rackIdx[n]; ok {
		return i
	}
	return -1
}

// check refuses a partition with no replica, two replicas on one node, or more
// replicas than there are target nodes.
func (pl *planner) check(p *part) error {
	if len(p.cur) == 0 {
		return fmt.Errorf("%v has no replica: %w", p, ErrInvalid)
	}
	for i, n := range p.cur {
		if slices.Contains(p.cur[:i], n) {
			return fmt.Errorf("%v has two replicas on node %d: %w", p, n, ErrInvalid)
		}
	}
	if len(p.cur) > len(pl.ids) {
		return fmt.Errorf("%v has %d replicas but only %d nodes are left to place them on (%v): %w",
			p, len(p.cur), len(pl.ids), pl.ids, ErrNotEnoughNodes)
	}
	return nil
}

// add counts delta replicas of p on node n.
func (pl *planner) add(p *part, n int32, delta int) {
	pl.count[n] += delta
	tc := pl.topicCount[p.topic]
	if tc == nil {
		tc = map[int32]int{}
		pl.topicCount[p.topic] = tc
	}
	tc[n] += delta
}

// move moves p's replica from node from to node to.
func (pl *planner) move(p *part, from, to int32) {
	p.rk[slices.Index(p.cur, from)] = pl.rackOf(to)
	p.replace(from, to)
	pl.add(p, from, -1)
	pl.add(p, to, 1)
}

// setTargets gives each target node its share t(n) ∈ {⌊R/|T|⌋, ⌈R/|T|⌉}, the larger to
// the nodes holding the most replicas now (then the lowest ids), which makes the
// excess the least possible; it returns the excess.
func (pl *planner) setTargets() int {
	total := 0
	for _, p := range pl.parts {
		total += len(p.cur)
	}
	pl.base = total / len(pl.ids)
	extra := total % len(pl.ids)
	byLoad := slices.Clone(pl.ids)
	slices.SortStableFunc(byLoad, func(a, b int32) int { return cmp.Compare(pl.count[b], pl.count[a]) })
	for i, n := range byLoad {
		pl.want[n] = pl.base
		if i < extra {
			pl.want[n]++
		}
	}
	excess := 0
	for n, c := range pl.count {
		excess += max(0, c-pl.want[n]) // want is 0 off T
	}
	return excess
}

// loads counts replicas and preferred leaders per node; after: of the planned
// assignment for every target node, else of the current one for every node in it.
func (pl *planner) loads(after bool) map[int32]Load {
	m := map[int32]Load{}
	if after {
		for _, n := range pl.ids {
			m[n] = Load{}
		}
	}
	for _, p := range pl.parts {
		rs := p.old
		if after {
			rs = p.cur
		}
		for i, n := range rs {
			l := m[n]
			l.Replicas++
			if i == 0 {
				l.Leaders++
			}
			m[n] = l
		}
	}
	return m
}
