package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/runnel-io/runnel/internal/config"
	"github.com/runnel-io/runnel/internal/controller"
	"github.com/runnel-io/runnel/internal/controlplane"
	"github.com/runnel-io/runnel/internal/group"
	"github.com/runnel-io/runnel/internal/httpd"
	"github.com/runnel-io/runnel/internal/kafka"
	"github.com/runnel-io/runnel/internal/liveness"
	"github.com/runnel-io/runnel/internal/log"
	"github.com/runnel-io/runnel/internal/metadata"
	"github.com/runnel-io/runnel/internal/nodenet"
	"github.com/runnel-io/runnel/internal/replica"
	"github.com/runnel-io/runnel/internal/share"
	"github.com/runnel-io/runnel/internal/vfs"
)

// Options are what tests may change about a node beyond its configuration.
type Options struct {
	Logger *slog.Logger
	// StartTimeout bounds start-up (waiting for the quorum). Default 60 s.
	StartTimeout time.Duration
	// TxnAbortInterval, when positive, overrides how often timed-out transactions are
	// aborted (transaction.abort.timed.out.transaction.cleanup.interval.ms, 10 s).
	TxnAbortInterval time.Duration
	// Network is where every listener of the node binds (Kafka, Raft, HTTP) and every
	// connection it opens to another node is dialled (replica fetchers, the
	// controller channel, transaction peers, Raft, discovery, reach probes). nil is
	// the host's TCP stack; internal/clustertest's virtual mode gives a nodenet.Mem host.
	Network nodenet.Network
}

// ErrStartInterrupted is returned (wrapped) by Start when its context ended (a signal)
// before the node was ready.
var ErrStartInterrupted = errors.New("start-up interrupted")

// Node is one running Runnel node.
type Node struct {
	cfg    *config.Broker
	logger *slog.Logger

	ctrl *controller.Controller
	logs *log.Manager
	// scrubber verifies the cold segments in the background (log.scrub.*); nil when
	// log.scrub.enable is false.
	scrubber *log.Scrubber
	replicas *replica.Manager
	kafka    *kafka.Server
	http     *httpd.Server
	admin    *controlplane.Admin
	groups   *group.Coordinator
	links    *linkWiring // cluster links (links.go)
	txns     *txnWiring  // transaction coordinator (txn.go)
	txnAbort time.Duration
	// network is Options.Network (nil: the host's).
	network nodenet.Network
	// lifecycle registers and heartbeats to the controller; controlledShutdown takes it.
	lifecycle atomic.Pointer[controlplane.Lifecycle]
	// disk says whether the data disk is full (storage.go); set before the logs open.
	disk *replica.DiskMonitor
	// probe tells whether another node's process is gone, for the controller's fast
	// fencing and the Metadata answers (liveness.Prober).
	probe *liveness.Prober
	// leadership is the image applied to the replicas and, probed, whether the
	// leaders it names are there (replica.Leadership).
	leadership *replica.Leadership
	// lease says whether this node may answer as a leader or coordinator
	// (controlplane.Lease, granted by the heartbeats' answers).
	lease *controlplane.Lease
	// peerClient is the dialer (network, TLS) and SASL login of every client this node
	// opens to another node's inter-broker listener (kafka.PeerClient).
	peerClient kafka.PeerClient

	// dirLock is the exclusive lock on cfg.DataDir, taken before anything opens a file
	// in it and released after everything closed them.
	dirLock *dataDirLock
	// serving is set once every part the HTTP status page reads exists; handlers that
	// run earlier (the HTTP listener starts first) must not touch them.
	serving atomic.Bool

	// kafkaAddrs are the bound addresses of cfg.Listeners, in their order; kafkaAddr is
	// the inter-broker listener's, which n.peerClient's options speak to.
	kafkaAddrs []net.Addr
	kafkaAddr  net.Addr
	// shareGroups and shareStore are the share groups (share.go).
	shareGroups *share.Groups
	shareStore  *share.KgoStore
	ready       atomic.Bool
	done        chan error
	closeOnce   sync.Once
	closeErr    error
	// aborted is set by Abort before close: the node stops as a killed process
	// would, without a controlled shutdown (abort.go).
	aborted atomic.Bool
	unsub   func()
	// consoleClose stops the web console's charts' sampler (console.go).
	consoleClose func()
}

