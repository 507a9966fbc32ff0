package group

// The ConsumerGroupHeartbeat of a consumer group (Kafka's
// GroupMetadataManager.consumerGroupHeartbeat), on the group's pure state:
//
//  1. find or create the member (epoch 0 joins; a static member replaces its instance
//     id's previous holder only once that one left with epoch -2), check its epoch;
//  2. apply its subscription; a change, a new member or a change in the metadata of
//     the subscribed topics bumps the group epoch;
//  3. when the group epoch is ahead of the assignment epoch, compute the target
//     assignment of every member with the group's assignor;
//  4. reconcile the member towards its target (consumer_reconcile.go);
//  5. write what changed (one batch) and answer once it is replicated.

import (
	"fmt"
	"hash/fnv"
	"regexp"
	"slices"
	"time"
)

// consumerHeartbeat handles one heartbeat; reply is called once.
func (g *groupMetadata) consumerHeartbeat(now time.Time, req ConsumerHeartbeatRequest, reply func(ConsumerHeartbeatResult)) {
	if g.phase == Dead {
		reply(heartbeatError(ErrCoordinatorNotAvailable, ""))
		return
	}
	if g.consumer == nil {
		switch {
		case g.canUpgrade(req):
			if err := g.upgradeToConsumer(now, req.Topics); err != nil {
				reply(heartbeatError(ErrGroupIDNotFound, err.Error()))
				return
			}
		case len(g.members) > 0 || len(g.pending) > 0 || g.phase != Empty:
			msg := fmt.Sprintf("Group %s is not a consumer group.", g.id)
			if req.MemberEpoch == 0 && len(g.members) > 0 {
				// A joining member could have converted it: say why it did not.
				if why := g.upgradeRefusal(); why != "" {
					msg += " " + why
				}
			}
			reply(heartbeatError(ErrGroupIDNotFound, msg))
			return
		case req.MemberEpoch != 0:
			reply(heartbeatError(ErrUnknownMemberID, ""))
			return
		default:
			g.toConsumerGroup()
		}
	}
	var records []kv
	var res ConsumerHeartbeatResult
	var err error
	switch req.MemberEpoch {
	case -1, leaveEpochStatic:
		res, records, err = g.consumerLeave(now, req)
	default:
		res, records, err = g.consumerJoinOrHeartbeat(now, req)
	}
	if err != nil {
		reply(ConsumerHeartbeatResult{Err: err, ErrMessage: res.ErrMessage})
		return
	}
	g.issue(records, func(err error) {
		if err != nil {
			reply(heartbeatError(err, ""))
			return
		}
		reply(res)
	})
	g.maybeDowngrade(now)
}

// toConsumerGroup makes an empty classic group a consumer group, tombstoning its
// classic metadata record (Kafka converts an empty classic group the same way).
func (g *groupMetadata) toConsumerGroup() {
	g.consumer = newConsumerGroup()
	g.protocolType, g.protocol, g.leader = "consumer", "", ""
	if g.persisted {
		g.issue([]kv{{key: groupMetadataKey(g.id)}}, nil)
		g.persisted = false
	}
}

// toClassicGroup makes an empty consumer group a classic group again, tombstoning its
// consumer records (its offsets stay).
func (g *groupMetadata) toClassicGroup() {
	if g.consumer.persisted {
		g.issue(consumerGroupTombstones(g.id, g.consumer), nil)
	}
	g.consumer = nil
	g.protocolType = ""
}

