package group

// Online migration between classic and consumer groups (KIP-848's "Online migration";
// Kafka's GroupMetadataManager.convertToConsumerGroup, convertToClassicGroup and its
// classicGroup*ToConsumerGroup handlers), under group.consumer.migration.policy:
//
//   - upgrade: the first ConsumerGroupHeartbeat (epoch 0) to a classic group with
//     members (protocol type "consumer") converts it to a consumer group. Each classic
//     member becomes a classic member of the consumer group at member epoch = the
//     classic generation, holding what its last SyncGroup gave it (its target too),
//     so nothing moves until the new member's join bumps the group epoch.
//   - classic members of a consumer group keep speaking JoinGroup, SyncGroup,
//     Heartbeat and LeaveGroup (every policy but disabled). A JoinGroup is the member's
//     heartbeat with epoch 0: its subscription and owned partitions come from its
//     ConsumerProtocol metadata, the server-side assignor computes its target and it
//     is reconciled at once; the response's generation is its member epoch, and
//     SyncGroup returns its assigned partitions (never one another member still holds,
//     and without those it must revoke). Heartbeat answers REBALANCE_IN_PROGRESS while
//     the group epoch is ahead of the member's, while it owes revocations, or once a
//     partition it waits for is free: the member rejoins, reporting what it still owns.
//     A member told to rejoin that does not within its rebalance timeout is fenced.
//   - downgrade: when the last ConsumerGroupHeartbeat member leaves or is fenced and
//     only classic members remain, the group becomes a classic group again, at the
//     generation of its most advanced member, each member with its current assignment,
//     and starts a join phase: the members' next heartbeats answer
//     REBALANCE_IN_PROGRESS and they rejoin as an ordinary classic group. The consumer
//     records are tombstoned at once; the classic record is written when that join
//     phase's assignment is (a reload in between finds no members: they rejoin).
//   - disabled: neither conversion, and a consumer group with members refuses classic
//     members (INCONSISTENT_GROUP_PROTOCOL), as a classic group with members refuses
//     ConsumerGroupHeartbeat (GROUP_ID_NOT_FOUND).
//
// Offset commits of a classic member of a consumer group are fenced by generation =
// member epoch (ILLEGAL_GENERATION), at any OffsetCommit version.

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// migrationPolicy is group.consumer.migration.policy as flags; the zero value is
// disabled.
type migrationPolicy uint8

const (
	migrateUpgrade migrationPolicy = 1 << iota
	migrateDowngrade
)

// Migration policies, Kafka's names (group.consumer.migration.policy).
const (
	MigrationBidirectional = "bidirectional"
	MigrationUpgrade       = "upgrade"
	MigrationDowngrade     = "downgrade"
	MigrationDisabled      = "disabled"
)

// parseMigrationPolicy reads group.consumer.migration.policy in any case, as Kafka
// validates it (CaseInsensitiveValidString); "" is Kafka's default, bidirectional.
func parseMigrationPolicy(s string) (migrationPolicy, error) {
	switch strings.ToLower(s) {
	case "", MigrationBidirectional:
		return migrateUpgrade | migrateDowngrade, nil
	case MigrationUpgrade:
		return migrateUpgrade, nil
	case MigrationDowngrade:
		return migrateDowngrade, nil
	case MigrationDisabled:
		return 0, nil
	}
	return 0, fmt.Errorf("group.consumer.migration.policy %q is not one of %s, %s, %s, %s", s,
		MigrationBidirectional, MigrationUpgrade, MigrationDowngrade, MigrationDisabled)
}

// String is the policy's group.consumer.migration.policy name.
func (p migrationPolicy) String() string {
	switch p {
	case migrateUpgrade | migrateDowngrade:
		return MigrationBidirectional
	case migrateUpgrade:
		return MigrationUpgrade
	case migrateDowngrade:
		return MigrationDowngrade
	}
	return MigrationDisabled
}

// classicMember is what a consumer group keeps of a member that speaks the classic
// protocol (Kafka's ClassicMemberMetadata); nil for a ConsumerGroupHeartbeat member.
type classicMember struct {
	protocols      []Protocol
	sessionTimeout time.Duration
	// topics is the topic image of the member's last join, to name its partitions in
	// SyncGroup and in a downgrade; nil after a reload (the member then rejoins).
	topics TopicImage
}

// consumerProtocolType is the classic protocol type of consumers: only such classic
// groups convert, and only such members join a consumer group.
const consumerProtocolType = "consumer"

