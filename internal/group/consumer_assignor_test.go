package group

import (
	"fmt"
	"testing"
)

func counts(out map[string]partSet) map[string]int {
	c := map[string]int{}
	for id, s := range out {
		c[id] = s.count()
	}
	return c
}

func subscribed(ids ...topicID) map[topicID]bool {
	m := map[topicID]bool{}
	for _, id := range ids {
		m[id] = true
	}
	return m
}

// checkCover fails unless every partition of topics is assigned exactly once to a
// member subscribed to its topic.
func checkCover(t *testing.T, members []assignMember, topics []assignTopic, out map[string]partSet) {
	t.Helper()
	subs := map[string]map[topicID]bool{}
	for _, m := range members {
		subs[m.id] = m.subscribed
	}
	for _, tp := range topics {
		for p := int32(0); p < tp.partitions; p++ {
			n := 0
			for id, s := range out {
				if s.has(tp.id, p) {
					n++
					if !subs[id][tp.id] {
						t.Errorf("%s/%d given to %s, not subscribed", tp.name, p, id)
					}
				}
			}
			if n != 1 {
				t.Errorf("%s/%d assigned %d times", tp.name, p, n)
			}
		}
	}
}

func TestUniformAssignorBalancedAndSticky(t *testing.T) {
	t1, t2 := assignTopic{tid("t1"), "t1", 7}, assignTopic{tid("t2"), "t2", 5}
	topics := []assignTopic{t1, t2}
	var members []assignMember
	for i := 0; i < 3; i++ {
		members = append(members, assignMember{id: fmt.Sprint("m", i), subscribed: subscribed(t1.id, t2.id)})
	}
	out := assign(AssignorUniform, members, topics, nil)
	checkCover(t, members, topics, out)
	for id, n := range counts(out) {
		if n != 4 {
			t.Errorf("%s has %d partitions, want 4 of 12", id, n)
		}
	}
	// A fourth member joins: it takes 3, and nobody else loses more than it must
	// (every partition that moves goes to m3).
	members = append(members, assignMember{id: "m3", subscribed: subscribed(t1.id, t2.id)})
	next := assign(AssignorUniform, members, topics, out)
	checkCover(t, members, topics, next)
	for id, n := range counts(next) {
		if n != 3 {
			t.Errorf("after m3 joined %s has %d partitions, want 3", id, n)
		}
	}
	for id, s := range next {
		for tp, ps := range s {
			for p := range ps {
				if id != "m3" && !out[id].has(tp, p) {
					t.Errorf("partition %d of %x moved to %s, not the new member", p, tp[:2], id)
				}
			}
		}
	}
	// Heterogeneous subscriptions: m0 alone on t2, everyone on t1.
	hetero := []assignMember{
		{id: "m0", subscribed: subscribed(t1.id, t2.id)},
		{id: "m1", subscribed: subscribed(t1.id)},
		{id: "m2", subscribed: subscribed(t1.id)},
	}
	out = assign(AssignorUniform, hetero, topics, nil)
	checkCover(t, hetero, topics, out)
	if c := counts(out); c["m0"] != 5 || c["m1"]+c["m2"] != 7 || c["m1"] < 3 || c["m2"] < 3 {
		t.Errorf("heterogeneous counts %v: m0 should hold t2's 5 and the others share t1", c)
	}
}

func TestRangeAssignor(t *testing.T) {
	t1 := assignTopic{tid("t1"), "t1", 5}
	members := []assignMember{{id: "b", subscribed: subscribed(t1.id)}, {id: "a", subscribed: subscribed(t1.id)}}
	out := assign(AssignorRange, members, []assignTopic{t1}, nil)
	checkCover(t, members, []assignTopic{t1}, out)
	// Members in id order: a takes 0-2, b takes 3-4.
	for p := int32(0); p < 5; p++ {
		want := "a"
		if p >= 3 {
			want = "b"
		}
		if !out[want].has(t1.id, p) {
			t.Errorf("partition %d not with %s: %v", p, want, out)
		}
	}
}
