package group

import (
	"errors"
	"fmt"
	"testing"
	"time"
)

// harness drives one groupMetadata with a fake clock: no goroutines, no log.
type harness struct {
	t   *testing.T
	g   *groupMetadata
	now time.Time
	ids int
}

func newHarness(t *testing.T) *harness {
	h := &harness{t: t, now: time.Unix(1_700_000_000, 0)}
	lim := defaultLimits()
	h.g = newGroupMetadata("g", lim, func(client string) string {
		h.ids++
		return fmt.Sprintf("%s-%d", client, h.ids)
	}, h.now)
	return h
}

// pendingJoin records a join reply.
type pendingJoin struct {
	calls int
	res   JoinResult
}

func (p *pendingJoin) done() bool { return p.calls > 0 }

type pendingSync struct {
	calls int
	res   SyncResult
}

func (p *pendingSync) done() bool { return p.calls > 0 }

func (h *harness) join(req JoinRequest) *pendingJoin {
	h.t.Helper()
	p := &pendingJoin{}
	h.g.join(h.now, req, func(r JoinResult) {
		p.calls++
		if p.calls > 1 {
			h.t.Fatalf("join of %q answered twice", req.MemberID)
		}
		p.res = r
	})
	return p
}

func (h *harness) sync(req SyncRequest) *pendingSync {
	h.t.Helper()
	p := &pendingSync{}
	h.g.sync(h.now, req, func(r SyncResult) {
		p.calls++
		if p.calls > 1 {
			h.t.Fatalf("sync of %q answered twice", req.MemberID)
		}
		p.res = r
	})
	return p
}

func (h *harness) advance(d time.Duration) {
	h.now = h.now.Add(d)
	h.g.tick(h.now)
}

// finishWrites completes every queued write with err (as the log would).
func (h *harness) finishWrites(err error) int {
	n := 0
	for len(h.g.writes) > 0 {
		ws := h.g.writes
		h.g.writes = nil
		for _, w := range ws {
			n++
			if w.done != nil {
				w.done(err)
			}
		}
	}
	return n
}

func (h *harness) heartbeat(id string, gen int32) error {
	return h.g.heartbeat(h.now, HeartbeatRequest{GroupID: "g", MemberID: id, Generation: gen})
}

func consumerJoin(client string, protocols ...Protocol) JoinRequest {
	if len(protocols) == 0 {
		protocols = protos("range")
	}
	return JoinRequest{
		GroupID: "g", ProtocolType: "consumer", Protocols: protocols, ClientID: client,
		SessionTimeout: 10 * time.Second, RebalanceTimeout: 30 * time.Second,
	}
}

func static(id string) *string { return &id }

// stableGroup joins the clients (dynamic members) and completes one rebalance.
func (h *harness) stableGroup(clients ...string) []string {
	h.t.Helper()
	var ps []*pendingJoin
	for _, c := range clients {
		ps = append(ps, h.join(consumerJoin(c)))
	}
	h.advance(h.g.lim.initialRebalanceDelay)
	if h.g.phase == PreparingRebalance { // extended initial delay
		h.advance(h.g.lim.initialRebalanceDelay)
	}
	ids := make([]string, len(ps))
	for i, p := range ps {
		if !p.done() || p.res.Err != nil {
			h.t.Fatalf("join of %s: %+v", clients[i], p.res)
		}
		ids[i] = p.res.MemberID
	}
	h.syncAll(ids)
	return ids
}

// syncAll sends every member's SyncGroup (the leader assigns each its own name) and
// completes the store.
func (h *harness) syncAll(ids []string) {
	h.t.Helper()
	var syncs []*pendingSync
	for _, id := range ids {
		req := SyncRequest{GroupID: "g", MemberID: id, Generation: h.g.generation}
		if id == h.g.leader {
			for _, m := range ids {
				req.Assignments = append(req.Assignments, Assignment{MemberID: m, Assignment: []byte("a:" + m)})
			}
		}
		syncs = append(syncs, h.sync(req))
	}
	h.finishWrites(nil)
	for i, s := range syncs {
		if !s.done() || s.res.Err != nil || string(s.res.Assignment) != "a:"+ids[i] {
			h.t.Fatalf("sync of %s: done=%v %+v", ids[i], s.done(), s.res)
		}
	}
	if h.g.phase != Stable {
		h.t.Fatalf("phase %v after sync, want Stable", h.g.phase)
	}
}

