package kafka

// OffsetFetch: v0-9 (v10 names topics by id and is not implemented).
//
// Returns committed offsets (-1 with empty metadata for partitions without one). A
// null topic list (v2+) returns every partition the group committed. v0-1 report a
// group error in every partition, v2-7 at the top level, v8+ per group (batched groups,
// KIP-709). RequireStable (v7+, KIP-447): a partition whose group holds a pending
// transactional offset (committed by an open transaction) answers
// UNSTABLE_OFFSET_COMMIT, which the client retries until the transaction ends; without
// RequireStable the last materialised offset is returned. v9 (KIP-848): a fetch that
// names a member of a consumer group must come at its current epoch
// (STALE_MEMBER_EPOCH, UNKNOWN_MEMBER_ID); classic groups ignore the member.

import (
	"context"
	"slices"

	"github.com/runnel-io/runnel/internal/auth"
	"github.com/runnel-io/runnel/internal/group"
	"github.com/runnel-io/runnel/internal/metadata"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() { regKey(9, 0, 9, handleOffsetFetch) }

func handleOffsetFetch(ctx context.Context, s *Server, r *request) (kmsg.Response, error) {
	req := r.kreq.(*kmsg.OffsetFetchRequest)
	resp := req.ResponseKind().(*kmsg.OffsetFetchResponse)
	if req.Version < 8 {
		offsetFetchSingle(ctx, s, r, req, resp)
		return resp, nil
	}
	for _, rg := range req.Groups {
		var parts []group.TopicPartition
		if rg.Topics != nil {
			parts = []group.TopicPartition{}
		}
		for _, t := range rg.Topics {
			parts = appendPartitions(parts, t.Topic, t.Partitions)
		}
		memberID := ""
		if rg.MemberID != nil {
			memberID = *rg.MemberID
		}
		resp.Groups = append(resp.Groups, groupOffsets(ctx, s, r, rg.Group, memberID, rg.MemberEpoch, parts, req.RequireStable))
	}
	return resp, nil
}

// offsetFetchSingle answers v0-7, which fetch one group.
func offsetFetchSingle(ctx context.Context, s *Server, r *request, req *kmsg.OffsetFetchRequest, resp *kmsg.OffsetFetchResponse) {
	var parts []group.TopicPartition
	if req.Topics != nil {
		parts = []group.TopicPartition{}
	}
	for _, t := range req.Topics {
		parts = appendPartitions(parts, t.Topic, t.Partitions)
	}
	g := groupOffsets(ctx, s, r, req.Group, "", -1, parts, req.RequireStable)
	if req.Version >= 2 {
		resp.ErrorCode = g.ErrorCode
	} else if g.ErrorCode != 0 {
		// v0-1 have no group error: every requested partition carries it.
		g.Topics = offsetTopics(unansweredOffsets(parts), g.ErrorCode)
	}
	for _, t := range g.Topics {
		rt := kmsg.NewOffsetFetchResponseTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			rp := kmsg.NewOffsetFetchResponseTopicPartition()
			rp.Partition, rp.Offset, rp.LeaderEpoch, rp.Metadata, rp.ErrorCode = p.Partition, p.Offset, p.LeaderEpoch, p.Metadata, p.ErrorCode
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
}

func appendPartitions(parts []group.TopicPartition, topic string, partitions []int32) []group.TopicPartition {
	for _, p := range partitions {
		parts = append(parts, group.TopicPartition{Topic: topic, Partition: p})
	}
	return parts
}

// groupOffsets fetches one group's offsets in the v8+ response form.
// groupOffsets answers one group of an OffsetFetch. With ACLs on, as Kafka: the group
// needs DESCRIBE (GROUP_AUTHORIZATION_FAILED), and so does each topic: a named
// partition of a topic the principal may not describe answers
// TOPIC_AUTHORIZATION_FAILED, and a request for all of the group's offsets leaves
// those topics out.
func groupOffsets(ctx context.Context, s *Server, r *request, groupID, memberID string, memberEpoch int32, parts []group.TopicPartition, requireStable bool) kmsg.OffsetFetchResponseGroup {
	g := kmsg.NewOffsetFetchResponseGroup()
	g.Group = groupID
	if err := s.authorize(r, metadata.ACLOpDescribe, auth.Group(groupID)); err != nil {
		g.ErrorCode = errorCode(err)
		return g
	}
	parts, refused, refusedCode := s.describableParts(r, parts)
	gc := s.groupCoordinator()
	if gc == nil {
		g.ErrorCode = groupErrorCode(errNoCoordinator)
		return g
	}
	offsets, err := gc.FetchMemberOffsets(ctx, groupID, memberID, memberEpoch, parts)
	if err != nil {
		g.ErrorCode = groupErrorCode(err)
		return g
	}
	if parts == nil && s.authz != nil {
		offsets = slices.DeleteFunc(offsets, func(o group.CommittedOffset) bool {
			return !s.allowedQuiet(r, metadata.ACLOpDescribe, auth.Topic(o.Topic))
		})
	}
	g.Topics = offsetTopics(offsets, 0)
	if requireStable {
		markUnstable(g.Topics, offsets)
	}
	g.Topics = append(g.Topics, offsetTopics(unansweredOffsets(refused), refusedCode)...)
	return g
}

// describableParts splits the named partitions (nil: all) into those whose topic r's
// principal may describe and those it may not, with the latter's error code.
func (s *Server) describableParts(r *request, parts []group.TopicPartition) (ok, refused []group.TopicPartition, code int16) {
	check := s.topicCheck(r, metadata.ACLOpDescribe)
	if check == nil || parts == nil {
		return parts, nil, 0
	}
	ok = []group.TopicPartition{}
	for _, p := range parts {
		if err := check(p.Topic); err != nil {
			refused, code = append(refused, p), errorCode(err)
		} else {
			ok = append(ok, p)
		}
	}
	return ok, refused, code
}

// markUnstable answers UNSTABLE_OFFSET_COMMIT for partitions with a pending
// transactional offset. topics was built from offsets by offsetTopics.
func markUnstable(topics []kmsg.OffsetFetchResponseGroupTopic, offsets []group.CommittedOffset) {
	unstable := map[group.TopicPartition]bool{}
	for _, o := range offsets {
		if o.Unstable {
			unstable[group.TopicPartition{Topic: o.Topic, Partition: o.Partition}] = true
		}
	}
	for ti := range topics {
		for pi := range topics[ti].Partitions {
			p := &topics[ti].Partitions[pi]
			if unstable[group.TopicPartition{Topic: topics[ti].Topic, Partition: p.Partition}] {
				p.ErrorCode, p.Offset = kerr.UnstableOffsetCommit.Code, -1
			}
		}
	}
}

// unansweredOffsets is parts with no committed offsets, for error responses.
func unansweredOffsets(parts []group.TopicPartition) []group.CommittedOffset {
	out := make([]group.CommittedOffset, len(parts))
	for i, p := range parts {
		out[i] = group.CommittedOffset{Topic: p.Topic, Partition: p.Partition, Offset: -1, LeaderEpoch: -1}
	}
	return out
}

// offsetTopics groups offsets by topic, keeping their order.
func offsetTopics(offsets []group.CommittedOffset, code int16) []kmsg.OffsetFetchResponseGroupTopic {
	var out []kmsg.OffsetFetchResponseGroupTopic
	index := map[string]int{}
	for _, o := range offsets {
		i, ok := index[o.Topic]
		if !ok {
			i = len(out)
			index[o.Topic] = i
			t := kmsg.NewOffsetFetchResponseGroupTopic()
			t.Topic = o.Topic
			out = append(out, t)
		}
		p := kmsg.NewOffsetFetchResponseGroupTopicPartition()
		md := o.Metadata
		p.Partition, p.Offset, p.LeaderEpoch, p.Metadata, p.ErrorCode = o.Partition, o.Offset, o.LeaderEpoch, &md, code
		out[i].Partitions = append(out[i].Partitions, p)
	}
	return out
}
