package kafka

// Glue between the group API handlers (08_offset_commit.go ... 47_offset_delete.go)
// and the group coordinator (internal/group).

import (
	"context"
	"errors"
	"net"

	"github.com/runnel-io/runnel/internal/group"
	"github.com/twmb/franz-go/pkg/kerr"
)

// GroupCoordinator is what the group API handlers need; *group.Coordinator implements it.
type GroupCoordinator interface {
	PartitionFor(groupID string) int32
	NumPartitions() int32
	Join(ctx context.Context, req group.JoinRequest) group.JoinResult
	Sync(ctx context.Context, req group.SyncRequest) group.SyncResult
	Heartbeat(ctx context.Context, req group.HeartbeatRequest) error
	Leave(ctx context.Context, groupID string, members []group.LeaveMember) ([]error, error)
	CommitOffsets(ctx context.Context, req group.CommitRequest) []error
	FetchOffsets(ctx context.Context, groupID string, partitions []group.TopicPartition) ([]group.CommittedOffset, error)
	DeleteOffsets(ctx context.Context, groupID string, partitions []group.TopicPartition) ([]error, error)
	DeleteGroup(ctx context.Context, groupID string) error
	DescribeGroup(ctx context.Context, groupID string) (group.GroupDescription, error)
	ListGroups(states []string) ([]group.GroupListing, error)
	// KIP-848 consumer groups (68_consumer_group_heartbeat.go, 69_...describe.go) and
	// OffsetFetch v9's member check.
	ConsumerHeartbeat(ctx context.Context, req group.ConsumerHeartbeatRequest) group.ConsumerHeartbeatResult
	DescribeConsumerGroup(ctx context.Context, groupID string) (group.ConsumerGroupDescription, error)
	FetchMemberOffsets(ctx context.Context, groupID, memberID string, memberEpoch int32, partitions []group.TopicPartition) ([]group.CommittedOffset, error)
}

// SetGroupCoordinator installs the group coordinator; until then group APIs answer
// COORDINATOR_NOT_AVAILABLE. Call it before Serve.
func (s *Server) SetGroupCoordinator(c GroupCoordinator) { s.groups = c }

func (s *Server) groupCoordinator() GroupCoordinator { return s.groups }

// errNoCoordinator answers group requests on a server without a coordinator.
var errNoCoordinator = group.ErrCoordinatorNotAvailable

// groupErrorTable maps the group coordinator's errors to Kafka codes; errors.go maps
// everything else.
var groupErrorTable = []struct {
	err  error
	kerr *kerr.Error
}{
	{group.ErrNotCoordinator, kerr.NotCoordinator},
	{group.ErrCoordinatorNotAvailable, kerr.CoordinatorNotAvailable},
	{group.ErrCoordinatorLoadInProgress, kerr.CoordinatorLoadInProgress},
	{group.ErrInvalidGroupID, kerr.InvalidGroupID},
	{group.ErrUnknownMemberID, kerr.UnknownMemberID},
	{group.ErrMemberIDRequired, kerr.MemberIDRequired},
	{group.ErrIllegalGeneration, kerr.IllegalGeneration},
	{group.ErrRebalanceInProgress, kerr.RebalanceInProgress},
	{group.ErrFencedInstanceID, kerr.FencedInstanceID},
	{group.ErrInconsistentGroupProtocol, kerr.InconsistentGroupProtocol},
	{group.ErrInvalidSessionTimeout, kerr.InvalidSessionTimeout},
	{group.ErrGroupMaxSizeReached, kerr.GroupMaxSizeReached},
	{group.ErrGroupIDNotFound, kerr.GroupIDNotFound},
	{group.ErrNonEmptyGroup, kerr.NonEmptyGroup},
	{group.ErrGroupSubscribedToTopic, kerr.GroupSubscribedToTopic},
	{group.ErrOffsetMetadataTooLarge, kerr.OffsetMetadataTooLarge},
	{group.ErrInvalidCommitOffsetSize, kerr.InvalidCommitOffsetSize},
	{group.ErrClosed, kerr.NotCoordinator},
	{group.ErrFencedMemberEpoch, kerr.FencedMemberEpoch},
	{group.ErrStaleMemberEpoch, kerr.StaleMemberEpoch},
	{group.ErrUnreleasedInstanceID, kerr.UnreleasedInstanceID},
	{group.ErrUnsupportedAssignor, kerr.UnsupportedAssignor},
	{group.ErrInvalidRegularExpression, kerr.InvalidRegularExpression},
	{group.ErrInvalidRequest, kerr.InvalidRequest},
	{group.ErrUnsupportedVersion, kerr.UnsupportedVersion},
	// The server is stopping while a request waits.
	{context.Canceled, kerr.NotCoordinator},
}

// groupErrorCode is errorCode for the group APIs.
func groupErrorCode(err error) int16 {
	if err == nil {
		return 0
	}
	for _, e := range groupErrorTable {
		if errors.Is(err, e.err) {
			return e.kerr.Code
		}
	}
	return errorCode(err)
}

// clientHost is the client's address as Kafka reports it in DescribeGroups ("/1.2.3.4").
func clientHost(r *request) string {
	host, _, err := net.SplitHostPort(r.conn.remote)
	if err != nil {
		host = r.conn.remote
	}
	return "/" + host
}
