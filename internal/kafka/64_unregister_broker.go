package kafka

// UnregisterBroker: v0 (KIP-500, KIP-631).
//
// Removes a node from the cluster for good, the last step of a decommission. Refused
// (INVALID_REQUEST with the reason) while the node runs, holds a replica or is a
// metadata voter; BROKER_ID_NOT_REGISTERED for an unknown node. Carried out by the
// controller (forwarded by any node).

import (
	"context"

	"github.com/runnel-io/runnel/internal/auth"
	"github.com/runnel-io/runnel/internal/metadata"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() { regKey(64, 0, 0, handleUnregisterBroker) }

func handleUnregisterBroker(ctx context.Context, s *Server, r *request) (kmsg.Response, error) {
	req := r.kreq.(*kmsg.UnregisterBrokerRequest)
	resp := req.ResponseKind().(*kmsg.UnregisterBrokerResponse)
	// With ACLs on, as Kafka: ALTER on the cluster.
	if err := s.authorize(r, metadata.ACLOpAlter, auth.Cluster); err != nil {
		resp.ErrorCode, resp.ErrorMessage = errorCode(err), reasonMessage(err)
		return resp, nil
	}
	ctx, cancel := withRequestTimeout(ctx, 30_000)
	defer cancel()
	err := s.admin.UnregisterBroker(ctx, metadata.NodeID(req.BrokerID))
	resp.ErrorCode, resp.ErrorMessage = errorCode(err), reasonMessage(err)
	return resp, nil
}
