package kafka

// ListPartitionReassignments: v0 (KIP-455).
//
// The reassignments in progress, from this node's metadata image (every node has
// applied a reassignment's start before AlterPartitionReassignments answers): for each
// partition its replicas (the target followed by those being removed), the replicas
// being added and those being removed. Null topics lists every reassignment; named
// partitions that are not being reassigned are left out, as Kafka does.

import (
	"context"

	"github.com/runnel-io/runnel/internal/auth"
	"github.com/runnel-io/runnel/internal/metadata"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() { regKey(46, 0, 0, handleListPartitionReassignments) }

func handleListPartitionReassignments(ctx context.Context, s *Server, r *request) (kmsg.Response, error) {
	req := r.kreq.(*kmsg.ListPartitionReassignmentsRequest)
	resp := req.ResponseKind().(*kmsg.ListPartitionReassignmentsResponse)
	// With ACLs on, as Kafka: DESCRIBE on the cluster.
	if err := s.authorize(r, metadata.ACLOpDescribe, auth.Cluster); err != nil {
		resp.ErrorCode, resp.ErrorMessage = errorCode(err), reasonMessage(err)
		return resp, nil
	}
	im := s.leadership.Image()
	add := func(topic string, partition int32, p metadata.Partition) {
		if !p.Reassigning() {
			return
		}
		if n := len(resp.Topics); n == 0 || resp.Topics[n-1].Topic != topic {
			t := kmsg.NewListPartitionReassignmentsResponseTopic()
			t.Topic = topic
			resp.Topics = append(resp.Topics, t)
		}
		rp := kmsg.NewListPartitionReassignmentsResponseTopicPartition()
		rp.Partition = partition
		rp.Replicas, rp.AddingReplicas, rp.RemovingReplicas = int32s(p.Replicas), int32s(p.AddingReplicas), int32s(p.RemovingReplicas)
		t := &resp.Topics[len(resp.Topics)-1]
		t.Partitions = append(t.Partitions, rp)
	}
	if req.Topics == nil {
		for _, name := range im.TopicNames() {
			for i, p := range im.Topics[name].Partitions {
				add(name, int32(i), p)
			}
		}
		return resp, nil
	}
	for _, rt := range req.Topics {
		for _, part := range rt.Partitions {
			if p, ok := im.Partition(metadata.TopicPartition{Topic: rt.Topic, Partition: part}); ok {
				add(rt.Topic, part, p)
			}
		}
	}
	return resp, nil
}

// int32s converts node ids for the wire; never nil (an empty array, not null).
func int32s(ids []metadata.NodeID) []int32 {
	out := make([]int32, len(ids))
	for i, id := range ids {
		out[i] = int32(id)
	}
	return out
}
