package group

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/runnel-io/runnel/internal/metadata"
)

// Errors of the consumer group protocol (KIP-848); internal/kafka maps each to the
// Kafka code of the same name.
var (
	// ErrFencedMemberEpoch: the heartbeat's member epoch is ahead of or behind the
	// member's; the member abandons its partitions and rejoins with epoch 0.
	ErrFencedMemberEpoch = errors.New("fenced member epoch")
	// ErrStaleMemberEpoch: an offset commit or fetch names another member epoch than
	// the member's (a commit at an older epoch is accepted for partitions the member
	// already held then).
	ErrStaleMemberEpoch = errors.New("stale member epoch")
	// ErrUnreleasedInstanceID: a static member joins with an instance id another
	// active member still holds; that member must leave (epoch -2) first.
	ErrUnreleasedInstanceID = errors.New("unreleased instance id")
	// ErrUnsupportedAssignor: the member asks for an assignor not in
	// group.consumer.assignors.
	ErrUnsupportedAssignor = errors.New("unsupported assignor")
	// ErrInvalidRegularExpression: the subscribed regex does not compile (RE2).
	ErrInvalidRegularExpression = errors.New("invalid regular expression")
	// ErrInvalidRequest: a heartbeat that breaks the protocol's rules (its message says
	// which).
	ErrInvalidRequest = errors.New("invalid request")
	// ErrUnsupportedVersion: an OffsetCommit below v9 from a member of a consumer group.
	ErrUnsupportedVersion = errors.New("unsupported version")
	// ErrNotClassicGroup: DescribeGroups of a consumer group (Kafka answers
	// GROUP_ID_NOT_FOUND, "Group G is not a classic group.").
	ErrNotClassicGroup = fmt.Errorf("%w: not a classic group", ErrGroupIDNotFound)
)

// TopicPartitions names partitions of one topic by id.
type TopicPartitions struct {
	TopicID    [16]byte
	Partitions []int32
}

// TopicImage is the view of the cluster's topics a consumer group assigns from.
type TopicImage interface {
	// TopicByName returns a topic's id and partition count.
	TopicByName(name string) (id [16]byte, partitions int32, ok bool)
	// TopicByID returns a topic's name and partition count.
	TopicByID(id [16]byte) (name string, partitions int32, ok bool)
	// TopicNames lists every topic, sorted (regex subscriptions match against them).
	TopicNames() []string
	// Version changes whenever the topics may have changed.
	Version() uint64
}

// ImageTopics is the TopicImage of a metadata image.
func ImageTopics(im *metadata.Image) TopicImage { return imageTopics{im} }

type imageTopics struct{ im *metadata.Image }

func (t imageTopics) TopicByName(name string) ([16]byte, int32, bool) {
	if tp := t.im.Topics[name]; tp != nil {
		return tp.ID, int32(len(tp.Partitions)), true
	}
	return [16]byte{}, 0, false
}

func (t imageTopics) TopicByID(id [16]byte) (string, int32, bool) {
	if tp := t.im.TopicByID(id); tp != nil {
		return tp.Name, int32(len(tp.Partitions)), true
	}
	return "", 0, false
}

func (t imageTopics) TopicNames() []string { return t.im.TopicNames() }
func (t imageTopics) Version() uint64      { return t.im.Offset }

// ConsumerHeartbeatRequest is a ConsumerGroupHeartbeat (KIP-848). Nil fields are
// "unchanged since the last heartbeat", as on the wire.
type ConsumerHeartbeatRequest struct {
	GroupID  string
	MemberID string
	// MemberEpoch: 0 joins, -1 leaves, -2 leaves temporarily (static members), any
	// other value is the member's current epoch.
	MemberEpoch int32
	InstanceID  *string
	RackID      *string
	// RebalanceTimeout is negative when unchanged.
	RebalanceTimeout     time.Duration
	SubscribedTopicNames []string
	SubscribedTopicRegex *string
	ServerAssignor       *string
	// Owned are the partitions the member holds; nil when not reported.
	Owned      []TopicPartitions
	ClientID   string
	ClientHost string
	// Topics is the metadata the assignment is computed from.
	Topics TopicImage
	// GroupConfigs are the group's own configs (consumer.session.timeout.ms,
	// consumer.heartbeat.interval.ms), overriding the broker's.
	GroupConfigs map[string]string
}

// ConsumerHeartbeatResult is a ConsumerGroupHeartbeat response.
type ConsumerHeartbeatResult struct {
	Err error
	// ErrMessage is Kafka's message for Err, when it has one.
	ErrMessage        string
	MemberID          string
	MemberEpoch       int32
	HeartbeatInterval time.Duration
	// Assignment is set (non-nil) when the response carries the member's assignment.
	Assignment []TopicPartitions
}

// ConsumerMemberDescription is one member in ConsumerGroupDescribe.
type ConsumerMemberDescription struct {
	MemberID, ClientID, ClientHost string
	InstanceID, RackID             *string
	MemberEpoch                    int32
	State                          string
	SubscribedTopicNames           []string
	SubscribedTopicRegex           *string
	Assignment, TargetAssignment   []TopicPartitions
	PendingRevocation              []TopicPartitions
	// Classic: the member speaks the classic protocol (JoinGroup; migration.go).
	Classic bool
}

// ConsumerGroupDescription is one group in ConsumerGroupDescribe.
type ConsumerGroupDescription struct {
	GroupID         string
	State           string
	GroupEpoch      int32
	AssignmentEpoch int32
	Assignor        string
	Members         []ConsumerMemberDescription
}

