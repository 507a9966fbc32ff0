package kafka

// Glue between the broker-to-controller API handlers (56_alter_partition.go,
// 62_broker_registration.go, 63_broker_heartbeat.go, 67_allocate_producer_ids.go) and
// the active controller. Other nodes send these requests to the active controller's
// Kafka listener; on any other node they fail with NOT_CONTROLLER.

import (
	"context"
	"fmt"
	"strconv"

	"github.com/runnel-io/runnel/internal/metadata"
	"github.com/twmb/franz-go/pkg/kerr"
)

// ControllerAPI is what the broker-to-controller handlers need. controlplane.LocalAPI
// implements it over internal/controller; errors wrap a *kerr.Error (NOT_CONTROLLER on
// a node that is not the active controller, STALE_BROKER_EPOCH, ...).
type ControllerAPI interface {
	// RegisterBroker registers a broker (fenced until it catches up) and returns its
	// new epoch.
	RegisterBroker(ctx context.Context, r BrokerRegistration) (epoch int64, err error)
	// BrokerHeartbeat keeps a broker's session alive, unfences it once it caught up,
	// and runs its controlled shutdown.
	BrokerHeartbeat(ctx context.Context, hb BrokerHeartbeat) (BrokerHeartbeatReply, error)
	// AlterPartition applies an ISR change proposed by the partition's leader and
	// returns the partition's new state.
	AlterPartition(ctx context.Context, tp metadata.TopicPartition, leader metadata.NodeID,
		leaderEpoch, partitionEpoch int32, newISR []metadata.NodeID) (metadata.Partition, error)
	// AllocateProducerIDs grants a block of producer ids to a broker.
	AllocateProducerIDs(ctx context.Context, broker metadata.NodeID, brokerEpoch int64) (start int64, n int32, err error)
}

// brokerResourceNode parses the name of a broker config resource: "" is the
// cluster-wide default (ok, default true), a broker id names that broker. Anything
// else is INVALID_REQUEST.
func brokerResourceNode(name string) (node metadata.NodeID, isDefault bool, err error) {
	if name == "" {
		return 0, true, nil
	}
	id, perr := strconv.ParseInt(name, 10, 32)
	if perr != nil || id < 0 {
		return 0, false, fmt.Errorf("%w: broker resource name %q is neither empty (the cluster default) nor a broker id", kerr.InvalidRequest, name)
	}
	return metadata.NodeID(id), false, nil
}

// alterBrokerResource applies set to the broker resource named name: the cluster-wide
// defaults for "", broker name's own configs otherwise.
func (s *Server) alterBrokerResource(ctx context.Context, name string, set map[string]*string, validateOnly bool) error {
	node, isDefault, err := brokerResourceNode(name)
	switch {
	case err != nil:
		return err
	case isDefault:
		return s.admin.AlterBrokerConfigs(ctx, set, validateOnly)
	}
	return s.admin.AlterNodeConfigs(ctx, node, set, validateOnly)
}

// BrokerRegistration is a decoded BrokerRegistration request.
type BrokerRegistration struct {
	ID        metadata.NodeID
	ClusterID string
	// IncarnationID is the request's incarnation UUID, in hex.
	IncarnationID string
	// Host and Port are the broker's inter-broker listener: the first listener that is
	// not ControllerListenerName (metadata.Broker.Host).
	Host string
	Port int32
	// Endpoints are every listener but ControllerListenerName, the inter-broker one
	// first (metadata.Broker.Endpoints).
	Endpoints []metadata.Endpoint
	Rack      string
	// RaftAddr is the ControllerListenerName listener as host:port, "" if absent.
	RaftAddr string
	// UncleanShutdown: the node's previous run did not close its logs cleanly
	// (PreviousBrokerEpoch -1, v3+, KIP-966), so partitions with relaxed durability may
	// have lost acknowledged records on it.
	UncleanShutdown bool
}

// ControllerListenerName names the listener in BrokerRegistration that carries a
// node's Raft address, as Kafka names its controller listener.
const ControllerListenerName = "CONTROLLER"

// BrokerHeartbeat is a decoded BrokerHeartbeat request.
type BrokerHeartbeat struct {
	ID             metadata.NodeID
	Epoch          int64
	MetadataOffset int64
	WantFence      bool
	WantShutdown   bool
	// DiskFull says the broker's data directory is full (on the wire: OfflineLogDirs
	// holds DataDirID).
	DiskFull bool
	// Damaged are the broker's replicas whose logs hold a damaged range, sorted by
	// metadata.SortDamage (on the wire: the DamagedReplicasTag tagged field).
	Damaged []metadata.DamagedReplica
}

// DamagedReplicasTag is the tagged field of BrokerHeartbeat (runnel_tags.go) that
// carries a node's damaged replicas, a []metadata.DamagedReplica: Kafka has no
// per-partition way to say a replica is unreadable (OfflineLogDirs is per directory).
const DamagedReplicasTag = 10_001

// DataDirID names a node's one data directory in BrokerHeartbeat's OfflineLogDirs
// (Kafka's reserved OFFLINE_DIR id): Runnel reports it there while the directory is
// full. Other disk errors stop the node, so they are never reported.
var DataDirID = [16]byte{15: 1}

// BrokerHeartbeatReply is the controller's answer to a BrokerHeartbeat.
type BrokerHeartbeatReply struct {
	IsCaughtUp, IsFenced, ShouldShutdown bool
}

// SetControllerAPI installs the controller side of the broker-to-controller APIs;
// until then they answer NOT_CONTROLLER. Call it before Serve.
func (s *Server) SetControllerAPI(c ControllerAPI) { s.controller = c }

func (s *Server) controllerAPI() ControllerAPI {
	if s.controller == nil {
		return noController{}
	}
	return s.controller
}

type noController struct{}

func (noController) RegisterBroker(context.Context, BrokerRegistration) (int64, error) {
	return 0, kerr.NotController
}

func (noController) BrokerHeartbeat(context.Context, BrokerHeartbeat) (BrokerHeartbeatReply, error) {
	return BrokerHeartbeatReply{}, kerr.NotController
}

func (noController) AlterPartition(context.Context, metadata.TopicPartition, metadata.NodeID, int32, int32, []metadata.NodeID) (metadata.Partition, error) {
	return metadata.Partition{}, kerr.NotController
}

func (noController) AllocateProducerIDs(context.Context, metadata.NodeID, int64) (int64, int32, error) {
	return 0, 0, kerr.NotController
}

// MetadataTopic and MetadataPartition name the metadata log in DescribeQuorum, as
// Kafka's KRaft names it.
const (
	MetadataTopic     = "__cluster_metadata"
	MetadataPartition = 0
)
