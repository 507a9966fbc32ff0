package kafka

// AddRaftVoter: v0-1 (KIP-853; v1 adds AckWhenCommitted, KIP-1186).
//
// Promotes a node to a voter of the metadata quorum: it must be registered (it joined
// as a broker, and so as a Raft non-voter), live (unfenced) and caught up. The
// controller waits up to TimeoutMillis for it to report every metadata record
// committed when the request arrived, then changes the Raft configuration, and
// answers once the change is committed (AckWhenCommitted=false is answered the same
// way: hashicorp/raft acknowledges a configuration change only on commit). Errors:
// DUPLICATE_VOTER (a voter already), INVALID_REQUEST naming why (not registered, not
// in the quorum, fenced, a CONTROLLER listener that is not its Raft address),
// REQUEST_TIMED_OUT (it did not catch up in time), INCONSISTENT_CLUSTER_ID.
// VoterDirectoryID is ignored (Runnel has no directory ids). The listener named
// CONTROLLER, if any, must be the node's Raft address; other listeners are ignored.
// Any node accepts it and forwards it to the active controller.

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

func init() { regKey(80, 0, 1, handleAddRaftVoter) }

func handleAddRaftVoter(ctx context.Context, s *Server, r *request) (kmsg.Response, error) {
	req := r.kreq.(*kmsg.AddRaftVoterRequest)
	resp := req.ResponseKind().(*kmsg.AddRaftVoterResponse)
	// With ACLs on, as Kafka: ALTER on the cluster.
	if err := s.authorize(r, metadata.ACLOpAlter, auth.Cluster); err != nil {
		resp.ErrorCode, resp.ErrorMessage = errorCode(err), reasonMessage(err)
		return resp, nil
	}
	ctx, cancel := withRequestTimeout(ctx, req.TimeoutMillis)
	defer cancel()
	addr := ""
	for _, l := range req.Listeners {
		if l.Name == ControllerListenerName {
			addr = net.JoinHostPort(l.Host, strconv.Itoa(int(l.Port)))
		}
	}
	err := s.checkQuorumClusterID(req.ClusterID)
	if err == nil {
		err = s.admin.AddRaftVoter(ctx, metadata.NodeID(req.VoterID), addr)
	}
	resp.ErrorCode, resp.ErrorMessage = errorCode(err), reasonMessage(err)
	return resp, nil
}

// checkQuorumClusterID refuses a voter change meant for another cluster (a nil or
// empty id is not checked).
func (s *Server) checkQuorumClusterID(id *string) error {
	if id == nil || *id == "" {
		return nil
	}
	if have := s.leadership.Image().ClusterID; *id != have {
		return fmt.Errorf("%w: the request names cluster %s, this is cluster %s", kerr.InconsistentClusterID, *id, have)
	}
	return nil
}
