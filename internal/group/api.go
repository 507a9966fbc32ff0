package group

import "time"

// Protocol is one assignment protocol a member offers in JoinGroup ("range",
// "cooperative-sticky", ...) with its opaque metadata (for consumers, the subscription).
type Protocol struct {
	Name     string
	Metadata []byte
}

// JoinRequest is a JoinGroup.
type JoinRequest struct {
	GroupID string
	// MemberID is empty on a member's first join.
	MemberID string
	// InstanceID is the group.instance.id of a static member (KIP-345), nil for dynamic.
	InstanceID   *string
	ProtocolType string
	// Protocols, in the member's order of preference.
	Protocols        []Protocol
	SessionTimeout   time.Duration
	RebalanceTimeout time.Duration
	ClientID         string
	ClientHost       string
	// RequireKnownMemberID (JoinGroup v4+, KIP-394): a new dynamic member is first given
	// an id with ErrMemberIDRequired and joins with it.
	RequireKnownMemberID bool
	// SupportsSkipAssignment (JoinGroup v9+, KIP-814): a static leader that restarts
	// is told to skip assigning instead of being hidden from the leadership.
	SupportsSkipAssignment bool
	Reason                 string
	// Topics resolves the subscription of a classic member joining a consumer group
	// (migration.go); nil refuses such a join.
	Topics TopicImage
}

// JoinMember is one member as the leader sees it in its join response.
type JoinMember struct {
	MemberID   string
	InstanceID *string
	Metadata   []byte
}

// JoinResult is a JoinGroup response. With an error, only MemberID is meaningful (the
// id to use next with ErrMemberIDRequired) and Generation is -1.
type JoinResult struct {
	Err            error
	MemberID       string
	Generation     int32
	ProtocolType   string
	Protocol       string
	LeaderID       string
	SkipAssignment bool
	// Members is filled for the leader only.
	Members []JoinMember
}

// Assignment is the leader's assignment for one member, in SyncGroup.
type Assignment struct {
	MemberID   string
	Assignment []byte
}

// SyncRequest is a SyncGroup.
type SyncRequest struct {
	GroupID    string
	MemberID   string
	InstanceID *string
	Generation int32
	// ProtocolType and Protocol (v5+) are checked against the group's when set.
	ProtocolType *string
	Protocol     *string
	// Assignments is sent by the leader only.
	Assignments []Assignment
}

// SyncResult is a SyncGroup response.
type SyncResult struct {
	Err          error
	ProtocolType string
	Protocol     string
	Assignment   []byte
}

// HeartbeatRequest is a Heartbeat.
type HeartbeatRequest struct {
	GroupID    string
	MemberID   string
	InstanceID *string
	Generation int32
}

// LeaveMember is one member of a LeaveGroup: by member id, or (v3+) by instance id
// with an empty member id.
type LeaveMember struct {
	MemberID   string
	InstanceID *string
	Reason     string
}

// OffsetCommit is one partition of an OffsetCommit.
type OffsetCommit struct {
	Topic string
	// TopicID is the topic's id; consumer groups check assignment epochs by it.
	TopicID     [16]byte
	Partition   int32
	Offset      int64
	LeaderEpoch int32
	Metadata    *string
}

// CommitRequest is an OffsetCommit. Generation -1 with an empty member id is a commit
// from outside the group protocol (admin tools, "simple" consumers), accepted only while
// the group has no members.
type CommitRequest struct {
	// Version is the OffsetCommit version: a consumer group member must commit with
	// v9+ (KIP-848), where Generation is its member epoch.
	Version    int16
	GroupID    string
	MemberID   string
	InstanceID *string
	Generation int32
	Offsets    []OffsetCommit
}

// TopicPartition names one partition.
type TopicPartition struct {
	Topic     string
	Partition int32
}

// CommittedOffset is one partition's committed offset; Offset is -1 when none.
type CommittedOffset struct {
	Topic       string
	Partition   int32
	Offset      int64
	LeaderEpoch int32
	Metadata    string
	// Unstable: a transaction has a pending offset for the partition (TxnOffsetCommit
	// without its marker yet); OffsetFetch with RequireStable answers
	// UNSTABLE_OFFSET_COMMIT.
	Unstable bool
}

// MemberDescription is one member in DescribeGroups.
type MemberDescription struct {
	MemberID   string
	InstanceID *string
	ClientID   string
	ClientHost string
	// Metadata and Assignment are set while the group is Stable.
	Metadata   []byte
	Assignment []byte
}

// GroupDescription is one group in DescribeGroups.
type GroupDescription struct {
	GroupID      string
	State        string
	ProtocolType string
	// Protocol is set while the group is Stable.
	Protocol string
	Members  []MemberDescription
}

// GroupListing is one group in ListGroups.
type GroupListing struct {
	GroupID      string
	ProtocolType string
	State        string
	// Type is "classic" or "consumer" (KIP-848), ListGroups v5's GroupType.
	Type string
}

// Group types, as ListGroups v5 names them.
const (
	TypeClassic  = "classic"
	TypeConsumer = "consumer"
)
