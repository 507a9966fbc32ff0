package controller

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/hashicorp/raft"
	raftboltdb "github.com/hashicorp/raft-boltdb/v2"

	"github.com/runnel-io/runnel/internal/metadata"
	"github.com/runnel-io/runnel/internal/nodenet"
)

// Raft timing for a LAN: a single voter elects itself within about a second of start.
const (
	heartbeatTimeout   = 500 * time.Millisecond
	electionTimeout    = 500 * time.Millisecond
	leaderLeaseTimeout = 250 * time.Millisecond
	commitTimeout      = 20 * time.Millisecond
	trailingLogs       = 1024
	retainSnapshots    = 2
	transportTimeout   = 10 * time.Second
	transportMaxPool   = 3
	logCacheSize       = 512
	// raftDirName is the directory under DataDir owned by this package.
	raftDirName = "__raft"
)

// Start opens the Raft stores under <DataDir>/__raft, starts Raft, bootstraps the
// quorum if this node has no state and is a voter, and waits (bounded by ctx) until a
// leader is known and the image carries a cluster id. It then checks and writes
// meta.properties. On error the Controller is closed. Call Start once, and let it
// return before calling anything but Image, Subscribe and WaitApplied.
//
// A node that is not a voter (with or without Raft state) may not be in the quorum:
// Start returns at once, the node registers with the active controller (RegisterBroker with
// its RaftAddr adds it as a non-voter), and then calls WaitReady.
func (c *Controller) Start(ctx context.Context) error {
	props, err := readMetaProperties(c.cfg.DataDir)
	if err != nil {
		return err
	}
	if props.hasNodeID && props.nodeID != c.cfg.NodeID {
		return fmt.Errorf("controller: %s has node.id=%d but this node is configured as node.id=%d",
			filepath.Join(c.cfg.DataDir, metaPropertiesName), props.nodeID, c.cfg.NodeID)
	}
	c.props = props
	joining, err := c.openRaft()
	if err != nil {
		c.Close()
		return err
	}
	c.wg.Add(3)
	go func() {
		defer c.wg.Done()
		c.watchLeadership()
	}()
	go func() {
		defer c.wg.Done()
		c.watchDisk()
	}()
	go func() {
		defer c.wg.Done()
		c.livenessLoop()
	}()
	if joining {
		c.log.Info("a non-voter: joining the metadata quorum through this node's registration", "node", c.cfg.NodeID, "addr", c.Addr())
		return nil
	}
	if err := c.announceNewAddr(ctx); err != nil {
		c.Close()
		return err
	}
	if err := c.WaitReady(ctx); err != nil {
		c.Close()
		return err
	}
	return nil
}

// announceInterval paces announceNewAddr's attempts; announceAttemptTimeout bounds one.
const (
	announceInterval       = 200 * time.Millisecond
	announceAttemptTimeout = 2 * time.Second
)

// announceNewAddr handles a voter that restarted with another Raft address than the
// configuration it restored holds (KIP-853's UpdateRaftVoter): the leader sends to
// the old address, so this node would never hear from it. It calls
// Config.AnnounceAddr (which sends UpdateRaftVoter to the active controller) until it
// succeeds or this node hears from a leader; when this node is the leader itself (a
// lone voter), it updates its own entry. Nothing to do for a non-voter (its
// registration updates its address) or an unchanged address.
func (c *Controller) announceNewAddr(ctx context.Context) error {
	self, ok := c.storedSelf()
	addr := c.Addr()
	if !ok || self.Suffrage != raft.Voter || string(self.Address) == addr {
		return nil
	}
	c.log.Info("this voter's Raft address changed since the quorum last recorded it: announcing the new one",
		"old_addr", self.Address, "addr", addr)
	tick := time.NewTicker(announceInterval)
	defer tick.Stop()
	var last error
	for {
		if c.IsLeader() {
			return c.UpdateVoter(ctx, c.cfg.NodeID, addr)
		}
		if s, ok := c.storedSelf(); ok && string(s.Address) == addr {
			return nil // the leader recorded it (and so reaches this node)
		}
		if c.cfg.AnnounceAddr != nil {
			// Bounded, so that the checks above run again (a lone voter leads itself).
			actx, cancel := context.WithTimeout(ctx, announceAttemptTimeout)
			last = c.cfg.AnnounceAddr(actx, addr)
			cancel()
			if last == nil {
				c.log.Info("the active controller recorded this voter's new Raft address", "addr", addr)
				return nil
			}
		}
		select {
		case <-tick.C:
		case <-ctx.Done():
			return fmt.Errorf("%w: announcing this voter's new Raft address %s (the quorum has %s): %v: %w",
				ErrTimeout, addr, self.Address, last, ctx.Err())
		case <-c.done:
			return ErrClosed
		}
	}
}