// consumerLeave handles epochs -1 (leave) and -2 (a static member's temporary leave).
func (g *groupMetadata) consumerLeave(now time.Time, req ConsumerHeartbeatRequest) (ConsumerHeartbeatResult, []kv, error) {
	cg := g.consumer
	res := ConsumerHeartbeatResult{MemberID: req.MemberID, MemberEpoch: req.MemberEpoch}
	m := cg.members[req.MemberID]
	if req.InstanceID != nil {
		holder, ok := cg.static[*req.InstanceID]
		switch {
		case !ok:
			return res, nil, ErrUnknownMemberID
		case holder != req.MemberID:
			res.ErrMessage = fmt.Sprintf("Static member %s with instance id %s is not the owner of the instance id (%s).", req.MemberID, *req.InstanceID, holder)
			return res, nil, ErrFencedInstanceID
		}
		m = cg.members[holder]
	}
	if m == nil {
		return res, nil, ErrUnknownMemberID
	}
	if req.MemberEpoch == leaveEpochStatic {
		// The member keeps its partitions until its session ends or its instance id
		// rejoins, so a restarting static member causes no rebalance (KIP-848).
		m.previousEpoch, m.epoch = m.epoch, leaveEpochStatic
		m.lastHeartbeat = now
		return res, []kv{currentAssignmentRecord(g.id, m)}, nil
	}
	return res, g.removeConsumerMember(now, m), nil
}

// removeConsumerMember drops a member that left or was fenced: its partitions are free
// at once, and the group epoch moves so that the others get them.
func (g *groupMetadata) removeConsumerMember(now time.Time, m *consumerMember) []kv {
	cg := g.consumer
	defer func() {
		if len(cg.members) == 0 {
			g.stateSince = now // emptied now: offsets expire from here (KIP-211)
		}
	}()
	cg.setOwnership(m.id, m.assigned, m.pending, nil, nil)
	cg.hashDirty = true
	delete(cg.members, m.id)
	delete(cg.target, m.id)
	if m.instanceID != nil && cg.static[*m.instanceID] == m.id {
		delete(cg.static, *m.instanceID)
	}
	records := memberTombstones(g.id, m.id)
	cg.groupEpoch++
	return append(records, groupEpochRecord(g.id, cg))
}

// consumerJoinOrHeartbeat handles a join (epoch 0) or a heartbeat of a member.
func (g *groupMetadata) consumerJoinOrHeartbeat(now time.Time, req ConsumerHeartbeatRequest) (ConsumerHeartbeatResult, []kv, error) {
	cg := g.consumer
	m, replaced, res, err := g.findConsumerMember(req)
	if err != nil {
		return res, nil, err
	}
	var re *regexp.Regexp
	if req.SubscribedTopicRegex != nil && *req.SubscribedTopicRegex != "" {
		if re, err = compileSubscription(*req.SubscribedTopicRegex); err != nil {
			return ConsumerHeartbeatResult{ErrMessage: fmt.Sprintf("SubscribedTopicRegex %s is invalid: %v", *req.SubscribedTopicRegex, err)}, nil, ErrInvalidRegularExpression
		}
	}
	if req.ServerAssignor != nil && !slices.Contains(g.lim.consumerAssignors, *req.ServerAssignor) {
		return ConsumerHeartbeatResult{ErrMessage: fmt.Sprintf("ServerAssignor %s is not supported. Supported assignors: %v.", *req.ServerAssignor, g.lim.consumerAssignors)}, nil, ErrUnsupportedAssignor
	}
	startEpoch := cg.groupEpoch
	var records []kv
	isNew := m == nil
	if isNew {
		m = &consumerMember{id: req.MemberID, assigned: partSet{}, pending: partSet{}, state: memberStable}
	} else if m.epoch == leaveEpochStatic {
		m.epoch = m.previousEpoch // the static member is back before its session ended
	}
	if replaced != nil {
		g.inheritStaticMember(m, replaced)
		records = append(records, memberTombstones(g.id, replaced.id)...)
	}
	changed := g.updateConsumerMember(m, req, re)
	cg.members[m.id] = m
	if m.instanceID != nil {
		cg.static[*m.instanceID] = m.id
	}
	if isNew || changed {
		records = append(records, memberMetadataRecord(g.id, m))
		cg.hashDirty = true
	}
	bump := isNew && replaced == nil || changed
	if v := req.Topics.Version(); cg.hashDirty || v != cg.hashVersion {
		cg.hashVersion, cg.hashDirty = v, false
		if h := cg.subscriptionMetadataHash(req.Topics); h != cg.subscriptionHash {
			cg.subscriptionHash, bump = h, true
		}
	}
	if bump {
		cg.groupEpoch++
	}
	if cg.groupEpoch > cg.assignmentEpoch {
		records = append(records, g.computeTargetAssignment(req.Topics)...)
	} else if replaced != nil {
		cg.target[m.id] = cg.target[replaced.id]
		delete(cg.target, replaced.id)
		records = append(records, targetMemberRecord(g.id, m.id, cg.target[m.id]))
	}
	if cg.groupEpoch != startEpoch {
		records = append([]kv{groupEpochRecord(g.id, cg)}, records...)
	}
	session, interval := g.lim.consumerSettings(req.GroupConfigs)
	m.sessionTimeout, m.lastHeartbeat = session, now

	owned := partSet(nil)
	if req.Owned != nil {
		owned = partSetOf(req.Owned, 0)
	}
	assignmentChanged, reconciled := g.reconcileMember(now, m, owned, req.Topics)
	if reconciled || isNew || replaced != nil {
		records = append(records, currentAssignmentRecord(g.id, m))
	}
	res = ConsumerHeartbeatResult{MemberID: m.id, MemberEpoch: m.epoch, HeartbeatInterval: interval}
	if req.MemberEpoch == 0 || assignmentChanged || owned != nil && !owned.sameKeys(m.assigned) {
		res.Assignment = m.assigned.sorted()
	}
	return res, records, nil
}

