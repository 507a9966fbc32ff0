package kafka

// OffsetCommit: v0-9 (v10 names topics by id and is not implemented).
//
// A commit is acknowledged only once it is replicated to every in-sync replica of the
// group's __consumer_offsets partition. Generation -1 with an empty member id commits
// from outside the group protocol, accepted while the group has no members; otherwise
// the member and generation must be current (UNKNOWN_MEMBER_ID, ILLEGAL_GENERATION,
// FENCED_INSTANCE_ID; REBALANCE_IN_PROGRESS between the join and sync phases).
// Partitions of unknown topics get UNKNOWN_TOPIC_OR_PARTITION. v1's per-partition
// timestamp and v2-4's retention time are ignored: offsets are kept while the group
// exists. In a KIP-848 consumer group the generation is the member epoch (v9+; a
// member committing below v9 gets UNSUPPORTED_VERSION): another epoch than the
// member's answers STALE_MEMBER_EPOCH, except an older one for partitions the member
// already held at it; -1 without a member commits from outside, while the group has
// no members.

import (
	"context"

	"github.com/runnel-io/runnel/internal/auth"
	"github.com/runnel-io/runnel/internal/group"
	"github.com/runnel-io/runnel/internal/metadata"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() { regKey(8, 0, 9, handleOffsetCommit) }

func handleOffsetCommit(ctx context.Context, s *Server, r *request) (kmsg.Response, error) {
	req := r.kreq.(*kmsg.OffsetCommitRequest)
	resp := req.ResponseKind().(*kmsg.OffsetCommitResponse)
	codes := make([][]int16, len(req.Topics))
	cr := group.CommitRequest{Version: req.Version, GroupID: req.Group, MemberID: req.MemberID, InstanceID: req.InstanceID, Generation: req.Generation}
	if req.Version == 0 {
		cr.Generation = -1
	}
	type slot struct{ ti, pi int }
	var slots []slot
	im := s.leadership.Image()
	// With ACLs on, as Kafka: READ on the group (else every partition answers
	// GROUP_AUTHORIZATION_FAILED) and READ on each topic (TOPIC_AUTHORIZATION_FAILED).
	groupDenial := s.authorize(r, metadata.ACLOpRead, auth.Group(req.Group))
	topicDenied := s.topicCheck(r, metadata.ACLOpRead)
	for ti, t := range req.Topics {
		codes[ti] = make([]int16, len(t.Partitions))
		for pi, p := range t.Partitions {
			if groupDenial != nil {
				codes[ti][pi] = errorCode(groupDenial)
				continue
			}
			if topicDenied != nil {
				if err := topicDenied(t.Topic); err != nil {
					codes[ti][pi] = errorCode(err)
					continue
				}
			}
			if _, ok := im.Partition(metadata.TopicPartition{Topic: t.Topic, Partition: p.Partition}); !ok {
				codes[ti][pi] = kerr.UnknownTopicOrPartition.Code
				continue
			}
			cr.Offsets = append(cr.Offsets, group.OffsetCommit{
				Topic: t.Topic, TopicID: im.Topics[t.Topic].ID, Partition: p.Partition, Offset: p.Offset, LeaderEpoch: p.LeaderEpoch, Metadata: p.Metadata,
			})
			slots = append(slots, slot{ti, pi})
		}
	}
	if len(cr.Offsets) > 0 {
		errs := commitOffsets(ctx, s, cr)
		for i, sl := range slots {
			codes[sl.ti][sl.pi] = groupErrorCode(errs[i])
		}
	}
	for ti, t := range req.Topics {
		rt := kmsg.NewOffsetCommitResponseTopic()
		rt.Topic = t.Topic
		for pi, p := range t.Partitions {
			rp := kmsg.NewOffsetCommitResponseTopicPartition()
			rp.Partition, rp.ErrorCode = p.Partition, codes[ti][pi]
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp, nil
}

func commitOffsets(ctx context.Context, s *Server, cr group.CommitRequest) []error {
	gc := s.groupCoordinator()
	if gc == nil {
		return sameError(len(cr.Offsets), errNoCoordinator)
	}
	return gc.CommitOffsets(ctx, cr)
}

// sameError is n times err: the per-offset answer of a commit that fails as a whole.
func sameError(n int, err error) []error {
	errs := make([]error, n)
	for i := range errs {
		errs[i] = err
	}
	return errs
}
