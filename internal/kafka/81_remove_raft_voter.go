package kafka

// RemoveRaftVoter: v0 (KIP-853).
//
// Removes a node from the metadata quorum's voters: it becomes a Raft non-voter and
// stays a broker, and UnregisterBroker (decommission) can remove it for good. If it is
// the active controller, the leadership first moves to another live voter, which then
// makes the change. Errors: VOTER_NOT_FOUND (not a voter), INVALID_REQUEST naming why
// (it is the last voter, or too few of the voters left are alive to form a majority),
// INCONSISTENT_CLUSTER_ID. VoterDirectoryID is ignored (Runnel has no directory ids).
// Any node accepts it and forwards it to the active controller.

import (
	"context"

	"github.com/runnel-io/runnel/internal/auth"
	"github.com/runnel-io/runnel/internal/metadata"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() { regKey(81, 0, 0, handleRemoveRaftVoter) }

func handleRemoveRaftVoter(ctx context.Context, s *Server, r *request) (kmsg.Response, error) {
	req := r.kreq.(*kmsg.RemoveRaftVoterRequest)
	resp := req.ResponseKind().(*kmsg.RemoveRaftVoterResponse)
	// With ACLs on, as Kafka: ALTER on the cluster.
	if err := s.authorize(r, metadata.ACLOpAlter, auth.Cluster); err != nil {
		resp.ErrorCode, resp.ErrorMessage = errorCode(err), reasonMessage(err)
		return resp, nil
	}
	ctx, cancel := withRequestTimeout(ctx, 0)
	defer cancel()
	err := s.checkQuorumClusterID(req.ClusterID)
	if err == nil {
		err = s.admin.RemoveRaftVoter(ctx, metadata.NodeID(req.VoterID))
	}
	resp.ErrorCode, resp.ErrorMessage = errorCode(err), reasonMessage(err)
	return resp, nil
}
