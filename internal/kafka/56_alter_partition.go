package kafka

// AlterPartition: v0-3 (KIP-497, KIP-704, KIP-841, KIP-903), sent by a partition
// leader to the active controller to change the ISR.
//
// Topics are named (v0-1) or identified by id (v2+; an unknown id is UNKNOWN_TOPIC_ID).
// v3 carries each new ISR member's broker epoch: one that is not the member's current
// epoch (-1 skips the check) makes the change INELIGIBLE_REPLICA. A top-level
// BrokerEpoch that is not the leader's current one is STALE_BROKER_EPOCH for the whole
// request. Each partition gets its own error (FENCED_LEADER_EPOCH,
// INVALID_UPDATE_VERSION, INELIGIBLE_REPLICA, INVALID_REQUEST,
// UNKNOWN_TOPIC_OR_PARTITION) or its new state. LeaderRecoveryState is always 0
// (recovered). A node that is not the active controller answers NOT_CONTROLLER at the
// top level.

import (
	"context"
	"errors"

	"github.com/runnel-io/runnel/internal/auth"
	"github.com/runnel-io/runnel/internal/metadata"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() { regKey(56, 0, 3, handleAlterPartition) }

func handleAlterPartition(ctx context.Context, s *Server, r *request) (kmsg.Response, error) {
	req := r.kreq.(*kmsg.AlterPartitionRequest)
	resp := req.ResponseKind().(*kmsg.AlterPartitionResponse)
	// With ACLs on, as Kafka: CLUSTER_ACTION on the cluster (nodes only).
	if err := s.authorize(r, metadata.ACLOpClusterAction, auth.Cluster); err != nil {
		resp.ErrorCode = errorCode(err)
		return resp, nil
	}
	if s.admin.ControllerID() != s.cfg.NodeID {
		resp.ErrorCode = kerr.NotController.Code
		return resp, nil
	}
	im := s.leadership.Image()
	leader := metadata.NodeID(req.BrokerID)
	if b, ok := im.Brokers[leader]; ok && req.BrokerEpoch >= 0 && b.Epoch != req.BrokerEpoch {
		resp.ErrorCode = kerr.StaleBrokerEpoch.Code
		return resp, nil
	}
	for _, rt := range req.Topics {
		st := kmsg.NewAlterPartitionResponseTopic()
		st.Topic, st.TopidID = rt.Topic, rt.TopicID
		name := rt.Topic
		if req.Version >= 2 {
			name = ""
			if t := im.TopicByID(rt.TopicID); t != nil {
				name = t.Name
			}
		}
		for _, rp := range rt.Partitions {
			sp := s.alterPartition(ctx, im, req.Version, name, leader, rp)
			if sp.ErrorCode == kerr.NotController.Code {
				resp.ErrorCode = kerr.NotController.Code
			}
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	return resp, nil
}

// alterPartition answers one partition; topic is "" for an unknown topic id.
func (s *Server) alterPartition(ctx context.Context, im *metadata.Image, version int16, topic string,
	leader metadata.NodeID, rp kmsg.AlterPartitionRequestTopicPartition) kmsg.AlterPartitionResponseTopicPartition {
	sp := kmsg.NewAlterPartitionResponseTopicPartition()
	sp.Partition = rp.Partition
	if topic == "" {
		sp.ErrorCode = kerr.UnknownTopicID.Code
		return sp
	}
	isr, err := requestedISR(im, version, rp)
	if err == nil {
		var p metadata.Partition
		tp := metadata.TopicPartition{Topic: topic, Partition: rp.Partition}
		p, err = s.controllerAPI().AlterPartition(ctx, tp, leader, rp.LeaderEpoch, rp.PartitionEpoch, isr)
		if err == nil {
			sp.LeaderID, sp.LeaderEpoch, sp.PartitionEpoch = int32(p.Leader), p.LeaderEpoch, p.PartitionEpoch
			sp.ISR = nodeIDs(p.ISR)
			return sp
		}
	}
	sp.ErrorCode = errorCode(err)
	return sp
}

// errStaleMemberEpoch marks a v3 ISR member whose broker epoch is not current.
var errStaleMemberEpoch = errors.New("ISR member with a stale broker epoch")

// requestedISR is the partition's proposed ISR; v3 members' epochs are checked.
func requestedISR(im *metadata.Image, version int16, rp kmsg.AlterPartitionRequestTopicPartition) ([]metadata.NodeID, error) {
	if version < 3 {
		isr := make([]metadata.NodeID, len(rp.NewISR))
		for i, id := range rp.NewISR {
			isr[i] = metadata.NodeID(id)
		}
		return isr, nil
	}
	isr := make([]metadata.NodeID, len(rp.NewEpochISR))
	for i, m := range rp.NewEpochISR {
		isr[i] = metadata.NodeID(m.BrokerID)
		if b, ok := im.Brokers[isr[i]]; m.BrokerEpoch >= 0 && (!ok || b.Epoch != m.BrokerEpoch) {
			return nil, errors.Join(kerr.IneligibleReplica, errStaleMemberEpoch)
		}
	}
	return isr, nil
}