// WaitReady waits (bounded by ctx) until a leader is known and the image carries a
// cluster id, then checks and writes meta.properties. Start does this for a node that
// is already in the quorum; a joining non-voter calls it after registering. It does
// not close the Controller on error.
func (c *Controller) WaitReady(ctx context.Context) error {
	if c.ready.Load() {
		return nil
	}
	if err := c.waitReady(ctx); err != nil {
		return err
	}
	if err := c.checkClusterID(c.props); err != nil {
		return err
	}
	c.ready.Store(true)
	c.log.Info("metadata quorum ready", "node", c.cfg.NodeID, "addr", c.Addr(),
		"cluster_id", c.Image().ClusterID, "offset", c.Image().Offset)
	return nil
}

// checkClusterID compares meta.properties with the quorum's cluster id and writes it.
func (c *Controller) checkClusterID(props metaProperties) error {
	id := c.Image().ClusterID
	if props.clusterID != "" && props.clusterID != id {
		return fmt.Errorf("controller: %s has cluster.id=%s but the metadata quorum's cluster id is %s",
			filepath.Join(c.cfg.DataDir, metaPropertiesName), props.clusterID, id)
	}
	return writeMetaProperties(c.cfg.DataDir, metaProperties{nodeID: c.cfg.NodeID, hasNodeID: true, clusterID: id})
}

// openRaft opens the stores and the transport, bootstraps if needed and starts Raft.
// joining reports a node that is not in the quorum yet (see Start).
func (c *Controller) openRaft() (joining bool, err error) {
	dir := filepath.Join(c.cfg.DataDir, raftDirName)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return false, fmt.Errorf("controller: %w", err)
	}
	hl := newHclogAdapter(c.cfg.Logger.With("component", "raft"))
	hl.leaving = &c.leaving
	store, err := raftboltdb.NewBoltStore(filepath.Join(dir, "raft.db"))
	if err != nil {
		return false, fmt.Errorf("controller: open raft log %s: %w", dir, err)
	}
	c.store = newDiskStore(store, dir, c.cfg.OnDiskFull)
	hl.diskFull = c.store.isFull
	snaps, err := raft.NewFileSnapshotStoreWithLogger(dir, retainSnapshots, hl)
	if err != nil {
		return false, fmt.Errorf("controller: open raft snapshots: %w", err)
	}
	if c.trans, err = c.newTransport(hl); err != nil {
		return false, err
	}
	logs, err := raft.NewLogCache(logCacheSize, c.store)
	if err != nil {
		return false, fmt.Errorf("controller: %w", err)
	}
	rc := c.raftConfig(hl)
	if joining, err = c.maybeBootstrap(rc, logs, snaps); err != nil {
		return false, err
	}
	c.raft, err = raft.NewRaft(rc, c.fsm, logs, c.store, snaps, &patientTransport{NetworkTransport: c.trans, c: c})
	if err != nil {
		return false, fmt.Errorf("controller: start raft: %w", err)
	}
	close(c.raftSet)
	c.observeLeaders()
	c.watchFailedHeartbeats()
	return joining, nil
}

// observeLeaders remembers the last Raft leader other than this node (prevLeader), so
// that a new leader can check whether its process is gone (checkPreviousLeader: an
// election mostly means the old leader's node stopped answering), and calls
// Config.OnLeaderChange.
func (c *Controller) observeLeaders() {
	observe(c, 16, func(lo raft.LeaderObservation) {
		if id, err := strconv.Atoi(string(lo.LeaderID)); err == nil && metadata.NodeID(id) != c.cfg.NodeID {
			c.prevLeader.Store(int32(id))
		}
		if c.cfg.OnLeaderChange != nil && lo.LeaderID != "" {
			c.cfg.OnLeaderChange()
		}
	})
}

