package replica

import (
	"slices"

	"github.com/runnel-io/runnel/internal/metadata"
)

// The replication decisions of one partition, as functions of its state, the input and
// the time (STYLE rule 4): nothing here takes a lock, reads a clock, does I/O or starts a
// goroutine. Partition gathers the inputs under its locks and carries out what these
// return (it appends, proposes ISR changes, stores the high watermark); the scripts in
// testdata/ drive them directly (core_test.go), one rule per script.

// replicationState is what one replica knows of its partition's replication: its role
// from the controller, and, while it leads, the progress of each follower. Partition
// embeds one; which of its locks guards which field is said there.
type replicationState struct {
	// self is this node. Immutable.
	self metadata.NodeID

	// The role, as the controller last assigned it (an applied metadata image), plus
	// the ISR change this leader has in flight.
	leader         metadata.NodeID
	leaderEpoch    int32
	partitionEpoch int32
	replicas       []metadata.NodeID
	// adding are the replicas a reassignment in progress is adding (a subset of
	// replicas), for its progress metrics.
	adding []metadata.NodeID
	// isr is the committed ISR. Invariant (leader): it contains self.
	isr    []metadata.NodeID
	minISR int32
	// pendingISR is the ISR proposed to the controller and not yet answered; nil when
	// none is in flight. Invariant: at most one change is in flight. The high watermark
	// counts the maximal ISR, isr ∪ pendingISR (Kafka's PendingExpandIsr and
	// PendingShrinkIsr): a member being added counts at once (it is caught up to the
	// high watermark), a member being dropped keeps counting until the drop commits, so
	// the high watermark never passes a replica that may still be in the ISR.
	pendingISR []metadata.NodeID
	// isrChangeSeq numbers the changes sent (isrChangeSent), so that an answer is
	// applied only to the change it answers, never to a later one.
	isrChangeSeq uint64
	// epochStartOffset is the leader's log end when it took leaderEpoch. A follower
	// joins the ISR only at or past it: it then holds every record of this epoch.
	epochStartOffset int64
	// syncOnAppend: the topic's flush policy fsyncs every acknowledged batch, so the
	// leader's own contribution to the high watermark is its durable end.
	syncOnAppend bool

	// followers is, while this replica leads, what it knows of each other replica
	// (Kafka's ReplicaState); reset when it takes a new epoch.
	followers map[metadata.NodeID]*followerState
}

// followerState is what the leader knows of one follower (Kafka's ReplicaState).
type followerState struct {
	// logEndOffset is the follower's last fetch offset: it holds every offset below,
	// durably. -1 until it fetches in this leader epoch.
	logEndOffset int64
	// lastCaughtUpTimeMs is the last time the follower was known to hold everything
	// the leader had: it fetched at the leader's log end, or at the log end of its
	// previous fetch (Kafka's rule: under steady load a follower is never at the very
	// end, yet it is keeping up).
	lastCaughtUpTimeMs int64
	lastFetchTimeMs    int64
	// lastFetchLeaderEnd is the leader's log end at the follower's previous fetch.
	lastFetchLeaderEnd int64
	// logStartOffset is the follower's log start as its last fetch said (Fetch v5+
	// LogStartOffset); -1 while unknown. The preferred read replica (selector.go) must
	// hold the consumer's offset: at or above it.
	logStartOffset int64
}

func (s *replicationState) isLeader() bool { return s.leader == s.self }