func TestFirstJoinMemberIDRequiredThenInitialDelay(t *testing.T) {
	h := newHarness(t)
	req := consumerJoin("c")
	req.RequireKnownMemberID = true
	p := h.join(req)
	if !errors.Is(p.res.Err, ErrMemberIDRequired) || p.res.MemberID == "" {
		t.Fatalf("first join: %+v, want MEMBER_ID_REQUIRED with an id", p.res)
	}
	req.MemberID = p.res.MemberID
	p = h.join(req)
	if p.done() {
		t.Fatal("the first join phase must wait group.initial.rebalance.delay.ms")
	}
	h.advance(time.Second)
	if p.done() {
		t.Fatal("answered before the initial delay")
	}
	h.advance(2 * time.Second)
	if !p.done() || p.res.Err != nil || p.res.Generation != 1 || p.res.LeaderID != req.MemberID ||
		p.res.Protocol != "range" || len(p.res.Members) != 1 {
		t.Fatalf("join result %+v", p.res)
	}
	if h.g.phase != CompletingRebalance {
		t.Fatalf("phase %v", h.g.phase)
	}
	s := h.sync(SyncRequest{GroupID: "g", MemberID: req.MemberID, Generation: 1,
		Assignments: []Assignment{{MemberID: req.MemberID, Assignment: []byte("x")}}})
	if s.done() {
		t.Fatal("the leader's sync must wait for its assignment to be stored")
	}
	if n := h.finishWrites(nil); n != 1 {
		t.Fatalf("%d writes, want the group metadata", n)
	}
	if !s.done() || string(s.res.Assignment) != "x" || h.g.phase != Stable {
		t.Fatalf("sync %+v phase %v", s.res, h.g.phase)
	}
}

func TestPendingMemberIDExpires(t *testing.T) {
	h := newHarness(t)
	req := consumerJoin("c")
	req.RequireKnownMemberID = true
	p := h.join(req)
	h.advance(11 * time.Second)
	req.MemberID = p.res.MemberID
	if p = h.join(req); !errors.Is(p.res.Err, ErrUnknownMemberID) {
		t.Fatalf("join with an expired pending id: %+v", p.res)
	}
}

func TestInitialDelayExtendsForNewMembers(t *testing.T) {
	h := newHarness(t)
	a := h.join(consumerJoin("a"))
	h.advance(2 * time.Second)
	b := h.join(consumerJoin("b"))
	h.advance(time.Second) // first delay over, but b arrived meanwhile: extend by 3 s
	if a.done() || b.done() {
		t.Fatal("the initial delay must extend while new members arrive")
	}
	h.advance(3 * time.Second)
	if !a.done() || !b.done() || a.res.Generation != 1 || len(a.res.Members) != 2 || b.res.Members != nil {
		t.Fatalf("a %+v b %+v", a.res, b.res)
	}
}

func TestNewMemberRebalancesStableGroup(t *testing.T) {
	h := newHarness(t)
	ids := h.stableGroup("a")
	c := h.join(consumerJoin("c"))
	if h.g.phase != PreparingRebalance || c.done() {
		t.Fatalf("phase %v done %v", h.g.phase, c.done())
	}
	if err := h.heartbeat(ids[0], 1); !errors.Is(err, ErrRebalanceInProgress) {
		t.Fatalf("heartbeat during the join phase: %v", err)
	}
	a := h.join(JoinRequest{GroupID: "g", MemberID: ids[0], ProtocolType: "consumer", Protocols: protos("range"),
		ClientID: "a", SessionTimeout: 10 * time.Second, RebalanceTimeout: 30 * time.Second})
	if !a.done() || !c.done() {
		t.Fatal("the join phase ends as soon as every member rejoined")
	}
	if a.res.Generation != 2 || a.res.LeaderID != ids[0] || len(a.res.Members) != 2 || c.res.LeaderID != ids[0] {
		t.Fatalf("a %+v c %+v", a.res, c.res)
	}
	// The follower's sync waits for the leader's.
	fs := h.sync(SyncRequest{GroupID: "g", MemberID: c.res.MemberID, Generation: 2})
	if fs.done() {
		t.Fatal("follower answered before the leader assigned")
	}
	h.sync(SyncRequest{GroupID: "g", MemberID: ids[0], Generation: 2, Assignments: []Assignment{
		{MemberID: ids[0], Assignment: []byte("p0")}, {MemberID: c.res.MemberID, Assignment: []byte("p1")}}})
	h.finishWrites(nil)
	if !fs.done() || string(fs.res.Assignment) != "p1" {
		t.Fatalf("follower sync %+v", fs.res)
	}
}