// classicJoinsConsumer reports whether a JoinGroup goes to the consumer group's
// classic-member handling instead of the classic group's.
func (g *groupMetadata) classicJoinsConsumer() bool {
	return g.consumer != nil && g.phase != Dead && len(g.consumer.members) > 0 && g.lim.migration != 0
}

// decodeClassicSubscription reads the ConsumerProtocol subscription of a classic
// member (every protocol carries the same one; Kafka reads the first).
func decodeClassicSubscription(protocols []Protocol) (kmsg.ConsumerMemberMetadata, error) {
	var meta kmsg.ConsumerMemberMetadata
	if len(protocols) == 0 {
		return meta, fmt.Errorf("no protocol")
	}
	err := meta.ReadFrom(protocols[0].Metadata)
	return meta, err
}

// consumerClassicJoin is a classic member's JoinGroup to a consumer group (Kafka's
// classicGroupJoinToConsumerGroup): the member heartbeats with epoch 0, and the
// response carries its member epoch as the generation once the records are durable.
func (g *groupMetadata) consumerClassicJoin(now time.Time, req JoinRequest, reply func(JoinResult)) {
	cg := g.consumer
	switch {
	case req.SessionTimeout < g.lim.minSessionTimeout || req.SessionTimeout > g.lim.maxSessionTimeout:
		reply(joinError(req.MemberID, ErrInvalidSessionTimeout))
		return
	case req.ProtocolType != consumerProtocolType || len(req.Protocols) == 0:
		reply(joinError(req.MemberID, ErrInconsistentGroupProtocol))
		return
	case req.Topics == nil:
		reply(joinError(req.MemberID, ErrCoordinatorNotAvailable))
		return
	}
	sub, err := decodeClassicSubscription(req.Protocols)
	if err != nil {
		reply(joinError(req.MemberID, ErrInconsistentGroupProtocol))
		return
	}
	id := req.MemberID
	if id == "" {
		if req.InstanceID != nil {
			// A restarted static classic member replaces its previous incarnation,
			// keeping its assignment (the consumer group's static replacement).
			if h := cg.members[cg.static[*req.InstanceID]]; h != nil && h.classic != nil && h.epoch != leaveEpochStatic {
				h.previousEpoch, h.epoch = h.epoch, leaveEpochStatic
			}
		}
		id = g.newMemberID(req.ClientID)
	} else if _, err := g.classicMemberOf(id, req.InstanceID); err != nil {
		reply(joinError(id, err))
		return
	}
	names := slices.Clone(sub.Topics)
	if names == nil {
		names = []string{}
	}
	owned := []TopicPartitions{}
	for _, op := range sub.OwnedPartitions {
		if tid, _, ok := req.Topics.TopicByName(op.Topic); ok {
			owned = append(owned, TopicPartitions{TopicID: tid, Partitions: op.Partitions})
		}
	}
	hreq := ConsumerHeartbeatRequest{
		GroupID: g.id, MemberID: id, MemberEpoch: 0, InstanceID: req.InstanceID,
		RebalanceTimeout: req.RebalanceTimeout, SubscribedTopicNames: names, Owned: owned,
		ClientID: req.ClientID, ClientHost: req.ClientHost, Topics: req.Topics,
	}
	if sub.Rack != nil && *sub.Rack != "" {
		hreq.RackID = sub.Rack
	}
	_, records, err := g.consumerJoinOrHeartbeat(now, hreq)
	if err != nil {
		reply(joinError(req.MemberID, err))
		return
	}
	m := cg.members[id]
	m.classic = &classicMember{protocols: req.Protocols, sessionTimeout: req.SessionTimeout, topics: req.Topics}
	m.sessionTimeout, m.lastHeartbeat = req.SessionTimeout, now
	if m.state != memberUnrevoked {
		m.revokeDeadline = time.Time{}
	}
	records = append(records, memberMetadataRecord(g.id, m))
	res := JoinResult{MemberID: id, Generation: m.epoch, ProtocolType: consumerProtocolType, Protocol: req.Protocols[0].Name}
	g.issue(records, func(err error) {
		if err != nil {
			reply(joinError(id, err))
			return
		}
		reply(res)
	})
}

