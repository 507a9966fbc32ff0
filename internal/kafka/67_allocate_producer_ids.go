package kafka

// AllocateProducerIDs: v0 (KIP-730). A broker that is not the active controller asks
// it for a block of producer ids, which it then hands out to InitProducerId requests
// itself. BrokerEpoch -1 skips the epoch check. Errors: NOT_CONTROLLER,
// BROKER_ID_NOT_REGISTERED, STALE_BROKER_EPOCH.

import (
	"context"

	"github.com/runnel-io/runnel/internal/auth"
	"github.com/runnel-io/runnel/internal/metadata"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() { regKey(67, 0, 0, handleAllocateProducerIDs) }

func handleAllocateProducerIDs(ctx context.Context, s *Server, r *request) (kmsg.Response, error) {
	req := r.kreq.(*kmsg.AllocateProducerIDsRequest)
	resp := req.ResponseKind().(*kmsg.AllocateProducerIDsResponse)
	// With ACLs on, as Kafka: CLUSTER_ACTION on the cluster (nodes only).
	if err := s.authorize(r, metadata.ACLOpClusterAction, auth.Cluster); err != nil {
		resp.ErrorCode = errorCode(err)
		return resp, nil
	}
	start, n, err := s.controllerAPI().AllocateProducerIDs(ctx, metadata.NodeID(req.BrokerID), req.BrokerEpoch)
	resp.ErrorCode = errorCode(err)
	if err == nil {
		resp.ProducerIDStart, resp.ProducerIDLen = start, n
	}
	return resp, nil
}
