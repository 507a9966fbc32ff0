package group

import (
	"fmt"
	"time"
)

// join handles a JoinGroup (Kafka GroupCoordinator.handleJoinGroup). reply is called
// once, now or when the join phase ends.
func (g *groupMetadata) join(now time.Time, req JoinRequest, reply func(JoinResult)) {
	if g.classicJoinsConsumer() {
		g.consumerClassicJoin(now, req, reply)
		return
	}
	if err := g.validateJoin(req); err != nil {
		reply(joinError(req.MemberID, err))
		return
	}
	if req.MemberID == "" {
		g.joinNewMember(now, req, reply)
	} else {
		g.joinKnownMember(now, req, reply)
	}
	g.tryCompleteJoin(now)
}

func (g *groupMetadata) validateJoin(req JoinRequest) error {
	if cg := g.consumer; cg != nil && g.phase != Dead {
		switch {
		case len(cg.members) > 0:
			// Only with the policy disabled: otherwise classicJoinsConsumer took the
			// join to the consumer group's classic-member handling (migration.go).
			return fmt.Errorf("%w: group %s is a consumer group with members, and group.consumer.migration.policy=%s lets no classic member join it",
				ErrInconsistentGroupProtocol, g.id, g.lim.migration)
		case req.MemberID != "":
			// An empty consumer group has no classic member this id could name.
			return fmt.Errorf("%w: group %s is an empty consumer group; member %s is not one of its members",
				ErrInconsistentGroupProtocol, g.id, req.MemberID)
		}
		g.toClassicGroup()
	}
	switch {
	case g.phase == Dead:
		return ErrCoordinatorNotAvailable
	case req.SessionTimeout < g.lim.minSessionTimeout || req.SessionTimeout > g.lim.maxSessionTimeout:
		return ErrInvalidSessionTimeout
	case req.ProtocolType == "" || len(req.Protocols) == 0:
		return ErrInconsistentGroupProtocol
	}
	if len(g.members) == 0 {
		return nil
	}
	self := req.MemberID
	if self == "" && req.InstanceID != nil {
		self = g.static[*req.InstanceID] // a restarted static member replaces its old self
	}
	others := g.memberProtocols(self)
	if req.ProtocolType != g.protocolType || !sharesProtocol(others, req.Protocols) {
		return ErrInconsistentGroupProtocol
	}
	return nil
}

func (g *groupMetadata) joinNewMember(now time.Time, req JoinRequest, reply func(JoinResult)) {
	if req.InstanceID != nil {
		if old, ok := g.static[*req.InstanceID]; ok {
			g.replaceStaticMember(now, old, req, reply)
			return
		}
	}
	if len(g.members) >= g.lim.maxSize {
		reply(joinError("", ErrGroupMaxSizeReached))
		return
	}
	id := g.newMemberID(req.ClientID)
	if req.InstanceID == nil && req.RequireKnownMemberID {
		// KIP-394: the id is only handed out; the member joins with it, so that a client
		// that keeps timing out does not leave a trail of members behind.
		g.pending[id] = now.Add(req.SessionTimeout)
		reply(joinError(id, ErrMemberIDRequired))
		return
	}
	g.addMemberAndRebalance(now, id, req, reply)
}

func (g *groupMetadata) joinKnownMember(now time.Time, req JoinRequest, reply func(JoinResult)) {
	if _, ok := g.pending[req.MemberID]; ok && req.InstanceID == nil {
		delete(g.pending, req.MemberID)
		g.addMemberAndRebalance(now, req.MemberID, req, reply)
		return
	}
	if err := g.validateMember(req.MemberID, req.InstanceID); err != nil {
		reply(joinError(req.MemberID, err))
		return
	}
	m := g.members[req.MemberID]
	switch g.phase {
	case PreparingRebalance:
		g.updateMemberAndRebalance(now, m, req, reply)
	case CompletingRebalance:
		if sameProtocols(m.protocols, req.Protocols) {
			// The member lost its join response; give it again.
			m.lastHeartbeat = now
			reply(g.joinResultFor(m))
			return
		}
		g.updateMemberAndRebalance(now, m, req, reply)
	case Stable:
		// A joining leader forces a rebalance: it is how a consumer leader reacts to
		// changes that do not show in its metadata (new partitions, new topics).
		if m.id == g.leader || !sameProtocols(m.protocols, req.Protocols) {
			g.updateMemberAndRebalance(now, m, req, reply)
			return
		}
		m.lastHeartbeat = now
		reply(g.joinResultFor(m))
	default:
		reply(joinError(req.MemberID, ErrUnknownMemberID))
	}
}

