package kafka

import (
	"context"
	"log/slog"
	"net"
	"sync"

	"github.com/runnel-io/runnel/internal/auth"
	"github.com/runnel-io/runnel/internal/config"
	"github.com/runnel-io/runnel/internal/metadata"
	"github.com/runnel-io/runnel/internal/quota"
	"github.com/runnel-io/runnel/internal/replica"
)

// Admin is what the protocol layer needs from the controller. controlplane.Admin
// implements it over internal/controller; errors it returns wrap a *kerr.Error so that
// errors.go can answer with the right code.
type Admin interface {
	// ControllerID is the active controller, or -1 when unknown.
	ControllerID() metadata.NodeID
	CreateTopics(ctx context.Context, specs []metadata.TopicSpec, validateOnly bool) []error
	DeleteTopics(ctx context.Context, names []string) []error
	CreatePartitions(ctx context.Context, topic string, newTotal int32, assignments [][]metadata.NodeID, validateOnly bool) error
	AlterTopicConfigs(ctx context.Context, topic string, set map[string]*string, replaceAll, validateOnly bool) error
	AlterBrokerConfigs(ctx context.Context, set map[string]*string, validateOnly bool) error
	AllocateProducerID(ctx context.Context) (int64, error)
	// AlterClientQuotas applies each alteration (one error each, in order) and returns
	// once every live node enforces them (49_alter_client_quotas.go).
	AlterClientQuotas(ctx context.Context, alts []metadata.QuotaAlteration, validateOnly bool) []error
	// AlterPartitionReassignments starts, replaces or cancels (nil Target) each
	// reassignment, one error each, in order (45_alter_partition_reassignments.go).
	AlterPartitionReassignments(ctx context.Context, changes []metadata.Reassignment) []error
	// ElectLeaders runs a preferred or unclean election on each partition (nil: all),
	// one result each (43_elect_leaders.go).
	ElectLeaders(ctx context.Context, unclean bool, tps []metadata.TopicPartition) (map[metadata.TopicPartition]error, error)
	// UnregisterBroker removes a stopped node that holds no replica (64_unregister_broker.go).
	UnregisterBroker(ctx context.Context, id metadata.NodeID) error
	// AlterNodeConfigs changes broker node's own dynamic configs (nil deletes a key),
	// which win over the cluster-wide defaults on that node alone.
	AlterNodeConfigs(ctx context.Context, node metadata.NodeID, set map[string]*string, validateOnly bool) error
	// AlterGroupConfigs changes group's configs (the GROUP config resource; replaceAll:
	// the legacy AlterConfigs, whose set replaces the group's).
	AlterGroupConfigs(ctx context.Context, group string, set map[string]*string, replaceAll, validateOnly bool) error
	// CreateACLs creates each ACL (one error each, in order) and returns once every
	// live node enforces them.
	CreateACLs(ctx context.Context, acls []metadata.ACL) []error
	// DeleteACLs removes what each filter matches and returns, per filter, the ACLs it
	// matched or the error that refused it, once every live node applied the removal.
	DeleteACLs(ctx context.Context, filters []auth.Filter) ([][]metadata.ACL, []error)
	// AlterUserScramCredentials applies the alterations and returns each named user's
	// error (nil: applied).
	AlterUserScramCredentials(ctx context.Context, dels []metadata.ScramDeletion, ups []metadata.ScramUpsertion) map[string]error

	// The metadata quorum (KIP-853), run on the active controller: these change the
	// Raft configuration, not the image, so they do not settle.

	// DescribeQuorum is the active controller's view of the quorum.
	DescribeQuorum(ctx context.Context) (metadata.QuorumState, error)
	// AddRaftVoter promotes a registered, live, caught-up non-voter; raftAddr, when
	// not "", must be its Raft address.
	AddRaftVoter(ctx context.Context, id metadata.NodeID, raftAddr string) error
	// RemoveRaftVoter makes a voter a non-voter (it stays a broker).
	RemoveRaftVoter(ctx context.Context, id metadata.NodeID) error
	// UpdateRaftVoter records raftAddr as voter id's Raft address and returns the
	// active controller's id, Raft term and Raft address.
	UpdateRaftVoter(ctx context.Context, id metadata.NodeID, raftAddr string) (QuorumLeader, error)
}

