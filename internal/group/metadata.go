package group

import (
	"log/slog"
	"math"
	"slices"
	"time"
)

// Phase is a classic group's state, with Kafka's names (GroupState).
type Phase int8

const (
	// Empty: no members; the group may still hold committed offsets.
	Empty Phase = iota
	// PreparingRebalance: the join phase; members must send JoinGroup.
	PreparingRebalance
	// CompletingRebalance: join responses sent; waiting for the leader's SyncGroup.
	CompletingRebalance
	// Stable: every member has its assignment.
	Stable
	// Dead: the group is being removed (deleted, or empty with nothing to keep).
	Dead
)

var phaseNames = [...]string{"Empty", "PreparingRebalance", "CompletingRebalance", "Stable", "Dead"}

func (p Phase) String() string { return phaseNames[p] }

// limits are the broker settings a group enforces.
type limits struct {
	minSessionTimeout, maxSessionTimeout time.Duration
	// initialRebalanceDelay is group.initial.rebalance.delay.ms: how long the first
	// join phase of an empty group waits for more members.
	initialRebalanceDelay time.Duration
	// maxSize is group.max.size.
	maxSize int
	// newMemberJoinTimeout bounds how long a new member may wait in a join phase without
	// being heard from again (Kafka's NewMemberJoinTimeoutMs, 5 minutes).
	newMemberJoinTimeout time.Duration
	// maxMetadataBytes is offset.metadata.max.bytes.
	maxMetadataBytes int
	// offsetsRetention is offsets.retention.minutes: how long an empty group keeps an
	// offset after both the group emptied and the offset was committed (0: for ever).
	offsetsRetention time.Duration

	// Consumer groups (KIP-848): group.consumer.session.timeout.ms,
	// group.consumer.heartbeat.interval.ms (a group's own configs override both),
	// group.consumer.assignors (the first is the default) and group.consumer.max.size.
	consumerSessionTimeout    time.Duration
	consumerHeartbeatInterval time.Duration
	consumerAssignors         []string
	consumerMaxSize           int
	// migration is group.consumer.migration.policy (migration.go).
	migration migrationPolicy
}

func defaultLimits() limits {
	return limits{
		minSessionTimeout: 6 * time.Second, maxSessionTimeout: 30 * time.Minute,
		initialRebalanceDelay: 3 * time.Second, maxSize: math.MaxInt32,
		newMemberJoinTimeout: 5 * time.Minute, maxMetadataBytes: 4096,
		offsetsRetention:       7 * 24 * time.Hour,
		consumerSessionTimeout: 45 * time.Second, consumerHeartbeatInterval: 5 * time.Second,
		consumerAssignors: []string{AssignorUniform, AssignorRange}, consumerMaxSize: math.MaxInt32,
	}
}

// memberMetadata is one member of a group (Kafka's MemberMetadata).
type memberMetadata struct {
	id         string
	instanceID *string
	clientID   string
	clientHost string
	// protocols offered at the last join, in preference order.
	protocols        []Protocol
	sessionTimeout   time.Duration
	rebalanceTimeout time.Duration
	// assignment is what the leader assigned in the current generation.
	assignment []byte

	// awaitingJoin is the pending JoinGroup reply; non-nil while the member waits for
	// the join phase to end. awaitingSync likewise for SyncGroup.
	awaitingJoin func(JoinResult)
	awaitingSync func(SyncResult)
	// isNew: joined in the current join phase and not yet answered; such a member
	// expires after newMemberJoinTimeout even while awaiting its join response.
	isNew bool
	// lastHeartbeat is when the member was last heard from (join, sync, heartbeat,
	// commit). The session expires sessionTimeout later unless the member is waiting.
	lastHeartbeat time.Time
}

func (m *memberMetadata) isStatic() bool { return m.instanceID != nil }

// metadataFor is the member's metadata for protocol (nil if it does not offer it).
func (m *memberMetadata) metadataFor(protocol string) []byte {
	for _, p := range m.protocols {
		if p.Name == protocol {
			return p.Metadata
		}
	}
	return nil
}

