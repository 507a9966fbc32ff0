package group

import (
	"context"
	"errors"
	"slices"
	"strings"
	"time"
)

// errNoGroup: the group does not exist (and the request does not create it).
var errNoGroup = errors.New("no such group")

// Join handles a JoinGroup. It blocks until the join phase ends (up to the rebalance
// timeout) or ctx ends.
func (c *Coordinator) Join(ctx context.Context, req JoinRequest) JoinResult {
	if req.GroupID == "" {
		return joinError(req.MemberID, ErrInvalidGroupID)
	}
	if req.RebalanceTimeout <= 0 {
		req.RebalanceTimeout = req.SessionTimeout // JoinGroup v0 has none
	}
	// Only a first join creates a group; a known member id of an unknown group is stale.
	res, err := call(ctx, c, req.GroupID, req.MemberID == "", func(md *groupMetadata, now time.Time, reply func(JoinResult)) {
		md.join(now, req, reply)
	})
	if errors.Is(err, errNoGroup) {
		return joinError(req.MemberID, ErrUnknownMemberID)
	}
	if errors.Is(err, ErrShareGroupID) {
		return joinError(req.MemberID, ErrInconsistentGroupProtocol) // as Kafka's JoinGroup
	}
	if err != nil {
		return joinError(req.MemberID, err)
	}
	return res
}

// Sync handles a SyncGroup. The leader's call returns once its assignment is durable;
// the others' once it arrives.
func (c *Coordinator) Sync(ctx context.Context, req SyncRequest) SyncResult {
	res, err := call(ctx, c, req.GroupID, false, func(md *groupMetadata, now time.Time, reply func(SyncResult)) {
		md.sync(now, req, reply)
	})
	if errors.Is(err, errNoGroup) {
		return SyncResult{Err: ErrUnknownMemberID}
	}
	if err != nil {
		return SyncResult{Err: err}
	}
	return res
}

// Heartbeat handles a Heartbeat.
func (c *Coordinator) Heartbeat(ctx context.Context, req HeartbeatRequest) error {
	err, callErr := call(ctx, c, req.GroupID, false, func(md *groupMetadata, now time.Time, reply func(error)) {
		reply(md.heartbeat(now, req))
	})
	if errors.Is(callErr, errNoGroup) {
		return ErrUnknownMemberID
	}
	if callErr != nil {
		return callErr
	}
	return err
}

// Leave handles a LeaveGroup: one error per member, or a group-level error.
func (c *Coordinator) Leave(ctx context.Context, groupID string, members []LeaveMember) ([]error, error) {
	errs, err := call(ctx, c, groupID, false, func(md *groupMetadata, now time.Time, reply func([]error)) {
		reply(md.leave(now, members))
	})
	if errors.Is(err, errNoGroup) {
		errs = make([]error, len(members))
		for i := range errs {
			errs[i] = ErrUnknownMemberID
		}
		return errs, nil
	}
	return errs, err
}

// CommitOffsets handles an OffsetCommit: one error per offset, in request order. It
// returns once the commit is replicated to every in-sync replica of the group's
// __consumer_offsets partition.
func (c *Coordinator) CommitOffsets(ctx context.Context, req CommitRequest) []error {
	// A commit from outside the group protocol may create the group; a member's commit
	// to a group that does not exist is from an older incarnation.
	create := req.Generation < 0
	errs, err := call(ctx, c, req.GroupID, create, func(md *groupMetadata, now time.Time, reply func([]error)) {
		md.commit(now, req, reply)
	})
	if errors.Is(err, errNoGroup) {
		err = ErrIllegalGeneration
	}
	if err != nil {
		errs = sameError(len(req.Offsets), err)
	}
	return errs
}

// FetchOffsets returns the group's committed offsets for partitions (in order, offset
// -1 for none), or every committed offset when partitions is nil. An unknown group has
// no offsets.
func (c *Coordinator) FetchOffsets(ctx context.Context, groupID string, partitions []TopicPartition) ([]CommittedOffset, error) {
	return c.FetchMemberOffsets(ctx, groupID, "", -1, partitions)
}

