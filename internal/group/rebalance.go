package group

import (
	"slices"
	"time"
)

// completeJoin ends the join phase (Kafka onCompleteJoin): dynamic members that did not
// rejoin are dropped, a new generation starts, and every joined member gets its join
// response (the leader with the member list to assign).
func (g *groupMetadata) completeJoin(now time.Time) {
	for _, id := range slices.Clone(g.order) {
		if m := g.members[id]; m.awaitingJoin == nil && !m.isStatic() {
			g.remove(id)
		}
	}
	if len(g.members) > 0 && !g.electJoinedLeader() {
		// Only static members that did not rejoin are left: wait another rebalance
		// timeout for them (or for their sessions to expire).
		g.initialJoin = false
		g.joinDeadline = now.Add(g.rebalanceTimeout())
		return
	}
	g.generation++
	g.joinDeadline, g.initialJoin = time.Time{}, false
	if len(g.members) == 0 {
		g.protocol, g.leader = "", ""
		g.transition(Empty, now)
		g.issue(g.groupRecords(nil, now), nil)
		return
	}
	g.protocol, _ = selectProtocol(g.memberProtocols(""))
	g.transition(CompletingRebalance, now)
	g.pendingSync = make(map[string]bool, len(g.members))
	for _, id := range g.order {
		m := g.members[id]
		if m.awaitingJoin != nil {
			m.awaitingJoin(g.joinResultFor(m))
			m.awaitingJoin = nil
		}
		m.isNew = false
		m.lastHeartbeat = now
		g.pendingSync[id] = true
	}
	g.syncDeadline = now.Add(g.rebalanceTimeout())
}

// electJoinedLeader keeps the leader if it rejoined, or else makes the first member
// that did the leader. It reports false when no member rejoined.
func (g *groupMetadata) electJoinedLeader() bool {
	if m := g.members[g.leader]; m != nil && m.awaitingJoin != nil {
		return true
	}
	for _, id := range g.order {
		if g.members[id].awaitingJoin != nil {
			g.leader = id
			return true
		}
	}
	return false
}

// resetAssignments drops every assignment and answers waiting SyncGroups with err.
func (g *groupMetadata) resetAssignments(err error) {
	for _, m := range g.members {
		m.assignment = nil
		if m.awaitingSync != nil {
			m.awaitingSync(SyncResult{Err: err})
			m.awaitingSync = nil
		}
	}
}

// propagateAssignments answers every waiting SyncGroup with its member's assignment.
func (g *groupMetadata) propagateAssignments() {
	for _, m := range g.members {
		if m.awaitingSync != nil {
			m.awaitingSync(SyncResult{ProtocolType: g.protocolType, Protocol: g.protocol, Assignment: m.assignment})
			m.awaitingSync = nil
		}
	}
}

// assignments is the current assignment of every member.
func (g *groupMetadata) assignments() map[string][]byte {
	out := make(map[string][]byte, len(g.members))
	for id, m := range g.members {
		out[id] = m.assignment
	}
	return out
}

// sync handles a SyncGroup (Kafka handleSyncGroup). reply is called once, now or when
// the leader's assignment is stored.
func (g *groupMetadata) sync(now time.Time, req SyncRequest, reply func(SyncResult)) {
	if g.consumer != nil && g.phase != Dead {
		g.consumerClassicSync(now, req, reply)
		return
	}
	if err := g.validateSync(req); err != nil {
		reply(SyncResult{Err: err})
		return
	}
	m := g.members[req.MemberID]
	delete(g.pendingSync, m.id)
	m.lastHeartbeat = now
	switch g.phase {
	case PreparingRebalance:
		reply(SyncResult{Err: ErrRebalanceInProgress})
	case Stable:
		reply(SyncResult{ProtocolType: g.protocolType, Protocol: g.protocol, Assignment: m.assignment})
	case CompletingRebalance:
		if m.awaitingSync != nil {
			m.awaitingSync(SyncResult{Err: ErrRebalanceInProgress})
		}
		m.awaitingSync = reply
		if m.id == g.leader && !(g.storing && g.storingGen == g.generation) {
			g.storeAssignment(now, req.Assignments)
		}
	default:
		reply(SyncResult{Err: ErrUnknownMemberID})
	}
}

func (g *groupMetadata) validateSync(req SyncRequest) error {
	if g.phase == Dead {
		return ErrCoordinatorNotAvailable
	}
	if err := g.validateMember(req.MemberID, req.InstanceID); err != nil {
		return err
	}
	if req.Generation != g.generation {
		return ErrIllegalGeneration
	}
	if (req.ProtocolType != nil && *req.ProtocolType != g.protocolType) ||
		(req.Protocol != nil && *req.Protocol != g.protocol) {
		return ErrInconsistentGroupProtocol
	}
	return nil
}

// storeAssignment writes the leader's assignment (members it left out get an empty
// one) and, once durable, makes the group Stable and answers every SyncGroup.
func (g *groupMetadata) storeAssignment(now time.Time, proposed []Assignment) {
	assignment := make(map[string][]byte, len(g.members))
	for id := range g.members {
		assignment[id] = []byte{}
	}
	for _, a := range proposed {
		if _, ok := assignment[a.MemberID]; ok {
			assignment[a.MemberID] = a.Assignment
		}
	}
	gen := g.generation
	g.storing, g.storingGen = true, gen
	g.issue(g.groupRecords(assignment, now), func(err error) {
		g.storing = false
		if g.phase != CompletingRebalance || g.generation != gen {
			return // the group moved on; its new phase answers the members
		}
		if err != nil {
			g.resetAssignments(err)
			g.maybePrepareRebalance(now)
			return
		}
		for id, a := range assignment {
			if m := g.members[id]; m != nil {
				m.assignment = a
			}
		}
		g.transition(Stable, now)
		g.propagateAssignments()
	})
}