// classicMemberOf finds a classic member of the consumer group; a member that speaks
// ConsumerGroupHeartbeat is unknown to the classic protocol.
func (g *groupMetadata) classicMemberOf(memberID string, instanceID *string) (*consumerMember, error) {
	cg := g.consumer
	if instanceID != nil {
		if holder, ok := cg.static[*instanceID]; ok && holder != memberID {
			return nil, ErrFencedInstanceID
		}
	}
	m := cg.members[memberID]
	if m == nil || m.classic == nil {
		return nil, ErrUnknownMemberID
	}
	return m, nil
}

// consumerClassicSync is a classic member's SyncGroup to a consumer group: its
// assigned partitions, as a ConsumerProtocol assignment.
func (g *groupMetadata) consumerClassicSync(now time.Time, req SyncRequest, reply func(SyncResult)) {
	m, err := g.classicMemberOf(req.MemberID, req.InstanceID)
	switch {
	case err != nil:
	case req.Generation != m.epoch:
		err = ErrIllegalGeneration
	case req.ProtocolType != nil && *req.ProtocolType != consumerProtocolType,
		req.Protocol != nil && !slices.ContainsFunc(m.classic.protocols, func(p Protocol) bool { return p.Name == *req.Protocol }):
		err = ErrInconsistentGroupProtocol
	case m.classic.topics == nil:
		err = ErrRebalanceInProgress // reloaded: the member rejoins so that its topics are known
	}
	if err != nil {
		reply(SyncResult{Err: err})
		return
	}
	m.lastHeartbeat = now
	protocol := m.classic.protocols[0].Name
	if req.Protocol != nil {
		protocol = *req.Protocol
	}
	reply(SyncResult{ProtocolType: consumerProtocolType, Protocol: protocol, Assignment: classicAssignment(m.assigned, m.classic.topics)})
}

// classicAssignment encodes partitions as a ConsumerProtocol assignment, topics by
// name (a topic no longer in topics is left out).
func classicAssignment(s partSet, topics TopicImage) []byte {
	a := kmsg.NewConsumerMemberAssignment()
	for _, tp := range s.sorted() {
		name, _, ok := topics.TopicByID(tp.TopicID)
		if !ok {
			continue
		}
		at := kmsg.NewConsumerMemberAssignmentTopic()
		at.Topic, at.Partitions = name, tp.Partitions
		a.Topics = append(a.Topics, at)
	}
	return a.AppendTo(nil)
}

// consumerClassicHeartbeat is a classic member's Heartbeat to a consumer group.
func (g *groupMetadata) consumerClassicHeartbeat(now time.Time, req HeartbeatRequest) error {
	m, err := g.classicMemberOf(req.MemberID, req.InstanceID)
	if err != nil {
		return err
	}
	if req.Generation != m.epoch {
		return ErrIllegalGeneration
	}
	m.lastHeartbeat = now
	if g.classicMustRejoin(m) {
		if m.revokeDeadline.IsZero() {
			m.revokeDeadline = now.Add(m.rebalanceTimeout) // Kafka's join timeout
		}
		return ErrRebalanceInProgress
	}
	return nil
}

// classicMustRejoin: the group moved past the member's epoch, the member owes
// revocations, or a partition it waits for was released.
func (g *groupMetadata) classicMustRejoin(m *consumerMember) bool {
	cg := g.consumer
	switch {
	case m.epoch < cg.groupEpoch, m.state == memberUnrevoked:
		return true
	case m.state != memberUnreleased:
		return false
	}
	other := cg.ownedByOther(m.id)
	for t, ps := range cg.target[m.id] {
		for p := range ps {
			if !m.assigned.has(t, p) && !other(t, p) {
				return true
			}
		}
	}
	return false
}

// consumerClassicLeave is a LeaveGroup to a consumer group: classic members leave as
// a ConsumerGroupHeartbeat with epoch -1 would.
func (g *groupMetadata) consumerClassicLeave(now time.Time, members []LeaveMember) []error {
	cg := g.consumer
	errs := make([]error, len(members))
	var records []kv
	for i, lm := range members {
		id := lm.MemberID
		if id == "" && lm.InstanceID != nil {
			id = cg.static[*lm.InstanceID]
		}
		m, err := g.classicMemberOf(id, lm.InstanceID)
		if err != nil {
			errs[i] = err
			continue
		}
		records = append(records, g.removeConsumerMember(now, m)...)
	}
	if len(records) > 0 {
		g.issue(records, nil)
	}
	return errs
}

// canUpgrade reports whether a ConsumerGroupHeartbeat may convert this classic group
// with members (Kafka's validateOnlineUpgrade).
func (g *groupMetadata) canUpgrade(req ConsumerHeartbeatRequest) bool {
	return req.MemberEpoch == 0 && req.Topics != nil && len(g.members) > 0 && g.upgradeRefusal() == ""
}