// compileSubscription compiles a subscribed regex (RE2 syntax) to match whole topic
// names, as Java's Pattern.matches in Kafka does.
func compileSubscription(expr string) (*regexp.Regexp, error) {
	if _, err := regexp.Compile(expr); err != nil {
		return nil, err
	}
	return regexp.Compile(`^(?:` + expr + `)$`)
}

// findConsumerMember resolves the heartbeat's member: nil for a new one, and the static
// member it replaces if any. Errors are Kafka's for the cases it refuses.
func (g *groupMetadata) findConsumerMember(req ConsumerHeartbeatRequest) (m, replaced *consumerMember, res ConsumerHeartbeatResult, err error) {
	cg := g.consumer
	m = cg.members[req.MemberID]
	if req.InstanceID != nil {
		holder, held := cg.static[*req.InstanceID]
		if held && holder != req.MemberID {
			old := cg.members[holder]
			switch {
			case req.MemberEpoch != 0:
				res.ErrMessage = fmt.Sprintf("Static member %s with instance id %s is not the owner of the instance id (%s).", req.MemberID, *req.InstanceID, holder)
				return nil, nil, res, ErrFencedInstanceID
			case old != nil && old.epoch != leaveEpochStatic:
				res.ErrMessage = fmt.Sprintf("Static member %s with instance id %s cannot join the group because the instance id is owned by %s member.", req.MemberID, *req.InstanceID, holder)
				return nil, nil, res, ErrUnreleasedInstanceID
			}
			replaced = old
		} else if !held && req.MemberEpoch != 0 {
			return nil, nil, res, ErrUnknownMemberID
		}
	}
	if m == nil {
		if req.MemberEpoch != 0 {
			res.ErrMessage = fmt.Sprintf("Member %s is not a member of group %s.", req.MemberID, g.id)
			return nil, nil, res, ErrUnknownMemberID
		}
		if replaced == nil && len(cg.members) >= g.lim.consumerMaxSize {
			res.ErrMessage = fmt.Sprintf("The consumer group has reached its maximum capacity of %d members.", g.lim.consumerMaxSize)
			return nil, nil, res, ErrGroupMaxSizeReached
		}
		return nil, replaced, res, nil
	}
	if req.MemberEpoch == 0 || m.epoch == leaveEpochStatic {
		return m, nil, res, nil // a rejoin in place: the member gets its state again
	}
	if err := checkMemberEpoch(m, req.MemberEpoch, req.Owned); err != nil {
		res.ErrMessage = fmt.Sprintf("The consumer group member has a member epoch (%d) other than the one known by the group coordinator (%d). The member must abandon all its partitions and rejoin.", req.MemberEpoch, m.epoch)
		return nil, nil, res, err
	}
	return m, nil, res, nil
}

