package kafka

// BrokerRegistration: v0-4 (KIP-631), sent by a node to the active controller when it
// starts.
//
// Every listener not named CONTROLLER is one of the broker's Kafka listeners, its
// endpoint under that name, and the first one is the inter-broker listener other nodes
// dial (a node sends its own first); a CONTROLLER listener carries the node's Raft
// address, and a node outside the metadata
// quorum is added there as a non-voter. The incarnation id tells a retry (same id, same
// epoch) from a restart (new epoch). Features, IsMigratingZkBroker, LogDirs and
// PreviousBrokerEpoch are ignored. The broker is registered fenced; its heartbeats
// unfence it once it has caught up with the metadata. On any node but the active
// controller: NOT_CONTROLLER. Another cluster's id: INCONSISTENT_CLUSTER_ID. With ACLs on,
// CLUSTER_ACTION on the cluster, as Kafka's controller.

import (
	"context"
	"encoding/hex"
	"net"
	"strconv"

	"github.com/runnel-io/runnel/internal/auth"
	"github.com/runnel-io/runnel/internal/metadata"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() { regKey(62, 0, 4, handleBrokerRegistration) }

func handleBrokerRegistration(ctx context.Context, s *Server, r *request) (kmsg.Response, error) {
	req := r.kreq.(*kmsg.BrokerRegistrationRequest)
	resp := req.ResponseKind().(*kmsg.BrokerRegistrationResponse)
	// With ACLs on, as Kafka: CLUSTER_ACTION on the cluster (nodes only), before
	// anything of the request is looked at: a client may not register a node.
	if err := s.authorize(r, metadata.ACLOpClusterAction, auth.Cluster); err != nil {
		resp.ErrorCode = errorCode(err)
		return resp, nil
	}
	reg := BrokerRegistration{ID: metadata.NodeID(req.BrokerID), ClusterID: req.ClusterID,
		IncarnationID:   hex.EncodeToString(req.IncarnationID[:]),
		UncleanShutdown: req.Version >= 3 && req.PreviousBrokerEpoch < 0}
	if req.Rack != nil {
		reg.Rack = *req.Rack
	}
	found := false
	for _, l := range req.Listeners {
		switch {
		case l.Name == ControllerListenerName:
			reg.RaftAddr = net.JoinHostPort(l.Host, strconv.Itoa(int(l.Port)))
		default:
			if !found {
				reg.Host, reg.Port, found = l.Host, int32(l.Port), true
			}
			reg.Endpoints = append(reg.Endpoints, metadata.Endpoint{Name: l.Name, Host: l.Host, Port: int32(l.Port),
				SecurityProtocol: l.SecurityProtocol})
		}
	}
	if !found {
		resp.ErrorCode = kerr.InvalidRequest.Code
		return resp, nil
	}
	epoch, err := s.controllerAPI().RegisterBroker(ctx, reg)
	resp.ErrorCode = errorCode(err)
	if err == nil {
		resp.BrokerEpoch = epoch
	}
	return resp, nil
}
