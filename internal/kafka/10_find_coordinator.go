package kafka

// FindCoordinator: v0-6 (v4+ batches keys, KIP-699).
//
// Key type 0 (group): the coordinator is the leader of the group's __consumer_offsets
// partition, abs(javaStringHashCode(group)) % partitions. The first lookup creates
// __consumer_offsets (offsets.topic.num.partitions partitions, replication factor
// min(offsets.topic.replication.factor, live brokers), cleanup.policy=compact) and
// answers COORDINATOR_NOT_AVAILABLE until the partition has a leader; clients retry.
// Key type 1 (transaction): the same over __transaction_state (50 partitions, Kafka's
// transaction.state.log.num.partitions default; replication factor as the offsets
// topic's). Key type 2 (share, v6+), key GROUP:TOPIC_ID:PARTITION: the share
// coordinator of that share partition, the leader of the group's __share_group_state
// partition (share.go findShareCoordinator), the topic created on first use; a key
// that does not parse is INVALID_REQUEST. Other types are INVALID_REQUEST. With ACLs
// on, as Kafka: DESCRIBE on the group (GROUP_AUTHORIZATION_FAILED), on the
// transactional id (TRANSACTIONAL_ID_AUTHORIZATION_FAILED), CLUSTER_ACTION on the
// cluster for a share key (an inter-broker lookup in Kafka), checked per key before
// anything is created.

