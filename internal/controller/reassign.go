package controller

// Partition reassignment (KIP-455, as KRaft's ReplicationControlManager does it) and
// on-demand leader elections (ElectLeaders, KIP-460).
//
// A reassignment of a partition to a target set of replicas runs in three steps, each a
// metadata record, so that it survives the restart of any node, the active controller
// included:
//
//  1. start: Replicas becomes the target followed by the replicas being removed,
//     AddingReplicas the target's new ones, RemovingReplicas the original's that are not
//     in the target. The leader stays; the new replicas start following it (they are
//     replicas now) and join the ISR by the ordinary rule once caught up (AlterPartition).
//  2. complete, as soon as every target replica is in the ISR (checked on every ISR
//     change): Replicas becomes the target, the ISR loses the removed replicas, and the
//     target's preferred (first) replica takes leadership in the same record when it is
//     live (else the leader stays, or, when it is being removed, another target replica
//     in the ISR takes over), so there is no moment without a leader. The removed
//     replicas delete their copies when they apply it.
//  3. or cancel: Replicas goes back to the original, the ISR loses the added replicas.
//
// Every transition keeps a leader in the ISR: the leader never leaves without a
// successor from the ISR named in the same record.

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/runnel-io/runnel/internal/metadata"
)

// ErrNoReassignmentInProgress: a cancel named a partition that is not being reassigned.
var ErrNoReassignmentInProgress = errors.New("no reassignment in progress")

// ErrElectionNotNeeded: the preferred replica already leads.
var ErrElectionNotNeeded = errors.New("election not needed")

// ErrPreferredLeaderNotAvailable: the preferred replica cannot lead now (not live or
// not in the ISR).
var ErrPreferredLeaderNotAvailable = errors.New("preferred leader not available")

// ErrEligibleLeadersNotAvailable: an unclean election found no live replica.
var ErrEligibleLeadersNotAvailable = errors.New("eligible leaders not available")

// startReassignment returns p moving to target. A reassignment already in progress
// is replaced: the new one starts from the original replicas, and a replica being added
// that the new target still wants keeps its place in the ISR. A target equal to the
// original replicas cancels. The leader stays unless the new replica set drops it, in
// which case a live in-sync replica of the new set takes over (none: an error, the
// partition is left as it is).
func startReassignment(p metadata.Partition, target []metadata.NodeID, live, diskFull func(metadata.NodeID) bool) (metadata.Partition, error) {
	orig := p.OriginalReplicas()
	if sameSet(orig, target) {
		next := p
		if p.Reassigning() {
			var err error
			if next, err = cancelReassignment(p, live, diskFull); err != nil {
				return p, err
			}
		}
		if !slices.Equal(next.Replicas, target) {
			// The same replicas in another order: only the preferred leader changes.
			next.Replicas = slices.Clone(target)
			next.PartitionEpoch++
		}
		return next, nil
	}
	next := p
	next.Replicas = slices.Clone(target)
	next.AddingReplicas, next.RemovingReplicas = nil, nil
	for _, r := range orig {
		if !slices.Contains(target, r) {
			next.Replicas = append(next.Replicas, r)
			next.RemovingReplicas = append(next.RemovingReplicas, r)
		}
	}
	for _, r := range target {
		if !slices.Contains(orig, r) {
			next.AddingReplicas = append(next.AddingReplicas, r)
		}
	}
	next.ISR = slices.DeleteFunc(slices.Clone(p.ISR), func(r metadata.NodeID) bool { return !slices.Contains(next.Replicas, r) })
	if err := keepLeader(p, &next, live, diskFull); err != nil {
		return p, err
	}
	next.PartitionEpoch++
	if done, ok := completeReassignment(next, live, diskFull); ok {
		next = done // a target already in the ISR (a pure removal): done at once
	}
	return next, nil
}

// completeReassignment finishes p's reassignment once every target replica is in the
// ISR (ok false until then, or when none is in progress). When the leader is being
// removed, the first target replica that is live and in the ISR leads instead, in the
// same change.
func completeReassignment(p metadata.Partition, live, diskFull func(metadata.NodeID) bool) (metadata.Partition, bool) {
	if !p.Reassigning() {
		return p, false
	}
	target := p.TargetReplicas()
	for _, r := range target {
		if !slices.Contains(p.ISR, r) {
			return p, false
		}
	}
	next := p
	next.Replicas = slices.Clone(target)
	next.ISR = slices.DeleteFunc(slices.Clone(p.ISR), func(r metadata.NodeID) bool { return !slices.Contains(target, r) })
	next.AddingReplicas, next.RemovingReplicas = nil, nil
	// The target's first replica is its preferred leader: it takes over now, when it
	// can, so that a move that balances preferred leaders balances leadership too
	// (rather than at the next periodic preferred election).
	if pref := target[0]; pref != p.Leader && p.Leader != metadata.NoLeader && live(pref) &&
		slices.Contains(next.ISR, pref) && (diskFull == nil || !diskFull(pref)) {
		next.Leader, next.LeaderEpoch = pref, p.LeaderEpoch+1
	} else if err := keepLeader(p, &next, live, diskFull); err != nil {
		// No live target replica can lead: wait (the leader keeps the old set).
		return p, false
	}
	next.PartitionEpoch++
	return next, true
}