func newMember(id string, req JoinRequest, now time.Time, reply func(JoinResult)) *memberMetadata {
	return &memberMetadata{
		id: id, instanceID: req.InstanceID, clientID: req.ClientID, clientHost: req.ClientHost,
		protocols: req.Protocols, sessionTimeout: req.SessionTimeout, rebalanceTimeout: req.RebalanceTimeout,
		awaitingJoin: reply, isNew: true, lastHeartbeat: now,
	}
}

func (g *groupMetadata) addMemberAndRebalance(now time.Time, id string, req JoinRequest, reply func(JoinResult)) {
	m := newMember(id, req, now, reply)
	if g.phase == PreparingRebalance && g.generation == 0 {
		g.newMemberAdded = true
	}
	g.add(m, req.ProtocolType)
	g.maybePrepareRebalance(now)
}

func (g *groupMetadata) updateMemberAndRebalance(now time.Time, m *memberMetadata, req JoinRequest, reply func(JoinResult)) {
	if m.awaitingJoin != nil {
		// A retried JoinGroup replaces the one still waiting; release the old request.
		m.awaitingJoin(joinError(m.id, ErrRebalanceInProgress))
	}
	m.protocols, m.sessionTimeout, m.rebalanceTimeout = req.Protocols, req.SessionTimeout, req.RebalanceTimeout
	m.clientID, m.clientHost = req.ClientID, req.ClientHost
	m.awaitingJoin = reply
	m.lastHeartbeat = now
	g.maybePrepareRebalance(now)
}

// replaceStaticMember gives a restarted static member (same group.instance.id, empty
// member id) a new member id in place of the old one (KIP-345). In a stable group whose
// protocol stays the same, that happens without a rebalance: the member gets the
// current generation and, through SyncGroup, its previous assignment.
func (g *groupMetadata) replaceStaticMember(now time.Time, oldID string, req JoinRequest, reply func(JoinResult)) {
	old := g.members[oldID]
	oldLeader := g.leader
	prev := *old
	m := g.renameMember(old, g.newMemberID(req.ClientID))
	m.protocols, m.sessionTimeout, m.rebalanceTimeout = req.Protocols, req.SessionTimeout, req.RebalanceTimeout
	m.clientID, m.clientHost, m.lastHeartbeat = req.ClientID, req.ClientHost, now
	switch g.phase {
	case Stable:
		if p, _ := selectProtocol(g.memberProtocols("")); p == g.protocol {
			g.persistReplacedMember(now, m, prev, oldLeader, req, reply)
			return
		}
		m.awaitingJoin = reply
		g.maybePrepareRebalance(now)
	case CompletingRebalance:
		m.awaitingJoin = reply
		g.maybePrepareRebalance(now)
	default: // PreparingRebalance: join with the others
		m.awaitingJoin = reply
	}
}

// renameMember moves a member to a new id, keeping its place, leadership and
// assignment; the old id's outstanding requests are answered FENCED_INSTANCE_ID.
func (g *groupMetadata) renameMember(old *memberMetadata, newID string) *memberMetadata {
	if old.awaitingJoin != nil {
		old.awaitingJoin(joinError(old.id, ErrFencedInstanceID))
	}
	if old.awaitingSync != nil {
		old.awaitingSync(SyncResult{Err: ErrFencedInstanceID})
	}
	m := &memberMetadata{}
	*m = *old
	m.id, m.awaitingJoin, m.awaitingSync = newID, nil, nil
	delete(g.members, old.id)
	g.members[newID] = m
	for i, id := range g.order {
		if id == old.id {
			g.order[i] = newID
		}
	}
	g.static[*m.instanceID] = newID
	if g.leader == old.id {
		g.leader = newID
	}
	if g.pendingSync[old.id] {
		delete(g.pendingSync, old.id)
		g.pendingSync[newID] = true
	}
	return m
}