import (
	"context"
	"errors"
	"strconv"

	"github.com/runnel-io/runnel/internal/auth"
	"github.com/runnel-io/runnel/internal/group"
	"github.com/runnel-io/runnel/internal/metadata"
	"github.com/runnel-io/runnel/internal/txn"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() { regKey(10, 0, 6, handleFindCoordinator) }

func handleFindCoordinator(ctx context.Context, s *Server, r *request) (kmsg.Response, error) {
	req := r.kreq.(*kmsg.FindCoordinatorRequest)
	resp := req.ResponseKind().(*kmsg.FindCoordinatorResponse)
	if req.Version >= 4 {
		for _, key := range req.CoordinatorKeys {
			resp.Coordinators = append(resp.Coordinators, s.findCoordinator(ctx, r, key, req.CoordinatorType))
		}
		return resp, nil
	}
	c := s.findCoordinator(ctx, r, req.CoordinatorKey, req.CoordinatorType)
	resp.ErrorCode, resp.ErrorMessage = c.ErrorCode, c.ErrorMessage
	resp.NodeID, resp.Host, resp.Port = c.NodeID, c.Host, c.Port
	return resp, nil
}

func (s *Server) findCoordinator(ctx context.Context, r *request, key string, keyType int8) kmsg.FindCoordinatorResponseCoordinator {
	c := kmsg.NewFindCoordinatorResponseCoordinator()
	c.Key, c.NodeID, c.Port = key, -1, -1
	fail := func(e *kerr.Error, msg string) kmsg.FindCoordinatorResponseCoordinator {
		c.ErrorCode, c.ErrorMessage = e.Code, &msg
		return c
	}
	switch keyType {
	case 0:
		if err := s.authorize(r, metadata.ACLOpDescribe, auth.Group(key)); err != nil {
			return fail(kerr.GroupAuthorizationFailed, *reasonMessage(err))
		}
	case 1:
		if err := s.authorize(r, metadata.ACLOpDescribe, auth.TransactionalID(key)); err != nil {
			return fail(kerr.TransactionalIDAuthorizationFailed, *reasonMessage(err))
		}
		return s.findTxnCoordinator(ctx, key, c)
	case 2:
		if r.version < 6 {
			return fail(kerr.InvalidRequest, "coordinator type 2 (share) needs FindCoordinator v6")
		}
		if err := s.authorize(r, metadata.ACLOpClusterAction, auth.Cluster); err != nil {
			return fail(kerr.ClusterAuthorizationFailed, *reasonMessage(err))
		}
		return s.findShareCoordinator(ctx, key, c)
	default:
		return fail(kerr.InvalidRequest, "unknown coordinator type "+strconv.Itoa(int(keyType)))
	}
	gc := s.groupCoordinator()
	if gc == nil {
		return fail(kerr.CoordinatorNotAvailable, "the group coordinator is not running")
	}
	im := s.leadership.Image()
	t := im.Topics[group.OffsetsTopic]
	if t == nil {
		if err := s.createOffsetsTopic(ctx, im, gc.NumPartitions()); err != nil {
			return fail(kerr.CoordinatorNotAvailable, "creating "+group.OffsetsTopic+": "+err.Error())
		}
		im = s.leadership.Image()
		if t = im.Topics[group.OffsetsTopic]; t == nil {
			return fail(kerr.CoordinatorNotAvailable, group.OffsetsTopic+" is being created")
		}
	}
	return s.partitionLeader(ctx, c, im, t, group.OffsetsTopic, gc.PartitionFor(key))
}

// partitionLeader answers c with the leader of partition p of topic t, at its endpoint
// of the client's listener.
func (s *Server) partitionLeader(ctx context.Context, c kmsg.FindCoordinatorResponseCoordinator, im *metadata.Image, t *metadata.Topic, topic string, p int32) kmsg.FindCoordinatorResponseCoordinator {
	fail := func(msg string) kmsg.FindCoordinatorResponseCoordinator {
		c.ErrorCode, c.ErrorMessage = kerr.CoordinatorNotAvailable.Code, &msg
		return c
	}
	if int(p) >= len(t.Partitions) {
		return fail(topic + " has fewer partitions than configured")
	}
	// Never name a coordinator that does not answer while the controller may be
	// moving its partition: the client would wait on it, not ask again.
	if newer := s.leadership.AnsweringLeader(ctx, im, metadata.TopicPartition{Topic: topic, Partition: p}); newer != im {
		im = newer
		if t = im.Topics[topic]; t == nil || int(p) >= len(t.Partitions) {
			return fail(topic + " changed while the leader of partition " + strconv.Itoa(int(p)) + " was awaited; ask again")
		}
	}
	b, ok := im.Brokers[t.Partitions[p].Leader]
	if !ok || b.Fenced {
		return fail("partition " + strconv.Itoa(int(p)) + " of " + topic + " has no leader")
	}
	host, port, ok := s.listenerEndpoint(ctx, b)
	if !ok {
		return fail("the leader of partition " + strconv.Itoa(int(p)) + " of " + topic + ", node " + strconv.Itoa(int(b.ID)) +
			", has no listener named " + listenerOf(ctx))
	}
	c.NodeID, c.Host, c.Port = int32(b.ID), host, port
	return c
}

// findTxnCoordinator answers key type 1, creating __transaction_state on first use.
func (s *Server) findTxnCoordinator(ctx context.Context, key string, c kmsg.FindCoordinatorResponseCoordinator) kmsg.FindCoordinatorResponseCoordinator {
	fail := func(msg string) kmsg.FindCoordinatorResponseCoordinator {
		c.ErrorCode, c.ErrorMessage = kerr.CoordinatorNotAvailable.Code, &msg
		return c
	}
	if s.txns == nil {
		return fail("the transaction coordinator is not running")
	}
	im := s.leadership.Image()
	t := im.Topics[txn.StateTopic]
	if t == nil {
		spec := metadata.TopicSpec{Name: txn.StateTopic, NumPartitions: s.txns.NumPartitions(), ReplicationFactor: s.internalTopicRF(im),
			Configs: map[string]string{"cleanup.policy": "compact", "compression.type": "producer"}}
		if err := s.admin.CreateTopics(ctx, []metadata.TopicSpec{spec}, false)[0]; err != nil && !errors.Is(err, kerr.TopicAlreadyExists) {
			return fail("creating " + txn.StateTopic + ": " + err.Error())
		}
		if im = s.leadership.Image(); im.Topics[txn.StateTopic] == nil {
			return fail(txn.StateTopic + " is being created")
		}
		t = im.Topics[txn.StateTopic]
	}
	return s.partitionLeader(ctx, c, im, t, txn.StateTopic, s.txns.PartitionFor(key))
}

// internalTopicRF is offsets.topic.replication.factor capped by the live brokers.
func (s *Server) internalTopicRF(im *metadata.Image) int16 {
	live := 0
	for _, b := range im.Brokers {
		if !b.Fenced {
			live++
		}
	}
	return max(min(s.cfg.Broker.OffsetsTopicReplicationFactor, int16(live)), 1)
}

// createOffsetsTopic creates __consumer_offsets; another request creating it first is
// not an error.
func (s *Server) createOffsetsTopic(ctx context.Context, im *metadata.Image, partitions int32) error {
	rf := s.cfg.Broker.OffsetsTopicReplicationFactor
	live := 0
	for _, b := range im.Brokers {
		if !b.Fenced {
			live++
		}
	}
	rf = max(min(rf, int16(live)), 1)
	spec := metadata.TopicSpec{
		Name: group.OffsetsTopic, NumPartitions: partitions, ReplicationFactor: rf,
		Configs: map[string]string{"cleanup.policy": "compact", "compression.type": "producer"},
	}
	if sb := s.cfg.Broker.OffsetsTopicSegmentBytes; sb > 0 {
		spec.Configs["segment.bytes"] = strconv.Itoa(int(sb))
	}
	switch err := s.admin.CreateTopics(ctx, []metadata.TopicSpec{spec}, false)[0]; {
	case err == nil:
		s.logger.Info("created "+group.OffsetsTopic, "partitions", partitions, "replication_factor", rf)
	case !errors.Is(err, kerr.TopicAlreadyExists):
		s.logger.Warn("cannot create "+group.OffsetsTopic, "partitions", partitions, "replication_factor", rf, "err", err)
		return err
	}
	return nil
}
