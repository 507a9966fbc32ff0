package kafka

// AlterPartitionReassignments: v0-1 (KIP-455).
//
// Moves partitions to new replica sets, carried out by the controller: the new
// replicas are added and follow the leader, join the ISR once caught up, and the
// reassignment completes (the old replicas removed, the leader moved if it was one of
// them) as soon as every target replica is in the ISR. A null replica list cancels the
// partition's reassignment (NO_REASSIGNMENT_IN_PROGRESS when there is none). Errors per
// partition: UNKNOWN_TOPIC_OR_PARTITION, INVALID_REPLICA_ASSIGNMENT (empty, a node twice,
// a node that is not registered, or a change that would leave no in-sync leader).
// AllowReplicationFactorChange (v1) is accepted either way: Runnel lets a reassignment
// change the replication factor, as Kafka did before KIP-860.

import (
	"context"

	"github.com/runnel-io/runnel/internal/auth"
	"github.com/runnel-io/runnel/internal/metadata"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() { regKey(45, 0, 1, handleAlterPartitionReassignments) }

func handleAlterPartitionReassignments(ctx context.Context, s *Server, r *request) (kmsg.Response, error) {
	req := r.kreq.(*kmsg.AlterPartitionAssignmentsRequest)
	resp := req.ResponseKind().(*kmsg.AlterPartitionAssignmentsResponse)
	// With ACLs on, as Kafka: ALTER on the cluster.
	if err := s.authorize(r, metadata.ACLOpAlter, auth.Cluster); err != nil {
		resp.ErrorCode, resp.ErrorMessage = errorCode(err), reasonMessage(err)
		return resp, nil
	}
	resp.AllowReplicationFactorChange = req.AllowReplicationFactorChange
	ctx, cancel := withRequestTimeout(ctx, req.TimeoutMillis)
	defer cancel()
	var changes []Reassignment
	for _, rt := range req.Topics {
		for _, rp := range rt.Partitions {
			ch := Reassignment{TP: metadata.TopicPartition{Topic: rt.Topic, Partition: rp.Partition}}
			if rp.Replicas != nil {
				ch.Target = make([]metadata.NodeID, len(rp.Replicas))
				for i, id := range rp.Replicas {
					ch.Target[i] = metadata.NodeID(id)
				}
			}
			changes = append(changes, ch)
		}
	}
	errs := s.admin.AlterPartitionReassignments(ctx, changes)
	i := 0
	for _, rt := range req.Topics {
		st := kmsg.NewAlterPartitionAssignmentsResponseTopic()
		st.Topic = rt.Topic
		for _, rp := range rt.Partitions {
			sp := kmsg.NewAlterPartitionAssignmentsResponseTopicPartition()
			sp.Partition = rp.Partition
			sp.ErrorCode, sp.ErrorMessage = errorCode(errs[i]), reasonMessage(errs[i])
			st.Partitions = append(st.Partitions, sp)
			i++
		}
		resp.Topics = append(resp.Topics, st)
	}
	return resp, nil
}