// cancelReassignment returns p back on its original replicas: the added replicas leave
// the replica set and the ISR. If an added replica had become leader (a failover during
// the move), a live in-sync original replica takes over.
func cancelReassignment(p metadata.Partition, live, diskFull func(metadata.NodeID) bool) (metadata.Partition, error) {
	if !p.Reassigning() {
		return p, ErrNoReassignmentInProgress
	}
	next := p
	next.Replicas = slices.Clone(p.OriginalReplicas())
	next.ISR = slices.DeleteFunc(slices.Clone(p.ISR), func(r metadata.NodeID) bool { return !slices.Contains(next.Replicas, r) })
	next.AddingReplicas, next.RemovingReplicas = nil, nil
	if err := keepLeader(p, &next, live, diskFull); err != nil {
		return p, err
	}
	next.PartitionEpoch++
	return next, nil
}

// keepLeader makes sure next has a leader among its replicas and ISR: p's, if it is
// still both, else the first of next's replicas that is live and in next's ISR (the
// leader epoch grows). An offline partition stays offline. It fails when no such
// replica exists: a change that would leave the partition without a leader is refused.
func keepLeader(p metadata.Partition, next *metadata.Partition, live, diskFull func(metadata.NodeID) bool) error {
	if p.Leader == metadata.NoLeader {
		return nil
	}
	if slices.Contains(next.Replicas, p.Leader) && slices.Contains(next.ISR, p.Leader) {
		return nil
	}
	leader, _, ok := chooseLeader(next.Replicas, next.ISR, live, diskFull, false)
	if !ok {
		return fmt.Errorf("%w: no replica of %v is live and in the ISR %v to take over from leader %d",
			ErrInvalidReplicaAssignment, next.Replicas, next.ISR, p.Leader)
	}
	next.Leader = leader
	next.LeaderEpoch = p.LeaderEpoch + 1
	return nil
}

func sameSet(a, b []metadata.NodeID) bool {
	if len(a) != len(b) {
		return false
	}
	for _, r := range a {
		if !slices.Contains(b, r) {
			return false
		}
	}
	return true
}

// validateTarget checks a reassignment target: not empty, no node twice, every node
// registered (Kafka's INVALID_REPLICA_ASSIGNMENT cases).
func validateTarget(im *metadata.Image, tp metadata.TopicPartition, target []metadata.NodeID) error {
	if len(target) == 0 {
		return fmt.Errorf("%w: the target replicas of %s-%d are empty", ErrInvalidReplicaAssignment, tp.Topic, tp.Partition)
	}
	for i, r := range target {
		if slices.Contains(target[:i], r) {
			return fmt.Errorf("%w: the target replicas %v of %s-%d name node %d twice", ErrInvalidReplicaAssignment, target, tp.Topic, tp.Partition, r)
		}
		if _, ok := im.Brokers[r]; !ok {
			return fmt.Errorf("%w: the target replicas %v of %s-%d name node %d, which is not registered",
				ErrInvalidReplicaAssignment, target, tp.Topic, tp.Partition, r)
		}
	}
	return nil
}

// AlterPartitionReassignments starts, replaces or cancels (nil Target) the
// reassignment of each partition, in one metadata record batch; one error per change,
// in order. A change that fails leaves its partition as it was; the others apply.
func (c *Controller) AlterPartitionReassignments(ctx context.Context, changes []metadata.Reassignment) []error {
	errs := make([]error, len(changes))
	err := c.withLeader(ctx, func(im *metadata.Image) error {
		live := c.liveLocked(im)
		var recs []metadata.Record
		scratch := im
		var throttled []metadata.TopicPartition
		var rate int64
		for i, ch := range changes {
			p, ok := scratch.Partition(ch.TP)
			if !ok {
				errs[i] = fmt.Errorf("%w: %s-%d", ErrUnknownTopic, ch.TP.Topic, ch.TP.Partition)
				continue
			}
			var next metadata.Partition
			if ch.Target == nil {
				next, errs[i] = cancelReassignment(p, live, unfit(im, ch.TP))
			} else if errs[i] = validateTarget(im, ch.TP, ch.Target); errs[i] == nil {
				next, errs[i] = startReassignment(p, ch.Target, live, unfit(im, ch.TP))
			}
			if errs[i] != nil || samePartitionState(p, next) {
				continue
			}
			rec := metadata.Record{Type: metadata.PartitionChangeType, TopicName: ch.TP.Topic, Partition: ch.TP.Partition, PartitionState: &next}
			recs = append(recs, rec)
			scratch = scratch.Apply(rec, scratch.Offset)
			if ch.Throttle > 0 && next.Reassigning() {
				throttled = append(throttled, ch.TP)
				rate = max(rate, ch.Throttle)
			}
			c.log.Info("reassignment", "topic", ch.TP.Topic, "partition", ch.TP.Partition,
				"replicas", p.Replicas, "target", ch.Target, "adding", next.AddingReplicas, "removing", next.RemovingReplicas,
				"cancel", ch.Target == nil, "leader", next.Leader, "throttle_bytes_per_sec", ch.Throttle)
		}
		if len(recs) == 0 {
			return nil
		}
		// The throttles go in the proposal that starts the moves, so no copy runs
		// unthrottled for a moment; the last move's end removes them.
		recs = append(recs, balancerThrottleRecords(im, scratch, throttled, rate)...)
		recs = append(recs, throttlesDoneRecords(scratch)...)
		_, err := c.proposeLocked(ctx, recs)
		return err
	})
	if err != nil {
		for i := range errs {
			if errs[i] == nil {
				errs[i] = err
			}
		}
	}
	return errs
}

