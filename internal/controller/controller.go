package controller

import (
	"context"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/raft"

	"github.com/runnel-io/runnel/internal/metadata"
	"github.com/runnel-io/runnel/internal/nodenet"
)

// Defaults for the zero values of Config.
const (
	DefaultSessionTimeout = 9 * time.Second
	// DefaultLeaderImbalanceCheckInterval is Kafka's leader.imbalance.check.interval.seconds.
	DefaultLeaderImbalanceCheckInterval = 300 * time.Second
	DefaultSnapshotThreshold            = 1024
	DefaultSnapshotInterval             = 30 * time.Second
)

// Config configures a Controller. Zero values take the defaults written on each field.
type Config struct {
	// NodeID is this node's id; its Raft server id is the decimal NodeID.
	NodeID metadata.NodeID
	// DataDir holds meta.properties and __raft/.
	DataDir string
	// Network is where the Raft transport listens and dials, and where discovery
	// dials; nil is the host's TCP stack (nodenet.OS). Tests give a nodenet.Mem host.
	Network nodenet.Network
	// Listen is the host:port the Raft TCP transport binds (--controller-listen).
	// Port 0 picks a free port (see Addr).
	Listen string
	// Advertise is the Raft address other voters dial. Default: this node's address
	// in Voters, else the bound Listen address (which must then not be a wildcard
	// such as 0.0.0.0).
	Advertise string
	// Voters is the quorum (--controllers). Empty means this node alone, at its
	// advertised address.
	Voters []Voter
	// Logger receives the controller's logs and Raft's own (Raft's at Warn and above).
	// Default: slog.Default().
	Logger *slog.Logger

	// AnnounceAddr, if set, tells the active controller this node's new Raft address
	// (UpdateRaftVoter): Start calls it, retrying, when this node is a voter whose
	// address in the restored configuration is not the one it advertises now.
	AnnounceAddr func(ctx context.Context, addr string) error

	// ValidateTopicConfig checks one topic config entry (CreateTopics,
	// AlterTopicConfigs). Nil accepts everything. Its error is wrapped in ErrInvalidConfig.
	ValidateTopicConfig func(key, value string) error
	// ValidateBrokerConfig checks one dynamic cluster-wide config entry
	// (AlterBrokerConfigs). Default: ValidateTopicConfig.
	ValidateBrokerConfig func(key, value string) error
	// ValidateNodeConfig checks one config entry set for a single broker
	// (AlterNodeConfigs). Default: ValidateBrokerConfig.
	ValidateNodeConfig func(key, value string) error
	// DefaultPartitions is used when a TopicSpec asks for -1 partitions. Default 1.
	DefaultPartitions int32
	// DefaultReplicationFactor is used when a TopicSpec asks for -1. Default 1.
	DefaultReplicationFactor int16
	// DisableTopicDeletion makes DeleteTopics fail with ErrTopicDeletionDisabled
	// (Kafka delete.topic.enable=false). Default: deletion allowed.
	DisableTopicDeletion bool
	// RelaxedDurability reports whether a topic's acknowledged records may be only in
	// the page cache of a replica (flush.messages above 1): after an unclean shutdown
	// such a replica is not trusted as the last one in sync (KIP-966). Nil: never.
	RelaxedDurability func(im *metadata.Image, topic string) bool
	// SessionTimeout is how long a broker may go without a heartbeat before it is
	// fenced (broker.session.timeout.ms). A new active controller grants every broker
	// this long from its election. Default DefaultSessionTimeout.
	SessionTimeout time.Duration
	// FenceCheckInterval is how often the active controller looks for expired
	// sessions. Default SessionTimeout/10, between 10 ms and 1 s.
	FenceCheckInterval time.Duration
	// UncleanLeaderElection is the cluster default of unclean.leader.election.enable,
	// used when neither the topic nor the dynamic cluster configs set it. Default false.
	UncleanLeaderElection bool
	// DisableAutoLeaderRebalance turns the preferred leader election off
	// (auto.leader.rebalance.enable=false). Default: on.
	DisableAutoLeaderRebalance bool
	// LeaderImbalanceRatio is leader.imbalance.per.broker.percentage / 100: the periodic
	// preferred leader election moves a node's leaderships back only when more than
	// this share of the partitions it is the preferred replica of are led elsewhere
	// (0, the zero value: at any imbalance).
	LeaderImbalanceRatio float64
	// BalanceOnNodeAdd (partition.autobalancing.mode node_add) gives a broker that
	// registers for the first time its even share of replicas and preferred leaders
	// by reassignment (balance.go).
	BalanceOnNodeAdd bool
	// LeaderImbalanceCheckInterval is how often the preferred leader election runs
	// (leader.imbalance.check.interval.seconds). Default DefaultLeaderImbalanceCheckInterval.
	LeaderImbalanceCheckInterval time.Duration

	// ProcessGone reports whether broker b's process is gone for certain (its Kafka
	// listener refuses connections). When set, the active controller asks it as soon
	// as its Raft heartbeats to b's node fail, and on a yes fences b at once instead
	// of after SessionTimeout, so that a killed node's partitions get new leaders in
	// tens of milliseconds. Nil: brokers are fenced when their session expires.
	ProcessGone func(ctx context.Context, b metadata.Broker) bool
	// OnLeaderChange is called (on a goroutine of the Controller's, which it must not
	// block) whenever a new metadata quorum leader is known, so that the node's broker
	// heartbeats reach the new active controller at once: its lease from the old one
	// runs out a session timeout after its last heartbeat. Nil: nothing is called.
	OnLeaderChange func()
	// OnDiskFull is called (on a goroutine of its own) when this node's metadata log
	// finds its disk full (raftstore.go), once per episode, so that the node reports
	// a full disk in its heartbeats. Nil: nothing is called.
	OnDiskFull func(error)

	// BootstrapScramUsers are created with both SCRAM mechanisms by the active
	// controller, once ready, if the metadata never held them (sasl.bootstrap.users,
	// the inter-broker user; scram.go). Nil: none.
	BootstrapScramUsers []BootstrapScramUser

	// SnapshotThreshold is how many applied entries trigger a Raft snapshot, checked
	// every SnapshotInterval. Defaults DefaultSnapshotThreshold and DefaultSnapshotInterval.
	SnapshotThreshold uint64
	SnapshotInterval  time.Duration
}