// observe calls fn, on a goroutine of its own, with every Raft observation of type T
// until Close. Observations that come while fn is busy and the buffer (size) is full
// are dropped, as raft.Observer does for a non-blocking observer.
func observe[T any](c *Controller, size int, fn func(T)) {
	ch := make(chan raft.Observation, size)
	obs := raft.NewObserver(ch, false, func(o *raft.Observation) bool {
		_, ok := o.Data.(T)
		return ok
	})
	c.raft.RegisterObserver(obs)
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		defer c.raft.DeregisterObserver(obs)
		for {
			select {
			case o := <-ch:
				fn(o.Data.(T))
			case <-c.done:
				return
			}
		}
	}()
}

// checkPreviousLeader asks, on its own goroutine, whether the previous Raft leader's
// process is gone (that is the likely reason for this node's election) and fences its
// node at once if so (fenceIfGone). A previous leader that is only paused or cut off
// keeps the full grace period: its node may hold a lease (controlplane/lease.go) until a
// session timeout after its last heartbeat, and fencing it earlier would let another
// node take its roles while it still answers for them.
func (c *Controller) checkPreviousLeader() {
	prev := metadata.NodeID(c.prevLeader.Load())
	if prev < 0 || prev == c.cfg.NodeID || c.cfg.ProcessGone == nil {
		return
	}
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		c.fenceIfGone(prev)
	}()
}

// newTransport binds the Raft listener. It is shared with the controller discovery
// service (discovery.go), which tells nodes outside the quorum where the active
// controller's Kafka listener is.
func (c *Controller) newTransport(hl *hclogAdapter) (*raft.NetworkTransport, error) {
	ln, err := c.Network().Listen("tcp", c.cfg.Listen)
	if err != nil {
		return nil, fmt.Errorf("controller: raft listener on %s: %w", c.cfg.Listen, err)
	}
	adv := ln.Addr()
	if addr := c.advertise(); addr != "" {
		if adv, err = net.ResolveTCPAddr("tcp", addr); err != nil {
			ln.Close()
			return nil, fmt.Errorf("controller: advertise address %q: %w", addr, err)
		}
	}
	if ta, ok := adv.(*net.TCPAddr); !ok || ta.IP == nil || ta.IP.IsUnspecified() {
		ln.Close()
		return nil, fmt.Errorf("controller: raft listener on %s: %s is not an address other nodes can dial (set an advertise address if it is a wildcard)",
			c.cfg.Listen, adv)
	}
	layer := newMuxLayer(ln, adv, c.answerDiscovery, c.Network())
	return raft.NewNetworkTransportWithConfig(&raft.NetworkTransportConfig{
		Stream: layer, MaxPool: transportMaxPool, Timeout: transportTimeout, Logger: hl,
	}), nil
}

// Network is where this controller listens and dials (Config.Network, else nodenet.OS).
// The node's other clients of its peers (the controller channel) dial on it too.
func (c *Controller) Network() nodenet.Network { return nodenet.Or(c.cfg.Network) }

// advertise is Config.Advertise, else this node's address in Config.Voters, else ""
// (the transport then advertises its bound address).
func (c *Controller) advertise() string {
	if c.cfg.Advertise != "" {
		return c.cfg.Advertise
	}
	for _, v := range c.cfg.Voters {
		if v.ID == c.cfg.NodeID {
			return v.Addr
		}
	}
	return ""
}

func (c *Controller) raftConfig(hl *hclogAdapter) *raft.Config {
	rc := raft.DefaultConfig()
	rc.LocalID = serverID(c.cfg.NodeID)
	rc.HeartbeatTimeout = heartbeatTimeout
	rc.ElectionTimeout = electionTimeout
	rc.LeaderLeaseTimeout = leaderLeaseTimeout
	rc.CommitTimeout = commitTimeout
	rc.TrailingLogs = trailingLogs
	rc.SnapshotThreshold = c.cfg.SnapshotThreshold
	rc.SnapshotInterval = c.cfg.SnapshotInterval
	rc.Logger = hl
	// A leader that leaves the voters keeps replaying the metadata as a non-voter
	// (voters.go moves the leadership first; this is the fallback).
	rc.ShutdownOnRemove = false
	return rc
}

