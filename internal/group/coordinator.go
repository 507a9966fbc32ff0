package group

import (
	"context"
	"crypto/rand"
	"fmt"
	"log/slog"
	"math"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/runnel-io/runnel/internal/config"
	"github.com/runnel-io/runnel/internal/coordshard"
	"github.com/runnel-io/runnel/internal/replica"
)

// Config configures a Coordinator.
type Config struct {
	// NumPartitions is offsets.topic.num.partitions; it must not change once
	// __consumer_offsets exists, as it maps every group to its partition.
	NumPartitions int32
	// MinSessionTimeout and MaxSessionTimeout bound JoinGroup session timeouts
	// (group.{min,max}.session.timeout.ms).
	MinSessionTimeout, MaxSessionTimeout time.Duration
	// InitialRebalanceDelay is group.initial.rebalance.delay.ms.
	InitialRebalanceDelay time.Duration
	// MaxGroupSize is group.max.size (0: unlimited).
	MaxGroupSize int
	// MaxMetadataBytes is offset.metadata.max.bytes (default 4096).
	MaxMetadataBytes int
	// OffsetsRetention is offsets.retention.minutes (default 7 days; negative: never).
	OffsetsRetention time.Duration
	// ConsumerSessionTimeout and ConsumerHeartbeatInterval are
	// group.consumer.session.timeout.ms (45 s) and group.consumer.heartbeat.interval.ms
	// (5 s); a group's own configs override them.
	ConsumerSessionTimeout, ConsumerHeartbeatInterval time.Duration
	// ConsumerAssignors is group.consumer.assignors (uniform, range); the first is
	// the default.
	ConsumerAssignors []string
	// ConsumerMaxSize is group.consumer.max.size (0: unlimited).
	ConsumerMaxSize int
	// MigrationPolicy is group.consumer.migration.policy ("": bidirectional).
	MigrationPolicy string
	// AppendTimeout bounds each append to __consumer_offsets, replication included
	// (Kafka's offsets.commit.timeout.ms; default 5 s).
	AppendTimeout time.Duration
	// QueueSize bounds each group's request queue; senders block beyond it (default 64).
	QueueSize int
	// Serving reports whether this node may answer as a coordinator now (its lease
	// from the controller holds); while it says no, every group is NOT_COORDINATOR,
	// so that a node whose metadata may be stale never answers from memory. Nil: yes.
	Serving func() bool
	Logger  *slog.Logger
}

// ConfigFromBroker takes the group settings of a broker configuration.
func ConfigFromBroker(b *config.Broker) Config {
	return Config{
		NumPartitions:         b.OffsetsTopicNumPartitions,
		MinSessionTimeout:     time.Duration(b.GroupMinSessionTimeoutMs) * time.Millisecond,
		MaxSessionTimeout:     time.Duration(b.GroupMaxSessionTimeoutMs) * time.Millisecond,
		InitialRebalanceDelay: time.Duration(b.GroupInitialRebalanceDelayMs) * time.Millisecond,
		MaxGroupSize:          int(b.GroupMaxSize),
		OffsetsRetention:      time.Duration(b.OffsetsRetentionMinutes) * time.Minute,

		ConsumerSessionTimeout:    time.Duration(b.GroupConsumerSessionTimeoutMs) * time.Millisecond,
		ConsumerHeartbeatInterval: time.Duration(b.GroupConsumerHeartbeatIntervalMs) * time.Millisecond,
		ConsumerAssignors:         splitAssignors(b.GroupConsumerAssignors),
		ConsumerMaxSize:           int(b.GroupConsumerMaxSize),
		MigrationPolicy:           b.GroupConsumerMigrationPolicy,
	}
}