func TestSessionExpiryRemovesMember(t *testing.T) {
	h := newHarness(t)
	ids := h.stableGroup("a", "b")
	for i := 0; i < 2; i++ {
		h.advance(4 * time.Second)
		if err := h.heartbeat(ids[0], 1); err != nil {
			t.Fatalf("heartbeat: %v", err)
		}
	}
	h.advance(4 * time.Second)
	if h.g.members[ids[1]] != nil {
		t.Fatal("b stopped heartbeating 12 s ago with a 10 s session: it must be gone")
	}
	if err := h.heartbeat(ids[0], 1); !errors.Is(err, ErrRebalanceInProgress) {
		t.Fatalf("a's heartbeat: %v", err)
	}
	if err := h.heartbeat(ids[1], 1); !errors.Is(err, ErrUnknownMemberID) {
		t.Fatalf("b's heartbeat: %v", err)
	}
	a := h.join(JoinRequest{GroupID: "g", MemberID: ids[0], ProtocolType: "consumer", Protocols: protos("range"),
		SessionTimeout: 10 * time.Second, RebalanceTimeout: 30 * time.Second})
	if !a.done() || a.res.Generation != 2 || len(a.res.Members) != 1 {
		t.Fatalf("a's rejoin %+v", a.res)
	}
}

func TestJoinPhaseTimeoutDropsMembersThatDidNotRejoin(t *testing.T) {
	h := newHarness(t)
	ids := h.stableGroup("a", "b")
	c := h.join(consumerJoin("c"))
	rejoin := func(id string) *pendingJoin {
		return h.join(JoinRequest{GroupID: "g", MemberID: id, ProtocolType: "consumer", Protocols: protos("range"),
			SessionTimeout: 10 * time.Second, RebalanceTimeout: 30 * time.Second})
	}
	a := rejoin(ids[0])
	// b keeps heartbeating but never rejoins.
	for i := 0; i < 5; i++ {
		h.advance(5 * time.Second)
		h.heartbeat(ids[1], 1)
	}
	if a.done() {
		t.Fatal("completed before the rebalance timeout")
	}
	h.advance(5 * time.Second)
	if !a.done() || !c.done() || a.res.Generation != 2 || len(a.res.Members) != 2 {
		t.Fatalf("after the rebalance timeout: a %+v c %+v", a.res, c.res)
	}
	if h.g.members[ids[1]] != nil {
		t.Fatal("b did not rejoin in time and must be dropped")
	}
}

func TestLeaveRebalancesAndLastLeaveEmpties(t *testing.T) {
	h := newHarness(t)
	ids := h.stableGroup("a", "b")
	errs := h.g.leave(h.now, []LeaveMember{{MemberID: ids[1]}, {MemberID: "nobody"}})
	if errs[0] != nil || !errors.Is(errs[1], ErrUnknownMemberID) {
		t.Fatalf("leave errors %v", errs)
	}
	if h.g.phase != PreparingRebalance {
		t.Fatalf("phase %v after a leave", h.g.phase)
	}
	// With nobody left to wait for, the join phase ends at once.
	h.g.leave(h.now, []LeaveMember{{MemberID: ids[0]}})
	if h.g.phase != Empty || h.g.generation != 2 || len(h.g.writes) != 1 {
		t.Fatalf("phase %v generation %d writes %d; want Empty, 2, the empty group record", h.g.phase, h.g.generation, len(h.g.writes))
	}
	h.finishWrites(nil)
	if !h.g.canBeRemoved() {
		t.Fatal("an empty group without offsets has nothing to keep")
	}
}

