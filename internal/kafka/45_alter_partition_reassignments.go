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
//
// A Runnel tagged field, ReassignmentThrottleTag, asks for the moves it starts to be
// throttled (KIP-73) by throttles the controller sets in the same metadata change and
// removes when the last move ends (controller/balance_throttle.go), so that nothing an
// operator runs meanwhile (kafka-reassign-partitions.sh --verify, runnel reassign
// status) can leave a copy unthrottled. Kafka's own clients never send it.

import (
	"context"
	"fmt"

	"github.com/runnel-io/runnel/internal/auth"
	"github.com/runnel-io/runnel/internal/metadata"
	"github.com/twmb/franz-go/pkg/kerr"
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
	throttle, err := reassignmentThrottle(req)
	if err != nil {
		resp.ErrorCode, resp.ErrorMessage = errorCode(err), reasonMessage(err)
		return resp, nil
	}
	var changes []metadata.Reassignment
	for _, rt := range req.Topics {
		for _, rp := range rt.Partitions {
			ch := metadata.Reassignment{TP: metadata.TopicPartition{Topic: rt.Topic, Partition: rp.Partition}, Throttle: throttle}
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

// ReassignmentThrottleTag is the tagged field of AlterPartitionReassignments
// (runnel_tags.go) that carries a throttle for the moves the request starts.
const ReassignmentThrottleTag = 10_002

// ReassignmentThrottle is ReassignmentThrottleTag's payload.
type ReassignmentThrottle struct {
	BytesPerSec int64 `json:"throttle_bytes_per_sec"`
}

// SetReassignmentThrottle asks req's moves to be throttled to rate bytes/s.
func SetReassignmentThrottle(req *kmsg.AlterPartitionAssignmentsRequest, rate int64) {
	SetJSONTag(&req.UnknownTags, ReassignmentThrottleTag, ReassignmentThrottle{BytesPerSec: rate})
}

// reassignmentThrottle reads req's ReassignmentThrottleTag (0 when absent).
func reassignmentThrottle(req *kmsg.AlterPartitionAssignmentsRequest) (int64, error) {
	var t ReassignmentThrottle
	_, err := JSONTag(&req.UnknownTags, ReassignmentThrottleTag, &t)
	if err == nil && t.BytesPerSec < 0 {
		err = fmt.Errorf("the reassignment throttle (tag %d) is %d bytes/s", ReassignmentThrottleTag, t.BytesPerSec)
	}
	if err != nil {
		return 0, fmt.Errorf("%w: %w; want a non-negative rate", kerr.InvalidRequest, err)
	}
	return t.BytesPerSec, nil
}