func heartbeatError(err error, msg string) ConsumerHeartbeatResult {
	return ConsumerHeartbeatResult{Err: err, ErrMessage: msg}
}

// ConsumerHeartbeat handles a ConsumerGroupHeartbeat. It returns once the records of
// any change it made are replicated.
func (c *Coordinator) ConsumerHeartbeat(ctx context.Context, req ConsumerHeartbeatRequest) ConsumerHeartbeatResult {
	if err, msg := validateHeartbeat(&req); err != nil {
		return heartbeatError(err, msg)
	}
	res, err := call(ctx, c, req.GroupID, req.MemberEpoch == 0, func(md *groupMetadata, now time.Time, reply func(ConsumerHeartbeatResult)) {
		md.consumerHeartbeat(now, req, reply)
	})
	switch {
	case errors.Is(err, errNoGroup) && req.MemberEpoch < 0:
		return heartbeatError(ErrUnknownMemberID, "")
	case errors.Is(err, errNoGroup):
		return heartbeatError(ErrUnknownMemberID, fmt.Sprintf("Member %s is not a member of group %s.", req.MemberID, req.GroupID))
	case err != nil:
		return heartbeatError(err, "")
	}
	return res
}

// validateHeartbeat is Kafka's throwIfConsumerGroupHeartbeatRequestIsInvalid.
func validateHeartbeat(req *ConsumerHeartbeatRequest) (error, string) {
	switch {
	case req.GroupID == "":
		return ErrInvalidGroupID, "GroupId can't be empty."
	case req.MemberID == "":
		return ErrInvalidRequest, "MemberId can't be empty."
	case req.MemberEpoch < leaveEpochStatic:
		return ErrInvalidRequest, "MemberEpoch is invalid."
	case req.InstanceID != nil && *req.InstanceID == "":
		return ErrInvalidRequest, "InstanceId can't be empty."
	case req.RackID != nil && *req.RackID == "":
		return ErrInvalidRequest, "RackId can't be empty."
	case req.MemberEpoch == leaveEpochStatic && req.InstanceID == nil:
		return ErrInvalidRequest, "InstanceId can't be null."
	}
	if req.MemberEpoch == 0 {
		switch {
		case req.RebalanceTimeout < 0:
			return ErrInvalidRequest, "RebalanceTimeoutMs must be provided in first request."
		case req.Owned == nil || len(req.Owned) > 0:
			return ErrInvalidRequest, "TopicPartitions must be empty when (re-)joining."
		case req.SubscribedTopicNames == nil && req.SubscribedTopicRegex == nil:
			return ErrInvalidRequest, "SubscribedTopicNames or SubscribedTopicRegex must be set in first request."
		}
	}
	return nil, ""
}

// DescribeConsumerGroup returns a consumer group's description: ErrGroupIDNotFound
// when the group does not exist or is a classic group.
func (c *Coordinator) DescribeConsumerGroup(ctx context.Context, groupID string) (ConsumerGroupDescription, error) {
	type result struct {
		d  ConsumerGroupDescription
		ok bool
	}
	r, err := call(ctx, c, groupID, false, func(md *groupMetadata, _ time.Time, reply func(result)) {
		if md.consumer == nil || md.phase == Dead {
			reply(result{})
			return
		}
		reply(result{md.consumer.describe(md.id), true})
	})
	if errors.Is(err, errNoGroup) || err == nil && !r.ok {
		return ConsumerGroupDescription{GroupID: groupID}, ErrGroupIDNotFound
	}
	return r.d, err
}

// describe is the group's ConsumerGroupDescribe entry, members in id order.
func (cg *consumerGroup) describe(id string) ConsumerGroupDescription {
	d := ConsumerGroupDescription{GroupID: id, State: cg.state(), GroupEpoch: cg.groupEpoch,
		AssignmentEpoch: cg.assignmentEpoch, Assignor: cg.assignor}
	for _, mid := range cg.sortedMemberIDs() {
		m := cg.members[mid]
		md := ConsumerMemberDescription{
			MemberID: m.id, ClientID: m.clientID, ClientHost: m.clientHost, InstanceID: m.instanceID,
			RackID: m.rackID, MemberEpoch: m.epoch, State: m.state.String(),
			SubscribedTopicNames: slices.Clone(m.subscribedNames),
			Assignment:           m.assigned.sorted(), TargetAssignment: cg.target[m.id].sorted(),
			PendingRevocation: m.pending.sorted(), Classic: m.classic != nil,
		}
		if m.regex != "" {
			r := m.regex
			md.SubscribedTopicRegex = &r
		}
		d.Members = append(d.Members, md)
	}
	return d
}

// consumerSettings are the settings a consumer group member gets: the group's own
// configs over the broker's.
func (l limits) consumerSettings(groupConfigs map[string]string) (session, heartbeat time.Duration) {
	session, heartbeat = l.consumerSessionTimeout, l.consumerHeartbeatInterval
	if v, ok := groupConfigs["consumer.session.timeout.ms"]; ok {
		if n, err := strconv.Atoi(v); err == nil && n > 0 {
			session = time.Duration(n) * time.Millisecond
		}
	}
	if v, ok := groupConfigs["consumer.heartbeat.interval.ms"]; ok {
		if n, err := strconv.Atoi(v); err == nil && n > 0 {
			heartbeat = time.Duration(n) * time.Millisecond
		}
	}
	return session, heartbeat
}