func TestLeaveWhileJoiningAnswersTheJoin(t *testing.T) {
	h := newHarness(t)
	ids := h.stableGroup("a", "b")
	a := h.join(JoinRequest{GroupID: "g", MemberID: ids[0], ProtocolType: "consumer", Protocols: protos("range", "x"),
		SessionTimeout: 10 * time.Second, RebalanceTimeout: 30 * time.Second})
	h.g.leave(h.now, []LeaveMember{{MemberID: ids[1]}})
	if !a.done() || a.res.Generation != 2 || len(a.res.Members) != 1 {
		t.Fatalf("a %+v", a.res)
	}
}

func staticJoin(client, instance string, protocols ...Protocol) JoinRequest {
	r := consumerJoin(client, protocols...)
	r.InstanceID = static(instance)
	return r
}

// staticGroup makes a stable group of static members.
func (h *harness) staticGroup(instances ...string) []string {
	var ps []*pendingJoin
	for _, in := range instances {
		ps = append(ps, h.join(staticJoin(in, in)))
	}
	h.advance(3 * time.Second)
	h.advance(3 * time.Second)
	ids := make([]string, len(ps))
	for i, p := range ps {
		if !p.done() || p.res.Err != nil {
			h.t.Fatalf("static join: %+v", p.res)
		}
		ids[i] = p.res.MemberID
	}
	h.syncAll(ids)
	return ids
}

func TestStaticMemberRestartWithoutRebalance(t *testing.T) {
	for _, v9 := range []bool{false, true} {
		t.Run(fmt.Sprintf("skip_assignment=%v", v9), func(t *testing.T) {
			h := newHarness(t)
			ids := h.staticGroup("i1", "i2")
			gen := h.g.generation
			for i, inst := range []string{"i2", "i1"} { // a follower, then the leader
				old := ids[1-i]
				req := staticJoin(inst, inst)
				req.SupportsSkipAssignment = v9
				wasLeader := h.g.leader == old
				p := h.join(req)
				if p.done() {
					t.Fatal("answered before the new member id is stored")
				}
				h.finishWrites(nil)
				if !p.done() || p.res.Err != nil || p.res.Generation != gen || p.res.MemberID == old || h.g.phase != Stable {
					t.Fatalf("restart of %s: %+v phase %v", inst, p.res, h.g.phase)
				}
				switch {
				case wasLeader && v9:
					if !p.res.SkipAssignment || p.res.LeaderID != p.res.MemberID || len(p.res.Members) != 2 {
						t.Fatalf("v9 leader restart: %+v", p.res)
					}
				case wasLeader:
					if p.res.LeaderID != old || p.res.Members != nil {
						t.Fatalf("old leader restart must see the old leader id and no members: %+v", p.res)
					}
				}
				if err := h.heartbeat(old, gen); !errors.Is(err, ErrUnknownMemberID) {
					t.Fatalf("old member id heartbeat: %v", err)
				}
				if err := h.g.heartbeat(h.now, HeartbeatRequest{MemberID: old, InstanceID: static(inst), Generation: gen}); !errors.Is(err, ErrFencedInstanceID) {
					t.Fatalf("old member with its instance id: %v, want FENCED_INSTANCE_ID", err)
				}
				s := h.sync(SyncRequest{MemberID: p.res.MemberID, InstanceID: static(inst), Generation: gen})
				if string(s.res.Assignment) != "a:"+old {
					t.Fatalf("the restarted member keeps its assignment: %+v", s.res)
				}
			}
		})
	}
}

func TestStaticMemberProtocolChangeRebalances(t *testing.T) {
	h := newHarness(t)
	h.staticGroup("i1")
	// The only member rejoined, so the rebalance it causes completes at once.
	p := h.join(staticJoin("i1", "i1", protos("other")...))
	if !p.done() || p.res.Protocol != "other" || p.res.Generation != 2 || h.g.phase != CompletingRebalance {
		t.Fatalf("%+v", p.res)
	}
}