// checkMemberEpoch is Kafka's throwIfConsumerGroupMemberEpochIsInvalid: the previous
// epoch is accepted from a member that holds a subset of its assignment (the response
// that moved it on was lost).
func checkMemberEpoch(m *consumerMember, epoch int32, owned []TopicPartitions) error {
	switch {
	case epoch > m.epoch:
		return ErrFencedMemberEpoch
	case epoch < m.epoch:
		if epoch != m.previousEpoch || owned == nil {
			return ErrFencedMemberEpoch
		}
		for _, tp := range owned {
			for _, p := range tp.Partitions {
				if !m.assigned.has(tp.TopicID, p) {
					return ErrFencedMemberEpoch
				}
			}
		}
	}
	return nil
}

// inheritStaticMember gives a static member's new incarnation its predecessor's
// assignment, epoch and target, so that a restart moves no partition.
func (g *groupMetadata) inheritStaticMember(m, old *consumerMember) {
	cg := g.consumer
	m.epoch, m.previousEpoch, m.state = old.previousEpoch, old.previousEpoch, old.state
	if old.epoch != leaveEpochStatic {
		m.epoch = old.epoch
	}
	m.assigned, m.pending = old.assigned, old.pending
	m.subscribedNames, m.regex, m.serverAssignor = old.subscribedNames, old.regex, old.serverAssignor
	cg.setOwnership(old.id, old.assigned, old.pending, nil, nil)
	cg.setOwnership(m.id, nil, nil, m.assigned, m.pending)
	delete(cg.members, old.id)
}

// updateConsumerMember applies the heartbeat's fields; it reports whether the
// subscription (names, regex or assignor) changed.
func (g *groupMetadata) updateConsumerMember(m *consumerMember, req ConsumerHeartbeatRequest, re *regexp.Regexp) bool {
	m.clientID, m.clientHost = req.ClientID, req.ClientHost
	if req.InstanceID != nil {
		m.instanceID = req.InstanceID
	}
	if req.RackID != nil {
		m.rackID = req.RackID
	}
	if req.RebalanceTimeout >= 0 {
		m.rebalanceTimeout = req.RebalanceTimeout
	}
	changed := false
	if req.SubscribedTopicNames != nil {
		names := slices.Clone(req.SubscribedTopicNames)
		slices.Sort(names)
		names = slices.Compact(names)
		if !slices.Equal(names, m.subscribedNames) {
			m.subscribedNames, changed = names, true
		}
	}
	if req.SubscribedTopicRegex != nil && *req.SubscribedTopicRegex != m.regex {
		m.regex, m.re, changed = *req.SubscribedTopicRegex, re, true
	}
	if req.ServerAssignor != nil && *req.ServerAssignor != m.serverAssignor {
		m.serverAssignor, changed = *req.ServerAssignor, true
	}
	return changed
}

// subscribedTopicIDs resolves a member's subscription against topics.
func (m *consumerMember) subscribedTopicIDs(topics TopicImage) map[topicID]bool {
	out := map[topicID]bool{}
	for _, n := range m.subscribedNames {
		if id, _, ok := topics.TopicByName(n); ok {
			out[id] = true
		}
	}
	if m.re != nil {
		for _, n := range topics.TopicNames() {
			if m.re.MatchString(n) {
				if id, _, ok := topics.TopicByName(n); ok {
					out[id] = true
				}
			}
		}
	}
	return out
}

// subscriptionMetadataHash hashes the id and partition count of every topic some
// member subscribes to: topics created, deleted or grown change it.
func (cg *consumerGroup) subscriptionMetadataHash(topics TopicImage) uint64 {
	ids := map[topicID]bool{}
	for _, m := range cg.members {
		for id := range m.subscribedTopicIDs(topics) {
			ids[id] = true
		}
	}
	sorted := make([]topicID, 0, len(ids))
	for id := range ids {
		sorted = append(sorted, id)
	}
	slices.SortFunc(sorted, func(a, b topicID) int { return slices.Compare(a[:], b[:]) })
	h := fnv.New64a()
	for _, id := range sorted {
		_, n, _ := topics.TopicByID(id)
		h.Write(id[:])
		h.Write([]byte{byte(n >> 24), byte(n >> 16), byte(n >> 8), byte(n)})
	}
	return h.Sum64()
}

