package group

import (
	"errors"
	"maps"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
)

// fakeTopics is a TopicImage of named topics with partition counts; a topic's id is
// its name's first 16 bytes.
type fakeTopics struct {
	parts   map[string]int32
	version uint64
}

func tid(name string) topicID {
	var id topicID
	copy(id[:], name)
	return id
}

func (f *fakeTopics) TopicByName(name string) ([16]byte, int32, bool) {
	n, ok := f.parts[name]
	return tid(name), n, ok
}

func (f *fakeTopics) TopicByID(id [16]byte) (string, int32, bool) {
	name := strings.TrimRight(string(id[:]), "\x00")
	n, ok := f.parts[name]
	return name, n, ok
}

func (f *fakeTopics) TopicNames() []string { return slices.Sorted(maps.Keys(f.parts)) }
func (f *fakeTopics) Version() uint64      { return f.version }

// consumerHarness drives one consumer group's pure state with a fake clock; appends
// succeed at once and are kept, so that a replay can rebuild the group.
type consumerHarness struct {
	t      *testing.T
	g      *groupMetadata
	now    time.Time
	topics *fakeTopics
	log    []write
}

func newConsumerHarness(t *testing.T, parts map[string]int32) *consumerHarness {
	h := &consumerHarness{t: t, now: time.Unix(1_700_000_000, 0), topics: &fakeTopics{parts: parts, version: 1}}
	h.g = newGroupMetadata("g", defaultLimits(), func(string) string { return "unused" }, h.now)
	return h
}

// flush completes every queued write successfully.
func (h *consumerHarness) flush() {
	for len(h.g.writes) > 0 {
		ws := h.g.writes
		h.g.writes = nil
		for _, w := range ws {
			h.log = append(h.log, w)
			if w.done != nil {
				w.done(nil)
			}
		}
	}
}

func (h *consumerHarness) hb(req ConsumerHeartbeatRequest) ConsumerHeartbeatResult {
	h.t.Helper()
	req.GroupID, req.Topics = "g", h.topics
	if err, msg := validateHeartbeat(&req); err != nil {
		return heartbeatError(err, msg)
	}
	var got *ConsumerHeartbeatResult
	h.g.consumerHeartbeat(h.now, req, func(r ConsumerHeartbeatResult) {
		if got != nil {
			h.t.Fatalf("heartbeat of %s answered twice", req.MemberID)
		}
		got = &r
	})
	h.flush()
	if got == nil {
		h.t.Fatalf("heartbeat of %s not answered", req.MemberID)
	}
	return *got
}

// join joins member id subscribed to topics.
func (h *consumerHarness) join(id string, topics ...string) ConsumerHeartbeatResult {
	h.t.Helper()
	return h.hb(ConsumerHeartbeatRequest{MemberID: id, MemberEpoch: 0, RebalanceTimeout: 10 * time.Second,
		SubscribedTopicNames: topics, Owned: []TopicPartitions{}})
}

// beat heartbeats member id at its epoch reporting owned (nil: not reported).
func (h *consumerHarness) beat(id string, epoch int32, owned []TopicPartitions) ConsumerHeartbeatResult {
	h.t.Helper()
	return h.hb(ConsumerHeartbeatRequest{MemberID: id, MemberEpoch: epoch, RebalanceTimeout: -1, Owned: owned})
}

func (h *consumerHarness) advance(d time.Duration) {
	h.now = h.now.Add(d)
	h.g.tick(h.now)
	h.flush()
}

// owners returns, per partition "topic/p", the members holding it (assigned or
// pending revocation): the invariant is that each has at most one.
func (h *consumerHarness) checkExclusive() {
	h.t.Helper()
	held := map[partitionKey][]string{}
	for id, m := range h.g.consumer.members {
		for _, s := range []partSet{m.assigned, m.pending} {
			for t, ps := range s {
				for p := range ps {
					held[partitionKey{t, p}] = append(held[partitionKey{t, p}], id)
				}
			}
		}
	}
	for k, ids := range held {
		if len(ids) > 1 {
			h.t.Fatalf("partition %d of %s held by %v", k.partition, k.topic, ids)
		}
	}
}

func count(tps []TopicPartitions) int {
	n := 0
	for _, tp := range tps {
		n += len(tp.Partitions)
	}
	return n
}