// become installs the controller's view of the partition. On taking a new epoch as
// leader the epoch starts at leo, the current log end, and every follower is given a
// full lag window to catch up before it may be dropped from the ISR (Kafka resets its
// ReplicaStates). It reports whether this replica became leader (of a new epoch).
func (s *replicationState) become(st metadata.Partition, minISR int32, syncOnAppend bool, leo, nowMs int64) (becameLeader bool) {
	wasLeader := s.isLeader()
	epochChanged := s.leaderEpoch != st.LeaderEpoch
	s.leader, s.leaderEpoch, s.partitionEpoch = st.Leader, st.LeaderEpoch, st.PartitionEpoch
	s.replicas, s.isr, s.adding = st.Replicas, st.ISR, st.AddingReplicas
	// The image is the truth: a change still in flight is answered by it (or lost),
	// and the next one is proposed from this state.
	s.pendingISR = nil
	s.minISR, s.syncOnAppend = minISR, syncOnAppend
	becameLeader = s.isLeader() && (!wasLeader || epochChanged)
	if becameLeader {
		s.epochStartOffset = leo
		s.followers = make(map[metadata.NodeID]*followerState, len(st.Replicas))
		for _, r := range st.Replicas {
			if r != s.self {
				s.followers[r] = &followerState{logEndOffset: -1, lastCaughtUpTimeMs: nowMs, logStartOffset: -1}
			}
		}
	}
	return becameLeader
}

// recordFetch records, on the leader, a follower's fetch at fetchOffset while the
// leader's log ends at leaderEnd (Kafka's updateFetchState). It is called once per
// fetch request, not per read of it. It returns whether the follower should now be
// proposed for the ISR (shouldExpand).
func (s *replicationState) recordFetch(id metadata.NodeID, fetchOffset, leaderEnd, hw, nowMs, maxLagMs int64) (expand bool) {
	f := s.followers[id]
	if f == nil {
		f = &followerState{logEndOffset: -1, logStartOffset: -1}
		s.followers[id] = f
	}
	switch {
	case fetchOffset >= leaderEnd:
		f.lastCaughtUpTimeMs = nowMs
	case fetchOffset >= f.lastFetchLeaderEnd:
		// It has everything the leader had when it fetched last.
		f.lastCaughtUpTimeMs = max(f.lastCaughtUpTimeMs, f.lastFetchTimeMs)
	}
	f.logEndOffset, f.lastFetchTimeMs, f.lastFetchLeaderEnd = fetchOffset, nowMs, leaderEnd
	return s.shouldExpand(id, hw, leaderEnd, nowMs, maxLagMs)
}

// shouldExpand reports whether follower id, outside the (maximal) ISR, may be added:
// no other change is in flight, it is a replica, it holds everything up to the high
// watermark and the start of this leader epoch (Kafka's isFollowerInSync), and, while
// the ISR is below min.insync.replicas, it is also caught up with the log end
// (KAFKA-19996: a follower that only reached a lagging high watermark would otherwise
// join, let acks=all writes through, and be dropped again a lag window later).
func (s *replicationState) shouldExpand(id metadata.NodeID, hw, leaderEnd, nowMs, maxLagMs int64) bool {
	f := s.followers[id]
	if !s.isLeader() || s.pendingISR != nil || f == nil || slices.Contains(s.isr, id) || !slices.Contains(s.replicas, id) {
		return false
	}
	if !canJoinISR(f, hw, s.epochStartOffset) {
		return false
	}
	if int32(len(s.isr)) < s.minISR && !isCaughtUp(f, leaderEnd, nowMs, maxLagMs) {
		return false
	}
	return true
}

// canJoinISR: the follower has every record up to the high watermark and at least the
// start of the current leader epoch, so it holds everything acknowledged in this epoch.
func canJoinISR(f *followerState, hw, epochStartOffset int64) bool {
	return f.logEndOffset >= hw && f.logEndOffset >= epochStartOffset
}

// isCaughtUp is Kafka's ReplicaState.isCaughtUp: a follower is in sync if it has
// reached the leader's log end at some point within maxLag.
func isCaughtUp(f *followerState, leaderEnd int64, nowMs, maxLagMs int64) bool {
	return f.logEndOffset >= leaderEnd || nowMs-f.lastCaughtUpTimeMs <= maxLagMs
}