// Voter is one member of the metadata quorum.
type Voter struct {
	ID   metadata.NodeID
	Addr string // Raft host:port
}

// Controller is one node's member of the metadata quorum. Every node runs one; the
// Raft leader is the active controller and the only one that accepts proposals.
type Controller struct {
	cfg Config
	log *slog.Logger
	fsm *fsm
	// done is closed by Close; every goroutine and wait of the Controller selects on it.
	done      chan struct{}
	closeOnce sync.Once
	// wg tracks the goroutines started by Start, Subscribe and proposals.
	wg sync.WaitGroup
	// futures counts the Raft futures waitFuture's helpers wait on; Close lets them be
	// answered before it shuts Raft down (shutdownRaft).
	futures atomic.Int64

	// ready is set once WaitReady has seen the quorum and checked meta.properties.
	ready atomic.Bool
	// leaving is set by Leaving: Raft's failures to reach peers are then logged at Info.
	leaving atomic.Bool
	// bal is the partition balancer's state (balance.go): set by ConfigureBalancer,
	// or the defaults on first use.
	bal atomic.Pointer[balancer]

	// Set by Start before it returns; read-only afterwards. Nil before Start.
	props metaProperties
	raft  *raft.Raft
	// raftSet is closed once raft is set: the discovery service (discovery.go), which
	// shares the transport's listener and so runs before, reads raft only after it.
	raftSet chan struct{}
	trans   *raft.NetworkTransport
	store   *diskStore

	// proposeMu serialises every read-validate-propose-wait sequence, so a proposal is
	// always validated against an image that includes every earlier proposal from this
	// node. It guards the fields below. A channel of one slot, not a sync.Mutex: its
	// holder may wait on Raft for a while, and a wait to take it must end with the
	// caller's context or Close (lockPropose), and count as blocked for the virtual
	// clock of the tests (synctest), which a sync.Mutex does not: a goroutine parked on
	// a mutex held across a Raft timeout froze the clock the timeout waited on.
	proposeMu chan struct{}
	// freshTerm is the Raft term in which a Barrier completed on this node as leader:
	// while the term is unchanged, the local image holds every committed record.
	freshTerm uint64
	// prevLeader is the last Raft leader seen other than this node (-1: none).
	prevLeader atomic.Int32
	// sessions are the brokers' heartbeat sessions while this node leads; replaced
	// when it becomes fresh in a new term. Never nil.
	sessions *sessions
	// applied is what each broker last reported as applied (applied.go); its own lock.
	applied *appliedOffsets
	// pidNext, pidEnd is the unused part of this node's producer id block.
	// Invariant: pidNext <= pidEnd, and [pidNext, pidEnd) was granted by a committed
	// ProducerIDs record to this node only.
	pidNext, pidEnd int64
}

// New checks cfg and returns a Controller that is not started yet. Image works at once
// (the empty image); everything else needs Start.
func New(cfg Config) (*Controller, error) {
	if cfg.DataDir == "" {
		return nil, fmt.Errorf("controller: DataDir is required")
	}
	if cfg.Listen == "" {
		return nil, fmt.Errorf("controller: Listen is required")
	}
	if cfg.NodeID < 0 {
		return nil, fmt.Errorf("controller: node id %d is negative", cfg.NodeID)
	}
	applyDefaults(&cfg)
	seen := map[metadata.NodeID]bool{}
	for _, v := range cfg.Voters {
		if seen[v.ID] || v.Addr == "" {
			return nil, fmt.Errorf("controller: voter %d@%q is repeated or has no address", v.ID, v.Addr)
		}
		seen[v.ID] = true
	}
	c := &Controller{cfg: cfg, log: cfg.Logger.With("component", "controller"), done: make(chan struct{}), proposeMu: make(chan struct{}, 1),
		raftSet: make(chan struct{}), sessions: newSessions(0, time.Now()), applied: newAppliedOffsets()}
	c.prevLeader.Store(-1)
	c.fsm = newFSM(c.log)
	return c, nil
}

