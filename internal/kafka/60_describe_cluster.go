package kafka

// DescribeCluster: v0-2. The registered, unfenced brokers, the cluster id and the active
// controller. v1's EndpointType must be 1 (brokers); controller endpoints (2) are
// answered UNSUPPORTED_ENDPOINT_TYPE. v2 (KIP-1073) with IncludeFencedBrokers also lists
// the fenced ones, IsFenced set (a node that died, stopped or is not yet unfenced).
// IncludeClusterAuthorizedOperations answers the cluster operations the principal may
// perform (0 without DESCRIBE on the cluster), else -2147483648 (authorized_ops.go).
// A request carrying the Runnel tagged field LinkOpTag is a link command (links.go).

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() { regKey(60, 0, 2, handleDescribeCluster) }

func handleDescribeCluster(ctx context.Context, s *Server, r *request) (kmsg.Response, error) {
	req := r.kreq.(*kmsg.DescribeClusterRequest)
	if resp, ok := s.linkOp(ctx, r, req); ok { // links.go: a link command
		return resp, nil
	}
	resp := req.ResponseKind().(*kmsg.DescribeClusterResponse)
	if req.Version >= 1 && req.EndpointType != 1 {
		resp.ErrorCode = kerr.UnsupportedEndpointType.Code
		return resp, nil
	}
	im := s.leadership.Image()
	resp.ClusterID = im.ClusterID
	resp.ControllerID = int32(s.admin.ControllerID())
	resp.EndpointType = 1
	if req.IncludeClusterAuthorizedOperations {
		resp.ClusterAuthorizedOperations = s.clusterAuthorizedOperations(r)
	}
	for _, id := range im.BrokerIDs() {
		b := im.Brokers[id]
		if b.Fenced && !req.IncludeFencedBrokers {
			continue
		}
		host, port, ok := s.listenerEndpoint(ctx, b)
		if !ok {
			continue // b has no listener of the client's listener's name (listeners.go)
		}
		rb := kmsg.NewDescribeClusterResponseBroker()
		rb.NodeID, rb.Host, rb.Port, rb.IsFenced = int32(b.ID), host, port, b.Fenced
		if b.Rack != "" {
			rack := b.Rack
			rb.Rack = &rack
		}
		resp.Brokers = append(resp.Brokers, rb)
	}
	return resp, nil
}