// TestConsumerGroupRevokeBeforeAssign walks a member joining a group whose partitions
// another member holds: the newcomer gets them only once the holder reports them gone.
func TestConsumerGroupRevokeBeforeAssign(t *testing.T) {
	h := newConsumerHarness(t, map[string]int32{"t": 4})
	a := h.join("a", "t")
	if a.Err != nil || a.MemberEpoch != 1 || count(a.Assignment) != 4 {
		t.Fatalf("a joined: %+v", a)
	}
	b := h.join("b", "t")
	if b.Err != nil || b.MemberEpoch != 2 || count(b.Assignment) != 0 {
		t.Fatalf("b joined while a holds everything: epoch %d, %d partitions, err %v", b.MemberEpoch, count(b.Assignment), b.Err)
	}
	h.checkExclusive()
	// a heartbeats still holding all 4: told to keep 2, stays in epoch 1 (unrevoked).
	r := h.beat("a", 1, a.Assignment)
	if r.Err != nil || r.MemberEpoch != 1 || count(r.Assignment) != 2 {
		t.Fatalf("a's heartbeat should revoke 2 partitions and keep epoch 1: %+v", r)
	}
	if st := h.g.consumer.state(); st != ConsumerReconciling {
		t.Fatalf("state %s, want Reconciling", st)
	}
	// b still cannot have them.
	if r := h.beat("b", 2, []TopicPartitions{}); count(r.Assignment) != 0 && r.Assignment != nil {
		t.Fatalf("b got %v before a revoked", r.Assignment)
	}
	h.checkExclusive()
	// a reports the revocation: it moves to epoch 2; b then gets the other two.
	r = h.beat("a", 1, r.Assignment)
	if r.Err != nil || r.MemberEpoch != 2 {
		t.Fatalf("a after revoking: %+v", r)
	}
	rb := h.beat("b", 2, []TopicPartitions{})
	if rb.Err != nil || count(rb.Assignment) != 2 {
		t.Fatalf("b after a revoked: %+v", rb)
	}
	h.checkExclusive()
	h.beat("b", 2, rb.Assignment)
	if st := h.g.consumer.state(); st != ConsumerStable {
		t.Fatalf("state %s, want Stable", st)
	}
}

func TestConsumerGroupEpochErrors(t *testing.T) {
	h := newConsumerHarness(t, map[string]int32{"t": 2})
	a := h.join("a", "t")
	for _, c := range []struct {
		name string
		req  ConsumerHeartbeatRequest
		want error
	}{
		{"epoch ahead", ConsumerHeartbeatRequest{MemberID: "a", MemberEpoch: 5, RebalanceTimeout: -1}, ErrFencedMemberEpoch},
		{"unknown member", ConsumerHeartbeatRequest{MemberID: "x", MemberEpoch: 1, RebalanceTimeout: -1}, ErrUnknownMemberID},
		{"join without subscription", ConsumerHeartbeatRequest{MemberID: "y", RebalanceTimeout: time.Second, Owned: []TopicPartitions{}}, ErrInvalidRequest},
		{"join owning partitions", ConsumerHeartbeatRequest{MemberID: "y", RebalanceTimeout: time.Second, SubscribedTopicNames: []string{"t"}, Owned: a.Assignment}, ErrInvalidRequest},
		{"bad regex", ConsumerHeartbeatRequest{MemberID: "y", RebalanceTimeout: time.Second, SubscribedTopicRegex: ptr("t("), Owned: []TopicPartitions{}}, ErrInvalidRegularExpression},
		{"unknown assignor", ConsumerHeartbeatRequest{MemberID: "y", RebalanceTimeout: time.Second, SubscribedTopicNames: []string{"t"}, ServerAssignor: ptr("sticky"), Owned: []TopicPartitions{}}, ErrUnsupportedAssignor},
		{"epoch -3", ConsumerHeartbeatRequest{MemberID: "a", MemberEpoch: -3}, ErrInvalidRequest},
	} {
		if r := h.hb(c.req); !errors.Is(r.Err, c.want) {
			t.Errorf("%s: got %v, want %v", c.name, r.Err, c.want)
		}
	}
	// The previous epoch is accepted from a member holding a subset of its assignment
	// (its last response was lost).
	b := h.join("b", "t")
	ra := h.beat("a", 1, a.Assignment) // revoke one
	h.beat("a", 1, ra.Assignment)      // revoked: epoch 2
	if r := h.beat("a", 1, ra.Assignment); r.Err != nil {
		t.Errorf("previous epoch with a subset: %v", r.Err)
	}
	if r := h.beat("a", 1, a.Assignment); !errors.Is(r.Err, ErrFencedMemberEpoch) {
		t.Errorf("previous epoch holding more than its assignment: %v", r.Err)
	}
	_ = b
}