// maybeBootstrap writes the initial configuration when this node has no Raft state
// and is a voter. Every voter bootstraps the same configuration, which hashicorp/raft
// allows: they then elect a leader among themselves. A node with no state that is not
// a voter is joining: the active controller adds it as a non-voter when it registers,
// and it then replays the metadata log like a KRaft broker.
func (c *Controller) maybeBootstrap(rc *raft.Config, logs raft.LogStore, snaps raft.SnapshotStore) (joining bool, err error) {
	existing, err := raft.HasExistingState(logs, c.store, snaps)
	if err != nil {
		return false, fmt.Errorf("controller: read raft state: %w", err)
	}
	voters := c.voters()
	if !isVoter(voters, c.cfg.NodeID) {
		// A non-voter joins through its registration (RegisterBroker adds it, or keeps
		// it), with or without Raft state: one that was unregistered is no longer in
		// the quorum's configuration though its own state still names it, and would
		// wait for ever for a leader that no longer sends to it.
		return true, nil
	}
	if existing {
		return false, nil
	}
	if leader, ok := c.quorumExists(); ok { // voters.go: the flag must not re-add a removed voter
		c.log.Info("the metadata quorum exists already: joining it, not bootstrapping from --controllers", "node", c.cfg.NodeID, "leader", leader)
		return true, nil
	}
	conf := raft.Configuration{}
	for _, v := range voters {
		conf.Servers = append(conf.Servers, raft.Server{Suffrage: raft.Voter, ID: serverID(v.ID), Address: raft.ServerAddress(v.Addr)})
	}
	if err := raft.BootstrapCluster(rc, logs, c.store, snaps, c.trans, conf); err != nil {
		return false, fmt.Errorf("controller: bootstrap raft: %w", err)
	}
	c.log.Info("bootstrapped metadata quorum", "voters", len(voters))
	return false, nil
}

// addNonvoterLocked adds node id at addr to the Raft configuration as a non-voter,
// unless it is there already; a member at another address gets addr (a node that
// registers again after a restart with another --controller-listen: a voter stays a
// voter, UpdateVoter). "" does nothing.
func (c *Controller) addNonvoterLocked(ctx context.Context, id metadata.NodeID, addr string) error {
	if addr == "" {
		return nil
	}
	cf := c.raft.GetConfiguration()
	if err := c.waitFuture(ctx, cf); err != nil {
		return err
	}
	for _, s := range cf.Configuration().Servers {
		switch {
		case s.ID != serverID(id):
		case s.Address == raft.ServerAddress(addr):
			return nil
		case s.Suffrage == raft.Voter:
			return c.updateVoterLocked(ctx, id, addr)
		}
	}
	if err := c.waitFuture(ctx, c.raft.AddNonvoter(serverID(id), raft.ServerAddress(addr), 0, timeoutOf(ctx))); err != nil {
		return err
	}
	c.log.Info("added node to the metadata quorum as a non-voter", "node", id, "addr", addr)
	return nil
}

// Resign hands Raft leadership to another voter if this node leads (a clean
// shutdown, so the quorum need not wait for an election timeout). It is a no-op on a
// follower or a lone voter.
func (c *Controller) Resign(ctx context.Context) error {
	if !c.IsLeader() {
		return nil
	}
	cf := c.raft.GetConfiguration()
	if err := c.waitFuture(ctx, cf); err != nil {
		return err
	}
	others := 0
	for _, s := range cf.Configuration().Servers {
		if s.Suffrage == raft.Voter && s.ID != serverID(c.cfg.NodeID) {
			others++
		}
	}
	if others == 0 {
		return nil
	}
	return c.waitFuture(ctx, c.raft.LeadershipTransfer())
}

// voters returns Config.Voters, or this node alone at its transport's address.
func (c *Controller) voters() []Voter {
	if len(c.cfg.Voters) > 0 {
		return c.cfg.Voters
	}
	return []Voter{{ID: c.cfg.NodeID, Addr: string(c.trans.LocalAddr())}}
}

func isVoter(voters []Voter, id metadata.NodeID) bool {
	for _, v := range voters {
		if v.ID == id {
			return true
		}
	}
	return false
}

func serverID(id metadata.NodeID) raft.ServerID { return raft.ServerID(strconv.Itoa(int(id))) }

