package kafka

// WriteTxnMarkers: v0-1 (broker to broker).
//
// A transaction coordinator on another node asks this partition leader to append
// COMMIT or ABORT markers. Each partition is answered once its marker is replicated to
// the ISR (acks=all), with its own error code: NOT_LEADER_OR_FOLLOWER, a fenced
// producer epoch (INVALID_PRODUCER_EPOCH) or coordinator epoch
// (TRANSACTION_COORDINATOR_FENCED).

import (
	"context"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/runnel-io/runnel/internal/auth"
	"github.com/runnel-io/runnel/internal/metadata"
	"github.com/runnel-io/runnel/internal/replica"
)

func init() { regKey(27, 0, 1, handleWriteTxnMarkers) }

func handleWriteTxnMarkers(ctx context.Context, s *Server, r *request) (kmsg.Response, error) {
	req := r.kreq.(*kmsg.WriteTxnMarkersRequest)
	resp := req.ResponseKind().(*kmsg.WriteTxnMarkersResponse)
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	// With ACLs on, as Kafka: CLUSTER_ACTION on the cluster (sent by coordinators),
	// else every partition answers CLUSTER_AUTHORIZATION_FAILED.
	denial := s.authorize(r, metadata.ACLOpClusterAction, auth.Cluster)
	for _, m := range req.Markers {
		rm := kmsg.NewWriteTxnMarkersResponseMarker()
		rm.ProducerID = m.ProducerID
		for _, t := range m.Topics {
			rt := kmsg.NewWriteTxnMarkersResponseMarkerTopic()
			rt.Topic = t.Topic
			for _, p := range t.Partitions {
				rp := kmsg.NewWriteTxnMarkersResponseMarkerTopicPartition()
				rp.Partition = p
				tp := metadata.TopicPartition{Topic: t.Topic, Partition: p}
				if denial != nil {
					rp.ErrorCode = errorCode(denial)
				} else {
					rp.ErrorCode = txnErrorCode(s.WriteMarker(ctx, tp, m.ProducerID, m.ProducerEpoch, m.CoordinatorEpoch, m.Committed), false)
				}
				rt.Partitions = append(rt.Partitions, rp)
			}
			rm.Topics = append(rm.Topics, rt)
		}
		resp.Markers = append(resp.Markers, rm)
	}
	return resp, nil
}

// WriteMarker appends a marker to a partition this node leads; the transaction
// coordinator calls it directly for local partitions. A marker on __consumer_offsets
// also settles the transaction's pending offsets in the group coordinator.
func (s *Server) WriteMarker(ctx context.Context, tp metadata.TopicPartition, pid int64, epoch int16, coordinatorEpoch int32, commit bool) error {
	p, err := s.leaderPartition(tp)
	if err != nil {
		return err
	}
	t := replica.ControlAbort
	if commit {
		t = replica.ControlCommit
	}
	if _, err = p.AppendTxnMarker(ctx, t, pid, epoch, coordinatorEpoch); err != nil {
		return err
	}
	return s.completeTxnOffsets(ctx, tp, pid, commit)
}