func TestStaticMemberStoreFailureRestoresOldID(t *testing.T) {
	h := newHarness(t)
	ids := h.staticGroup("i1", "i2")
	p := h.join(staticJoin("i2", "i2"))
	h.finishWrites(ErrCoordinatorNotAvailable)
	if !errors.Is(p.res.Err, ErrCoordinatorNotAvailable) {
		t.Fatalf("%+v", p.res)
	}
	if err := h.g.heartbeat(h.now, HeartbeatRequest{MemberID: ids[1], InstanceID: static("i2"), Generation: h.g.generation}); err != nil {
		t.Fatalf("the old id must be restored: %v", err)
	}
}

func TestStaticMemberStaysThroughJoinPhase(t *testing.T) {
	h := newHarness(t)
	ids := h.staticGroup("i1", "i2")
	// i2 is gone (no leave for static members) but its session has not expired; i1
	// rejoins as leader.
	a := h.join(JoinRequest{GroupID: "g", MemberID: ids[0], InstanceID: static("i1"), ProtocolType: "consumer",
		Protocols: protos("range"), SessionTimeout: 10 * time.Second, RebalanceTimeout: 30 * time.Second})
	h.advance(9 * time.Second)
	if a.done() {
		t.Fatal("waits for the static member")
	}
	h.advance(2 * time.Second) // i2's session expires
	if !a.done() || len(a.res.Members) != 1 {
		t.Fatalf("%+v", a.res)
	}
}

func TestValidationErrors(t *testing.T) {
	h := newHarness(t)
	ids := h.stableGroup("a")
	bad := consumerJoin("x")
	bad.SessionTimeout = time.Second
	if p := h.join(bad); !errors.Is(p.res.Err, ErrInvalidSessionTimeout) {
		t.Fatalf("session timeout: %+v", p.res)
	}
	bad = consumerJoin("x")
	bad.ProtocolType = "connect"
	if p := h.join(bad); !errors.Is(p.res.Err, ErrInconsistentGroupProtocol) {
		t.Fatalf("protocol type: %+v", p.res)
	}
	if p := h.join(consumerJoin("x", protos("roundrobin")...)); !errors.Is(p.res.Err, ErrInconsistentGroupProtocol) {
		t.Fatalf("no common protocol: %+v", p.res)
	}
	if p := h.join(JoinRequest{GroupID: "g", MemberID: "ghost", ProtocolType: "consumer", Protocols: protos("range"), SessionTimeout: 10 * time.Second}); !errors.Is(p.res.Err, ErrUnknownMemberID) {
		t.Fatalf("unknown member: %+v", p.res)
	}
	if err := h.heartbeat(ids[0], 7); !errors.Is(err, ErrIllegalGeneration) {
		t.Fatalf("heartbeat generation: %v", err)
	}
	if s := h.sync(SyncRequest{MemberID: ids[0], Generation: 7}); !errors.Is(s.res.Err, ErrIllegalGeneration) {
		t.Fatalf("sync generation: %+v", s.res)
	}
	other := "roundrobin"
	if s := h.sync(SyncRequest{MemberID: ids[0], Generation: 1, Protocol: &other}); !errors.Is(s.res.Err, ErrInconsistentGroupProtocol) {
		t.Fatalf("sync protocol: %+v", s.res)
	}
}

func TestRejoinInCompletingRebalanceGetsResponseAgain(t *testing.T) {
	h := newHarness(t)
	a := h.join(consumerJoin("a"))
	h.advance(3 * time.Second)
	again := h.join(JoinRequest{GroupID: "g", MemberID: a.res.MemberID, ProtocolType: "consumer", Protocols: protos("range"),
		SessionTimeout: 10 * time.Second, RebalanceTimeout: 30 * time.Second})
	if !again.done() || again.res.Generation != a.res.Generation || h.g.phase != CompletingRebalance {
		t.Fatalf("%+v phase %v", again.res, h.g.phase)
	}
}