// expiry is when the member's session ends if it is not heard from again; zero while
// the member waits in a SyncGroup or (when not new) a JoinGroup, as Kafka keeps such
// members alive (MemberMetadata.shouldKeepAlive).
func (m *memberMetadata) expiry(newMemberJoinTimeout time.Duration) time.Time {
	switch {
	case m.awaitingJoin != nil && m.isNew:
		return m.lastHeartbeat.Add(newMemberJoinTimeout)
	case m.awaitingJoin != nil, m.awaitingSync != nil:
		return time.Time{}
	default:
		return m.lastHeartbeat.Add(m.sessionTimeout)
	}
}

// offsetAndMetadata is one committed offset.
type offsetAndMetadata struct {
	offset          int64
	leaderEpoch     int32
	metadata        string
	commitTimestamp int64 // ms
}

// write is an append to the group's __consumer_offsets partition. The step that issues
// it only queues it; the group's goroutine appends (acks=-1) and then runs done on the
// group's goroutine with the outcome.
type write struct {
	records []kv
	// producer is set for a TxnOffsetCommit: the batch is the producer's,
	// transactional (txn_offsets.go).
	producer *txnProducer
	done     func(err error)
}

// groupMetadata is the state of one classic group (Kafka's GroupMetadata plus the
// decisions of its GroupCoordinator). It is pure: no goroutines, clocks or I/O. Time
// comes in as an argument, replies go out through callbacks, and appends to the log
// are queued in writes for the owner to perform. Only the group's goroutine touches it.
type groupMetadata struct {
	id  string
	lim limits
	// newMemberID makes a member id from a client id (random in production).
	newMemberID func(clientID string) string

	phase Phase
	// generation is the group's generation. Invariant: only grows.
	generation   int32
	protocolType string
	// protocol is the selected protocol; "" when the group is Empty.
	protocol string
	leader   string
	members  map[string]*memberMetadata
	// order lists the member ids in join order (Kafka's LinkedHashMap); it picks the
	// first leader and breaks protocol-vote ties.
	order []string
	// static maps group.instance.id to the member id holding it.
	static map[string]string
	// pending holds KIP-394 member ids handed out with MEMBER_ID_REQUIRED, with the
	// time each expires if its member does not join.
	pending map[string]time.Time

	// joinDeadline ends the join phase; zero outside PreparingRebalance.
	joinDeadline time.Time
	// initialJoin: this join phase started from Empty and waits
	// group.initial.rebalance.delay.ms, extended while new members keep arriving,
	// up to initialRemaining more (Kafka's InitialDelayedJoin).
	initialJoin      bool
	initialRemaining time.Duration
	newMemberAdded   bool
	// syncDeadline ends the wait for every member's SyncGroup; zero when none is due.
	syncDeadline time.Time
	pendingSync  map[string]bool
	// storing: the leader's assignment is being written; the generation it is for.
	storing    bool
	storingGen int32

	offsets map[TopicPartition]offsetAndMetadata
	// txnOffsets are the offsets of ongoing transactions by producer id, committed or
	// dropped by the producer's marker (txn_offsets.go).
	txnOffsets map[int64]map[TopicPartition]offsetAndMetadata
	// persisted: the log holds a live group metadata record for this group.
	persisted bool
	// stateSince is when the group entered its phase.
	stateSince time.Time

	// consumer is the KIP-848 state of a consumer group; nil for a classic group. A
	// group is one or the other: a consumer group has no classic members (members,
	// pending and order stay empty) and a classic group no consumer members.
	consumer *consumerGroup

	// writes queued by the last steps, for the owner to perform in order.
	writes []write
	// logger is the coordinator's, for the group's conversions between classic and
	// consumer; never nil (it discards until startGroup sets it).
	logger *slog.Logger
}

func newGroupMetadata(id string, lim limits, newMemberID func(string) string, now time.Time) *groupMetadata {
	return &groupMetadata{
		id: id, lim: lim, newMemberID: newMemberID, phase: Empty,
		members: map[string]*memberMetadata{}, static: map[string]string{},
		pending: map[string]time.Time{}, offsets: map[TopicPartition]offsetAndMetadata{},
		stateSince: now, logger: slog.New(slog.DiscardHandler),
	}
}

