package group

// KIP-848 consumer groups: the second group type beside classic (see doc.go, "Consumer
// groups"). This file holds their state; consumer_heartbeat.go the heartbeat,
// consumer_reconcile.go the per-member state machine, consumer_assignor.go the
// server-side assignors and consumer_records.go the records in __consumer_offsets.

import (
	"maps"
	"regexp"
	"slices"
	"time"
)

// topicID is a topic's 16-byte id, as ConsumerGroupHeartbeat names topics.
type topicID = [16]byte

// partSet is a set of partitions by topic id, each with the member epoch at which it
// was assigned to its member (its assignment epoch; 0 where it is not tracked, as in
// target assignments). Invariant: no topic maps to an empty map.
type partSet map[topicID]map[int32]int32

func (s partSet) has(t topicID, p int32) bool {
	_, ok := s[t][p]
	return ok
}

func (s partSet) add(t topicID, p, epoch int32) {
	m := s[t]
	if m == nil {
		m = map[int32]int32{}
		s[t] = m
	}
	m[p] = epoch
}

func (s partSet) count() int {
	n := 0
	for _, ps := range s {
		n += len(ps)
	}
	return n
}

func (s partSet) clone() partSet {
	out := make(partSet, len(s))
	for t, ps := range s {
		out[t] = maps.Clone(ps)
	}
	return out
}

// sameKeys reports whether a and b hold the same partitions (epochs aside).
func (s partSet) sameKeys(o partSet) bool {
	if len(s) != len(o) {
		return false
	}
	for t, ps := range s {
		ops := o[t]
		if len(ps) != len(ops) {
			return false
		}
		for p := range ps {
			if _, ok := ops[p]; !ok {
				return false
			}
		}
	}
	return true
}

// sorted returns the partitions of each topic in order, topics in id order.
func (s partSet) sorted() []TopicPartitions {
	out := make([]TopicPartitions, 0, len(s))
	for t, ps := range s {
		out = append(out, TopicPartitions{TopicID: t, Partitions: slices.Sorted(maps.Keys(ps))})
	}
	slices.SortFunc(out, func(a, b TopicPartitions) int { return slices.Compare(a.TopicID[:], b.TopicID[:]) })
	return out
}

func partSetOf(tps []TopicPartitions, epoch int32) partSet {
	s := partSet{}
	for _, tp := range tps {
		for _, p := range tp.Partitions {
			s.add(tp.TopicID, p, epoch)
		}
	}
	return s
}

// memberState is a consumer group member's reconciliation state, with Kafka's
// MemberState values (they are stored in the current assignment record).
type memberState int8

const (
	// memberUnrevoked: the member must revoke partitionsPendingRevocation first; it
	// stays in its epoch until it reports them gone.
	memberUnrevoked memberState = 0
	// memberUnreleased: the member is in the target epoch but waits for partitions
	// another member still holds.
	memberUnreleased memberState = 1
	// memberStable: the member holds its whole target assignment.
	memberStable memberState = 2
)

var memberStateNames = map[memberState]string{
	memberUnrevoked: "unrevoked_partitions", memberUnreleased: "unreleased_partitions", memberStable: "stable",
}

func (s memberState) String() string {
	if n, ok := memberStateNames[s]; ok {
		return n
	}
	return "unknown"
}

// leaveEpochStatic is the member epoch of a static member that left temporarily
// (ConsumerGroupHeartbeat epoch -2): it keeps its assignment until its session ends or
// a member with its instance id replaces it.
const leaveEpochStatic = -2

// consumerMember is one member of a consumer group (Kafka's ConsumerGroupMember).
type consumerMember struct {
	id         string
	instanceID *string
	rackID     *string
	clientID   string
	clientHost string
	// subscribedNames is sorted; regex is "" when none (RE2 syntax).
	subscribedNames []string
	regex           string
	// re is regex compiled to match whole names; nil when regex is "" (or, from the
	// log, no longer compiles: it then matches nothing).
	re             *regexp.Regexp
	serverAssignor string
	// rebalanceTimeout bounds how long the member may take to revoke partitions.
	rebalanceTimeout time.Duration

	// epoch is the member epoch; previousEpoch the one before it, accepted from a
	// member whose response was lost. Invariant: epoch <= the group's assignment epoch,
	// and it only grows while the member is in the group (leaveEpochStatic aside).
	epoch, previousEpoch int32
	state                memberState
	// assigned are the partitions the member holds (with their assignment epochs);
	// pending those it must revoke. Invariant: disjoint, and no other member holds any
	// of them (the group's owners index says who holds what).
	assigned, pending partSet

	// sessionTimeout and lastHeartbeat give the session deadline.
	sessionTimeout time.Duration
	lastHeartbeat  time.Time
	// revokeDeadline is when a member still owing revocations is fenced; zero when it
	// owes none.
	revokeDeadline time.Time
	// classic is set for a member speaking the classic protocol (migration.go).
	classic *classicMember
}

