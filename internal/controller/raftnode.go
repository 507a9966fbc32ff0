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
func (c *Controller) Start(ctx context.Context) error {
	props, err := readMetaProperties(c.cfg.DataDir)
	if err != nil {
		return err
	}
	if props.hasNodeID && props.nodeID != c.cfg.NodeID {
		return fmt.Errorf("controller: %s has node.id=%d but this node is configured as node.id=%d",
			filepath.Join(c.cfg.DataDir, metaPropertiesName), props.nodeID, c.cfg.NodeID)
	}
	if err := c.openRaft(); err != nil {
		c.Close()
		return err
	}
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		c.watchLeadership()
	}()
	if err := c.waitReady(ctx); err != nil {
		c.Close()
		return err
	}
	if err := c.checkClusterID(props); err != nil {
		c.Close()
		return err
	}
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
func (c *Controller) openRaft() error {
	dir := filepath.Join(c.cfg.DataDir, raftDirName)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("controller: %w", err)
	}
	hl := newHclogAdapter(c.cfg.Logger.With("component", "raft"))
	store, err := raftboltdb.NewBoltStore(filepath.Join(dir, "raft.db"))
	if err != nil {
		return fmt.Errorf("controller: open raft log %s: %w", dir, err)
	}
	c.store = store
	snaps, err := raft.NewFileSnapshotStoreWithLogger(dir, retainSnapshots, hl)
	if err != nil {
		return fmt.Errorf("controller: open raft snapshots: %w", err)
	}
	if c.trans, err = c.newTransport(hl); err != nil {
		return err
	}
	logs, err := raft.NewLogCache(logCacheSize, store)
	if err != nil {
		return fmt.Errorf("controller: %w", err)
	}
	rc := c.raftConfig(hl)
	if err := c.maybeBootstrap(rc, logs, snaps); err != nil {
		return err
	}
	c.raft, err = raft.NewRaft(rc, c.fsm, logs, store, snaps, c.trans)
	if err != nil {
		return fmt.Errorf("controller: start raft: %w", err)
	}
	return nil
}

func (c *Controller) newTransport(hl *hclogAdapter) (*raft.NetworkTransport, error) {
	var adv net.Addr
	if addr := c.advertise(); addr != "" {
		a, err := net.ResolveTCPAddr("tcp", addr)
		if err != nil {
			return nil, fmt.Errorf("controller: advertise address %q: %w", addr, err)
		}
		adv = a
	}
	t, err := raft.NewTCPTransportWithLogger(c.cfg.Listen, adv, transportMaxPool, transportTimeout, hl)
	if err != nil {
		return nil, fmt.Errorf("controller: raft listener on %s (set an advertise address if it is a wildcard): %w", c.cfg.Listen, err)
	}
	return t, nil
}

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
	return rc
}

// maybeBootstrap writes the initial configuration when this node has no Raft state
// and is a voter. Every voter bootstraps the same configuration, which hashicorp/raft
// allows: they then elect a leader among themselves.
func (c *Controller) maybeBootstrap(rc *raft.Config, logs raft.LogStore, snaps raft.SnapshotStore) error {
	existing, err := raft.HasExistingState(logs, c.store, snaps)
	if err != nil {
		return fmt.Errorf("controller: read raft state: %w", err)
	}
	voters := c.voters()
	if existing || !isVoter(voters, c.cfg.NodeID) {
		// TODO(cluster): a node that is not a voter must ask the active controller to
		// add it as a non-voter (raft.AddNonvoter), e.g. through BrokerRegistration,
		// so that it replays the metadata log like a KRaft broker.
		return nil
	}
	conf := raft.Configuration{}
	for _, v := range voters {
		conf.Servers = append(conf.Servers, raft.Server{Suffrage: raft.Voter, ID: serverID(v.ID), Address: raft.ServerAddress(v.Addr)})
	}
	if err := raft.BootstrapCluster(rc, logs, c.store, snaps, c.trans, conf); err != nil {
		return fmt.Errorf("controller: bootstrap raft: %w", err)
	}
	c.log.Info("bootstrapped metadata quorum", "voters", len(voters))
	return nil
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
			}
		case <-c.done:
			return
		}
	}
}

// becomeFresh takes proposeMu and runs ensureFreshLocked.
func (c *Controller) becomeFresh(ctx context.Context) error {
	c.proposeMu.Lock()
	defer c.proposeMu.Unlock()
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