// persistReplacedMember writes the group with the static member's new id and answers
// its join once that is durable; on failure the old id is restored.
func (g *groupMetadata) persistReplacedMember(now time.Time, m *memberMetadata, prev memberMetadata, oldLeader string, req JoinRequest, reply func(JoinResult)) {
	gen := g.generation
	g.issue(g.groupRecords(g.assignments(), now), func(err error) {
		cur := g.members[m.id]
		if err != nil {
			if cur == m && g.phase == Stable && g.generation == gen {
				restored := g.renameMember(m, prev.id)
				restored.protocols, restored.sessionTimeout, restored.rebalanceTimeout = prev.protocols, prev.sessionTimeout, prev.rebalanceTimeout
			}
			reply(joinError("", err))
			return
		}
		if cur != m || g.generation != gen {
			reply(joinError(m.id, ErrRebalanceInProgress))
			return
		}
		r := g.joinResultFor(m)
		if !req.SupportsSkipAssignment {
			// An old leader must not think itself leader of a stable group: its new
			// assignment would never reach the others (Kafka answers with the old
			// leader's id and no members).
			r.LeaderID, r.Members = oldLeader, nil
		} else {
			r.SkipAssignment = m.id == g.leader
		}
		reply(r)
	})
}

// maybePrepareRebalance starts a join phase unless one is under way.
func (g *groupMetadata) maybePrepareRebalance(now time.Time) {
	switch g.phase {
	case Stable, CompletingRebalance, Empty:
		g.prepareRebalance(now)
	}
}

func (g *groupMetadata) prepareRebalance(now time.Time) {
	if g.phase == CompletingRebalance {
		g.resetAssignments(ErrRebalanceInProgress)
	}
	g.syncDeadline, g.pendingSync = time.Time{}, nil
	if g.phase == Empty {
		d := g.lim.initialRebalanceDelay
		g.initialJoin = true
		g.initialRemaining = max(g.rebalanceTimeout()-d, 0)
		g.joinDeadline = now.Add(d)
	} else {
		g.initialJoin = false
		g.joinDeadline = now.Add(g.rebalanceTimeout())
	}
	g.transition(PreparingRebalance, now)
}

// allJoined: every member has a JoinGroup waiting and no handed-out id is unused.
func (g *groupMetadata) allJoined() bool {
	for _, m := range g.members {
		if m.awaitingJoin == nil {
			return false
		}
	}
	return len(g.pending) == 0
}

// joinAction is what the join phase does next.
type joinAction int8

const (
	joinWait     joinAction = iota // keep waiting for members
	joinComplete                   // end the join phase now
	joinExtend                     // extend the initial delay: new members keep coming
)

// nextJoinAction decides the join phase (Kafka's DelayedJoin and InitialDelayedJoin):
// a regular phase ends once everybody rejoined or at its deadline; the initial phase of
// an empty group only ends at its deadline, which moves on while new members arrive and
// rebalance time remains.
func nextJoinAction(initial, allJoined, deadlinePassed, newMemberAdded bool, remaining time.Duration) joinAction {
	switch {
	case !deadlinePassed && (initial || !allJoined):
		return joinWait
	case !deadlinePassed:
		return joinComplete
	case initial && newMemberAdded && remaining > 0:
		return joinExtend
	default:
		return joinComplete
	}
}

// tryCompleteJoin ends the join phase early once everybody joined.
func (g *groupMetadata) tryCompleteJoin(now time.Time) {
	if g.phase == PreparingRebalance && nextJoinAction(g.initialJoin, g.allJoined(), false, false, 0) == joinComplete {
		g.completeJoin(now)
	}
}

// onJoinDeadline ends the join phase, or extends the initial delay.
func (g *groupMetadata) onJoinDeadline(now time.Time) {
	switch nextJoinAction(g.initialJoin, g.allJoined(), true, g.newMemberAdded, g.initialRemaining) {
	case joinExtend:
		d := min(g.lim.initialRebalanceDelay, g.initialRemaining)
		g.initialRemaining -= d
		g.newMemberAdded = false
		g.joinDeadline = now.Add(d)
	default:
		g.completeJoin(now)
	}
}
