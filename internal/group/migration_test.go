package group

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// classicProtocols is a classic consumer's JoinGroup protocols: subscribed to topics,
// reporting owned (topic -> partitions).
func classicProtocols(topics []string, owned map[string][]int32) []Protocol {
	meta := kmsg.NewConsumerMemberMetadata()
	meta.Version, meta.Topics = 1, topics
	for t, ps := range owned {
		op := kmsg.NewConsumerMemberMetadataOwnedPartition()
		op.Topic, op.Partitions = t, ps
		meta.OwnedPartitions = append(meta.OwnedPartitions, op)
	}
	return []Protocol{{Name: "cooperative-sticky", Metadata: meta.AppendTo(nil)}}
}

func (h *consumerHarness) classicJoin(id string, owned map[string][]int32) JoinResult {
	h.t.Helper()
	var got *JoinResult
	h.g.join(h.now, JoinRequest{GroupID: "g", MemberID: id, ProtocolType: "consumer", Protocols: classicProtocols([]string{"t"}, owned),
		SessionTimeout: 10 * time.Second, RebalanceTimeout: 10 * time.Second, ClientID: "c", Topics: h.topics}, func(r JoinResult) { got = &r })
	h.flush()
	if got == nil {
		h.t.Fatalf("join of %q not answered", id)
	}
	return *got
}

func (h *consumerHarness) classicSync(id string, gen int32) ([]int32, error) {
	h.t.Helper()
	var got *SyncResult
	h.g.sync(h.now, SyncRequest{GroupID: "g", MemberID: id, Generation: gen}, func(r SyncResult) { got = &r })
	h.flush()
	if got.Err != nil {
		return nil, got.Err
	}
	var a kmsg.ConsumerMemberAssignment
	if err := a.ReadFrom(got.Assignment); err != nil {
		h.t.Fatal(err)
	}
	var ps []int32
	for _, at := range a.Topics {
		ps = append(ps, at.Partitions...)
	}
	return ps, nil
}

// stableClassicGroup makes a stable classic group of members a (partitions 0, 1) and
// b (2, 3) in generation 1.
func stableClassicGroup(h *consumerHarness) (a, b string) {
	h.t.Helper()
	h.g.lim.initialRebalanceDelay = 0
	ids := []string{"a", "b"}
	n := 0
	h.g.newMemberID = func(string) string { n++; return ids[n-1] }
	for range ids {
		h.g.join(h.now, JoinRequest{GroupID: "g", ProtocolType: "consumer", Protocols: classicProtocols([]string{"t"}, nil),
			SessionTimeout: 10 * time.Second, RebalanceTimeout: 10 * time.Second}, func(JoinResult) {})
	}
	for i := 0; i < 3 && h.g.phase == PreparingRebalance; i++ {
		h.advance(0) // the initial join phase ends once no new member came
	}
	if h.g.phase != CompletingRebalance {
		h.t.Fatalf("classic group in %v", h.g.phase)
	}
	assign := func(ps ...int32) []byte {
		a := kmsg.NewConsumerMemberAssignment()
		at := kmsg.NewConsumerMemberAssignmentTopic()
		at.Topic, at.Partitions = "t", ps
		a.Topics = append(a.Topics, at)
		return a.AppendTo(nil)
	}
	h.g.sync(h.now, SyncRequest{MemberID: h.g.leader, Generation: 1, Assignments: []Assignment{{"a", assign(0, 1)}, {"b", assign(2, 3)}}}, func(SyncResult) {})
	h.g.sync(h.now, SyncRequest{MemberID: "a", Generation: 1}, func(SyncResult) {})
	h.g.sync(h.now, SyncRequest{MemberID: "b", Generation: 1}, func(SyncResult) {})
	h.flush()
	if h.g.phase != Stable {
		h.t.Fatalf("classic group in %v", h.g.phase)
	}
	h.g.newMemberID = func(string) string { return "new" }
	return "a", "b"
}

