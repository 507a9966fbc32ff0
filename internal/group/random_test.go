package group

import (
	"math/rand/v2"
	"testing"
	"time"
)

// TestRandomOperationsKeepInvariants runs random joins, syncs, heartbeats, leaves,
// commits, write outcomes and clock jumps against one group and checks after every
// step that: the generation never decreases; the leader is a member whenever there are
// members; a member waits for at most one reply of each kind; every reply is given at
// most once (the harness fails otherwise); and, in the end, once every client stops,
// every request was answered.
func TestRandomOperationsKeepInvariants(t *testing.T) {
	phases := map[Phase]int{}
	defer func() {
		// The walk must reach every live phase, or it tests little.
		for p := Empty; p < Dead; p++ {
			if phases[p] == 0 {
				t.Errorf("no step ended in phase %v: %v", p, phases)
			}
		}
	}()
	for seed := uint64(1); seed <= 30; seed++ {
		rng := rand.New(rand.NewPCG(seed, 99))
		h := newHarness(t)
		type client struct {
			name     string
			id       string
			instance *string
			gen      int32
		}
		var clients []*client
		for i := 0; i < 4; i++ {
			c := &client{name: string(rune('a' + i))}
			if i%2 == 0 {
				c.instance = static("inst-" + c.name)
			}
			clients = append(clients, c)
		}
		var joins []*pendingJoin
		var syncs []*pendingSync
		lastGen := int32(0)
		for step := 0; step < 400; step++ {
			c := clients[rng.IntN(len(clients))]
			switch rng.IntN(9) {
			case 0, 1:
				req := consumerJoin(c.name, protos("range", "cooperative-sticky")...)
				req.MemberID, req.InstanceID = c.id, c.instance
				req.RequireKnownMemberID = rng.IntN(2) == 0
				p := h.join(req)
				joins = append(joins, p)
				if p.done() {
					c.id = p.res.MemberID
					c.gen = p.res.Generation
				}
			case 2:
				req := SyncRequest{MemberID: c.id, InstanceID: c.instance, Generation: c.gen}
				if rng.IntN(2) == 0 {
					req.Assignments = []Assignment{{MemberID: c.id, Assignment: []byte("x")}}
				}
				syncs = append(syncs, h.sync(req))
			case 3:
				h.g.heartbeat(h.now, HeartbeatRequest{MemberID: c.id, InstanceID: c.instance, Generation: c.gen})
			case 4:
				h.g.leave(h.now, []LeaveMember{{MemberID: c.id, InstanceID: c.instance}})
			case 5:
				h.g.commit(h.now, CommitRequest{MemberID: c.id, InstanceID: c.instance, Generation: c.gen,
					Offsets: []OffsetCommit{{Topic: "t", Offset: int64(step)}}}, func([]error) {})
			case 6:
				var err error
				if rng.IntN(4) == 0 {
					err = ErrCoordinatorNotAvailable
				}
				h.finishWrites(err)
			default:
				h.advance(time.Duration(rng.IntN(8000)) * time.Millisecond)
			}
			for _, p := range joins {
				if p.done() && p.res.Err == nil {
					for _, c := range clients {
						if c.id == p.res.MemberID {
							c.gen = p.res.Generation
						}
					}
				}
			}
			checkInvariants(t, h.g, &lastGen)
			phases[h.g.phase]++
		}
		// Everyone stops: sessions expire, every request must have been answered.
		for i := 0; i < 20; i++ {
			h.finishWrites(nil)
			h.advance(time.Minute)
		}
		h.advance(6 * time.Minute)
		h.finishWrites(nil)
		for i, p := range joins {
			if !p.done() {
				t.Fatalf("seed %d: join %d never answered (phase %v, %d members)", seed, i, h.g.phase, len(h.g.members))
			}
		}
		for i, p := range syncs {
			if !p.done() {
				t.Fatalf("seed %d: sync %d never answered", seed, i)
			}
		}
		if len(h.g.members) != 0 || h.g.phase != Empty {
			t.Fatalf("seed %d: %d members, phase %v after every session expired", seed, len(h.g.members), h.g.phase)
		}
	}
}

func checkInvariants(t *testing.T, g *groupMetadata, lastGen *int32) {
	t.Helper()
	if g.generation < *lastGen {
		t.Fatalf("generation went from %d to %d", *lastGen, g.generation)
	}
	*lastGen = g.generation
	if len(g.members) > 0 && g.members[g.leader] == nil {
		t.Fatalf("leader %q is not a member", g.leader)
	}
	if len(g.members) != len(g.order) {
		t.Fatalf("%d members but %d in join order", len(g.members), len(g.order))
	}
	for inst, id := range g.static {
		if m := g.members[id]; m == nil || m.instanceID == nil || *m.instanceID != inst {
			t.Fatalf("static %s -> %s does not match a member", inst, id)
		}
	}
	if (g.phase == Empty) != (len(g.members) == 0) && g.phase != PreparingRebalance {
		t.Fatalf("phase %v with %d members", g.phase, len(g.members))
	}
	if g.phase == Stable {
		for _, m := range g.members {
			if m.awaitingJoin != nil {
				t.Fatalf("member %s awaits a join in a stable group", m.id)
			}
		}
	}
}
