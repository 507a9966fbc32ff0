package kafka

// Glue between the share group handlers (76_share_group_heartbeat.go ...
// 79_share_acknowledge.go, 90_describe_share_group_offsets.go) and internal/share.

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/runnel-io/runnel/internal/config"
	"github.com/runnel-io/runnel/internal/group"
	"github.com/runnel-io/runnel/internal/metadata"
	"github.com/runnel-io/runnel/internal/replica"
	"github.com/runnel-io/runnel/internal/share"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
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
	if v, ok := config.GroupOwnConfigs(s.leadership.Image().Configs, group)[name]; ok {
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
	if v, ok := config.GroupOwnConfigs(s.leadership.Image().Configs, group)["share.auto.offset.reset"]; ok {
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
	im := s.leadership.Image()
	if t := im.Topics[share.StateTopic]; t != nil {
		return int32(len(t.Partitions)), nil
	}
	spec := metadata.TopicSpec{
		Name: share.StateTopic, NumPartitions: shareStatePartitions, ReplicationFactor: s.internalTopicRF(im),
		Configs: map[string]string{"cleanup.policy": "compact", "min.insync.replicas": strconv.Itoa(int(min(2, s.internalTopicRF(im))))},
	}
	if err := s.admin.CreateTopics(ctx, []metadata.TopicSpec{spec}, false)[0]; err != nil && !errors.Is(err, kerr.TopicAlreadyExists) {
		return 0, err
	}
	for {
		if t := s.leadership.Image().Topics[share.StateTopic]; t != nil {
			return int32(len(t.Partitions)), nil
		}
		select {
		case <-ctx.Done():
			return 0, ctx.Err()
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// isShareGroup reports whether this node coordinates id as a share group.
func (s *Server) isShareGroup(id string) bool {
	return s.share != nil && s.share.groups.IsShareGroup(id)
}

// withShareGroups adds to a ListGroups answer the share groups this node coordinates
// whose state is one of states (case-insensitive; all when empty).
func (s *Server) withShareGroups(groups []group.GroupListing, states []string) []group.GroupListing {
	if s.share == nil {
		return groups
	}
	for _, l := range s.share.groups.List(time.Now()) {
		if len(states) > 0 && !slices.ContainsFunc(states, func(st string) bool { return strings.EqualFold(st, l.State) }) {
			continue
		}
		groups = append(groups, group.GroupListing{GroupID: l.GroupID, ProtocolType: share.ProtocolType, State: l.State, Type: share.GroupType})
	}
	slices.SortFunc(groups, func(a, b group.GroupListing) int { return strings.Compare(a.GroupID, b.GroupID) })
	return groups
}

// deleteShareGroup deletes an empty share group: its membership, then its state.
// Errors carry their Kafka code (DeleteGroups maps group errors only).
func (s *Server) deleteShareGroup(ctx context.Context, id string) error {
	if _, err := s.share.groups.Delete(id, time.Now()); err != nil {
		return shareKerr(err)
	}
	_, err := s.deleteShareGroupState(ctx, id, nil)
	return shareKerr(err)
}

// shareKerr wraps an internal/share error in its Kafka error.
func shareKerr(err error) error {
	if err == nil {
		return nil
	}
	if ke := kerr.ErrorForCode(errorCode(err)); ke != nil {
		return fmt.Errorf("%w: %v", ke, err)
	}
	return err
}

// deleteShareGroupState tombstones the share-partition state of a group this node
// coordinates no membership of (its membership is not persisted: a share group can
// outlive a coordinator move as state only); notFound is returned when there is none.
func (s *Server) deleteShareGroupState(ctx context.Context, id string, notFound error) (bool, error) {
	if s.share == nil {
		return false, notFound
	}
	ctx, cancel := context.WithTimeout(ctx, shareAdminTimeout)
	defer cancel()
	found, err := share.DeleteGroupState(ctx, s.share.parts.Store(), id)
	s.share.parts.Forget(func(k share.Key) bool { return k.Group == id })
	switch {
	case err != nil:
		return found, shareKerr(err)
	case !found:
		return false, notFound
	}
	return true, nil
}

// parseShareCoordinatorKey splits a FindCoordinator share key, GROUP:TOPIC_ID:PARTITION
// (Kafka's SharePartitionKey: the topic id in Kafka's base64 form). The group is what
// precedes the last two fields, so a group id holding ':' still parses.
func parseShareCoordinatorKey(key string) (share.Key, error) {
	bad := func(why string) (share.Key, error) {
		return share.Key{}, fmt.Errorf("share coordinator key %q is not GROUP:TOPIC_ID:PARTITION: %s", key, why)
	}
	i := strings.LastIndexByte(key, ':')
	if i < 0 {
		return bad("no ':'")
	}
	j := strings.LastIndexByte(key[:i], ':')
	if j <= 0 {
		return bad("no group or topic id")
	}
	p, err := strconv.ParseInt(key[i+1:], 10, 32)
	if err != nil || p < 0 {
		return bad("partition " + strconv.Quote(key[i+1:]))
	}
	id, err := base64.RawURLEncoding.DecodeString(key[j+1 : i])
	if err != nil || len(id) != 16 {
		return bad("topic id " + strconv.Quote(key[j+1:i]))
	}
	k := share.Key{Group: key[:j], Partition: int32(p)}
	copy(k.TopicID[:], id)
	return k, nil
}

// findShareCoordinator answers key type 2: the leader of the __share_group_state
// partition the share partition's state is written to (created on first use).
func (s *Server) findShareCoordinator(ctx context.Context, key string, c kmsg.FindCoordinatorResponseCoordinator) kmsg.FindCoordinatorResponseCoordinator {
	k, err := parseShareCoordinatorKey(key)
	if err != nil {
		msg := err.Error()
		c.ErrorCode, c.ErrorMessage = kerr.InvalidRequest.Code, &msg
		return c
	}
	n, err := s.EnsureShareStateTopic(ctx)
	im := s.leadership.Image()
	t := im.Topics[share.StateTopic]
	if err != nil || t == nil {
		msg := share.StateTopic + " is being created"
		if err != nil {
			msg = "creating " + share.StateTopic + ": " + err.Error()
		}
		c.ErrorCode, c.ErrorMessage = kerr.CoordinatorNotAvailable.Code, &msg
		return c
	}
	return s.partitionLeader(ctx, c, im, t, share.StateTopic, share.StatePartition(k.Group, n))
}

// internalTopicDenial refuses a client's produce to __share_group_state, which only
// this cluster's share-state writer (share.KgoStore, its client id) appends to: as
// Kafka refuses appends to its internal topics from clients.
func (s *Server) internalTopicDenial(r *request, topic string) error {
	if topic != share.StateTopic || r.clientID == share.StoreClientID {
		return nil
	}
	return fmt.Errorf("%w: cannot append to internal topic %s", kerr.InvalidTopicException, topic)
}