// TestMigrationUpgradeAndDowngrade: a ConsumerGroupHeartbeat converts a stable
// classic group; its classic members keep their partitions until they rejoin, revoke
// before a consumer member gets what they held, commit with generation = member epoch;
// the last consumer member's leave converts the group back.
func TestMigrationUpgradeAndDowngrade(t *testing.T) {
	h := newConsumerHarness(t, map[string]int32{"t": 4})
	h.g.lim.migration = migrateUpgrade | migrateDowngrade
	var logged bytes.Buffer
	h.g.logger = slog.New(slog.NewTextHandler(&logged, nil))
	a, b := stableClassicGroup(h)

	r := h.join("c", "t")
	if r.Err != nil {
		t.Fatalf("consumer member joining the classic group: %v", r.Err)
	}
	if want := `level=INFO msg="Converted the classic group g to a consumer group." group=g generation=1 group_epoch=1 members=2`; !strings.Contains(logged.String(), want) {
		t.Errorf("logged %q, want %q", logged.String(), want)
	}
	cg := h.g.consumer
	if cg == nil || len(h.g.members) != 0 || len(cg.members) != 3 {
		t.Fatalf("not converted: consumer %v, %d classic members", cg != nil, len(h.g.members))
	}
	if ma := cg.members[a]; ma.classic == nil || ma.epoch != 1 || ma.assigned.count() != 2 {
		t.Fatalf("a after the upgrade: classic %v epoch %d holding %d", ma.classic != nil, ma.epoch, ma.assigned.count())
	}
	if len(r.Assignment) != 0 {
		t.Fatalf("c got %v while a and b hold every partition", r.Assignment)
	}
	h.checkExclusive()

	// a and b are told to rejoin; their commits at generation 1 still count.
	if err := h.g.heartbeat(h.now, HeartbeatRequest{MemberID: a, Generation: 1}); !errors.Is(err, ErrRebalanceInProgress) {
		t.Fatalf("a's heartbeat after the group epoch moved: %v", err)
	}
	commit := func(id string, gen int32) error {
		var errs []error
		h.g.commit(h.now, CommitRequest{Version: 7, GroupID: "g", MemberID: id, Generation: gen, Offsets: []OffsetCommit{{Topic: "t", TopicID: tid("t"), Partition: 0, Offset: 5}}}, func(e []error) { errs = e })
		h.flush()
		return errs[0]
	}
	if err := commit(a, 1); err != nil {
		t.Fatalf("a's v7 commit at generation 1 = its member epoch: %v", err)
	}
	if err := commit(a, 2); !errors.Is(err, ErrIllegalGeneration) {
		t.Fatalf("a's commit at another generation: %v", err)
	}

	// The member whose target shrank rejoins still owning both its partitions: it
	// must revoke one of them first.
	owned := map[string][]int32{a: {0, 1}, b: {2, 3}}
	if cg.target[a].count() == 2 {
		a, b = b, a
	}
	jr := h.classicJoin(a, map[string][]int32{"t": owned[a]})
	if jr.Err != nil || jr.Generation != 1 || jr.MemberID != a {
		t.Fatalf("a's rejoin owing a revocation: %+v", jr)
	}
	if ps, err := h.classicSync(a, jr.Generation); err != nil || len(ps) != 1 {
		t.Fatalf("a's sync: %v %v, want one partition kept", ps, err)
	}
	if err := h.g.heartbeat(h.now, HeartbeatRequest{MemberID: a, Generation: jr.Generation}); !errors.Is(err, ErrRebalanceInProgress) {
		t.Fatalf("a's heartbeat while it owes a revocation: %v", err)
	}
	kept := cg.members[a].assigned.sorted()[0].Partitions
	jr = h.classicJoin(a, map[string][]int32{"t": kept})
	if jr.Generation != cg.assignmentEpoch {
		t.Fatalf("a at generation %d after revoking, group at %d", jr.Generation, cg.assignmentEpoch)
	}
	if err := h.g.heartbeat(h.now, HeartbeatRequest{MemberID: a, Generation: jr.Generation}); err != nil {
		t.Fatalf("a's heartbeat once reconciled: %v", err)
	}
	h.checkExclusive()
	r = h.beat("c", r.MemberEpoch, []TopicPartitions{})
	if n := len(r.Assignment); n == 0 {
		t.Fatalf("c has nothing after a revoked")
	}

	// c leaves: only classic members remain, and the group is classic again, in a
	// join phase at the generation of its most advanced member.
	h.hb(ConsumerHeartbeatRequest{MemberID: "c", MemberEpoch: -1})
	if h.g.consumer != nil || len(h.g.members) != 2 || h.g.phase != PreparingRebalance {
		t.Fatalf("not converted back: consumer %v, %d classic members, %v", h.g.consumer != nil, len(h.g.members), h.g.phase)
	}
	if h.g.generation != jr.Generation {
		t.Fatalf("classic generation %d, a's epoch %d", h.g.generation, jr.Generation)
	}
	if want := fmt.Sprintf(`level=INFO msg="Converted the consumer group g to a classic group." group=g group_epoch=%d generation=%d members=2`, cg.groupEpoch, jr.Generation); !strings.Contains(logged.String(), want) {
		t.Errorf("logged %q, want %q", logged.String(), want)
	}
	if err := h.g.heartbeat(h.now, HeartbeatRequest{MemberID: a, Generation: jr.Generation}); !errors.Is(err, ErrRebalanceInProgress) {
		t.Fatalf("a's heartbeat after the downgrade: %v", err)
	}
	if err := commit(a, jr.Generation); err != nil {
		t.Fatalf("a's commit during the downgrade's join phase: %v", err)
	}
	// The log holds no consumer group records any more, and no classic member until
	// the join phase ends: a reload now would have the members rejoin.
	reload := func() *groupMetadata {
		groups := map[string]*loadedGroup{}
		if _, err := replay(groups, encodeWrites(h.log)); err != nil {
			t.Fatal(err)
		}
		return restoreGroup("g", groups["g"], h.g.lim, nil, h.now)
	}
	if got := reload(); got.consumer != nil || len(got.members) != 0 {
		t.Fatalf("replayed group during the downgrade's join phase: consumer %v, %d classic members", got.consumer != nil, len(got.members))
	}
	for _, id := range []string{a, b} {
		h.g.join(h.now, JoinRequest{GroupID: "g", MemberID: id, ProtocolType: "consumer", Protocols: classicProtocols([]string{"t"}, nil),
			SessionTimeout: 10 * time.Second, RebalanceTimeout: 10 * time.Second}, func(JoinResult) {})
	}
	if h.g.phase != CompletingRebalance || h.g.generation != jr.Generation+1 {
		t.Fatalf("after both rejoined: %v generation %d", h.g.phase, h.g.generation)
	}
	h.g.sync(h.now, SyncRequest{MemberID: h.g.leader, Generation: h.g.generation}, func(SyncResult) {})
	h.flush()
	if got := reload(); got.consumer != nil || len(got.members) != 2 || got.members[b] == nil || got.generation != jr.Generation+1 {
		t.Fatalf("replayed downgraded group: consumer %v, %d classic members, generation %d", got.consumer != nil, len(got.members), got.generation)
	}
}

