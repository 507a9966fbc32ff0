package group

import "errors"

// Errors returned by the Coordinator, in requests' results. internal/kafka maps each to
// the Kafka error code of the same name.
var (
	// ErrNotCoordinator: this node does not lead the group's __consumer_offsets partition
	// (or stopped leading it while the request waited). The client looks the
	// coordinator up again.
	ErrNotCoordinator = errors.New("not the coordinator of this group")
	// ErrCoordinatorNotAvailable: the group is being removed, or an append to
	// __consumer_offsets failed in a way a retry may fix (not enough replicas, timeout).
	ErrCoordinatorNotAvailable = errors.New("group coordinator not available")
	// ErrCoordinatorLoadInProgress: this node leads the partition but is still replaying
	// it; retriable.
	ErrCoordinatorLoadInProgress = errors.New("group coordinator is loading the group")
	// ErrInvalidGroupID: the group id is empty.
	ErrInvalidGroupID = errors.New("invalid group id")
	// ErrUnknownMemberID: the member id is not (or no longer) in the group; the member
	// joins again with an empty id.
	ErrUnknownMemberID = errors.New("unknown member id")
	// ErrMemberIDRequired (KIP-394): a new dynamic member must join again with the member
	// id returned alongside this error.
	ErrMemberIDRequired = errors.New("member id required")
	// ErrIllegalGeneration: the request names another generation than the group's.
	ErrIllegalGeneration = errors.New("illegal generation")
	// ErrRebalanceInProgress: the group is rebalancing; the member joins again.
	ErrRebalanceInProgress = errors.New("rebalance in progress")
	// ErrFencedInstanceID (KIP-345): another member now holds this group.instance.id.
	ErrFencedInstanceID = errors.New("fenced instance id")
	// ErrInconsistentGroupProtocol: the member's protocol type differs from the group's,
	// or it shares no protocol with the other members, or it offers none.
	ErrInconsistentGroupProtocol = errors.New("inconsistent group protocol")
	// ErrInvalidSessionTimeout: the session timeout is outside
	// [group.min.session.timeout.ms, group.max.session.timeout.ms].
	ErrInvalidSessionTimeout = errors.New("invalid session timeout")
	// ErrGroupMaxSizeReached: the group already has group.max.size members.
	ErrGroupMaxSizeReached = errors.New("group max size reached")
	// ErrGroupIDNotFound: DeleteGroups, OffsetDelete or DescribeGroups (v6+) of a group
	// this coordinator does not know.
	ErrGroupIDNotFound = errors.New("group id not found")
	// ErrNonEmptyGroup: DeleteGroups of a group that still has members, or OffsetDelete
	// on an active group whose protocol type is not "consumer".
	ErrNonEmptyGroup = errors.New("group is not empty")
	// ErrGroupSubscribedToTopic: OffsetDelete of a partition of a topic the active group
	// consumes.
	ErrGroupSubscribedToTopic = errors.New("group is subscribed to the topic")
	// ErrOffsetMetadataTooLarge: the commit's metadata string exceeds
	// offset.metadata.max.bytes.
	ErrOffsetMetadataTooLarge = errors.New("offset metadata too large")
	// ErrInvalidCommitOffsetSize: the commit does not fit in one __consumer_offsets batch.
	ErrInvalidCommitOffsetSize = errors.New("invalid commit offset size")
	// ErrClosed: the coordinator is shutting down.
	ErrClosed = errors.New("group coordinator closed")
)