func TestSyncDeadlineRemovesSilentMembers(t *testing.T) {
	h := newHarness(t)
	a := h.join(consumerJoin("a"))
	b := h.join(consumerJoin("b"))
	h.advance(3 * time.Second)
	h.advance(3 * time.Second)
	leader := a.res.LeaderID
	h.sync(SyncRequest{MemberID: leader, Generation: 1})
	h.finishWrites(nil)
	follower := b.res.MemberID
	if follower == leader {
		follower = a.res.MemberID
	}
	for i := 0; i < 6; i++ { // keep both sessions alive; the follower never syncs
		h.advance(5 * time.Second)
		h.heartbeat(leader, 1)
		h.heartbeat(follower, 1)
	}
	if h.g.members[follower] != nil || h.g.phase != PreparingRebalance {
		t.Fatalf("a member that never synced must be removed after the rebalance timeout (phase %v)", h.g.phase)
	}
}

func TestLeaderStoreFailureFailsSync(t *testing.T) {
	h := newHarness(t)
	a := h.join(consumerJoin("a"))
	h.advance(3 * time.Second)
	s := h.sync(SyncRequest{MemberID: a.res.MemberID, Generation: 1})
	h.finishWrites(ErrNotCoordinator)
	if !errors.Is(s.res.Err, ErrNotCoordinator) || h.g.phase != PreparingRebalance {
		t.Fatalf("sync %+v phase %v", s.res, h.g.phase)
	}
}

func TestCooperativeRebalanceSequence(t *testing.T) {
	// Cooperative-sticky clients rebalance twice when a member joins: first the owners
	// revoke what moves, then everyone rejoins so the leader assigns the revoked
	// partitions. The broker sees two ordinary rebalances.
	h := newHarness(t)
	coop := func(owned string) []Protocol {
		return []Protocol{{Name: "cooperative-sticky", Metadata: []byte(owned)}, {Name: "range", Metadata: []byte("r")}}
	}
	req := func(client, id, owned string) JoinRequest {
		r := consumerJoin(client, coop(owned)...)
		r.MemberID = id
		return r
	}
	a := h.join(req("a", "", ""))
	h.advance(3 * time.Second)
	if a.res.Protocol != "cooperative-sticky" {
		t.Fatalf("protocol %q", a.res.Protocol)
	}
	aid := a.res.MemberID
	h.syncAll([]string{aid})
	b := h.join(req("b", "", ""))
	a = h.join(req("a", aid, "p0,p1"))
	if !a.done() || !b.done() || a.res.Generation != 2 {
		t.Fatalf("first cooperative round: a %+v b %+v", a.res, b.res)
	}
	h.syncAll([]string{aid, b.res.MemberID})
	// a revoked p1; both rejoin for the second round, from Stable.
	a = h.join(req("a", aid, "p0"))
	if h.g.phase != PreparingRebalance {
		t.Fatalf("a rejoin with new metadata must rebalance, phase %v", h.g.phase)
	}
	b2 := h.join(req("b", b.res.MemberID, ""))
	if !a.done() || !b2.done() || a.res.Generation != 3 || string(a.res.Members[0].Metadata) != "p0" {
		t.Fatalf("second cooperative round: a %+v b %+v", a.res, b2.res)
	}
	h.syncAll([]string{aid, b.res.MemberID})
}