func samePartitionState(a, b metadata.Partition) bool {
	return a.Leader == b.Leader && a.LeaderEpoch == b.LeaderEpoch && a.PartitionEpoch == b.PartitionEpoch &&
		slices.Equal(a.Replicas, b.Replicas) && slices.Equal(a.ISR, b.ISR) &&
		slices.Equal(a.AddingReplicas, b.AddingReplicas) && slices.Equal(a.RemovingReplicas, b.RemovingReplicas)
}

// ElectLeaders runs a preferred (unclean false) or unclean election on each partition
// (nil: every partition), as Kafka's ElectLeaders: preferred moves leadership to the
// first replica if it is live and in the ISR (ErrElectionNotNeeded when it leads
// already, ErrPreferredLeaderNotAvailable when it cannot); unclean elects a live
// replica outside the ISR only for a partition without a leader (ErrElectionNotNeeded
// when it has one, ErrEligibleLeadersNotAvailable when no replica is live). The result
// has an entry per partition asked for (every partition for nil).
func (c *Controller) ElectLeaders(ctx context.Context, unclean bool, tps []metadata.TopicPartition) (map[metadata.TopicPartition]error, error) {
	out := map[metadata.TopicPartition]error{}
	err := c.withLeader(ctx, func(im *metadata.Image) error {
		if tps == nil {
			for _, name := range im.TopicNames() {
				for i := range im.Topics[name].Partitions {
					tps = append(tps, metadata.TopicPartition{Topic: name, Partition: int32(i)})
				}
			}
		}
		live := c.liveLocked(im)
		var recs []metadata.Record
		for _, tp := range tps {
			p, ok := im.Partition(tp)
			if !ok {
				out[tp] = fmt.Errorf("%w: %s-%d", ErrUnknownTopic, tp.Topic, tp.Partition)
				continue
			}
			next, err := electOnDemand(p, unclean, live, unfit(im, tp), func(r metadata.NodeID) bool { return im.Damaged(tp, r) })
			out[tp] = err
			if err == nil {
				recs = append(recs, metadata.Record{Type: metadata.PartitionChangeType, TopicName: tp.Topic, Partition: tp.Partition, PartitionState: &next})
			}
		}
		if len(recs) == 0 {
			return nil
		}
		_, err := c.proposeLocked(ctx, recs)
		if err != nil {
			for tp, e := range out {
				if e == nil {
					out[tp] = err
				}
			}
		}
		return nil
	})
	return out, err
}

// electOnDemand is one partition's ElectLeaders decision (see ElectLeaders). A
// preferred replica whose copy is damaged is not available: it would serve a range
// it cannot read while an intact replica leads.
func electOnDemand(p metadata.Partition, unclean bool, live, unfit, damaged func(metadata.NodeID) bool) (metadata.Partition, error) {
	if unclean {
		if p.Leader != metadata.NoLeader && live(p.Leader) {
			return p, ErrElectionNotNeeded
		}
		next, changed := electLeader(p, live, unfit, true)
		if !changed || next.Leader == metadata.NoLeader {
			return p, ErrEligibleLeadersNotAvailable
		}
		return next, nil
	}
	if len(p.Replicas) == 0 {
		return p, ErrPreferredLeaderNotAvailable
	}
	pref := p.Replicas[0]
	switch {
	case p.Leader == pref:
		return p, ErrElectionNotNeeded
	case damaged(pref):
		return p, fmt.Errorf("%w: preferred replica %d holds a damaged range of this partition (see runnel topic describe); it leads again once repaired",
			ErrPreferredLeaderNotAvailable, pref)
	case !live(pref) || !slices.Contains(p.ISR, pref):
		return p, fmt.Errorf("%w: preferred replica %d is not live or not in the ISR %v", ErrPreferredLeaderNotAvailable, pref, p.ISR)
	}
	next := p
	next.Leader = pref
	next.LeaderEpoch++
	next.PartitionEpoch++
	return next, nil
}