func ptr[T any](v T) *T { return &v }

func TestConsumerGroupMaxSizeAndStaticMembers(t *testing.T) {
	h := newConsumerHarness(t, map[string]int32{"t": 3})
	h.g.lim.consumerMaxSize = 2
	join := func(id, inst string) ConsumerHeartbeatResult {
		return h.hb(ConsumerHeartbeatRequest{MemberID: id, InstanceID: ptr(inst), RebalanceTimeout: time.Second,
			SubscribedTopicNames: []string{"t"}, Owned: []TopicPartitions{}})
	}
	a := join("a1", "A")
	join("b1", "B")
	if r := h.join("c", "t"); !errors.Is(r.Err, ErrGroupMaxSizeReached) {
		t.Fatalf("third member of a group of max size 2: %v", r.Err)
	}
	// A new incarnation of A while a1 is active: refused.
	if r := join("a2", "A"); !errors.Is(r.Err, ErrUnreleasedInstanceID) {
		t.Fatalf("instance A taken over while held: %v", r.Err)
	}
	// a1 leaves temporarily (-2), a2 replaces it without a new group epoch and keeps its
	// partitions.
	epoch := h.g.consumer.groupEpoch
	aTarget := h.g.consumer.target["a1"].sorted()
	if r := h.hb(ConsumerHeartbeatRequest{MemberID: "a1", InstanceID: ptr("A"), MemberEpoch: -2}); r.Err != nil || r.MemberEpoch != -2 {
		t.Fatalf("static leave: %+v", r)
	}
	r := join("a2", "A")
	if r.Err != nil || h.g.consumer.groupEpoch != epoch || count(r.Assignment) != count(aTarget) {
		t.Fatalf("static rejoin: %+v, group epoch %d -> %d, a1's target had %d partitions", r, epoch, h.g.consumer.groupEpoch, count(aTarget))
	}
	if _, ok := h.g.consumer.members["a1"]; ok {
		t.Fatal("a1 still a member after a2 replaced it")
	}
	h.checkExclusive()
	_ = a
}

// TestConsumerGroupSessionAndRevocationTimeouts: a member not heard from for its
// session timeout is removed and its partitions go to the others; a member that
// does not revoke within its rebalance timeout is removed too.
func TestConsumerGroupSessionAndRevocationTimeouts(t *testing.T) {
	h := newConsumerHarness(t, map[string]int32{"t": 4})
	h.g.lim.consumerSessionTimeout = 3 * time.Second
	a := h.join("a", "t")
	b := h.join("b", "t")
	// a never heartbeats again: b heartbeats every second and, once a is gone, gets all.
	for i := 0; i < 4; i++ {
		h.advance(time.Second)
		b = h.beat("b", b.MemberEpoch, nil)
	}
	if _, ok := h.g.consumer.members["a"]; ok {
		t.Fatal("a not removed after its session timeout")
	}
	b = h.beat("b", b.MemberEpoch, []TopicPartitions{})
	if count(b.Assignment) != 4 {
		t.Fatalf("b has %d partitions after a expired", count(b.Assignment))
	}
	_ = a
	// c joins; b is asked to revoke but never reports it: fenced after 10 s.
	h.join("c", "t")
	h.beat("b", b.MemberEpoch, b.Assignment)
	if h.g.consumer.members["b"].state != memberUnrevoked {
		t.Fatalf("b state %v", h.g.consumer.members["b"].state)
	}
	for i := 0; i < 11; i++ {
		h.advance(time.Second)
		h.beat("b", b.MemberEpoch, b.Assignment)
		if _, ok := h.g.consumer.members["b"]; !ok {
			return
		}
		h.g.consumer.members["b"].lastHeartbeat = h.now
	}
	t.Fatal("b still a member 11 s after it was asked to revoke with a 10 s rebalance timeout")
}