func TestCommitValidation(t *testing.T) {
	h := newHarness(t)
	commit := func(member string, gen int32) error {
		var got []error
		h.g.commit(h.now, CommitRequest{MemberID: member, Generation: gen, Offsets: []OffsetCommit{{Topic: "t", Offset: 5}}},
			func(errs []error) { got = errs })
		h.finishWrites(nil)
		if got == nil {
			t.Fatal("commit not answered")
		}
		return got[0]
	}
	if err := commit("", -1); err != nil {
		t.Fatalf("simple commit to an empty group: %v", err)
	}
	ids := h.stableGroup("a")
	if err := commit("", -1); !errors.Is(err, ErrUnknownMemberID) {
		t.Fatalf("simple commit to an active group: %v", err)
	}
	if err := commit(ids[0], 0); !errors.Is(err, ErrIllegalGeneration) {
		t.Fatalf("stale generation: %v", err)
	}
	if err := commit("ghost", 1); !errors.Is(err, ErrUnknownMemberID) {
		t.Fatalf("unknown member: %v", err)
	}
	if err := commit(ids[0], 1); err != nil {
		t.Fatalf("member commit: %v", err)
	}
	h.join(consumerJoin("b"))
	if err := commit(ids[0], 1); err != nil {
		t.Fatalf("commits are allowed while preparing a rebalance: %v", err)
	}
	h.join(JoinRequest{GroupID: "g", MemberID: ids[0], ProtocolType: "consumer", Protocols: protos("range"), SessionTimeout: 10 * time.Second, RebalanceTimeout: 30 * time.Second})
	if err := commit(ids[0], 2); !errors.Is(err, ErrRebalanceInProgress) {
		t.Fatalf("commit while completing the rebalance: %v", err)
	}
	got := h.g.fetchOffsets([]TopicPartition{{"t", 0}, {"t", 1}})
	if got[0].Offset != 5 || got[1].Offset != -1 {
		t.Fatalf("fetch %+v", got)
	}
}

func TestCommitFailureKeepsOldOffset(t *testing.T) {
	h := newHarness(t)
	var errs []error
	h.g.commit(h.now, CommitRequest{Generation: -1, Offsets: []OffsetCommit{{Topic: "t", Offset: 5}}}, func(e []error) { errs = e })
	h.finishWrites(nil)
	h.g.commit(h.now, CommitRequest{Generation: -1, Offsets: []OffsetCommit{{Topic: "t", Offset: 9}}}, func(e []error) { errs = e })
	h.finishWrites(ErrCoordinatorNotAvailable)
	if !errors.Is(errs[0], ErrCoordinatorNotAvailable) || h.g.fetchOffsets(nil)[0].Offset != 5 {
		t.Fatalf("errs %v offsets %+v", errs, h.g.fetchOffsets(nil))
	}
	long := string(make([]byte, 5000))
	h.g.commit(h.now, CommitRequest{Generation: -1, Offsets: []OffsetCommit{{Topic: "t", Offset: 9, Metadata: &long}}}, func(e []error) { errs = e })
	if !errors.Is(errs[0], ErrOffsetMetadataTooLarge) {
		t.Fatalf("%v", errs)
	}
}

func TestDeleteGroupAndOffsets(t *testing.T) {
	h := newHarness(t)
	ids := h.stableGroup("a")
	var derr error
	h.g.deleteGroup(h.now, func(err error) { derr = err })
	if !errors.Is(derr, ErrNonEmptyGroup) {
		t.Fatalf("delete of an active group: %v", derr)
	}
	var cerrs []error
	h.g.commit(h.now, CommitRequest{MemberID: ids[0], Generation: 1, Offsets: []OffsetCommit{{Topic: "t", Offset: 1}, {Topic: "u", Offset: 2}}}, func(e []error) { cerrs = e })
	h.finishWrites(nil)
	if cerrs[0] != nil {
		t.Fatal(cerrs)
	}
	// The member's metadata is not a consumer subscription: every topic counts as
	// subscribed.
	var perrs []error
	h.g.deleteOffsets([]TopicPartition{{"t", 0}}, func(gerr error, errs []error) { perrs = errs })
	if !errors.Is(perrs[0], ErrGroupSubscribedToTopic) {
		t.Fatalf("offset delete in an active group: %v", perrs)
	}
	h.g.leave(h.now, []LeaveMember{{MemberID: ids[0]}})
	h.advance(0)
	h.finishWrites(nil)
	h.g.deleteOffsets([]TopicPartition{{"t", 0}}, func(gerr error, errs []error) { perrs = errs })
	h.finishWrites(nil)
	if perrs[0] != nil || len(h.g.offsets) != 1 {
		t.Fatalf("offset delete: %v, %d offsets left", perrs, len(h.g.offsets))
	}
	h.g.deleteGroup(h.now, func(err error) { derr = err })
	if n := len(h.g.writes[0].records); n != 2 {
		t.Fatalf("delete writes %d tombstones, want the group's and one offset's", n)
	}
	h.finishWrites(nil)
	if derr != nil || h.g.phase != Dead || len(h.g.offsets) != 0 {
		t.Fatalf("delete: %v phase %v", derr, h.g.phase)
	}
}