func (m *consumerMember) sessionExpiry() time.Time { return m.lastHeartbeat.Add(m.sessionTimeout) }

// partitionKey names one partition by topic id.
type partitionKey struct {
	topic     topicID
	partition int32
}

// consumerGroup is the KIP-848 state of a group (Kafka's ConsumerGroup). It lives in
// groupMetadata.consumer, which is nil for a classic group. Pure: time comes in as
// arguments, and only the group's goroutine touches it.
type consumerGroup struct {
	// groupEpoch grows whenever the members or their subscriptions (or the metadata of
	// the subscribed topics) change. Invariant: assignmentEpoch <= groupEpoch, and
	// both only grow.
	groupEpoch      int32
	assignmentEpoch int32
	members         map[string]*consumerMember
	// static maps an instance id to the member id holding it.
	static map[string]string
	// target is the target assignment of each member, computed for assignmentEpoch.
	target map[string]partSet
	// owners maps each partition some member holds (assigned or pending revocation) to
	// that member: a partition moves to a new member only once it is free here.
	owners map[partitionKey]string
	// subscriptionHash summarises the metadata of the subscribed topics (ids, partition
	// counts) the target was computed from; a change bumps the group epoch.
	subscriptionHash uint64
	// hashVersion is the TopicImage version subscriptionHash was computed at;
	// hashDirty is set when a subscription changed since.
	hashVersion uint64
	hashDirty   bool
	// assignor is the assignor the last target assignment used.
	assignor string
	// persisted: the log holds the group's consumer records (its epoch record).
	persisted bool
}

func newConsumerGroup() *consumerGroup {
	return &consumerGroup{members: map[string]*consumerMember{}, static: map[string]string{},
		target: map[string]partSet{}, owners: map[partitionKey]string{}, hashDirty: true}
}

// Consumer group states, with Kafka's names (ConsumerGroup.ConsumerGroupState).
const (
	ConsumerEmpty       = "Empty"
	ConsumerAssigning   = "Assigning"
	ConsumerReconciling = "Reconciling"
	ConsumerStable      = "Stable"
)

// state is the group's state as Kafka computes it.
func (cg *consumerGroup) state() string {
	switch {
	case len(cg.members) == 0:
		return ConsumerEmpty
	case cg.groupEpoch > cg.assignmentEpoch:
		return ConsumerAssigning
	}
	for _, m := range cg.members {
		if m.epoch != cg.assignmentEpoch || m.state != memberStable {
			return ConsumerReconciling
		}
	}
	return ConsumerStable
}

// setOwnership replaces member id's entries in the owners index by its assigned and
// pending partitions.
func (cg *consumerGroup) setOwnership(id string, oldAssigned, oldPending, assigned, pending partSet) {
	for _, s := range []partSet{oldAssigned, oldPending} {
		for t, ps := range s {
			for p := range ps {
				if cg.owners[partitionKey{t, p}] == id {
					delete(cg.owners, partitionKey{t, p})
				}
			}
		}
	}
	for _, s := range []partSet{assigned, pending} {
		for t, ps := range s {
			for p := range ps {
				cg.owners[partitionKey{t, p}] = id
			}
		}
	}
}

// ownedByOther reports whether a member other than self holds the partition.
func (cg *consumerGroup) ownedByOther(self string) func(topicID, int32) bool {
	return func(t topicID, p int32) bool {
		o, ok := cg.owners[partitionKey{t, p}]
		return ok && o != self
	}
}

// sortedMemberIDs lists the member ids in order.
func (cg *consumerGroup) sortedMemberIDs() []string {
	return slices.Sorted(maps.Keys(cg.members))
}

// preferredAssignor is the assignor most members ask for (ties: the first in the
// broker's list), or the broker's first when none asks.
func (cg *consumerGroup) preferredAssignor(allowed []string) string {
	votes := map[string]int{}
	for _, m := range cg.members {
		if m.serverAssignor != "" {
			votes[m.serverAssignor]++
		}
	}
	best := allowed[0]
	for _, a := range allowed {
		if votes[a] > votes[best] {
			best = a
		}
	}
	return best
}