// maximalISR is the ISR plus any member a pending change adds.
func (s *replicationState) maximalISR() []metadata.NodeID {
	if s.pendingISR == nil {
		return s.isr
	}
	out := slices.Clone(s.isr)
	for _, r := range s.pendingISR {
		if !slices.Contains(out, r) {
			out = append(out, r)
		}
	}
	return out
}

// leaderHighWatermark is the high watermark the ISR supports: the minimum of the
// leader's end (leaderEnd: its durable end under syncOnAppend) and the log end of every
// other member of the maximal ISR. A member not heard from in this epoch holds it at -1.
func (s *replicationState) leaderHighWatermark(leaderEnd int64) int64 {
	return highWatermark(leaderEnd, s.self, s.maximalISR(), s.followers)
}

// highWatermark is the minimum of leaderEnd and every other ISR member's log end offset.
// A follower the leader has not heard from yet counts as -1 (holds the HW).
func highWatermark(leaderEnd int64, self metadata.NodeID, isr []metadata.NodeID, followers map[metadata.NodeID]*followerState) int64 {
	hw := leaderEnd
	for _, r := range isr {
		if r == self {
			continue
		}
		f := followers[r]
		if f == nil {
			return -1
		}
		hw = min(hw, f.logEndOffset)
	}
	return hw
}

// leaderStartHighWatermark is where a new leader's high watermark starts: the one it
// checkpointed before a restart (checkpointHW, -1 for none), within its log, if that is
// above the one it holds (hw, kept from following). A leader's high watermark may lag
// the true one; it catches up as the followers fetch. ok is false to keep hw.
func leaderStartHighWatermark(checkpointHW, logStart, leo, hw int64) (int64, bool) {
	if start := min(max(checkpointHW, logStart), leo); start > hw {
		return start, true
	}
	return hw, false
}

// advanceHighWatermark returns the leader's new high watermark given the current one
// (hw) and whether it moved: only up, never past what the maximal ISR holds.
func (s *replicationState) advanceHighWatermark(hw, leaderEnd int64) (int64, bool) {
	if !s.isLeader() {
		return hw, false
	}
	if next := s.leaderHighWatermark(leaderEnd); next > hw {
		return next, true
	}
	return hw, false
}

// shrinkISR returns the ISR without the followers that are out of sync
// (outOfSyncReplicas), and those dropped; nothing while not leading or while another
// change is in flight.
func (s *replicationState) shrinkISR(leaderEnd, nowMs, maxLagMs int64, diskFull func(metadata.NodeID) bool) (newISR, drop []metadata.NodeID) {
	if !s.isLeader() || s.pendingISR != nil {
		return nil, nil
	}
	drop = outOfSyncReplicas(s.isr, s.self, s.followers, leaderEnd, nowMs, maxLagMs, diskFull)
	if len(drop) == 0 {
		return nil, nil
	}
	newISR = slices.DeleteFunc(slices.Clone(s.isr), func(r metadata.NodeID) bool { return slices.Contains(drop, r) })
	return newISR, drop
}

// outOfSyncReplicas returns the ISR members (other than the leader) that are no longer
// caught up. A follower whose disk is full (diskFull, from the metadata; nil for none)
// is out of sync as soon as it is behind the leader's log end: its appends fail, so
// waiting replica.lag.time.max.ms for it would only hold back acks=all.
func outOfSyncReplicas(isr []metadata.NodeID, self metadata.NodeID, followers map[metadata.NodeID]*followerState, leaderEnd, nowMs, maxLagMs int64, diskFull func(metadata.NodeID) bool) []metadata.NodeID {
	var out []metadata.NodeID
	for _, r := range isr {
		if r == self {
			continue
		}
		f := followers[r]
		if f == nil || !isCaughtUp(f, leaderEnd, nowMs, maxLagMs) || (diskFull != nil && diskFull(r) && f.logEndOffset < leaderEnd) {
			out = append(out, r)
		}
	}
	return out
}