// shutdownRaft stops Raft and closes the transport and the store, whichever exist.
func (c *Controller) shutdownRaft() error {
	var errs []error
	if c.raft != nil {
		c.awaitFutures(shutdownFutureWait)
		c.awaitApplied(shutdownApplyWait)
		errs = append(errs, c.raft.Shutdown().Error())
	}
	if c.trans != nil {
		errs = append(errs, c.trans.Close())
	}
	if c.store != nil {
		errs = append(errs, c.store.Close())
	}
	return errors.Join(errs...)
}

// waitReady polls until a leader is known and the image has a cluster id. A leader
// first makes sure its image is complete (a Barrier), as the watcher does.
func (c *Controller) waitReady(ctx context.Context) error {
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		if _, ok := c.LeaderID(); ok && c.Image().ClusterID != "" {
			if !c.IsLeader() {
				return nil
			}
			if err := c.becomeFresh(ctx); err == nil {
				return nil
			}
		}
		select {
		case <-tick.C:
		case <-ctx.Done():
			return fmt.Errorf("%w: no metadata quorum leader with a cluster id yet: %w", ErrTimeout, ctx.Err())
		case <-c.done:
			return ErrClosed
		}
	}
}

// watchLeadership makes a new leader's image complete and gives the cluster an id.
func (c *Controller) watchLeadership() {
	for {
		select {
		case leader := <-c.raft.LeaderCh():
			c.log.Info("metadata quorum leadership changed", "leader", leader)
			if leader {
				ctx, cancel := context.WithTimeout(context.Background(), transportTimeout)
				if err := c.becomeFresh(ctx); err != nil {
					c.log.Warn("new controller could not catch up", "err", err)
				}
				cancel()
				c.bootstrapScramUsers()
			}
		case <-c.done:
			return
		}
	}
}

// becomeFresh takes proposeMu and runs ensureFreshLocked.
func (c *Controller) becomeFresh(ctx context.Context) error {
	if err := c.lockPropose(ctx); err != nil {
		return err
	}
	defer c.unlockPropose()
	return c.ensureFreshLocked(ctx)
}

// ensureFreshLocked makes sure that, as leader in the current term, the local image
// holds every committed record (a Barrier), and that the cluster has an id.
func (c *Controller) ensureFreshLocked(ctx context.Context) error {
	term := c.raft.CurrentTerm()
	if term != c.freshTerm {
		if err := c.waitFuture(ctx, c.raft.Barrier(timeoutOf(ctx))); err != nil {
			return err
		}
		c.freshTerm = term
		now := time.Now()
		c.sessions = newSessions(term, now)
		c.checkPreviousLeader()
	}
	if c.Image().ClusterID != "" {
		return nil
	}
	id, err := newClusterID()
	if err != nil {
		return err
	}
	_, err = c.proposeLocked(ctx, []metadata.Record{{Type: metadata.ClusterIDType, ClusterID: id}})
	return err
}

// shutdownApplyWait bounds how long Close waits for the FSM to apply what is committed.
const shutdownApplyWait = 500 * time.Millisecond

// shutdownFutureWait bounds how long Close waits for the proposals in flight to be
// answered: longer than the leader lease, after which a leader that cannot commit
// (its followers gone) steps down and answers them ErrLeadershipLost.
const shutdownFutureWait = 4 * leaderLeaseTimeout

// awaitFutures waits, at most d, until every future a proposal waits on is answered
// (waitFuture): while Raft runs, each is committed and applied, or refused when this
// node loses the leadership; after Raft's shutdown one still queued is never
// answered, and its waiter is left behind (a leak in a node; at the end of a
// virtual-time test, a deadlock of the bubble).
func (c *Controller) awaitFutures(d time.Duration) {
	deadline := time.Now().Add(d)
	for c.futures.Load() > 0 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
}

// awaitApplied waits, at most d, until the FSM has applied every committed entry.
// hashicorp/raft answers a committed entry's future only once its FSM has applied it,
// and its FSM loop returns on shutdown without applying what is still queued: such a
// future is never answered, and waitFuture's helper goroutine waits on it for ever (a
// leak in a node; at the end of a virtual-time test, a deadlock of the bubble). The
// queue drains in microseconds unless the FSM cannot run, and a node shutting down
// can spare that.
func (c *Controller) awaitApplied(d time.Duration) {
	deadline := time.Now().Add(d)
	for c.raft.AppliedIndex() < c.raft.CommitIndex() && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
}
