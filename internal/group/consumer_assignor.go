package group

// Server-side assignors of consumer groups (KIP-848; group.consumer.assignors):
//
//   - uniform (Kafka's UniformAssignor, the default): every partition of a subscribed
//     topic goes to one subscribed member; member counts differ by at most one among
//     members that could take each other's partitions, and a partition stays with its
//     previous target owner whenever balance allows (sticky), so a member joining or
//     leaving moves as few partitions as possible.
//   - range (Kafka's RangeAssignor): per topic, the subscribed members in id order
//     take contiguous ranges, the first (partitions % members) one more.
//
// Both are pure and deterministic (ties go to the smaller member id, partitions are
// visited in topic-name order), so a coordinator that reloads the group computes the
// same assignment.

import (
	"maps"
	"slices"
	"strings"
)

// Assignor names.
const (
	AssignorUniform = "uniform"
	AssignorRange   = "range"
)

// assignTopic is one subscribed topic as assignors see it.
type assignTopic struct {
	id         topicID
	name       string
	partitions int32
}

// assignMember is one member as assignors see it.
type assignMember struct {
	id         string
	subscribed map[topicID]bool
}

// assign runs the named assignor; unknown names fall back to uniform.
func assign(name string, members []assignMember, topics []assignTopic, previous map[string]partSet) map[string]partSet {
	slices.SortFunc(members, func(a, b assignMember) int { return strings.Compare(a.id, b.id) })
	slices.SortFunc(topics, func(a, b assignTopic) int { return strings.Compare(a.name, b.name) })
	if name == AssignorRange {
		return assignRange(members, topics)
	}
	return assignUniform(members, topics, previous)
}

func emptyTargets(members []assignMember) map[string]partSet {
	out := make(map[string]partSet, len(members))
	for _, m := range members {
		out[m.id] = partSet{}
	}
	return out
}

func assignRange(members []assignMember, topics []assignTopic) map[string]partSet {
	out := emptyTargets(members)
	for _, t := range topics {
		var subs []string
		for _, m := range members {
			if m.subscribed[t.id] {
				subs = append(subs, m.id)
			}
		}
		if len(subs) == 0 {
			continue
		}
		per, extra := t.partitions/int32(len(subs)), t.partitions%int32(len(subs))
		p := int32(0)
		for i, id := range subs {
			n := per
			if int32(i) < extra {
				n++
			}
			for end := p + n; p < end; p++ {
				out[id].add(t.id, p, 0)
			}
		}
	}
	return out
}

// assignUniform keeps each partition with its previous owner if that owner still
// subscribes, gives every other partition to the least loaded subscribed member, then
// moves partitions from a member to a subscribed one holding at least two fewer until
// none can move. Each move lowers the sum of squared counts, so the loop ends.
func assignUniform(members []assignMember, topics []assignTopic, previous map[string]partSet) map[string]partSet {
	out := emptyTargets(members)
	count := map[string]int{}
	byID := map[string]assignMember{}
	for _, m := range members {
		byID[m.id] = m
	}
	type part struct {
		t topicID
		p int32
	}
	prevOwner := map[part]string{}
	for id, prev := range previous {
		if m, ok := byID[id]; ok {
			for t, ps := range prev {
				if m.subscribed[t] {
					for p := range ps {
						prevOwner[part{t, p}] = id
					}
				}
			}
		}
	}
	owner := map[part]string{}
	var unowned []part
	for _, t := range topics {
		for p := int32(0); p < t.partitions; p++ {
			k := part{t.id, p}
			if id, ok := prevOwner[k]; ok {
				owner[k] = id
				count[owner[k]]++
			} else {
				unowned = append(unowned, k)
			}
		}
	}
	// least is the least loaded member subscribed to t other than except ("" if none).
	least := func(t topicID, except string) string {
		best := ""
		for _, m := range members {
			if m.id == except || !m.subscribed[t] {
				continue
			}
			if best == "" || count[m.id] < count[best] {
				best = m.id
			}
		}
		return best
	}
	for _, k := range unowned {
		if id := least(k.t, ""); id != "" {
			owner[k] = id
			count[id]++
		}
	}
	// Balance: visit partitions in a fixed order; move one whenever its owner holds at
	// least two more than some other member that could take it.
	order := slices.Collect(maps.Keys(owner))
	rank := map[topicID]int{}
	for i, t := range topics {
		rank[t.id] = i
	}
	slices.SortFunc(order, func(a, b part) int {
		if c := rank[a.t] - rank[b.t]; c != 0 {
			return c
		}
		return int(a.p - b.p)
	})
	for moved := true; moved; {
		moved = false
		// Take partitions from the most loaded members first: visit in reverse so that
		// the highest partitions move, keeping low partitions where they are.
		for i := len(order) - 1; i >= 0; i-- {
			k := order[i]
			from := owner[k]
			if to := least(k.t, from); to != "" && count[to] <= count[from]-2 {
				owner[k] = to
				count[from]--
				count[to]++
				moved = true
			}
		}
	}
	for k, id := range owner {
		out[id].add(k.t, k.p, 0)
	}
	return out
}