func TestRestoreFromRecords(t *testing.T) {
	h := newHarness(t)
	ids := h.staticGroup("i1", "i2")
	var records []write
	capture := func() {
		records = append(records, h.g.writes...)
		h.finishWrites(nil)
	}
	h.g.commit(h.now, CommitRequest{MemberID: ids[0], InstanceID: static("i1"), Generation: h.g.generation,
		Offsets: []OffsetCommit{{Topic: "t", Partition: 3, Offset: 42, LeaderEpoch: 7}}}, func([]error) {})
	capture()
	// The group record of the stable group is the leader's store (finished in syncAll);
	// write it again to capture it.
	h.g.issue(h.g.groupRecords(h.g.assignments(), h.now), nil)
	capture()
	loaded := map[string]*loadedGroup{}
	if _, err := replay(loaded, encodeWrites(records)); err != nil {
		t.Fatal(err)
	}
	g := restoreGroup("g", loaded["g"], defaultLimits(), nil, h.now)
	if g.phase != Stable || g.generation != h.g.generation || g.leader != h.g.leader || len(g.members) != 2 ||
		g.static["i2"] != ids[1] || string(g.members[ids[1]].assignment) != "a:"+ids[1] {
		t.Fatalf("restored %+v", g)
	}
	if o := g.fetchOffsets(nil); len(o) != 1 || o[0].Offset != 42 || o[0].LeaderEpoch != 7 || o[0].Partition != 3 {
		t.Fatalf("offsets %+v", o)
	}
	// Tombstones remove.
	records = records[:0]
	h.g.deleteOffsets(nil, func(error, []error) {})
	h.g.issue([]kv{{key: offsetCommitKey("g", "t", 3)}, {key: groupMetadataKey("g")}}, nil)
	capture()
	if _, err := replay(loaded, encodeWrites(records)); err != nil {
		t.Fatal(err)
	}
	if lg := loaded["g"]; lg.meta != nil || len(lg.offsets) != 0 {
		t.Fatalf("after tombstones: %+v", lg)
	}
}

func TestOffsetsExpireInEmptyGroups(t *testing.T) {
	h := newHarness(t)
	h.g.lim.offsetsRetention = time.Hour
	commit := func(member string, gen int32, topic string) {
		h.g.commit(h.now, CommitRequest{MemberID: member, Generation: gen, Offsets: []OffsetCommit{{Topic: topic, Offset: 1}}}, func([]error) {})
		h.finishWrites(nil)
	}
	commit("", -1, "early")
	h.advance(30 * time.Minute)
	commit("", -1, "late")
	h.advance(31 * time.Minute)
	if o := h.g.fetchOffsets(nil); len(o) != 1 || o[0].Topic != "late" {
		t.Fatalf("after 61 minutes: %+v", o)
	}
	if len(h.g.writes) != 1 || h.g.writes[0].records[0].value != nil {
		t.Fatal("an expired offset is tombstoned")
	}
	h.finishWrites(nil)
	// An active group keeps its offsets however old; they expire an hour after it empties.
	ids := h.stableGroup("a")
	commit(ids[0], 1, "active")
	h.advance(2 * time.Hour)
	h.heartbeat(ids[0], 1)
	if len(h.g.offsets) != 2 {
		t.Fatalf("offsets of an active group expired: %+v", h.g.offsets)
	}
	h.g.leave(h.now, []LeaveMember{{MemberID: ids[0]}})
	h.finishWrites(nil)
	h.advance(59 * time.Minute)
	if len(h.g.offsets) != 2 {
		t.Fatal("expired before the retention since the group emptied")
	}
	h.advance(time.Minute)
	if len(h.g.offsets) != 0 || !h.g.canBeRemoved() {
		t.Fatalf("offsets %+v after the retention", h.g.offsets)
	}
}