// TestConsumerGroupReplayKeepsState: a coordinator that reloads the partition gets
// the same epochs, assignments and targets, and members carry on.
func TestConsumerGroupReplayKeepsState(t *testing.T) {
	h := newConsumerHarness(t, map[string]int32{"t": 5, "u": 2})
	a := h.join("a", "t", "u")
	b := h.hb(ConsumerHeartbeatRequest{MemberID: "b", InstanceID: ptr("B"), RebalanceTimeout: time.Second,
		SubscribedTopicRegex: ptr("t|u"), Owned: []TopicPartitions{}})
	ra := h.beat("a", a.MemberEpoch, a.Assignment)
	h.beat("a", ra.MemberEpoch, ra.Assignment)
	h.beat("b", b.MemberEpoch, []TopicPartitions{})

	groups := map[string]*loadedGroup{}
	if _, err := replay(groups, encodeWrites(h.log)); err != nil {
		t.Fatal(err)
	}
	got := restoreGroup("g", groups["g"], defaultLimits(), nil, h.now)
	want := h.g.consumer
	if got.consumer == nil {
		t.Fatal("replayed group is not a consumer group")
	}
	if d1, d2 := want.describe("g"), got.consumer.describe("g"); !reflect.DeepEqual(d1, d2) {
		t.Fatalf("replayed group differs:\nlive:     %+v\nreplayed: %+v", d1, d2)
	}
	if want.subscriptionHash != got.consumer.subscriptionHash || !maps.Equal(want.owners, got.consumer.owners) {
		t.Fatal("replayed hash or owners differ")
	}
	// A member heartbeating the reloaded group at its epoch is not fenced, and no new
	// group epoch starts.
	h.g = got
	epoch := got.consumer.groupEpoch
	m := got.consumer.members["a"]
	if r := h.beat("a", m.epoch, m.assigned.sorted()); r.Err != nil || got.consumer.groupEpoch != epoch {
		t.Fatalf("heartbeat after reload: %+v (group epoch %d -> %d)", r, epoch, got.consumer.groupEpoch)
	}
	// Leaving and deleting tombstone everything: a replay then has no group.
	h.hb(ConsumerHeartbeatRequest{MemberID: "a", MemberEpoch: -1})
	h.hb(ConsumerHeartbeatRequest{MemberID: "b", InstanceID: ptr("B"), MemberEpoch: -1})
	h.g.deleteGroup(h.now, func(err error) {
		if err != nil {
			t.Fatal(err)
		}
	})
	h.flush()
	groups = map[string]*loadedGroup{}
	if _, err := replay(groups, encodeWrites(h.log)); err != nil {
		t.Fatal(err)
	}
	if lc := groups["g"].consumer; lc != nil && (lc.epoch != nil || len(lc.members) > 0 || len(lc.currents) > 0 || len(lc.targets) > 0) {
		t.Fatalf("deleted group replayed with %+v", lc)
	}
}

// TestConsumerGroupMetadataChangesReassign: partitions added to a subscribed topic
// and a topic matching a regex created later reach the members.
func TestConsumerGroupMetadataChangesReassign(t *testing.T) {
	h := newConsumerHarness(t, map[string]int32{"orders": 2})
	a := h.hb(ConsumerHeartbeatRequest{MemberID: "a", RebalanceTimeout: time.Second,
		SubscribedTopicRegex: ptr("ord.*"), Owned: []TopicPartitions{}})
	if count(a.Assignment) != 2 {
		t.Fatalf("regex subscription got %d partitions", count(a.Assignment))
	}
	h.topics.parts["orders"] = 3
	h.topics.parts["ordersx"] = 1
	h.topics.parts["xorders"] = 1 // the regex matches whole names only
	h.topics.version++
	r := h.beat("a", a.MemberEpoch, a.Assignment)
	if r.Err != nil || count(r.Assignment) != 4 || r.MemberEpoch != a.MemberEpoch+1 {
		t.Fatalf("after growing orders and creating ordersx: %+v", r)
	}
	delete(h.topics.parts, "ordersx")
	h.topics.version++
	r = h.beat("a", r.MemberEpoch, r.Assignment)
	if count(r.Assignment) != 3 {
		t.Fatalf("after deleting ordersx: %d partitions", count(r.Assignment))
	}
}

