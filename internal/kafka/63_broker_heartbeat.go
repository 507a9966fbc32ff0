package kafka

// BrokerHeartbeat: v0-2 (KIP-631), sent by every node to the active controller every
// broker.heartbeat.interval.ms.
//
// A broker that misses heartbeats for broker.session.timeout.ms is fenced. The reply
// says whether it has caught up with the metadata (applied its own registration), is
// fenced, and, after WantShutdown, whether it may shut down (it leads nothing any
// more). A non-empty OfflineLogDirs says the broker's data directory is full (see
// DataDirID); CordonedLogDirs is ignored. A Runnel node's damaged replicas come in
// the tagged field DamagedReplicasTag. Errors: NOT_CONTROLLER,
// BROKER_ID_NOT_REGISTERED and STALE_BROKER_EPOCH (register again).

import (
	"context"
	"fmt"

	"github.com/runnel-io/runnel/internal/auth"
	"github.com/runnel-io/runnel/internal/metadata"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() { regKey(63, 0, 2, handleBrokerHeartbeat) }

func handleBrokerHeartbeat(ctx context.Context, s *Server, r *request) (kmsg.Response, error) {
	req := r.kreq.(*kmsg.BrokerHeartbeatRequest)
	resp := req.ResponseKind().(*kmsg.BrokerHeartbeatResponse)
	// With ACLs on, as Kafka: CLUSTER_ACTION on the cluster (nodes only).
	if err := s.authorize(r, metadata.ACLOpClusterAction, auth.Cluster); err != nil {
		resp.ErrorCode = errorCode(err)
		return resp, nil
	}
	hb := BrokerHeartbeat{
		ID: metadata.NodeID(req.BrokerID), Epoch: req.BrokerEpoch, MetadataOffset: req.CurrentMetadataOffset,
		WantFence: req.WantFence, WantShutdown: req.WantShutdown, DiskFull: len(req.OfflineLogDirs) > 0,
	}
	if _, err := JSONTag(&req.UnknownTags, DamagedReplicasTag, &hb.Damaged); err != nil {
		return nil, fmt.Errorf("BrokerHeartbeat of node %d: %w", req.BrokerID, err)
	}
	metadata.SortDamage(hb.Damaged)
	reply, err := s.controllerAPI().BrokerHeartbeat(ctx, hb)
	resp.ErrorCode = errorCode(err)
	resp.IsFenced = true
	if err == nil {
		resp.IsCaughtUp, resp.IsFenced, resp.ShouldShutdown = reply.IsCaughtUp, reply.IsFenced, reply.ShouldShutdown
	}
	return resp, nil
}