// upgradeRefusal is why this classic group with members cannot be upgraded online, in
// the words Kafka's validateOnlineUpgrade logs; "" when it can. Runnel also answers it
// to the refused member, so that an operator sees which setting or group state to look
// at.
func (g *groupMetadata) upgradeRefusal() string {
	switch {
	case g.lim.migration&migrateUpgrade == 0:
		return fmt.Sprintf("Cannot upgrade classic group %s to consumer group because the online upgrade is disabled (group.consumer.migration.policy=%s).", g.id, g.lim.migration)
	case g.protocolType != consumerProtocolType:
		return fmt.Sprintf("Cannot upgrade classic group %s to consumer group because the group does not use the consumer embedded protocol (its protocol type is %q).", g.id, g.protocolType)
	case len(g.members) > g.lim.consumerMaxSize:
		return fmt.Sprintf("Cannot upgrade classic group %s to consumer group because the group size %d exceeds the consumer group maximum size %d (group.consumer.max.size).", g.id, len(g.members), g.lim.consumerMaxSize)
	}
	return ""
}

// upgradeToConsumer converts the classic group with members to a consumer group
// (Kafka's ConsumerGroup.fromClassicGroup). Members waiting in JoinGroup or SyncGroup
// are answered REBALANCE_IN_PROGRESS and rejoin as classic members of the consumer
// group. A member whose metadata or assignment does not decode leaves the group
// unchanged (GROUP_ID_NOT_FOUND).
func (g *groupMetadata) upgradeToConsumer(now time.Time, topics TopicImage) error {
	cg := newConsumerGroup()
	gen := max(g.generation, 0)
	cg.groupEpoch, cg.assignmentEpoch = gen, gen
	for _, id := range g.order {
		cm := g.members[id]
		meta := cm.metadataFor(g.protocol)
		if meta == nil && len(cm.protocols) > 0 {
			meta = cm.protocols[0].Metadata
		}
		var sub kmsg.ConsumerMemberMetadata
		if err := sub.ReadFrom(meta); err != nil {
			return fmt.Errorf("%w: Cannot upgrade classic group %s to consumer group because the embedded consumer protocol of member %s is malformed.", ErrGroupIDNotFound, g.id, id)
		}
		assigned := partSet{}
		if len(cm.assignment) > 0 {
			var a kmsg.ConsumerMemberAssignment
			if err := a.ReadFrom(cm.assignment); err != nil {
				return fmt.Errorf("%w: Cannot upgrade classic group %s to consumer group because the assignment of member %s is malformed.", ErrGroupIDNotFound, g.id, id)
			}
			for _, at := range a.Topics {
				if tid, _, ok := topics.TopicByName(at.Topic); ok {
					for _, p := range at.Partitions {
						assigned.add(tid, p, gen)
					}
				}
			}
		}
		names := slices.Clone(sub.Topics)
		slices.Sort(names)
		m := &consumerMember{
			id: id, instanceID: cm.instanceID, clientID: cm.clientID, clientHost: cm.clientHost,
			subscribedNames: slices.Compact(names), rebalanceTimeout: cm.rebalanceTimeout,
			epoch: gen, previousEpoch: gen, state: memberStable, assigned: assigned, pending: partSet{},
			sessionTimeout: cm.sessionTimeout, lastHeartbeat: now,
			classic: &classicMember{protocols: cm.protocols, sessionTimeout: cm.sessionTimeout, topics: topics},
		}
		if sub.Rack != nil && *sub.Rack != "" {
			m.rackID = sub.Rack
		}
		cg.members[id] = m
		if m.instanceID != nil {
			cg.static[*m.instanceID] = id
		}
		cg.setOwnership(id, nil, nil, assigned, nil)
		cg.target[id] = assigned.clone()
	}
	for _, m := range g.members {
		if m.awaitingJoin != nil {
			m.awaitingJoin(joinError(m.id, ErrRebalanceInProgress))
			m.awaitingJoin = nil
		}
	}
	g.resetAssignments(ErrRebalanceInProgress)
	var records []kv
	if g.persisted {
		records = append(records, kv{key: groupMetadataKey(g.id)})
		g.persisted = false
	}
	g.members, g.order, g.static, g.pending = map[string]*memberMetadata{}, nil, map[string]string{}, map[string]time.Time{}
	g.protocol, g.leader, g.protocolType = "", "", consumerProtocolType
	g.joinDeadline, g.syncDeadline, g.pendingSync, g.storing = time.Time{}, time.Time{}, nil, false
	g.initialJoin, g.newMemberAdded = false, false
	g.transition(Empty, now)
	g.consumer = cg
	cg.hashDirty = true
	records = append(records, groupEpochRecord(g.id, cg))
	for _, id := range cg.sortedMemberIDs() {
		m := cg.members[id]
		records = append(records, memberMetadataRecord(g.id, m), targetMemberRecord(g.id, id, cg.target[id]), currentAssignmentRecord(g.id, m))
	}
	records = append(records, targetEpochRecord(g.id, cg))
	g.issue(records, nil)
	g.logger.Info(fmt.Sprintf("Converted the classic group %s to a consumer group.", g.id),
		"group", g.id, "generation", gen, "group_epoch", cg.groupEpoch, "members", len(cg.members))
	return nil
}