// Start builds and starts a node. It returns once the node serves clients.
func Start(ctx context.Context, cfg *config.Broker, o Options) (*Node, error) {
	if o.Logger == nil {
		o.Logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	}
	if o.StartTimeout <= 0 {
		o.StartTimeout = 60 * time.Second
	}
	n := &Node{cfg: cfg, logger: o.Logger.With("node", cfg.NodeID), done: make(chan error, 2), txnAbort: o.TxnAbortInterval,
		network: o.Network, probe: liveness.NewDialer(nodenet.Or(o.Network).DialContext), lease: controlplane.NewLease()}
	if err := os.MkdirAll(cfg.DataDir, 0o755); err != nil {
		return nil, fmt.Errorf("data dir %s: %w", cfg.DataDir, err)
	}
	lock, err := lockDataDir(cfg.DataDir)
	if err != nil {
		return nil, err
	}
	n.dirLock = lock
	for _, w := range cfg.IgnoredWarnings() {
		n.logger.Warn(w)
	}
	n.disk = n.newDiskMonitor()
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	if err := n.start(ctx, reg, o.StartTimeout); err != nil {
		// The caller reports err; the parts started so far close quietly.
		n.close(false)
		if ctx.Err() != nil && errors.Is(err, ctx.Err()) {
			return nil, fmt.Errorf("%w: %w", ErrStartInterrupted, err)
		}
		return nil, err
	}
	n.ready.Store(true)
	n.logger.Info("runnel node ready", "kafka", n.listenersString(), "inter_broker_listener", cfg.InterBrokerListener,
		"http", cfg.HTTPListen, "data_dir", cfg.DataDir, "controller", cfg.ControllerListen)
	return n, nil
}

