package kafka

// OffsetDelete: v0.
//
// Deletes a group's committed offsets for some partitions (tombstones in
// __consumer_offsets). In an active consumer group, partitions of subscribed topics
// are refused with GROUP_SUBSCRIBED_TO_TOPIC; an active group of another protocol type
// is NON_EMPTY_GROUP; an unknown group GROUP_ID_NOT_FOUND.

import (
	"context"

	"github.com/runnel-io/runnel/internal/group"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() { regKey(47, 0, 0, handleOffsetDelete) }

func handleOffsetDelete(ctx context.Context, s *Server, r *request) (kmsg.Response, error) {
	req := r.kreq.(*kmsg.OffsetDeleteRequest)
	resp := req.ResponseKind().(*kmsg.OffsetDeleteResponse)
	gc := s.groupCoordinator()
	if gc == nil {
		resp.ErrorCode = groupErrorCode(errNoCoordinator)
		return resp, nil
	}
	var parts []group.TopicPartition
	for _, t := range req.Topics {
		for _, p := range t.Partitions {
			parts = append(parts, group.TopicPartition{Topic: t.Topic, Partition: p.Partition})
		}
	}
	errs, err := gc.DeleteOffsets(ctx, req.Group, parts)
	if err != nil {
		resp.ErrorCode = groupErrorCode(err)
		return resp, nil
	}
	i := 0
	for _, t := range req.Topics {
		rt := kmsg.NewOffsetDeleteResponseTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			rp := kmsg.NewOffsetDeleteResponseTopicPartition()
			rp.Partition, rp.ErrorCode = p.Partition, groupErrorCode(errs[i])
			i++
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp, nil
}
