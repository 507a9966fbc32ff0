package kafka

// Glue between the group API handlers (08_offset_commit.go ... 47_offset_delete.go)
// and the group coordinator (internal/group).

import (
	"context"
	"net"

	"github.com/runnel-io/runnel/internal/group"
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

// clientHost is the client's address as Kafka reports it in DescribeGroups ("/1.2.3.4").
func clientHost(r *request) string {
	host, _, err := net.SplitHostPort(r.conn.remote)
	if err != nil {
		host = r.conn.remote
	}
	return "/" + host
}