func (n *Node) start(ctx context.Context, reg *prometheus.Registry, timeout time.Duration) error {
	cfg := n.cfg
	var err error
	// Before the controller starts: it may announce its Raft address over it. It reads
	// the inter-broker listener's PEM files, so a bad one fails start-up here.
	if n.peerClient, err = kafka.NewPeerClient(cfg, n.network); err != nil {
		return err
	}
	n.http, err = httpd.Start(httpd.Options{Addr: cfg.HTTPListen, Registry: reg, Ready: n.readyErr, Status: n.statusPage, Logger: n.logger, Pprof: cfg.HTTPPprof,
		Console: n.console(), Login: n.consoleLogin(), TLSCertFile: cfg.HTTPTLSCertificate, TLSKeyFile: cfg.HTTPTLSKey, ClientCAFiles: n.consoleClientCAs(),
		Listen: nodenet.Or(n.network).Listen})
	if err != nil {
		return err
	}
	n.ctrl, err = controller.New(n.controllerConfig())
	if err != nil {
		return err
	}
	n.ctrl.ConfigureBalancer(n.balancerConfig())
	sctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if err := n.ctrl.Start(sctx); err != nil {
		return fmt.Errorf("metadata quorum: %w", err)
	}
	n.logs, err = log.NewManager(log.ManagerOptions{
		FS: vfs.OS(), DataDir: cfg.DataDir, Defaults: n.logDefaults(), Logger: n.logger,
		RetentionCheckInterval: time.Duration(cfg.LogRetentionCheckIntervalMs) * time.Millisecond,
		FlushCheckInterval:     time.Duration(cfg.LogFlushSchedulerIntervalMs) * time.Millisecond,
		CheckpointInterval:     time.Duration(cfg.LogFlushOffsetCheckpointIntervalMs) * time.Millisecond,
		RecoveryThreads:        cfg.NumRecoveryThreadsPerDataDir,
		Cleaner:                log.CleanerOptionsFor(cfg),
		OnStorageError:         n.storageFailed,
		PageCacheTail:          cfg.LogPageCacheTailBytes,
	})
	if err != nil {
		return fmt.Errorf("open logs in %s: %w", cfg.DataDir, err)
	}
	n.logs.Start()
	if cfg.LogScrubEnable {
		n.scrubber = log.NewScrubber(n.logs, log.ScrubOptions{
			Interval:       time.Duration(cfg.LogScrubIntervalMs) * time.Millisecond, // -1: at start-up only
			BytesPerSecond: cfg.LogScrubBytesPerSecond,                               // -1: unpaced
		})
		n.scrubber.Start()
	}
	n.leadership = replica.NewLeadership(replica.LeadershipOptions{Self: metadata.NodeID(cfg.NodeID),
		Probe: func(ctx context.Context, b metadata.Broker) liveness.Verdict {
			return controlplane.ProcessState(ctx, n.probe, b)
		},
		SessionTimeout: time.Duration(cfg.BrokerSessionTimeoutMs) * time.Millisecond, Logger: n.logger})
	n.admin = controlplane.NewAdmin(controlplane.AdminConfig{Controller: n.ctrl, View: n.leadership,
		Logger: n.logger, PeerClient: n.peerClient})
	n.replicas, err = replica.NewManager(replica.Options{
		IsrChanger: n.admin.Channel(),
		Node:       metadata.NodeID(cfg.NodeID), Logs: n.logs, Logger: n.logger, Resolve: n.resolveTopic,
		Network:               n.network,
		PeerClient:            n.peerClient,
		OnLeadershipChange:    n.startShare(n.startTxns(n.startGroups())),
		ReplicaLagTimeMax:     time.Duration(cfg.ReplicaLagTimeMaxMs) * time.Millisecond,
		FetchWait:             time.Duration(cfg.ReplicaFetchWaitMaxMs) * time.Millisecond,
		FetchMaxBytes:         cfg.ReplicaFetchMaxBytes,
		FetchResponseMaxBytes: cfg.ReplicaFetchResponseMaxBytes,
		FetchMinBytes:         cfg.ReplicaFetchMinBytes,
		FetchBackoff:          fetchBackoff(cfg.ReplicaFetchBackoffMs),
		Disk:                  n.disk,
		// This node's own dynamic rate, else the cluster-wide dynamic default, else
		// the static one.
		ThrottleRates: func(im *metadata.Image) (int64, int64) {
			return config.DynamicBrokerLongFor(im.Configs, cfg.NodeID, "leader.replication.throttled.rate", cfg.LeaderReplicationThrottledRate),
				config.DynamicBrokerLongFor(im.Configs, cfg.NodeID, "follower.replication.throttled.rate", cfg.FollowerReplicationThrottledRate)
		},
		ThrottleWindow: time.Duration(cfg.ReplicationQuotaWindowSizeSec) * time.Second,
		CaughtUp:       n.admin.CaughtUp,
	})
	if err != nil {
		return err
	}
	n.links = n.newLinks(reg)
	n.unsub = n.ctrl.Subscribe(n.applyImage)
	n.serving.Store(true)
	reg.MustRegister(newPartitionCollector(n.replicas), newDiskFullGauge(n.disk), newIntegrityCollector(n.logs, n.replicas), newGroupLagCollector(n))
	reg.MustRegister(newDiskSpaceCollector(cfg.DataDir))
	n.kafka = kafka.NewServer(kafka.Config{NodeID: metadata.NodeID(cfg.NodeID), Broker: cfg, Logger: n.logger, Listen: nodenet.Or(n.network).Listen,
		Leadership: n.leadership},
		n.replicas, n.admin, kafka.NewMetrics(reg))
	n.kafka.SetLease(n.lease.Valid)
	n.kafka.SetGroupCoordinator(n.groupCoordinator())
	n.kafka.SetTxnCoordinator(n.txnCoordinator())
	n.kafka.SetControllerAPI(controlplane.LocalAPI(n.ctrl))
	n.kafka.SetLinkAdmin(n.links.admin)
	reg.MustRegister(newControllerCollector(n.ctrl))
	// Bind before registering, so that a listener on port 0 (tests) is advertised with
	// the port it got; serve before registering, since other nodes' registrations may
	// reach this node's controller through it.
	if n.kafkaAddrs, err = n.kafka.ListenAll(); err != nil {
		return err
	}
	n.kafkaAddr = n.ListenerAddr(cfg.InterBrokerListener)
	n.wireShare(reg)
	go func() { n.done <- n.kafka.Serve() }()
	return n.startBrokerLifecycle(sctx)
}

