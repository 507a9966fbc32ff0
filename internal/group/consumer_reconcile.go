package group

// The reconciliation of one consumer group member towards its target assignment
// (Kafka's CurrentAssignmentBuilder), as a pure function.
//
//	           revocations owed                    all revoked
//	STABLE ──────────────────────▶ UNREVOKED ──────────────────────▶ (recompute)
//	  ▲  new target epoch, nothing       │ (stays in its epoch until the member
//	  │  to revoke: take the free        │  reports none of the revoked partitions)
//	  │  partitions, move to the         ▼
//	  └──────── target epoch ◀──── UNRELEASED (in the target epoch, waiting for
//	                                 partitions another member still holds)
//
// Invariants: a partition is given to a member only when no other member holds it
// (assigned or pending revocation), so two members never own one partition at once;
// a member's epoch moves to the target epoch only when it owes no revocation.

// reconcileInput is one member's state and what it is reconciled against.
type reconcileInput struct {
	state    memberState
	epoch    int32
	assigned partSet
	pending  partSet
	// targetEpoch and target are the group's assignment epoch and the member's target.
	targetEpoch int32
	target      partSet
	// subscribed reports whether the member still subscribes to a topic; a topic it
	// dropped is revoked even before a new target says so.
	subscribed func(topicID) bool
	// ownedByOther reports whether another member holds a partition.
	ownedByOther func(topicID, int32) bool
	// owned is what the member reports holding (the heartbeat's Topics); nil when the
	// heartbeat did not say, which counts as still holding everything.
	owned partSet
}

// reconcileResult is the member's next state.
type reconcileResult struct {
	state    memberState
	epoch    int32
	assigned partSet
	pending  partSet
}

// reconcile computes the member's next state.
func reconcile(in reconcileInput) reconcileResult {
	keep := reconcileResult{in.state, in.epoch, in.assigned, in.pending}
	switch in.state {
	case memberStable:
		if in.epoch == in.targetEpoch {
			return keep
		}
	case memberUnrevoked:
		if in.stillOwns(in.pending) {
			return keep
		}
	}
	return in.next()
}

// stillOwns reports whether the member may still hold some partition of s.
func (in *reconcileInput) stillOwns(s partSet) bool {
	if in.owned == nil {
		return len(s) > 0
	}
	for t, ps := range s {
		for p := range ps {
			if in.owned.has(t, p) {
				return true
			}
		}
	}
	return false
}

// next is Kafka's computeNextAssignment: keep what is both held and targeted, revoke
// what is held and no longer targeted, and take targeted partitions that are free.
func (in *reconcileInput) next() reconcileResult {
	assigned, revoke, take := partSet{}, partSet{}, partSet{}
	unreleased := false
	topics := map[topicID]bool{}
	for t := range in.target {
		topics[t] = true
	}
	for t := range in.assigned {
		topics[t] = true
	}
	for t := range topics {
		target := in.target[t]
		if in.subscribed != nil && !in.subscribed(t) {
			target = nil
		}
		for p, e := range in.assigned[t] {
			if _, ok := target[p]; ok {
				assigned.add(t, p, e)
			} else {
				revoke.add(t, p, e)
			}
		}
		for p := range target {
			if assigned.has(t, p) {
				continue
			}
			// A partition this member is itself revoking is not held by another.
			if in.ownedByOther(t, p) && !in.pending.has(t, p) {
				unreleased = true
				continue
			}
			take.add(t, p, in.targetEpoch)
		}
	}
	switch {
	case len(revoke) > 0 && in.stillOwns(revoke):
		return reconcileResult{memberUnrevoked, in.epoch, assigned, revoke}
	case len(take) > 0:
		for t, ps := range take {
			for p, e := range ps {
				assigned.add(t, p, e)
			}
		}
		fallthrough
	default:
		st := memberStable
		if unreleased {
			st = memberUnreleased
		}
		return reconcileResult{st, in.targetEpoch, assigned, partSet{}}
	}
}