// FetchMemberOffsets is FetchOffsets for OffsetFetch v9+, which may name a member and
// its epoch: in a consumer group (KIP-848) the member must exist
// (ErrUnknownMemberID) at that epoch (ErrStaleMemberEpoch). An empty member id with
// epoch -1 fetches as an outsider.
func (c *Coordinator) FetchMemberOffsets(ctx context.Context, groupID, memberID string, memberEpoch int32, partitions []TopicPartition) ([]CommittedOffset, error) {
	type result struct {
		out []CommittedOffset
		err error
	}
	r, err := call(ctx, c, groupID, false, func(md *groupMetadata, _ time.Time, reply func(result)) {
		if err := md.validateConsumerFetch(memberID, memberEpoch); err != nil {
			reply(result{err: err})
			return
		}
		reply(result{out: md.fetchOffsets(partitions)})
	})
	if errors.Is(err, errNoGroup) {
		if memberID != "" && memberEpoch >= 0 {
			return nil, ErrUnknownMemberID
		}
		return (&groupMetadata{}).fetchOffsets(partitions), nil
	}
	if err == nil {
		err = r.err
	}
	return r.out, err
}

// DeleteOffsets handles an OffsetDelete: one error per partition, or a group-level
// error.
func (c *Coordinator) DeleteOffsets(ctx context.Context, groupID string, partitions []TopicPartition) ([]error, error) {
	type result struct {
		groupErr error
		errs     []error
	}
	r, err := call(ctx, c, groupID, false, func(md *groupMetadata, _ time.Time, reply func(result)) {
		md.deleteOffsets(partitions, func(groupErr error, errs []error) { reply(result{groupErr, errs}) })
	})
	if errors.Is(err, errNoGroup) {
		return nil, ErrGroupIDNotFound
	}
	if err != nil {
		return nil, err
	}
	return r.errs, r.groupErr
}

// DeleteGroup handles one group of a DeleteGroups.
func (c *Coordinator) DeleteGroup(ctx context.Context, groupID string) error {
	err, callErr := call(ctx, c, groupID, false, func(md *groupMetadata, now time.Time, reply func(error)) {
		md.deleteGroup(now, reply)
	})
	if errors.Is(callErr, errNoGroup) {
		return ErrGroupIDNotFound
	}
	if callErr != nil {
		return callErr
	}
	return err
}

// DescribeGroup returns the group's description. An unknown group is described as
// Dead with ErrGroupIDNotFound (DescribeGroups v0-5 answer it without an error).
func (c *Coordinator) DescribeGroup(ctx context.Context, groupID string) (GroupDescription, error) {
	d, err := call(ctx, c, groupID, false, func(md *groupMetadata, _ time.Time, reply func(GroupDescription)) {
		reply(md.describe())
	})
	if errors.Is(err, errNoGroup) {
		return GroupDescription{GroupID: groupID, State: Dead.String()}, ErrGroupIDNotFound
	}
	if err == nil && d.ProtocolType == "" && d.State == "" {
		// A consumer group (KIP-848): Kafka 4 describes it with ConsumerGroupDescribe
		// only, and answers DescribeGroups "not a classic group".
		return GroupDescription{GroupID: groupID, State: Dead.String()}, ErrNotClassicGroup
	}
	return d, err
}

// ListGroups lists the groups this node coordinates whose state is one of states
// (case-insensitive; all when empty). While some partition is still loading it
// returns ErrCoordinatorLoadInProgress, as Kafka does.
func (c *Coordinator) ListGroups(states []string) ([]GroupListing, error) {
	var out []GroupListing
	for _, sh := range c.shards.All() {
		select {
		case <-sh.loaded:
		default:
			return nil, ErrCoordinatorLoadInProgress
		}
		sh.mu.Lock()
		for _, g := range sh.groups {
			l := g.listing.Load()
			if l.State != Dead.String() && (len(states) == 0 || slices.ContainsFunc(states, func(s string) bool { return strings.EqualFold(s, l.State) })) {
				out = append(out, *l)
			}
		}
		sh.mu.Unlock()
	}
	slices.SortFunc(out, func(a, b GroupListing) int { return strings.Compare(a.GroupID, b.GroupID) })
	return out, nil
}