// fetchBackoff is replica.fetch.backoff.ms as replica.Options.FetchBackoff, where 0
// means the default: a backoff of 0 retries at once.
func fetchBackoff(ms int32) time.Duration {
	if ms == 0 {
		return -1
	}
	return time.Duration(ms) * time.Millisecond
}

func (n *Node) controllerConfig() controller.Config {
	cfg := n.cfg
	var voters []controller.Voter
	for _, v := range cfg.Controllers {
		voters = append(voters, controller.Voter{ID: metadata.NodeID(v.ID), Addr: v.Addr})
	}
	cc := controller.Config{
		NodeID: metadata.NodeID(cfg.NodeID), DataDir: cfg.DataDir, Listen: cfg.ControllerListen, Network: n.network,
		Voters: voters, Logger: n.logger, // the controller adds component=controller, its Raft component=raft
		ValidateTopicConfig:      config.ValidateTopicConfig,
		ValidateBrokerConfig:     config.ValidateDynamicBrokerConfig,
		ValidateNodeConfig:       config.ValidatePerBrokerConfig,
		DefaultPartitions:        cfg.NumPartitions,
		DefaultReplicationFactor: cfg.DefaultReplicationFactor,
		DisableTopicDeletion:     !cfg.DeleteTopicEnable,
		SessionTimeout:           time.Duration(cfg.BrokerSessionTimeoutMs) * time.Millisecond,
		RelaxedDurability: func(im *metadata.Image, topic string) bool {
			return n.resolveTopic(im, im.Topics[topic]).Log.FlushMessages > 1
		},
		UncleanLeaderElection:        cfg.UncleanLeaderElection,
		DisableAutoLeaderRebalance:   !cfg.AutoLeaderRebalance,
		LeaderImbalanceCheckInterval: time.Duration(cfg.LeaderImbalanceCheckIntervalSec) * time.Second,
		LeaderImbalanceRatio:         float64(cfg.LeaderImbalancePerBrokerPercent) / 100,
		BalanceOnNodeAdd:             cfg.PartitionAutobalancingMode != "off",
		ProcessGone: func(ctx context.Context, b metadata.Broker) bool {
			return controlplane.ProcessGone(ctx, n.probe, b)
		},
		OnLeaderChange: n.nudgeHeartbeat,
		OnDiskFull:     n.metadataDiskFull,
		// A voter restarted with another --controller-listen tells the active
		// controller before it waits for the quorum (UpdateRaftVoter, KIP-853).
		AnnounceAddr: func(ctx context.Context, addr string) error {
			return controlplane.AnnounceRaftAddr(ctx, n.ctrl, addr, n.peerClient, n.logger)
		},
	}
	n.securityControllerConfig(&cc)
	return cc
}

// applyImage runs on the controller's delivery goroutine, in image order.
func (n *Node) applyImage(_, cur *metadata.Image) {
	if err := n.replicas.ApplyImage(cur); err != nil {
		n.logger.Error("applying metadata", "offset", cur.Offset, "err", err)
	}
	n.links.apply(cur)
	n.leadership.SetApplied(cur)
	// Report the new offset to the controller now rather than at the next interval:
	// an admin change is acknowledged only once every live node has reported it.
	n.nudgeHeartbeat()
}