// heartbeat handles a Heartbeat (Kafka handleHeartbeat).
func (g *groupMetadata) heartbeat(now time.Time, req HeartbeatRequest) error {
	if g.phase == Dead {
		return ErrCoordinatorNotAvailable
	}
	if g.consumer != nil {
		return g.consumerClassicHeartbeat(now, req)
	}
	if err := g.validateMember(req.MemberID, req.InstanceID); err != nil {
		return err
	}
	if req.Generation != g.generation {
		return ErrIllegalGeneration
	}
	g.members[req.MemberID].lastHeartbeat = now
	switch g.phase {
	case PreparingRebalance:
		return ErrRebalanceInProgress
	case Empty:
		return ErrUnknownMemberID
	}
	return nil
}

// leave handles a LeaveGroup; it returns one error per member, in order.
func (g *groupMetadata) leave(now time.Time, members []LeaveMember) []error {
	if g.consumer != nil && g.phase != Dead {
		return g.consumerClassicLeave(now, members)
	}
	errs := make([]error, len(members))
	for i, lm := range members {
		errs[i] = g.leaveOne(now, lm)
	}
	return errs
}

func (g *groupMetadata) leaveOne(now time.Time, lm LeaveMember) error {
	if g.phase == Dead {
		return ErrCoordinatorNotAvailable
	}
	id := lm.MemberID
	if id == "" && lm.InstanceID != nil {
		holder, ok := g.static[*lm.InstanceID]
		if !ok {
			return ErrUnknownMemberID
		}
		id = holder
	} else if _, ok := g.pending[id]; ok {
		delete(g.pending, id)
		g.tryCompleteJoin(now)
		return nil
	} else if err := g.validateMember(id, lm.InstanceID); err != nil {
		return err
	}
	g.removeMemberAndUpdateGroup(now, g.members[id])
	return nil
}

// removeMemberAndUpdateGroup removes a member that left or expired and rebalances the
// others.
func (g *groupMetadata) removeMemberAndUpdateGroup(now time.Time, m *memberMetadata) {
	if m.awaitingJoin != nil {
		m.awaitingJoin(joinError(m.id, ErrUnknownMemberID))
		m.awaitingJoin = nil
	}
	g.remove(m.id)
	switch g.phase {
	case Stable, CompletingRebalance:
		g.maybePrepareRebalance(now)
	case PreparingRebalance:
		g.tryCompleteJoin(now)
	}
}

// tick applies every deadline that passed by now: expired pending ids and sessions,
// the end of the join phase, and members that never sent SyncGroup.
func (g *groupMetadata) tick(now time.Time) {
	for id, exp := range g.pending {
		if !now.Before(exp) {
			delete(g.pending, id)
		}
	}
	for _, id := range slices.Clone(g.order) {
		m := g.members[id]
		if m == nil {
			continue
		}
		if exp := m.expiry(g.lim.newMemberJoinTimeout); !exp.IsZero() && !now.Before(exp) {
			g.removeMemberAndUpdateGroup(now, m)
		}
	}
	if g.phase == PreparingRebalance && !g.joinDeadline.IsZero() && !now.Before(g.joinDeadline) {
		g.onJoinDeadline(now)
	}
	if !g.syncDeadline.IsZero() && !now.Before(g.syncDeadline) {
		g.onSyncDeadline(now)
	}
	g.tryCompleteJoin(now)
	if g.consumer != nil {
		g.consumerTick(now)
		g.maybeDowngrade(now)
	}
	g.expireOffsets(now)
}

// onSyncDeadline removes the members that never sent SyncGroup after the join phase,
// which rebalances the rest (Kafka's pending-sync expiration).
func (g *groupMetadata) onSyncDeadline(now time.Time) {
	late := g.pendingSync
	g.syncDeadline, g.pendingSync = time.Time{}, nil
	if g.phase != CompletingRebalance && g.phase != Stable {
		return
	}
	for _, id := range slices.Clone(g.order) {
		if m := g.members[id]; m != nil && late[id] {
			g.removeMemberAndUpdateGroup(now, m)
		}
	}
}

// nextDeadline is the earliest time tick has something to do; zero for none.
func (g *groupMetadata) nextDeadline() time.Time {
	var next time.Time
	consider := func(t time.Time) {
		if !t.IsZero() && (next.IsZero() || t.Before(next)) {
			next = t
		}
	}
	for _, exp := range g.pending {
		consider(exp)
	}
	for _, m := range g.members {
		consider(m.expiry(g.lim.newMemberJoinTimeout))
	}
	if g.phase == PreparingRebalance {
		consider(g.joinDeadline)
	}
	if len(g.pendingSync) > 0 {
		consider(g.syncDeadline)
	}
	consider(g.nextOffsetExpiry())
	if g.consumer != nil {
		consider(g.consumer.nextDeadline())
	}
	return next
}