// computeTargetAssignment assigns every subscribed partition for the group epoch and
// returns the records of the members whose target changed and the new target epoch.
func (g *groupMetadata) computeTargetAssignment(topics TopicImage) []kv {
	cg := g.consumer
	var members []assignMember
	var ats []assignTopic
	seen := map[topicID]bool{}
	for _, id := range cg.sortedMemberIDs() {
		subs := cg.members[id].subscribedTopicIDs(topics)
		members = append(members, assignMember{id: id, subscribed: subs})
		for t := range subs {
			if !seen[t] {
				seen[t] = true
				name, n, _ := topics.TopicByID(t)
				ats = append(ats, assignTopic{id: t, name: name, partitions: n})
			}
		}
	}
	cg.assignor = cg.preferredAssignor(g.lim.consumerAssignors)
	target := assign(cg.assignor, members, ats, cg.target)
	var records []kv
	for id, ps := range target {
		if old, ok := cg.target[id]; !ok || !old.sameKeys(ps) {
			records = append(records, targetMemberRecord(g.id, id, ps))
		}
	}
	slices.SortFunc(records, func(a, b kv) int { return slices.Compare(a.key, b.key) })
	cg.target = target
	cg.assignmentEpoch = cg.groupEpoch
	return append(records, targetEpochRecord(g.id, cg))
}

// reconcileMember moves m towards its target. It reports whether m's assigned
// partitions changed, and whether anything of its state did.
func (g *groupMetadata) reconcileMember(now time.Time, m *consumerMember, owned partSet, topics TopicImage) (assignmentChanged, changed bool) {
	cg := g.consumer
	subs := m.subscribedTopicIDs(topics)
	r := reconcile(reconcileInput{
		state: m.state, epoch: m.epoch, assigned: m.assigned, pending: m.pending,
		targetEpoch: cg.assignmentEpoch, target: cg.target[m.id],
		subscribed:   func(t topicID) bool { return subs[t] },
		ownedByOther: cg.ownedByOther(m.id), owned: owned,
	})
	if r.state == m.state && r.epoch == m.epoch && r.assigned.sameKeys(m.assigned) && r.pending.sameKeys(m.pending) {
		return false, false
	}
	prev := *m
	cg.setOwnership(m.id, m.assigned, m.pending, r.assigned, r.pending)
	assignmentChanged = !r.assigned.sameKeys(m.assigned)
	if r.epoch != m.epoch {
		m.previousEpoch = m.epoch
	}
	m.state, m.epoch, m.assigned, m.pending = r.state, r.epoch, r.assigned, r.pending
	switch {
	case m.state != memberUnrevoked:
		m.revokeDeadline = time.Time{}
	case prev.state != memberUnrevoked || !prev.pending.sameKeys(m.pending):
		m.revokeDeadline = now.Add(m.rebalanceTimeout)
	}
	return assignmentChanged, true
}

// consumerTick fences members whose session ended or who did not revoke in time.
func (g *groupMetadata) consumerTick(now time.Time) {
	cg := g.consumer
	var records []kv
	for _, id := range cg.sortedMemberIDs() {
		m := cg.members[id]
		expired := !now.Before(m.sessionExpiry())
		late := !m.revokeDeadline.IsZero() && !now.Before(m.revokeDeadline)
		if expired || late {
			records = append(records, g.removeConsumerMember(now, m)...)
		}
	}
	if len(records) > 0 {
		g.issue(records, nil)
	}
}

// consumerNextDeadline is the earliest session or revocation deadline.
func (cg *consumerGroup) nextDeadline() time.Time {
	var next time.Time
	for _, m := range cg.members {
		for _, t := range []time.Time{m.sessionExpiry(), m.revokeDeadline} {
			if !t.IsZero() && (next.IsZero() || t.Before(next)) {
				next = t
			}
		}
	}
	return next
}