// TestConsumerGroupCommitFencing: commits carry the member epoch; an older epoch is
// accepted only for partitions the member already held at it.
func TestConsumerGroupCommitFencing(t *testing.T) {
	h := newConsumerHarness(t, map[string]int32{"t": 4})
	a := h.join("a", "t")
	commit := func(member string, epoch int32, version int16, p int32) error {
		var got []error
		h.g.commit(h.now, CommitRequest{Version: version, GroupID: "g", MemberID: member, Generation: epoch,
			Offsets: []OffsetCommit{{Topic: "t", TopicID: tid("t"), Partition: p, Offset: 10}}}, func(errs []error) { got = errs })
		h.flush()
		return got[0]
	}
	for _, c := range []struct {
		name    string
		member  string
		epoch   int32
		version int16
		p       int32
		want    error
	}{
		{"current epoch", "a", a.MemberEpoch, 9, 0, nil},
		{"epoch ahead", "a", a.MemberEpoch + 1, 9, 0, ErrStaleMemberEpoch},
		{"unknown member", "x", 1, 9, 0, ErrUnknownMemberID},
		{"v8 from a consumer member", "a", a.MemberEpoch, 8, 0, ErrUnsupportedVersion},
		{"outsider while members exist", "", -1, 9, 0, ErrUnknownMemberID},
	} {
		if err := commit(c.member, c.epoch, c.version, c.p); !errors.Is(err, c.want) {
			t.Errorf("%s: got %v, want %v", c.name, err, c.want)
		}
	}
	// b joins; a revokes two partitions and moves to epoch 2: its epoch-1 commit is
	// accepted for a partition it kept (held since epoch 1) and refused for one it no
	// longer holds.
	h.join("b", "t")
	r := h.beat("a", 1, a.Assignment)
	r = h.beat("a", 1, r.Assignment)
	if r.MemberEpoch != 2 {
		t.Fatalf("a epoch %d", r.MemberEpoch)
	}
	kept := h.g.consumer.members["a"].assigned.sorted()[0].Partitions[0]
	var lost int32 = -1
	for p := int32(0); p < 4; p++ {
		if !h.g.consumer.members["a"].assigned.has(tid("t"), p) {
			lost = p
		}
	}
	if err := commit("a", 1, 9, kept); err != nil {
		t.Errorf("epoch-1 commit of a partition held since epoch 1: %v", err)
	}
	if err := commit("a", 1, 9, lost); !errors.Is(err, ErrStaleMemberEpoch) {
		t.Errorf("epoch-1 commit of a partition a no longer holds: %v", err)
	}
}

// TestConsumerGroupKindsExclusive: a group is classic or consumer.
func TestConsumerGroupKindsExclusive(t *testing.T) {
	h := newConsumerHarness(t, map[string]int32{"t": 1})
	h.join("a", "t")
	var jr JoinResult
	h.g.join(h.now, JoinRequest{GroupID: "g", ProtocolType: "consumer", Protocols: []Protocol{{Name: "range"}},
		SessionTimeout: 10 * time.Second}, func(r JoinResult) { jr = r })
	if !errors.Is(jr.Err, ErrInconsistentGroupProtocol) {
		t.Fatalf("classic join of a consumer group with members: %v", jr.Err)
	}
	h.hb(ConsumerHeartbeatRequest{MemberID: "a", MemberEpoch: -1})
	h.g.join(h.now, JoinRequest{GroupID: "g", ProtocolType: "consumer", Protocols: []Protocol{{Name: "range"}},
		SessionTimeout: 10 * time.Second, RebalanceTimeout: time.Second}, func(r JoinResult) { jr = r })
	if h.g.consumer != nil || len(h.g.members) != 1 {
		t.Fatalf("classic join of an empty consumer group did not convert it (consumer %v, %d classic members)", h.g.consumer != nil, len(h.g.members))
	}
	if r := h.join("b", "t"); !errors.Is(r.Err, ErrGroupIDNotFound) {
		t.Fatalf("consumer heartbeat of a classic group with members: %v", r.Err)
	}
}
