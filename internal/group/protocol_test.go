package group

import (
	"testing"
	"time"
)

func protos(names ...string) []Protocol {
	ps := make([]Protocol, len(names))
	for i, n := range names {
		ps[i] = Protocol{Name: n, Metadata: []byte(n)}
	}
	return ps
}

func TestSelectProtocol(t *testing.T) {
	cases := []struct {
		name    string
		members [][]Protocol
		want    string
		ok      bool
	}{
		{"none", nil, "", false},
		{"single", [][]Protocol{protos("range")}, "range", true},
		{"first preference of one", [][]Protocol{protos("cooperative-sticky", "range")}, "cooperative-sticky", true},
		{"only common one", [][]Protocol{protos("a", "b"), protos("b", "c")}, "b", true},
		{"no common", [][]Protocol{protos("a"), protos("b")}, "", false},
		{"majority vote", [][]Protocol{protos("a", "b"), protos("b", "a"), protos("b", "a")}, "b", true},
		{"tie goes to the first member's preference", [][]Protocol{protos("b", "a"), protos("a", "b")}, "b", true},
		// Eager to cooperative upgrade: old members still prefer range; range wins until
		// most members prefer cooperative-sticky.
		{"upgrade in progress", [][]Protocol{protos("range", "cooperative-sticky"), protos("cooperative-sticky", "range"), protos("range", "cooperative-sticky")}, "range", true},
		{"upgrade mostly done", [][]Protocol{protos("range", "cooperative-sticky"), protos("cooperative-sticky", "range"), protos("cooperative-sticky", "range")}, "cooperative-sticky", true},
		{"vote skips non-common, then a tie", [][]Protocol{protos("x", "a", "b"), protos("b", "a")}, "a", true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, ok := selectProtocol(c.members)
			if got != c.want || ok != c.ok {
				t.Fatalf("selectProtocol = %q, %v; want %q, %v", got, ok, c.want, c.ok)
			}
		})
	}
}

func TestSharesProtocol(t *testing.T) {
	others := [][]Protocol{protos("a", "b"), protos("b", "c")}
	if !sharesProtocol(others, protos("z", "b")) {
		t.Fatal("b is offered by everyone")
	}
	if sharesProtocol(others, protos("a", "c")) {
		t.Fatal("neither a nor c is offered by everyone")
	}
	if !sharesProtocol(nil, protos("a")) {
		t.Fatal("with no other member anything goes")
	}
}

func TestNextJoinAction(t *testing.T) {
	cases := []struct {
		initial, allJoined, deadlinePassed, newMember bool
		remaining                                     time.Duration
		want                                          joinAction
	}{
		{false, false, false, false, 0, joinWait},
		{false, true, false, false, 0, joinComplete},
		{false, false, true, false, 0, joinComplete},
		{false, false, true, true, time.Second, joinComplete}, // only the initial phase extends
		{true, true, false, false, 0, joinWait},               // the initial delay always runs out
		{true, true, true, false, time.Second, joinComplete},
		{true, true, true, true, time.Second, joinExtend},
		{true, false, true, true, 0, joinComplete}, // no rebalance time left
	}
	for i, c := range cases {
		if got := nextJoinAction(c.initial, c.allJoined, c.deadlinePassed, c.newMember, c.remaining); got != c.want {
			t.Errorf("case %d %+v: %v, want %v", i, c, got, c.want)
		}
	}
}
