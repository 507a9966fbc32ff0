package kafka

// UpdateRaftVoter: v0 (KIP-853).
//
// A voter of the metadata quorum that restarts with another Raft (controller
// listener) address tells the active controller, which records the new address in
// the Raft configuration: Raft's leader sends to its followers, so without it the
// voter would never hear from the quorum again. The listener named CONTROLLER is the
// new address (INVALID_REQUEST without one). Errors: VOTER_NOT_FOUND (not a voter),
// INVALID_REQUEST (no CONTROLLER listener, or an address another member has),
// INCONSISTENT_CLUSTER_ID. CurrentLeaderEpoch, VoterDirectoryID and the
// KRaftVersionFeature are not checked (Runnel has no directory ids, one kraft
// version). CurrentLeader carries the active controller's id, Raft term and Raft
// address. Any node accepts it and forwards it to the active controller.

import (
	"context"
	"fmt"
	"net"
	"strconv"

	"github.com/runnel-io/runnel/internal/auth"
	"github.com/runnel-io/runnel/internal/metadata"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() { regKey(82, 0, 0, handleUpdateRaftVoter) }

// QuorumLeader is the metadata quorum's leader as UpdateRaftVoter answers it.
type QuorumLeader struct {
	ID       metadata.NodeID
	Epoch    int32  // the Raft term
	RaftAddr string // host:port, "" if unknown
}

func handleUpdateRaftVoter(ctx context.Context, s *Server, r *request) (kmsg.Response, error) {
	req := r.kreq.(*kmsg.UpdateRaftVoterRequest)
	resp := req.ResponseKind().(*kmsg.UpdateRaftVoterResponse)
	// With ACLs on, as Kafka: CLUSTER_ACTION on the cluster (nodes only).
	if err := s.authorize(r, metadata.ACLOpClusterAction, auth.Cluster); err != nil {
		resp.ErrorCode = errorCode(err)
		return resp, nil
	}
	ctx, cancel := withRequestTimeout(ctx, 0)
	defer cancel()
	addr := ""
	for _, l := range req.Listeners {
		if l.Name == ControllerListenerName {
			addr = net.JoinHostPort(l.Host, strconv.Itoa(int(l.Port)))
		}
	}
	err := s.checkQuorumClusterID(req.ClusterID)
	if err == nil && addr == "" {
		err = fmt.Errorf("%w: UpdateRaftVoter of node %d names no %s listener", kerr.InvalidRequest, req.VoterID, ControllerListenerName)
	}
	var leader QuorumLeader
	if err == nil {
		leader, err = s.admin.UpdateRaftVoter(ctx, metadata.NodeID(req.VoterID), addr)
	}
	if err != nil {
		s.logger.Info("UpdateRaftVoter refused", "voter", req.VoterID, "addr", addr, "err", err)
	}
	resp.ErrorCode = errorCode(err)
	resp.CurrentLeader.LeaderID, resp.CurrentLeader.LeaderEpoch = -1, -1
	if err == nil {
		resp.CurrentLeader.LeaderID, resp.CurrentLeader.LeaderEpoch = int32(leader.ID), leader.Epoch
		if host, port, perr := net.SplitHostPort(leader.RaftAddr); perr == nil {
			if p, perr := strconv.ParseUint(port, 10, 16); perr == nil {
				resp.CurrentLeader.Host, resp.CurrentLeader.Port = host, int32(p)
			}
		}
	}
	return resp, nil
}