// TestMigrationDisabled: with the policy disabled a group is never converted, and
// each refusal says it is the policy.
func TestMigrationDisabled(t *testing.T) {
	disabled, err := parseMigrationPolicy("disabled")
	if err != nil {
		t.Fatal(err)
	}
	h := newConsumerHarness(t, map[string]int32{"t": 4})
	h.g.lim.migration = disabled
	stableClassicGroup(h)
	r := h.join("c", "t")
	if !errors.Is(r.Err, ErrGroupIDNotFound) || h.g.consumer != nil {
		t.Fatalf("consumer heartbeat to a classic group with members, policy disabled: %v", r.Err)
	}
	if want := "group.consumer.migration.policy=disabled"; !strings.Contains(r.ErrMessage, want) || !strings.HasPrefix(r.ErrMessage, "Group g is not a consumer group.") {
		t.Errorf("refused upgrade answers %q, want Kafka's sentence and %q", r.ErrMessage, want)
	}
	h2 := newConsumerHarness(t, map[string]int32{"t": 4})
	h2.g.lim.migration = disabled
	h2.join("c", "t")
	jr := h2.classicJoin("", nil)
	if !errors.Is(jr.Err, ErrInconsistentGroupProtocol) {
		t.Fatalf("classic join to a consumer group with members, policy disabled: %v", jr.Err)
	}
	if msg := jr.Err.Error(); !strings.Contains(msg, "group g ") || !strings.Contains(msg, "group.consumer.migration.policy=disabled") {
		t.Errorf("refused classic join: %q names neither the group nor the policy", msg)
	}
}