// Coordinator is the group coordinator of one node (Kafka's GroupCoordinator plus
// GroupMetadataManager). It coordinates the groups of the __consumer_offsets
// partitions this node leads: each such partition is a shard, loaded when this node
// becomes its leader and dropped when it stops; each group of a loaded shard is owned
// by one goroutine (group.manage). Methods are safe for concurrent use.
type Coordinator struct {
	cfg    Config
	lim    limits
	logger *slog.Logger

	// shards are the __consumer_offsets partitions this node leads; it also tracks
	// every goroutine (group owners, loads, appends). Lock order: shard.mu -> the
	// Set's lock (a leaf: startGroup calls goFunc under shard.mu).
	shards *coordshard.Set[*shard]

	// isShareGroup says whether a group id is a share group's (kinds.go); nil: none is.
	isShareGroup atomic.Pointer[func(groupID string) bool]
}

// shard is one loaded (or loading) __consumer_offsets partition.
type shard struct {
	partition int32
	log       PartitionLog
	// source identifies the replica the log came from, to tell a repeated leadership
	// notification from a new replica.
	source any
	// ctx ends when the shard is unloaded or the coordinator closes; it stops the load,
	// the group goroutines and their appends.
	ctx context.Context
	// loaded is closed once the partition has been replayed.
	loaded chan struct{}

	mu     sync.Mutex // guards groups, txnGroups and loadCompletions
	groups map[string]*group
	// txnGroups maps a producer id to the groups that may hold its pending
	// transactional offsets (txn_offsets.go).
	txnGroups map[int64]map[string]struct{}
	// loadCompletions are the markers appended while the shard was loading.
	loadCompletions []txnCompletion
	// txnAppendMu serialises transactional appends, which pick their sequence.
	txnAppendMu sync.Mutex
}

// NewCoordinator returns a coordinator with no shards; OnLeadershipChange loads them.
func NewCoordinator(cfg Config) *Coordinator {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.NumPartitions <= 0 {
		cfg.NumPartitions = 50
	}
	if cfg.AppendTimeout <= 0 {
		cfg.AppendTimeout = 5 * time.Second
	}
	if cfg.QueueSize <= 0 {
		cfg.QueueSize = 64
	}
	lim := defaultLimits()
	if cfg.MinSessionTimeout > 0 || cfg.MaxSessionTimeout > 0 {
		lim.minSessionTimeout, lim.maxSessionTimeout = cfg.MinSessionTimeout, cfg.MaxSessionTimeout
	}
	lim.initialRebalanceDelay = max(cfg.InitialRebalanceDelay, 0)
	if cfg.MaxGroupSize > 0 {
		lim.maxSize = cfg.MaxGroupSize
	} else {
		lim.maxSize = math.MaxInt32
	}
	if cfg.MaxMetadataBytes > 0 {
		lim.maxMetadataBytes = cfg.MaxMetadataBytes
	}
	if cfg.OffsetsRetention != 0 {
		lim.offsetsRetention = max(cfg.OffsetsRetention, 0)
	}
	if cfg.ConsumerSessionTimeout > 0 {
		lim.consumerSessionTimeout = cfg.ConsumerSessionTimeout
	}
	if cfg.ConsumerHeartbeatInterval > 0 {
		lim.consumerHeartbeatInterval = cfg.ConsumerHeartbeatInterval
	}
	if len(cfg.ConsumerAssignors) > 0 {
		lim.consumerAssignors = cfg.ConsumerAssignors
	}
	if cfg.ConsumerMaxSize > 0 {
		lim.consumerMaxSize = cfg.ConsumerMaxSize
	}
	// The config table refuses a bad policy at start-up; one that gets here anyway
	// (a Config built in code) falls back to Kafka's default, as an unset one does.
	if p, err := parseMigrationPolicy(cfg.MigrationPolicy); err == nil {
		lim.migration = p
	} else {
		lim.migration = migrateUpgrade | migrateDowngrade
		cfg.Logger.Error("group.consumer.migration.policy is invalid; using bidirectional", "err", err)
	}
	return &Coordinator{cfg: cfg, lim: lim, logger: cfg.Logger.With("component", "group-coordinator"), shards: coordshard.New[*shard]()}
}

// splitAssignors parses group.consumer.assignors.
func splitAssignors(v string) []string {
	var out []string
	for _, a := range strings.Split(v, ",") {
		if a = strings.TrimSpace(a); a != "" {
			out = append(out, a)
		}
	}
	return out
}