func (g *groupMetadata) transition(p Phase, now time.Time) {
	g.phase = p
	g.stateSince = now
}

func (g *groupMetadata) issue(records []kv, done func(error)) {
	g.writes = append(g.writes, write{records: records, done: done})
}

// add puts m into the group; the first member becomes leader and sets the protocol
// type.
func (g *groupMetadata) add(m *memberMetadata, protocolType string) {
	if len(g.members) == 0 {
		g.protocolType = protocolType
	}
	g.members[m.id] = m
	g.order = append(g.order, m.id)
	if m.isStatic() {
		g.static[*m.instanceID] = m.id
	}
	if g.leader == "" {
		g.leader = m.id
	}
}

// remove takes a member out of the group, answering its outstanding SyncGroup; the
// caller answers an outstanding JoinGroup.
func (g *groupMetadata) remove(id string) {
	m := g.members[id]
	if m == nil {
		return
	}
	delete(g.members, id)
	g.order = slices.DeleteFunc(g.order, func(s string) bool { return s == id })
	if m.isStatic() && g.static[*m.instanceID] == id {
		delete(g.static, *m.instanceID)
	}
	delete(g.pendingSync, id)
	if m.awaitingSync != nil {
		m.awaitingSync(SyncResult{Err: ErrUnknownMemberID})
		m.awaitingSync = nil
	}
	if g.leader == id {
		g.leader = ""
		if len(g.order) > 0 {
			g.leader = g.order[0]
		}
	}
}

// validateMember is Kafka's validateCurrentMember: a static instance id must map to
// the member id, and the member must exist.
func (g *groupMetadata) validateMember(memberID string, instanceID *string) error {
	if instanceID != nil {
		if holder, ok := g.static[*instanceID]; ok && holder != memberID {
			return ErrFencedInstanceID
		}
	}
	if g.members[memberID] == nil {
		return ErrUnknownMemberID
	}
	return nil
}

// rebalanceTimeout is the longest rebalance timeout among the members.
func (g *groupMetadata) rebalanceTimeout() time.Duration {
	var d time.Duration
	for _, m := range g.members {
		d = max(d, m.rebalanceTimeout)
	}
	return d
}

func (g *groupMetadata) memberProtocols(except string) [][]Protocol {
	out := make([][]Protocol, 0, len(g.order))
	for _, id := range g.order {
		if id != except {
			out = append(out, g.members[id].protocols)
		}
	}
	return out
}

// currentMembers is the leader's view of the group for its join response.
func (g *groupMetadata) currentMembers() []JoinMember {
	out := make([]JoinMember, 0, len(g.order))
	for _, id := range g.order {
		m := g.members[id]
		out = append(out, JoinMember{MemberID: id, InstanceID: m.instanceID, Metadata: m.metadataFor(g.protocol)})
	}
	return out
}

// joinResultFor is the successful join response for m in the current generation.
func (g *groupMetadata) joinResultFor(m *memberMetadata) JoinResult {
	r := JoinResult{
		MemberID: m.id, Generation: g.generation, ProtocolType: g.protocolType,
		Protocol: g.protocol, LeaderID: g.leader,
	}
	if m.id == g.leader {
		r.Members = g.currentMembers()
	}
	return r
}

func joinError(memberID string, err error) JoinResult {
	return JoinResult{Err: err, MemberID: memberID, Generation: -1}
}

// canBeRemoved reports whether the group holds nothing worth keeping: no members, no
// pending member ids, no offsets and no write under way.
func (g *groupMetadata) canBeRemoved() bool {
	if g.phase == Dead {
		return true
	}
	if g.consumer != nil {
		return len(g.consumer.members) == 0 && len(g.offsets) == 0 && len(g.txnOffsets) == 0
	}
	return g.phase == Empty && len(g.members) == 0 && len(g.pending) == 0 && len(g.offsets) == 0 && len(g.txnOffsets) == 0
}