// TestMigrationUpgradeRefusalReasons: a ConsumerGroupHeartbeat refused by a classic
// group with members is told why (Kafka only logs it): the policy, the protocol
// type, or the group's size.
func TestMigrationUpgradeRefusalReasons(t *testing.T) {
	for _, c := range []struct {
		name  string
		setup func(g *groupMetadata)
		want  string
	}{
		{"downgrade only", func(g *groupMetadata) { g.lim.migration = migrateDowngrade }, "online upgrade is disabled (group.consumer.migration.policy=downgrade)"},
		{"not consumer", func(g *groupMetadata) { g.protocolType = "connect" }, `does not use the consumer embedded protocol (its protocol type is "connect")`},
		{"too big", func(g *groupMetadata) { g.lim.consumerMaxSize = 1 }, "group size 2 exceeds the consumer group maximum size 1"},
	} {
		t.Run(c.name, func(t *testing.T) {
			h := newConsumerHarness(t, map[string]int32{"t": 4})
			h.g.lim.migration = migrateUpgrade | migrateDowngrade
			stableClassicGroup(h)
			c.setup(h.g)
			r := h.join("c", "t")
			if !errors.Is(r.Err, ErrGroupIDNotFound) || h.g.consumer != nil {
				t.Fatalf("heartbeat: %v, converted %v", r.Err, h.g.consumer != nil)
			}
			if !strings.Contains(r.ErrMessage, c.want) || !strings.Contains(r.ErrMessage, "classic group g ") {
				t.Errorf("answered %q, want %q", r.ErrMessage, c.want)
			}
		})
	}
}

// TestMigrationPolicyDirections: upgrade only never converts back; downgrade only
// never converts a classic group.
func TestMigrationPolicyDirections(t *testing.T) {
	h := newConsumerHarness(t, map[string]int32{"t": 4})
	h.g.lim.migration = migrateDowngrade
	stableClassicGroup(h)
	if r := h.join("c", "t"); !errors.Is(r.Err, ErrGroupIDNotFound) {
		t.Fatalf("policy downgrade: consumer heartbeat to a classic group: %v", r.Err)
	}

	h = newConsumerHarness(t, map[string]int32{"t": 4})
	h.g.lim.migration = migrateUpgrade
	stableClassicGroup(h)
	h.join("c", "t")
	h.hb(ConsumerHeartbeatRequest{MemberID: "c", MemberEpoch: -1})
	if h.g.consumer == nil || len(h.g.consumer.members) != 2 {
		t.Fatalf("policy upgrade: the group was converted back")
	}
}

// TestParseMigrationPolicy: each of Kafka's names, in any case, gives its directions.
func TestParseMigrationPolicy(t *testing.T) {
	for name, want := range map[string]migrationPolicy{
		"":              migrateUpgrade | migrateDowngrade,
		"bidirectional": migrateUpgrade | migrateDowngrade,
		"Bidirectional": migrateUpgrade | migrateDowngrade,
		"upgrade":       migrateUpgrade,
		"UPGRADE":       migrateUpgrade,
		"downgrade":     migrateDowngrade,
		"disabled":      0,
		"Disabled":      0,
	} {
		got, err := parseMigrationPolicy(name)
		if err != nil || got != want {
			t.Errorf("%q: %v (%v), want %v", name, got, err, want)
		}
	}
	for _, bad := range []string{"both", "up grade", "none"} {
		if _, err := parseMigrationPolicy(bad); err == nil {
			t.Errorf("policy %q accepted", bad)
		}
	}
}

// TestNewCoordinatorMigrationPolicy: a policy that does not parse falls back to the
// documented default, bidirectional, not to disabled.
func TestNewCoordinatorMigrationPolicy(t *testing.T) {
	for policy, want := range map[string]migrationPolicy{
		"":          migrateUpgrade | migrateDowngrade,
		"both":      migrateUpgrade | migrateDowngrade,
		"Downgrade": migrateDowngrade,
		"disabled":  0,
	} {
		c := NewCoordinator(Config{NumPartitions: 1, MigrationPolicy: policy, Logger: slog.New(slog.DiscardHandler)})
		if c.lim.migration != want {
			t.Errorf("policy %q: coordinator uses %v, want %v", policy, c.lim.migration, want)
		}
	}
}