// statusPage is the HTTP status page: n.status once the parts it reads exist and the
// first metadata image is applied, a line saying what the node waits for before.
func (n *Node) statusPage() string {
	switch {
	case !n.serving.Load():
		return fmt.Sprintf("Runnel node %d  starting: waiting for the metadata quorum\n", n.cfg.NodeID)
	case n.leadership.Image() == nil:
		return fmt.Sprintf("Runnel node %d  starting: waiting for the first metadata image\n", n.cfg.NodeID)
	}
	return n.status()
}

// readyErr is /readyz: starting, degraded (a full disk) or ready.
func (n *Node) readyErr() error {
	if !n.ready.Load() {
		return errors.New("starting")
	}
	if why := n.degraded(); why != "" {
		return errors.New("degraded: " + why)
	}
	return nil
}

// KafkaAddr is the bound address of the first Kafka listener (listeners' first entry,
// or listen).
func (n *Node) KafkaAddr() net.Addr { return n.kafkaAddrs[0] }

// ListenerAddr is the bound address of the Kafka listener named name (upper case), nil
// if the node has none.
func (n *Node) ListenerAddr(name string) net.Addr {
	for i, l := range n.cfg.Listeners {
		if l.Name == name {
			return n.kafkaAddrs[i]
		}
	}
	return nil
}

// listenersString lists the listeners for the start-up log: NAME(PROTOCOL)=ADDR,...
func (n *Node) listenersString() string {
	var b strings.Builder
	for i, l := range n.cfg.Listeners {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, "%s(%s)=%s", l.Name, l.Protocol, n.kafkaAddrs[i])
	}
	return b.String()
}

// Done yields the Kafka server's exit.
func (n *Node) Done() <-chan error { return n.done }

// Close stops the node in reverse start order: controlled shutdown (leadership handed
// over), stop serving clients, stop applying
// metadata, checkpoint and close the logs (flushing them), leave the quorum.
func (n *Node) Close() error { return n.close(true) }

// close is Close; logged says whether to log the stop (not after a failed start,
// whose error the caller reports).
func (n *Node) close(logged bool) error {
	n.closeOnce.Do(func() {
		n.ready.Store(false)
		var errs []error
		aborted := n.aborted.Load()
		if aborted {
			n.stopLifecycle()
		} else {
			errs = append(errs, n.controlledShutdown(context.Background()))
		}
		// A killed process's controller dies first, with its listener. Left running
		// while the listener drains and the logs close (seconds on a loaded machine),
		// an active controller would hear no heartbeat through the closed listener,
		// yet still hold its Raft lead, and fence every broker in turn: each
		// partition it led would then be left offline with this dead node as its
		// last in-sync replica.
		if aborted && n.ctrl != nil {
			errs = append(errs, n.ctrl.Close())
		}
		if n.kafka != nil {
			errs = append(errs, n.kafka.Close())
		}
		errs = append(errs, n.closeTxns(), n.closeGroups())
		n.closeShare()
		if n.unsub != nil {
			n.unsub()
		}
		n.links.close()
		if n.replicas != nil {
			errs = append(errs, n.replicas.Close(context.Background()))
		}
		if n.scrubber != nil {
			n.scrubber.Close() // before the logs: a pass reads them
		}
		if n.logs != nil {
			errs = append(errs, n.logs.Close())
		}
		if !aborted && n.ctrl != nil {
			errs = append(errs, n.ctrl.Close())
		}
		if n.http != nil {
			errs = append(errs, n.http.Close())
		}
		if n.consoleClose != nil {
			n.consoleClose()
		}
		n.probe.Close()
		n.disk.Close()
		errs = append(errs, n.dirLock.release())
		n.closeErr = errors.Join(errs...)
		switch {
		case !logged:
		case n.closeErr != nil:
			n.logger.Error("runnel node stopped with errors", "err", n.closeErr)
		default:
			n.logger.Info("runnel node stopped")
		}
	})
	return n.closeErr
}

// HTTPAddr is the bound HTTP listener address.
func (n *Node) HTTPAddr() net.Addr { return n.http.Addr() }