// maybeDowngrade converts a consumer group whose members all speak the classic
// protocol back to a classic group (Kafka's validateOnlineDowngrade and
// ClassicGroup.fromConsumerGroup), and starts a join phase.
func (g *groupMetadata) maybeDowngrade(now time.Time) {
	cg := g.consumer
	if cg == nil || g.phase == Dead || g.lim.migration&migrateDowngrade == 0 || len(cg.members) == 0 || len(cg.members) > g.lim.maxSize {
		return
	}
	gen := int32(0)
	for _, m := range cg.members {
		if m.classic == nil {
			return
		}
		gen = max(gen, m.epoch)
	}
	var records []kv
	if cg.persisted {
		records = consumerGroupTombstones(g.id, cg)
		cg.persisted = false
	}
	g.consumer = nil
	g.protocolType = consumerProtocolType
	// The classic generation is the most advanced member's epoch: members in it
	// heartbeat on and are told to rejoin; the others get ILLEGAL_GENERATION and rejoin.
	g.generation = max(g.generation, gen)
	for _, id := range slices.Sorted(maps.Keys(cg.members)) {
		m := cg.members[id]
		var assignment []byte
		if m.classic.topics != nil {
			assignment = classicAssignment(m.assigned, m.classic.topics)
		}
		g.add(&memberMetadata{
			id: id, instanceID: m.instanceID, clientID: m.clientID, clientHost: m.clientHost,
			protocols: m.classic.protocols, sessionTimeout: m.classic.sessionTimeout,
			rebalanceTimeout: m.rebalanceTimeout, assignment: assignment, lastHeartbeat: now,
		}, consumerProtocolType)
	}
	g.protocol, _ = selectProtocol(g.memberProtocols(""))
	g.transition(Stable, now)
	g.logger.Info(fmt.Sprintf("Converted the consumer group %s to a classic group.", g.id),
		"group", g.id, "group_epoch", cg.groupEpoch, "generation", g.generation, "members", len(g.members))
	// The classic group's record is written when the join phase started here ends: a
	// reload before that finds no members, which then rejoin, rather than a Stable
	// group in which nobody holds what the departed consumer members held.
	if len(records) > 0 {
		g.issue(records, nil)
	}
	g.prepareRebalance(now)
}

// classicMember writes ConsumerGroupMemberMetadataValue's nullable ClassicMemberMetadata
// {SessionTimeoutMs int32, SupportedProtocols [{Name, Metadata bytes}]}.
func (w *recWriter) classicMember(c *classicMember) {
	if c == nil {
		w.i8(-1)
		return
	}
	w.i8(1)
	w.i32(int32(c.sessionTimeout / time.Millisecond))
	w.uv(len(c.protocols) + 1)
	for _, p := range c.protocols {
		w.str(p.Name)
		w.uv(len(p.Metadata) + 1)
		w.b = append(w.b, p.Metadata...)
		w.tags()
	}
	w.tags()
}

// classicMember reads what recWriter.classicMember wrote; nil for null.
func (r *recReader) classicMember() *classicMember {
	if r.i8() < 0 || r.err != nil {
		return nil
	}
	c := &classicMember{sessionTimeout: time.Duration(r.i32()) * time.Millisecond}
	for n := r.uv() - 1; n > 0 && r.err == nil; n-- {
		p := Protocol{Name: r.str()}
		p.Metadata = slices.Clone(r.take(max(r.uv()-1, 0)))
		r.skipTags()
		c.protocols = append(c.protocols, p)
	}
	r.skipTags()
	return c
}
