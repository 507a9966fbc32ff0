package kafka

// Glue between the share group handlers (76_share_group_heartbeat.go ...
// 79_share_acknowledge.go, 90_describe_share_group_offsets.go) and internal/share.

import (
	"context"
	"errors"
	"strconv"
	"time"

	"github.com/runnel-io/runnel/internal/config"
	"github.com/runnel-io/runnel/internal/metadata"
	"github.com/runnel-io/runnel/internal/replica"
	"github.com/runnel-io/runnel/internal/share"
	"github.com/twmb/franz-go/pkg/kerr"
)

// shareState is the node's share groups: membership (the groups this node
// coordinates) and the share partitions of the data partitions it leads.
type shareState struct {
	groups *share.Groups
	parts  *share.Manager
}

// SetShare installs share groups over groups (membership) and store (durable
// share-partition state); until then the share APIs answer COORDINATOR_NOT_AVAILABLE
// (membership) or are refused. Call it before Serve.
func (s *Server) SetShare(groups *share.Groups, store share.Store) {
	s.share = &shareState{groups: groups, parts: share.NewManager(share.ManagerConfig{
		Store: store, Limits: s.shareLimits, AutoOffsetReset: s.shareAutoOffsetReset,
	})}
}

// ShareManager is the node's share partitions (nil before SetShare), for metrics.
func (s *Server) ShareManager() *share.Manager {
	if s.share == nil {
		return nil
	}
	return s.share.parts
}

// groupConfig is the group's own value of a group config, else def.
func (s *Server) groupConfigInt(group, name string, def int64) int64 {
	if v, ok := config.GroupOwnConfigs(s.admin.Image().Configs, group)[name]; ok {
		if n, err := strconv.ParseInt(v, 10, 64); err == nil {
			return n
		}
	}
	return def
}

// shareLimits are a group's share-partition limits: group.share.* and the group's own
// share.record.lock.duration.ms.
func (s *Server) shareLimits(group string) share.Limits {
	b := s.cfg.Broker
	return share.Limits{
		LockDuration:  time.Duration(s.groupConfigInt(group, "share.record.lock.duration.ms", int64(b.GroupShareRecordLockDurationMs))) * time.Millisecond,
		DeliveryLimit: int16(b.GroupShareDeliveryCountLimit),
		MaxInFlight:   int(b.GroupSharePartitionMaxRecordLocks),
	}
}

// shareAutoOffsetReset is the group's share.auto.offset.reset (latest by default).
func (s *Server) shareAutoOffsetReset(group string) string {
	if v, ok := config.GroupOwnConfigs(s.admin.Image().Configs, group)["share.auto.offset.reset"]; ok {
		return v
	}
	return "latest"
}

// dataLog adapts a led replica to share.DataLog.
type dataLog struct{ p *replica.Partition }

func (d dataLog) LeaderEpoch() int32 { return d.p.LeaderEpoch() }
func (d dataLog) Bounds() (int64, int64) {
	return d.p.Log().LogStartOffset(), d.p.HighWatermark()
}

// shareErrorCode maps internal/share's errors (and the replica's) to Kafka codes.
func shareErrorCode(err error) int16 {
	switch {
	case err == nil:
		return 0
	case errors.Is(err, share.ErrNotCoordinator):
		return kerr.NotCoordinator.Code
	case errors.Is(err, share.ErrUnknownMemberID):
		return kerr.UnknownMemberID.Code
	case errors.Is(err, share.ErrFencedMemberEpoch):
		return kerr.FencedMemberEpoch.Code
	case errors.Is(err, share.ErrGroupMaxSize):
		return kerr.GroupMaxSizeReached.Code
	case errors.Is(err, share.ErrNotShareGroup):
		return kerr.GroupIDNotFound.Code
	case errors.Is(err, share.ErrGroupNotEmpty):
		return kerr.NonEmptyGroup.Code
	case errors.Is(err, share.ErrInvalidRecordState):
		return kerr.InvalidRecordState.Code
	case errors.Is(err, share.ErrInvalidRequest):
		return kerr.InvalidRequest.Code
	case errors.Is(err, share.ErrInvalidSessionEpoch):
		return kerr.InvalidShareSessionEpoch.Code
	case errors.Is(err, share.ErrSessionNotFound):
		return kerr.ShareSessionNotFound.Code
	case errors.Is(err, share.ErrStore):
		return kerr.CoordinatorNotAvailable.Code
	}
	return errorCode(err)
}

// shareTopicPartition resolves a topic id and partition for a share request.
func shareTopicPartition(im *metadata.Image, id [16]byte, p int32) (metadata.TopicPartition, *kerr.Error) {
	t := im.TopicByID(id)
	if t == nil {
		return metadata.TopicPartition{}, kerr.UnknownTopicID
	}
	if p < 0 || int(p) >= len(t.Partitions) {
		return metadata.TopicPartition{}, kerr.UnknownTopicOrPartition
	}
	return metadata.TopicPartition{Topic: t.Name, Partition: p}, nil
}

// shareKey is the share partition of group on a topic partition.
func shareKey(group string, id [16]byte, p int32) share.Key {
	return share.Key{Group: group, TopicID: id, Partition: p}
}

// shareStatePartitions is the partition count of __share_group_state (Kafka's
// share.coordinator.state.topic.num.partitions default).
const shareStatePartitions = 50

// EnsureShareStateTopic creates __share_group_state (compacted, replicated as
// __consumer_offsets) when missing and returns its partition count.
func (s *Server) EnsureShareStateTopic(ctx context.Context) (int32, error) {
	im := s.admin.Image()
	if t := im.Topics[share.StateTopic]; t != nil {
		return int32(len(t.Partitions)), nil
	}
	spec := TopicSpec{
		Name: share.StateTopic, NumPartitions: shareStatePartitions, ReplicationFactor: s.internalTopicRF(im),
		Configs: map[string]string{"cleanup.policy": "compact", "min.insync.replicas": strconv.Itoa(int(min(2, s.internalTopicRF(im))))},
	}
	if err := s.admin.CreateTopics(ctx, []TopicSpec{spec}, false)[0]; err != nil && !errors.Is(err, kerr.TopicAlreadyExists) {
		return 0, err
	}
	for {
		if t := s.admin.Image().Topics[share.StateTopic]; t != nil {
			return int32(len(t.Partitions)), nil
		}
		select {
		case <-ctx.Done():
			return 0, ctx.Err()
		case <-time.After(10 * time.Millisecond):
		}
	}
}
