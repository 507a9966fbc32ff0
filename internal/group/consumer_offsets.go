package group

// Offsets of consumer groups: commits and fetches fenced by member epoch (KIP-848).

import "time"

// validateConsumerCommit is Kafka's ConsumerGroup.validateOffsetCommit: a commit with a
// negative epoch (and no member) comes from outside the group and is accepted only
// while the group has no members; a member's commit needs OffsetCommit v9+ (unless
// transactional) and its epoch: the current one, or an older one for partitions the
// member already held at that epoch (their assignment epoch), so that a commit racing a
// heartbeat that moved the member on is not refused (Kafka 4.3). It returns a
// group-wide error, or one error per offset (nil where accepted).
func (g *groupMetadata) validateConsumerCommit(req CommitRequest, transactional bool) (error, []error) {
	cg := g.consumer
	if g.phase == Dead {
		return ErrCoordinatorNotAvailable, nil
	}
	if req.Generation < 0 && req.MemberID == "" {
		if len(cg.members) == 0 || transactional {
			return nil, make([]error, len(req.Offsets))
		}
		return ErrUnknownMemberID, nil
	}
	m := cg.members[req.MemberID]
	switch {
	case m == nil:
		return ErrUnknownMemberID, nil
	case req.InstanceID != nil && cg.static[*req.InstanceID] != req.MemberID:
		return ErrFencedInstanceID, nil
	case m.classic != nil && req.Generation != m.epoch: // generation = member epoch
		return ErrIllegalGeneration, nil
	case m.classic != nil:
		return nil, make([]error, len(req.Offsets))
	case !transactional && req.Version < 9:
		return ErrUnsupportedVersion, nil
	case req.Generation > m.epoch:
		return ErrStaleMemberEpoch, nil
	}
	errs := make([]error, len(req.Offsets))
	if req.Generation == m.epoch {
		return nil, errs
	}
	for i, o := range req.Offsets {
		e, ok := m.assigned[o.TopicID][o.Partition]
		if !ok {
			e, ok = m.pending[o.TopicID][o.Partition]
		}
		if !ok || req.Generation < e {
			errs[i] = ErrStaleMemberEpoch
		}
	}
	return nil, errs
}

// consumerCommit handles an OffsetCommit to a consumer group.
func (g *groupMetadata) consumerCommit(now time.Time, req CommitRequest, reply func([]error)) {
	gerr, errs := g.validateConsumerCommit(req, false)
	if gerr != nil {
		reply(sameError(len(req.Offsets), gerr))
		return
	}
	var offsets []OffsetCommit
	var index []int
	for i, o := range req.Offsets {
		if errs[i] == nil {
			offsets = append(offsets, o)
			index = append(index, i)
		}
	}
	sub := make([]error, len(offsets))
	records, accepted := g.offsetRecords(offsets, now, sub)
	for j, err := range sub {
		errs[index[j]] = err
	}
	if len(records) == 0 {
		reply(errs)
		return
	}
	g.issue(records, func(err error) {
		for _, j := range accepted {
			i := index[j]
			errs[i] = err
			if err == nil {
				o := req.Offsets[i]
				g.offsets[TopicPartition{o.Topic, o.Partition}] = toOffset(o, now)
			}
		}
		reply(errs)
	})
}

// validateConsumerFetch is Kafka's ConsumerGroup.validateOffsetFetch: a fetch that
// names a member (OffsetFetch v9+) must come from a member at its current epoch.
func (g *groupMetadata) validateConsumerFetch(memberID string, memberEpoch int32) error {
	if g.consumer == nil || memberEpoch < 0 && memberID == "" {
		return nil
	}
	m := g.consumer.members[memberID]
	switch {
	case m == nil:
		return ErrUnknownMemberID
	case memberEpoch != m.epoch:
		return ErrStaleMemberEpoch
	}
	return nil
}
