package kafka

// OffsetDelete: v0.
//
// Deletes a group's committed offsets for some partitions (tombstones in
// __consumer_offsets). In an active consumer group, partitions of subscribed topics
// are refused with GROUP_SUBSCRIBED_TO_TOPIC; an active group of another protocol type
// is NON_EMPTY_GROUP; an unknown group GROUP_ID_NOT_FOUND.

import (
	"context"

	"github.com/runnel-io/runnel/internal/auth"
	"github.com/runnel-io/runnel/internal/group"
	"github.com/runnel-io/runnel/internal/metadata"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() { regKey(47, 0, 0, handleOffsetDelete) }

func handleOffsetDelete(ctx context.Context, s *Server, r *request) (kmsg.Response, error) {
	req := r.kreq.(*kmsg.OffsetDeleteRequest)
	resp := req.ResponseKind().(*kmsg.OffsetDeleteResponse)
	// With ACLs on, as Kafka: DELETE on the group, READ on each topic.
	if err := s.authorize(r, metadata.ACLOpDelete, auth.Group(req.Group)); err != nil {
		resp.ErrorCode = errorCode(err)
		return resp, nil
	}
	topicDenied := s.topicCheck(r, metadata.ACLOpRead)
	gc := s.groupCoordinator()
	if gc == nil {
		resp.ErrorCode = groupErrorCode(errNoCoordinator)
		return resp, nil
	}
	var parts []group.TopicPartition
	var denials []error // per partition of the request, in order; nil: all allowed
	for _, t := range req.Topics {
		var denial error
		if topicDenied != nil {
			denial = topicDenied(t.Topic)
		}
		for _, p := range t.Partitions {
			if topicDenied != nil {
				denials = append(denials, denial)
			}
			if denial == nil {
				parts = append(parts, group.TopicPartition{Topic: t.Topic, Partition: p.Partition})
			}
		}
	}
	errs, err := gc.DeleteOffsets(ctx, req.Group, parts)
	if err != nil {
		resp.ErrorCode = groupErrorCode(err)
		return resp, nil
	}
	i, k := 0, 0 // i indexes errs (the partitions asked of the coordinator), k the request's
	for _, t := range req.Topics {
		rt := kmsg.NewOffsetDeleteResponseTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			rp := kmsg.NewOffsetDeleteResponseTopicPartition()
			rp.Partition = p.Partition
			if denials != nil && denials[k] != nil {
				rp.ErrorCode = errorCode(denials[k])
			} else {
				rp.ErrorCode = groupErrorCode(errs[i])
				i++
			}
			k++
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp, nil
}