// NumPartitions is the partition count of __consumer_offsets groups are mapped over.
func (c *Coordinator) NumPartitions() int32 { return c.cfg.NumPartitions }

// PartitionFor is the __consumer_offsets partition of groupID.
func (c *Coordinator) PartitionFor(groupID string) int32 {
	return PartitionFor(groupID, c.cfg.NumPartitions)
}

// OnLeadershipChange is the replica.Options hook: it loads a __consumer_offsets
// partition when this node becomes its leader and unloads it when it stops. It returns
// at once; loading runs in the background.
func (c *Coordinator) OnLeadershipChange(p *replica.Partition, leader bool, leaderEpoch int32) {
	tp := p.TopicPartition()
	if tp.Topic != OffsetsTopic {
		return
	}
	if leader {
		c.Load(tp.Partition, ReplicaLog{P: p}, p, leaderEpoch)
	} else {
		c.Unload(tp.Partition)
	}
}

// Load starts coordinating partition's groups from log: it replays the log in the
// background; requests meanwhile get ErrCoordinatorLoadInProgress. A repeated call for
// the same source is ignored.
func (c *Coordinator) Load(partition int32, log PartitionLog, source any, leaderEpoch int32) {
	c.shards.Load(partition, func(old *shard) bool { return old.source == source }, func(ctx context.Context) *shard {
		c.logger.Debug("loading groups", "partition", partition, "leader_epoch", leaderEpoch)
		return &shard{partition: partition, log: log, source: source, ctx: ctx,
			loaded: make(chan struct{}), groups: map[string]*group{}}
	}, c.loadShard)
}

// Unload stops coordinating partition's groups: waiting requests get ErrNotCoordinator.
func (c *Coordinator) Unload(partition int32) {
	if _, ok := c.shards.Unload(partition); ok {
		c.logger.Info("unloading groups", "partition", partition)
	}
}

// Close unloads every shard and waits for every goroutine of the coordinator.
func (c *Coordinator) Close() error {
	c.shards.Close()
	return nil
}

// goFunc runs fn on a tracked goroutine; false when the coordinator is closed.
func (c *Coordinator) goFunc(fn func()) bool { return c.shards.Go(fn) }

// shardFor returns the loaded shard coordinating groupID.
func (c *Coordinator) shardFor(groupID string) (*shard, error) {
	if groupID == "" {
		return nil, ErrInvalidGroupID
	}
	sh, ok := c.shards.Get(c.PartitionFor(groupID))
	if !ok || sh.ctx.Err() != nil || c.cfg.Serving != nil && !c.cfg.Serving() {
		return nil, ErrNotCoordinator
	}
	select {
	case <-sh.loaded:
		return sh, nil
	default:
		return nil, ErrCoordinatorLoadInProgress
	}
}

// lookup returns the group's owner, creating an empty group when create is set; nil
// (and no error) when the group does not exist.
func (c *Coordinator) lookup(groupID string, create bool) (*group, error) {
	sh, err := c.shardFor(groupID)
	if err != nil {
		return nil, err
	}
	sh.mu.Lock()
	defer sh.mu.Unlock()
	g := sh.groups[groupID]
	if g == nil && create {
		if err := c.checkNotShare(groupID); err != nil {
			return nil, err
		}
		g = c.startGroup(sh, newGroupMetadata(groupID, c.lim, newMemberID, time.Now()))
		if g == nil {
			return nil, ErrNotCoordinator
		}
	}
	return g, nil
}

// newMemberID is Kafka's member id: the client id, a dash and a random UUID.
func newMemberID(clientID string) string {
	var u [16]byte
	rand.Read(u[:])
	u[6] = u[6]&0x0f | 0x40
	u[8] = u[8]&0x3f | 0x80
	return fmt.Sprintf("%s-%x-%x-%x-%x-%x", clientID, u[0:4], u[4:6], u[6:8], u[8:10], u[10:])
}