// TestMigrationClassicMemberReplayed: a classic member of a consumer group survives a
// reload (its protocols and session timeout are in its member record).
func TestMigrationClassicMemberReplayed(t *testing.T) {
	h := newConsumerHarness(t, map[string]int32{"t": 4})
	h.g.lim.migration = migrateUpgrade | migrateDowngrade
	a, _ := stableClassicGroup(h)
	h.join("c", "t")
	groups := map[string]*loadedGroup{}
	if _, err := replay(groups, encodeWrites(h.log)); err != nil {
		t.Fatal(err)
	}
	cg := restoreGroup("g", groups["g"], h.g.lim, nil, h.now).consumer
	if cg == nil || len(cg.members) != 3 {
		t.Fatalf("replayed upgraded group: %+v", cg)
	}
	m := cg.members[a]
	if m == nil || m.classic == nil || len(m.classic.protocols) != 1 || m.sessionTimeout != 10*time.Second || m.classic.protocols[0].Name != "cooperative-sticky" {
		t.Fatalf("replayed a: %+v", m)
	}
	if cg.members["c"].classic != nil {
		t.Fatal("replayed c as a classic member")
	}
}

// TestMigrationStaticClassicMemberRestarts: a static classic member of a consumer
// group that restarts (empty member id, same instance id) takes its predecessor's
// place and partitions; the old id is unknown from then on.
func TestMigrationStaticClassicMemberRestarts(t *testing.T) {
	h := newConsumerHarness(t, map[string]int32{"t": 4})
	h.g.lim.migration = migrateUpgrade | migrateDowngrade
	h.join("c", "t")
	ids := []string{"s1", "s2"}
	n := 0
	h.g.newMemberID = func(string) string { n++; return ids[n-1] }
	static := func() JoinResult {
		var got JoinResult
		h.g.join(h.now, JoinRequest{GroupID: "g", InstanceID: ptr("S"), ProtocolType: "consumer", Protocols: classicProtocols([]string{"t"}, nil),
			SessionTimeout: 10 * time.Second, RebalanceTimeout: 10 * time.Second, Topics: h.topics}, func(r JoinResult) { got = r })
		h.flush()
		return got
	}
	first := static()
	if first.Err != nil || first.MemberID != "s1" {
		t.Fatalf("static classic join: %+v", first)
	}
	held := h.g.consumer.members["s1"].assigned.clone()
	second := static()
	if second.Err != nil || second.MemberID != "s2" || second.Generation != first.Generation {
		t.Fatalf("static classic rejoin: %+v (first %+v)", second, first)
	}
	if m := h.g.consumer.members["s2"]; m == nil || m.classic == nil || !m.assigned.sameKeys(held) {
		t.Fatalf("s2 did not take s1's place: %+v", m)
	}
	if err := h.g.heartbeat(h.now, HeartbeatRequest{MemberID: "s1", Generation: first.Generation}); !errors.Is(err, ErrUnknownMemberID) {
		t.Fatalf("heartbeat of the replaced id: %v", err)
	}
	h.checkExclusive()
}