// Config configures the protocol server.
type Config struct {
	NodeID metadata.NodeID
	// Broker is the node's configuration (limits, defaults for auto-created topics).
	Broker *config.Broker
	Logger *slog.Logger
	// Listen overrides net.Listen, for tests on a virtual network.
	Listen func(network, addr string) (net.Listener, error)
	// Leadership is the node's leadership view: answers that name or serve for a
	// leader ask it first whether that leader's node is there (nil: a view without
	// probes, which never waits on one).
	Leadership *replica.Leadership
}

// Server is the Kafka protocol server of one node.
type Server struct {
	cfg      Config
	logger   *slog.Logger
	replicas *replica.Manager
	admin    Admin
	// leadership is cfg.Leadership: the image applied to the replicas, which every
	// answer reads, and the waits before naming a leader.
	leadership *replica.Leadership
	metrics    *Metrics
	sessions   *fetchSessions
	// groups is the consumer group coordinator (SetGroupCoordinator); nil answers
	// COORDINATOR_NOT_AVAILABLE. Written before Serve, read-only after.
	groups GroupCoordinator
	// controller serves the broker-to-controller APIs (SetControllerAPI); nil answers
	// NOT_CONTROLLER. Written before Serve, read-only after.
	controller ControllerAPI
	// txns is the transaction coordinator (SetTxnCoordinator); nil answers
	// COORDINATOR_NOT_AVAILABLE. Written before Serve, read-only after.
	txns TxnCoordinator
	// share is the share groups (SetShare, share.go); nil answers the share APIs
	// COORDINATOR_NOT_AVAILABLE. Written before Serve, read-only after.
	share *shareState
	// lease says whether this node may answer as a partition leader now (SetLease);
	// nil: always. Written before Serve, read-only after.
	lease func() bool

	// slots is the queued.max.requests semaphore; see the package doc.
	slots chan struct{}
	// bytes bounds the request bytes in memory (queued.max.request.bytes).
	bytes *byteBudget
	// quotas are the client quotas' rates (quota.go).
	quotas *quota.Manager
	// authz decides ACLs (authorize.go); nil when authorizer.class.name is unset.
	authz *authorizer

	ctx    context.Context
	cancel context.CancelFunc

	mu sync.Mutex // guards listeners and conns
	// listeners are the bound listeners (listeners.go), in configuration order.
	listeners []*listener
	conns     map[*conn]struct{}
	wg        sync.WaitGroup
}

// NewServer builds a server; Serve starts it.
func NewServer(cfg Config, replicas *replica.Manager, admin Admin, metrics *Metrics) *Server {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Listen == nil {
		cfg.Listen = net.Listen
	}
	if cfg.Leadership == nil {
		cfg.Leadership = replica.NewLeadership(replica.LeadershipOptions{Self: cfg.NodeID, Logger: cfg.Logger})
	}
	q := cfg.Broker.QueuedMaxRequests
	if q <= 0 {
		q = 500
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &Server{
		cfg: cfg, logger: cfg.Logger, replicas: replicas, admin: admin, leadership: cfg.Leadership, metrics: metrics,
		sessions: newFetchSessions(1000),
		slots:    make(chan struct{}, q),
		bytes:    newByteBudget(cfg.Broker.QueuedMaxRequestBytes),
		quotas:   newQuotaManager(cfg, metrics),
		authz:    newAuthorizer(cfg.Broker),
		ctx:      ctx, cancel: cancel,
		conns: map[*conn]struct{}{},
	}
}

// Close stops accepting, closes every connection and waits for their goroutines.
func (s *Server) Close() error {
	s.cancel()
	s.mu.Lock()
	for _, l := range s.listeners {
		l.ln.Close()
	}
	for c := range s.conns {
		c.nc.Close()
	}
	s.mu.Unlock()
	s.wg.Wait()
	return nil
}

// SetLease installs the check of this node's lease from the controller: while it
// says no, every request this node would answer as a partition's leader gets
// NOT_LEADER_OR_FOLLOWER (its image may be stale: the leadership may have moved).
// Call it before Serve.
func (s *Server) SetLease(valid func() bool) { s.lease = valid }

// leaderPartition is replicas.Partition for a request answered as tp's leader:
// replica.ErrNotLeader while this node holds no lease.
func (s *Server) leaderPartition(tp metadata.TopicPartition) (*replica.Partition, error) {
	if s.lease != nil && !s.lease() {
		return nil, replica.ErrNotLeader
	}
	return s.replicas.Partition(tp)
}