// expandISR returns the ISR with follower added; nil while not leading, while another
// change is in flight, or when it is a member already.
func (s *replicationState) expandISR(follower metadata.NodeID) []metadata.NodeID {
	if !s.isLeader() || s.pendingISR != nil || slices.Contains(s.isr, follower) {
		return nil
	}
	return append(slices.Clone(s.isr), follower)
}

// isrChangeSent marks newISR as proposed to the controller and returns the change's
// number for isrChangeAnswered. It refuses (0) while not leading or while another
// change is in flight.
func (s *replicationState) isrChangeSent(newISR []metadata.NodeID) uint64 {
	if !s.isLeader() || s.pendingISR != nil {
		return 0
	}
	s.pendingISR = newISR
	s.isrChangeSeq++
	return s.isrChangeSeq
}

// isrAnswer is the controller's answer to an ISR change, as the core needs it.
type isrAnswer int

const (
	// isrCommitted: the controller stored the partition as isrChangeAnswered's
	// committed argument says.
	isrCommitted isrAnswer = iota
	// isrRefused: the change was not applied and will not be (an ineligible replica,
	// an invalid request, an unknown partition).
	isrRefused
	// isrStale: the controller holds a newer state of the partition (a newer leader or
	// partition epoch): the change, or one after it, is committed, and the metadata
	// image that says so is on its way.
	isrStale
)

// isrChangeAnswered applies the answer to change seq (an answer to an older change,
// one that a metadata image has overtaken, is ignored). The change ends, and the
// maximal ISR shrinks back to the committed one, only when the answer proves what the
// ISR now is: a commit in this leader epoch, or a refusal. A commit under another
// leader epoch (a reassignment completing with the same record, a new leader elected)
// or a stale answer keeps the change pending until the image arrives (become): until
// then the member being added must keep counting for the high watermark, since the
// controller may already have made it leader on the strength of this very change, and
// an acknowledgement it lacks would be lost with it.
func (s *replicationState) isrChangeAnswered(seq uint64, answer isrAnswer, committed *metadata.Partition) {
	if seq != s.isrChangeSeq || s.pendingISR == nil {
		return
	}
	switch {
	case answer == isrRefused:
		s.pendingISR = nil
	case answer == isrCommitted && committed != nil && committed.LeaderEpoch == s.leaderEpoch:
		if committed.PartitionEpoch > s.partitionEpoch {
			s.isr, s.partitionEpoch = committed.ISR, committed.PartitionEpoch
		}
		s.pendingISR = nil
	}
}

// followerHighWatermark is the high watermark a follower adopts from its leader's fetch
// answer: the leader's, capped by its own log end (it cannot let consumers read what it
// does not hold).
func followerHighWatermark(leaderHW, leo int64) int64 { return min(leaderHW, leo) }

// epochLog is what divergence resolution reads of a follower's log (log.Log has it).
type epochLog interface {
	LogEndOffset() int64
	LatestEpoch() (int32, bool)
	EndOffsetForEpoch(epoch int32) (int32, int64)
}

// divergencePoint is where a follower's log must be cut before it follows a new leader,
// given the leader's OffsetForLeaderEpoch answer for the follower's latest epoch
// (KIP-101, KIP-279): the leader's end offset for that epoch; when the leader answered
// for an older epoch (it never had ours), also no further than our own end of that
// epoch; when it knows no common epoch, the high watermark (what is surely committed).
// The result is at most the log end: nothing to cut then.
func divergencePoint(l epochLog, hw int64, leaderEpoch int32, leaderEndOffset int64) int64 {
	leo := l.LogEndOffset()
	if leaderEpoch < 0 || leaderEndOffset < 0 {
		return min(leo, hw)
	}
	to := min(leo, leaderEndOffset)
	if latest, _ := l.LatestEpoch(); leaderEpoch < latest {
		if _, ourEnd := l.EndOffsetForEpoch(leaderEpoch); ourEnd >= 0 {
			to = min(to, ourEnd)
		}
	}
	return to
}