func applyDefaults(cfg *Config) {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.ValidateBrokerConfig == nil {
		cfg.ValidateBrokerConfig = cfg.ValidateTopicConfig
	}
	if cfg.ValidateNodeConfig == nil {
		cfg.ValidateNodeConfig = cfg.ValidateBrokerConfig
	}
	if cfg.DefaultPartitions <= 0 {
		cfg.DefaultPartitions = 1
	}
	if cfg.DefaultReplicationFactor <= 0 {
		cfg.DefaultReplicationFactor = 1
	}
	if cfg.SessionTimeout <= 0 {
		cfg.SessionTimeout = DefaultSessionTimeout
	}
	if cfg.FenceCheckInterval <= 0 {
		cfg.FenceCheckInterval = min(max(cfg.SessionTimeout/10, 10*time.Millisecond), time.Second)
	}
	if cfg.LeaderImbalanceCheckInterval <= 0 {
		cfg.LeaderImbalanceCheckInterval = DefaultLeaderImbalanceCheckInterval
	}
	if cfg.SnapshotThreshold == 0 {
		cfg.SnapshotThreshold = DefaultSnapshotThreshold
	}
	if cfg.SnapshotInterval <= 0 {
		cfg.SnapshotInterval = DefaultSnapshotInterval
	}
}

// NodeID is this node's id.
func (c *Controller) NodeID() metadata.NodeID { return c.cfg.NodeID }

// Image returns the latest applied image; never nil. It does not lock.
func (c *Controller) Image() *metadata.Image { return c.fsm.image.Load() }

// IsLeader reports whether this node is the active controller.
func (c *Controller) IsLeader() bool {
	return c.raft != nil && c.raft.State() == raft.Leader
}

// LeaderID returns the active controller's node id, if one is known.
func (c *Controller) LeaderID() (metadata.NodeID, bool) {
	if c.raft == nil {
		return 0, false
	}
	_, id := c.raft.LeaderWithID()
	if id == "" {
		return 0, false
	}
	n, err := strconv.ParseInt(string(id), 10, 32)
	if err != nil {
		return 0, false
	}
	return metadata.NodeID(n), true
}

// Addr returns the Raft address this node advertises ("" before Start).
func (c *Controller) Addr() string {
	if c.trans == nil {
		return ""
	}
	return string(c.trans.LocalAddr())
}

// WaitApplied waits until Image().Offset >= offset, the context ends (ErrTimeout) or
// the Controller closes (ErrClosed).
func (c *Controller) WaitApplied(ctx context.Context, offset uint64) error {
	for {
		ch := c.fsm.changed()
		if c.Image().Offset >= offset {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return fmt.Errorf("%w: waiting for metadata offset %d (at %d): %w", ErrTimeout, offset, c.Image().Offset, ctx.Err())
		case <-c.done:
			return ErrClosed
		}
	}
}

// Subscribe calls fn on its own goroutine with every new image, in apply order: first
// fn(nil, Image()) at once, then fn(prev, cur) whenever the image changes, where prev
// is always the cur of the previous call, so a subscriber never misses a change. If fn
// is slower than the FSM, images that arrived meanwhile are coalesced into one call
// (prev is then older than cur by several records); metadata.Image.LocalChanges(prev,
// node) computes the right delta across such a gap. The FSM never waits for fn.
//
// The returned cancel stops the subscription and waits for a running fn to return; do
// not call it from fn. Close also stops every subscription.
func (c *Controller) Subscribe(fn func(prev, cur *metadata.Image)) (cancel func()) {
	stop := make(chan struct{})
	exited := make(chan struct{})
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		defer close(exited)
		c.deliver(fn, stop)
	}()
	var once sync.Once
	return func() {
		once.Do(func() { close(stop) })
		<-exited
	}
}

// deliver is a subscriber's loop; it returns when stop or c.done closes.
func (c *Controller) deliver(fn func(prev, cur *metadata.Image), stop <-chan struct{}) {
	var last *metadata.Image
	for {
		ch := c.fsm.changed()
		if cur := c.Image(); cur != last {
			fn(last, cur)
			last = cur
			continue
		}
		select {
		case <-ch:
		case <-stop:
			return
		case <-c.done:
			return
		}
	}
}

// Leaving says this node has begun to stop: from now on Raft's failures to reach its
// peers (which are often stopping too, as in a dev cluster's Ctrl-C) are logged at
// Info, not as errors.
func (c *Controller) Leaving() { c.leaving.Store(true) }

// Close stops Raft (without handing over leadership), every subscription and
// goroutine, and closes the stores. It is safe to call more than once.
func (c *Controller) Close() error {
	var err error
	c.closeOnce.Do(func() {
		close(c.done)
		err = c.shutdownRaft()
		c.wg.Wait()
	})
	return err
}