// TestMigrationClassicMemberNotRejoiningIsRemoved: a classic member of a consumer
// group told to rejoin that keeps heartbeating but does not rejoin within its
// rebalance timeout is removed (docs/consumer-groups.md), and its partitions go to the
// others; one that rejoins stays.
func TestMigrationClassicMemberNotRejoiningIsRemoved(t *testing.T) {
	h := newConsumerHarness(t, map[string]int32{"t": 4})
	h.g.lim.migration = migrateUpgrade | migrateDowngrade
	a, b := stableClassicGroup(h)
	c := h.join("c", "t")
	cg := h.g.consumer
	if cg == nil {
		t.Fatal("not converted")
	}
	// a only heartbeats, every 3 s, well within its 10 s session: it is told to rejoin
	// each time and never does.
	const rebalanceTimeout = 10 * time.Second
	start := h.now
	for h.now.Sub(start) < rebalanceTimeout-time.Second {
		if err := h.g.heartbeat(h.now, HeartbeatRequest{MemberID: a, Generation: 1}); !errors.Is(err, ErrRebalanceInProgress) {
			t.Fatalf("a's heartbeat %v after the upgrade: %v", h.now.Sub(start), err)
		}
		jr := h.classicJoin(b, map[string][]int32{"t": cg.members[b].assigned.sorted()[0].Partitions})
		if jr.Err != nil {
			t.Fatalf("b's rejoin: %v", jr.Err)
		}
		h.advance(3 * time.Second)
		if cg.members[a] == nil {
			t.Fatalf("a removed %v after it was told to rejoin, before its rebalance timeout", h.now.Sub(start))
		}
	}
	h.advance(rebalanceTimeout - h.now.Sub(start))
	if cg.members[a] != nil {
		t.Fatalf("a still in the group %v after it was told to rejoin (rebalance timeout %v)", h.now.Sub(start), rebalanceTimeout)
	}
	if cg.members[b] == nil {
		t.Fatal("b, which rejoined, was removed too")
	}
	if err := h.g.heartbeat(h.now, HeartbeatRequest{MemberID: a, Generation: 1}); !errors.Is(err, ErrUnknownMemberID) {
		t.Fatalf("a's heartbeat once removed: %v", err)
	}
	h.checkExclusive()
	r := h.beat("c", c.MemberEpoch, nil)
	for i := 0; i < 3 && r.Err == nil; i++ {
		r = h.beat("c", r.MemberEpoch, nil)
	}
	if r.Err != nil || cg.members["c"].assigned.count() == 0 {
		t.Fatalf("c after a's removal: %v, holding %d", r.Err, cg.members["c"].assigned.count())
	}
}

// TestMigrationClassicMemberRejoinsAfterFailover: after a coordinator failover (the
// group replayed from its records) a classic member of a consumer group keeps its
// place and heartbeats on, and its next SyncGroup tells it to rejoin
// (REBALANCE_IN_PROGRESS: the new coordinator does not know the topics of its last
// join); once it rejoined, SyncGroup gives it its partitions.
func TestMigrationClassicMemberRejoinsAfterFailover(t *testing.T) {
	h := newConsumerHarness(t, map[string]int32{"t": 4})
	h.g.lim.migration = migrateUpgrade | migrateDowngrade
	a, _ := stableClassicGroup(h)
	h.join("c", "t")
	jr := h.classicJoin(a, map[string][]int32{"t": h.g.consumer.members[a].assigned.sorted()[0].Partitions})
	if jr.Err != nil {
		t.Fatal(jr.Err)
	}
	if _, err := h.classicSync(a, jr.Generation); err != nil {
		t.Fatalf("a's sync before the failover: %v", err)
	}

	groups := map[string]*loadedGroup{}
	if _, err := replay(groups, encodeWrites(h.log)); err != nil {
		t.Fatal(err)
	}
	lim := h.g.lim
	h.g = restoreGroup("g", groups["g"], lim, func(string) string { return "unused" }, h.now)
	if m := h.g.consumer.members[a]; m == nil || m.classic == nil || m.epoch != jr.Generation {
		t.Fatalf("a after the failover: %+v", m)
	}
	if err := h.g.heartbeat(h.now, HeartbeatRequest{MemberID: a, Generation: jr.Generation}); err != nil && !errors.Is(err, ErrRebalanceInProgress) {
		t.Fatalf("a's heartbeat after the failover: %v", err)
	}
	if _, err := h.classicSync(a, jr.Generation); !errors.Is(err, ErrRebalanceInProgress) {
		t.Fatalf("a's first SyncGroup after the failover: %v, want REBALANCE_IN_PROGRESS", err)
	}
	jr = h.classicJoin(a, map[string][]int32{"t": h.g.consumer.members[a].assigned.sorted()[0].Partitions})
	if jr.Err != nil {
		t.Fatalf("a's rejoin after the failover: %v", jr.Err)
	}
	ps, err := h.classicSync(a, jr.Generation)
	if err != nil || len(ps) == 0 {
		t.Fatalf("a's SyncGroup after rejoining: %v %v", ps, err)
	}
	h.checkExclusive()
}
