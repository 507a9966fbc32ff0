package controller

// Changing the metadata quorum's voters, the Kafka way (KIP-853: AddRaftVoter,
// RemoveRaftVoter, DescribeQuorum), over hashicorp/raft's configuration changes.
//
// Every node is a member of the Raft configuration: the voters, and the other nodes
// as non-voters (Kafka's observers), which RegisterBroker adds. AddVoter promotes a
// registered, live, caught-up non-voter (raft.AddVoter); RemoveVoter demotes a voter
// back to a non-voter (raft.DemoteVoter), so the node goes on replaying the metadata
// as a broker, and UnregisterBroker (decommission) can then remove it for good.
//
// Raft's stored configuration, not --controllers, says who votes: a node that has
// Raft state restores the configuration from its log and snapshots, and a node with
// no state bootstraps only when no other listed voter knows a leader (quorumExists).
// --controllers is only the first configuration of a new cluster and the list of
// nodes to ask where the active controller is.

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/hashicorp/raft"

	"github.com/runnel-io/runnel/internal/metadata"
)

var (
	// ErrDuplicateVoter is returned by AddVoter for a node that is a voter already.
	// Kafka: DUPLICATE_VOTER.
	ErrDuplicateVoter = errors.New("already a voter of the metadata quorum")
	// ErrVoterNotFound is returned by RemoveVoter for a node that is not a voter.
	// Kafka: VOTER_NOT_FOUND.
	ErrVoterNotFound = errors.New("not a voter of the metadata quorum")
)

// DescribeQuorum reports the quorum as the active controller sees it. ErrNotController
// on any other node.
func (c *Controller) DescribeQuorum(ctx context.Context) (metadata.QuorumState, error) {
	var st metadata.QuorumState
	err := c.withLeader(ctx, func(im *metadata.Image) error {
		cf, err := c.configurationLocked(ctx)
		if err != nil {
			return err
		}
		st = metadata.QuorumState{Leader: c.cfg.NodeID, Term: c.raft.CurrentTerm(), HighWatermark: int64(im.Offset) + 1}
		now := time.Now()
		for _, s := range cf.Servers {
			m := c.memberLocked(im, s, now)
			if m.Voter {
				st.Voters = append(st.Voters, m)
			} else {
				st.Observers = append(st.Observers, m)
			}
		}
		byID := func(a, b metadata.QuorumMember) int { return int(a.ID) - int(b.ID) }
		slices.SortFunc(st.Voters, byID)
		slices.SortFunc(st.Observers, byID)
		return nil
	})
	return st, err
}

// memberLocked describes server s of the configuration; proposeMu held (sessions).
// Its LogEndOffset is the leader's applied image for the leader; for the others, the
// metadata offset their last heartbeat reported as applied (hashicorp/raft does not
// expose a follower's match index, and a node applies only what it holds). Raft's
// configuration and barrier entries have indexes too but carry no metadata: counting
// them for the leader alone would show every follower behind. The leader's LastFetch
// and LastCaughtUp are now; a node with no heartbeat since this controller was
// elected has zero times.
func (c *Controller) memberLocked(im *metadata.Image, s raft.Server, now time.Time) metadata.QuorumMember {
	id := nodeIDOf(s.ID)
	m := metadata.QuorumMember{ID: id, Addr: string(s.Address), Voter: s.Suffrage == raft.Voter, LogEndOffset: -1}
	if id == c.cfg.NodeID {
		m.LogEndOffset, m.LastFetch, m.LastCaughtUp = int64(im.Offset)+1, now, now
		return m
	}
	b, registered := im.Brokers[id]
	if r, ok := c.applied.get(id); ok && registered && r.epoch == b.Epoch {
		m.LogEndOffset = int64(r.offset) + 1
	}
	// A session whose contact is still the start of this term's grace period has had
	// no heartbeat: its times are unknown, not the grace's start.
	if bs := c.sessions.m[id]; bs != nil && registered && bs.epoch == b.Epoch {
		if !bs.lastContact.Equal(c.sessions.since) {
			m.LastFetch = bs.lastContact
		}
		if !bs.caughtUpAt.Equal(c.sessions.since) {
			m.LastCaughtUp = bs.caughtUpAt
		}
	}
	return m
}

// AddVoter makes node id, a registered and live non-voter that has caught up with the
// metadata, a voter (Kafka's AddRaftVoter). addr, when not "", must be its Raft
// address in the configuration. It waits, bounded by ctx, for the node to report
// (in its heartbeats) every record committed when the call began, so that the new
// voter does not hold commits back. Errors: ErrDuplicateVoter; ErrInvalidRequest
// naming why (not registered, not in the configuration, another address, fenced);
// ErrTimeout when it did not catch up in time; ErrNotController.
func (c *Controller) AddVoter(ctx context.Context, id metadata.NodeID, addr string) error {
	var epoch int64
	var target uint64
	err := c.withLeader(ctx, func(im *metadata.Image) error {
		b, err := c.checkAddVoterLocked(ctx, im, id, addr)
		epoch, target = b.Epoch, im.Offset
		return err
	})
	if err != nil {
		return err
	}
	// Outside proposeMu: the heartbeats that report progress need it.
	if err := c.waitNodeApplied(ctx, id, epoch, target); err != nil {
		return err
	}
	return c.withLeader(ctx, func(im *metadata.Image) error {
		if _, err := c.checkAddVoterLocked(ctx, im, id, addr); err != nil {
			return err
		}
		cf := c.raft.GetConfiguration()
		if err := c.waitFuture(ctx, cf); err != nil {
			return err
		}
		s, _ := findServer(cf.Configuration(), id)
		// prevIndex: refused by Raft if the configuration changed since it was read.
		if err := c.waitFuture(ctx, c.raft.AddVoter(s.ID, s.Address, cf.Index(), timeoutOf(ctx))); err != nil {
			return fmt.Errorf("promoting node %d to a metadata voter: %w", id, err)
		}
		c.log.Info("node promoted to a metadata quorum voter", "node", id, "addr", s.Address,
			"voters", append(votersOf(cf.Configuration()), id))
		return nil
	})
}

// checkAddVoterLocked checks that id may be promoted and returns its registration.
func (c *Controller) checkAddVoterLocked(ctx context.Context, im *metadata.Image, id metadata.NodeID, addr string) (metadata.Broker, error) {
	cf, err := c.configurationLocked(ctx)
	if err != nil {
		return metadata.Broker{}, err
	}
	s, inConf := findServer(cf, id)
	if inConf && s.Suffrage == raft.Voter {
		return metadata.Broker{}, fmt.Errorf("%w: node %d (voters: %v)", ErrDuplicateVoter, id, votersOf(cf))
	}
	b, ok := im.Brokers[id]
	switch {
	case !ok:
		return b, fmt.Errorf("%w: node %d is not registered: start it with its own --node-id and the cluster's --controllers, so that it joins as a broker, then promote it",
			ErrInvalidRequest, id)
	case !inConf:
		return b, fmt.Errorf("%w: node %d is registered but not in the metadata quorum (it has not joined the Raft group as a non-voter; is it running?)",
			ErrInvalidRequest, id)
	case addr != "" && addr != string(s.Address):
		return b, fmt.Errorf("%w: node %d's Raft address is %s, not %s", ErrInvalidRequest, id, s.Address, addr)
	case b.Fenced:
		return b, fmt.Errorf("%w: node %d is fenced (no heartbeat within the session timeout, or shut down): it must run and be caught up to become a voter",
			ErrInvalidRequest, id)
	}
	return b, nil
}

// waitNodeApplied waits until node id, at registration epoch, has reported metadata
// offset target as applied.
func (c *Controller) waitNodeApplied(ctx context.Context, id metadata.NodeID, epoch int64, target uint64) error {
	tick := time.NewTicker(leadershipRecheck)
	defer tick.Stop()
	for {
		r, ok, ch := c.applied.getWait(id)
		if ok && r.epoch == epoch && r.offset >= target {
			return nil
		}
		select {
		case <-ch:
		case <-tick.C:
			if !c.IsLeader() {
				return c.notController()
			}
		case <-ctx.Done():
			at := "nothing"
			if ok && r.epoch == epoch {
				at = fmt.Sprintf("offset %d", r.offset)
			}
			return fmt.Errorf("%w: node %d has not caught up with the metadata (it reported %s applied, the quorum was at %d): %w",
				ErrTimeout, id, at, target, ctx.Err())
		case <-c.done:
			return ErrClosed
		}
	}
}

// RemoveVoter makes voter id a non-voter (Kafka's RemoveRaftVoter): the node stays a
// broker and a member of the Raft group that replays the metadata, and no longer
// votes or counts for commits. It refuses (ErrInvalidRequest) to remove the last voter
// or one whose removal leaves fewer live voters than a majority of the voters left,
// since that quorum could commit nothing; ErrVoterNotFound for a node that is not a
// voter. When id is this node (the active controller), leadership first moves to
// another live voter and the call fails with ErrNotController, so that it is retried
// at the new controller, which does the demotion.
func (c *Controller) RemoveVoter(ctx context.Context, id metadata.NodeID) error {
	return c.withLeader(ctx, func(im *metadata.Image) error {
		cf := c.raft.GetConfiguration()
		if err := c.waitFuture(ctx, cf); err != nil {
			return err
		}
		conf := cf.Configuration()
		voters := votersOf(conf)
		live := c.liveVoterLocked(im)
		if err := checkRemoveVoter(voters, id, live); err != nil {
			return err
		}
		if id == c.cfg.NodeID {
			return c.handOverLocked(ctx, conf, id, live)
		}
		s, _ := findServer(conf, id)
		if err := c.waitFuture(ctx, c.raft.DemoteVoter(s.ID, cf.Index(), timeoutOf(ctx))); err != nil {
			return fmt.Errorf("removing node %d from the metadata voters: %w", id, err)
		}
		c.log.Info("node removed from the metadata quorum's voters (it stays a broker and a non-voter)", "node", id,
			"voters", votersExcept(voters, id))
		return nil
	})
}

// checkRemoveVoter is RemoveVoter's decision: voters is the current configuration's,
// live says which nodes are up. Pure.
func checkRemoveVoter(voters []metadata.NodeID, id metadata.NodeID, live func(metadata.NodeID) bool) error {
	if !slices.Contains(voters, id) {
		return fmt.Errorf("%w: node %d (voters: %v)", ErrVoterNotFound, id, voters)
	}
	if len(voters) == 1 {
		return fmt.Errorf("%w: node %d is the only metadata voter; add another voter first (runnel cluster add-voter)", ErrInvalidRequest, id)
	}
	var rest, up []metadata.NodeID
	for _, v := range voters {
		if v == id {
			continue
		}
		rest = append(rest, v)
		if live(v) {
			up = append(up, v)
		}
	}
	if need := len(rest)/2 + 1; len(up) < need {
		return fmt.Errorf("%w: removing node %d would leave voters %v of which only %v are alive, fewer than a majority (%d): the quorum could not commit anything; start the dead voters or add a voter first",
			ErrInvalidRequest, id, rest, up, need)
	}
	return nil
}

// liveVoterLocked says whether a node is up: this node, or an unfenced broker that is
// not shutting down.
func (c *Controller) liveVoterLocked(im *metadata.Image) func(metadata.NodeID) bool {
	live := c.liveLocked(im)
	return func(id metadata.NodeID) bool { return id == c.cfg.NodeID || live(id) }
}

// handOverLocked moves the leadership from this node (voter id, about to be removed)
// to the live voter that has applied the most metadata, and returns ErrNotController
// so that the removal is retried at the new controller.
func (c *Controller) handOverLocked(ctx context.Context, conf raft.Configuration, id metadata.NodeID, live func(metadata.NodeID) bool) error {
	to, best := metadata.NodeID(-1), int64(-1)
	for _, v := range votersExcept(votersOf(conf), id) {
		if !live(v) {
			continue
		}
		off := int64(-1)
		if r, ok := c.applied.get(v); ok {
			off = int64(r.offset)
		}
		if to < 0 || off > best {
			to, best = v, off
		}
	}
	s, _ := findServer(conf, to)
	c.log.Info("moving the metadata quorum's leadership before this node leaves the voters", "node", id, "to", to)
	if err := c.waitFuture(ctx, c.raft.LeadershipTransferToServer(s.ID, s.Address)); err != nil {
		return fmt.Errorf("moving the leadership to node %d before removing node %d from the voters: %w", to, id, err)
	}
	return fmt.Errorf("%w: node %d was the active controller; the leadership moved to node %d, which removes it",
		ErrNotController, id, to)
}

// quorumExists asks the other voters of --controllers who the active controller is:
// if one knows, the quorum exists already and this node, which has no Raft state (a
// new machine, a wiped disk, a voter that was removed), must not bootstrap a
// configuration of its own from the flag. It joins instead, as a non-voter does, and
// the quorum's configuration decides whether it votes. Each question is bounded by
// discoveryTimeout. At a cluster's first start no voter knows a leader, and each
// bootstraps the same configuration from the flag.
func (c *Controller) quorumExists() (metadata.NodeID, bool) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Duration(len(c.cfg.Voters))*discoveryTimeout)
	defer cancel()
	leader, _, err := c.ControllerAddr(ctx)
	return leader, err == nil
}

// configurationLocked reads the current Raft configuration.
func (c *Controller) configurationLocked(ctx context.Context) (raft.Configuration, error) {
	cf := c.raft.GetConfiguration()
	if err := c.waitFuture(ctx, cf); err != nil {
		return raft.Configuration{}, err
	}
	return cf.Configuration(), nil
}

// findServer returns node id's entry in conf.
func findServer(conf raft.Configuration, id metadata.NodeID) (raft.Server, bool) {
	for _, s := range conf.Servers {
		if s.ID == serverID(id) {
			return s, true
		}
	}
	return raft.Server{}, false
}

// votersOf returns conf's voters in id order.
func votersOf(conf raft.Configuration) []metadata.NodeID {
	var out []metadata.NodeID
	for _, s := range conf.Servers {
		if s.Suffrage == raft.Voter {
			out = append(out, nodeIDOf(s.ID))
		}
	}
	slices.Sort(out)
	return out
}

// votersExcept returns ids without id, in a new slice.
func votersExcept(ids []metadata.NodeID, id metadata.NodeID) []metadata.NodeID {
	var out []metadata.NodeID
	for _, v := range ids {
		if v != id {
			out = append(out, v)
		}
	}
	return out
}

// nodeIDOf is serverID's inverse (-1 for an id that is not a number).
func nodeIDOf(id raft.ServerID) metadata.NodeID {
	n, err := strconv.ParseInt(string(id), 10, 32)
	if err != nil {
		return -1
	}
	return metadata.NodeID(n)
}

// get returns what node id last reported as applied.
func (a *appliedOffsets) get(id metadata.NodeID) (reportedOffset, bool) {
	r, ok, _ := a.getWait(id)
	return r, ok
}

// getWait is get with a channel closed at the next report.
func (a *appliedOffsets) getWait(id metadata.NodeID) (reportedOffset, bool, <-chan struct{}) {
	a.mu.Lock()
	defer a.mu.Unlock()
	r, ok := a.m[id]
	return r, ok, a.changedCh
}

// UpdateVoter records addr as voter id's Raft address in the configuration (Kafka's
// UpdateRaftVoter, KIP-853): a voter that restarts with another --controller-listen
// address tells the active controller, which can otherwise not reach it (Raft's
// leader sends to its followers, so the voter would never hear from it again). The
// same address is a no-op. Errors: ErrVoterNotFound for a node that is not a voter;
// ErrInvalidRequest for an empty address or one another member uses;
// ErrNotController.
func (c *Controller) UpdateVoter(ctx context.Context, id metadata.NodeID, addr string) error {
	if addr == "" {
		return fmt.Errorf("%w: node %d's new Raft address is empty (no %s listener)", ErrInvalidRequest, id, "CONTROLLER")
	}
	return c.withLeader(ctx, func(im *metadata.Image) error {
		return c.updateVoterLocked(ctx, id, addr)
	})
}

// updateVoterLocked is UpdateVoter under proposeMu.
func (c *Controller) updateVoterLocked(ctx context.Context, id metadata.NodeID, addr string) error {
	cf := c.raft.GetConfiguration()
	if err := c.waitFuture(ctx, cf); err != nil {
		return err
	}
	conf := cf.Configuration()
	s, ok := findServer(conf, id)
	if !ok || s.Suffrage != raft.Voter {
		return fmt.Errorf("%w: node %d (voters: %v)", ErrVoterNotFound, id, votersOf(conf))
	}
	if string(s.Address) == addr {
		return nil
	}
	for _, o := range conf.Servers {
		if o.ID != s.ID && string(o.Address) == addr {
			return fmt.Errorf("%w: Raft address %s is node %s's", ErrInvalidRequest, addr, o.ID)
		}
	}
	// AddVoter of a voter changes only its address; prevIndex: refused by Raft if
	// the configuration changed since it was read.
	if err := c.waitFuture(ctx, c.raft.AddVoter(s.ID, raft.ServerAddress(addr), cf.Index(), timeoutOf(ctx))); err != nil {
		return fmt.Errorf("updating node %d's Raft address to %s: %w", id, addr, err)
	}
	c.log.Info("metadata voter's Raft address updated", "node", id, "old_addr", s.Address, "addr", addr)
	return nil
}

// Term is the current Raft term (Kafka's leader epoch of the metadata log).
func (c *Controller) Term() uint64 { return c.raft.CurrentTerm() }

// storedSelf returns this node's Raft address and suffrage in the configuration it
// has restored from its own Raft state (ok false when it is not in it).
func (c *Controller) storedSelf() (raft.Server, bool) {
	cf := c.raft.GetConfiguration()
	if cf.Error() != nil {
		return raft.Server{}, false
	}
	return findServer(cf.Configuration(), c.cfg.NodeID)
}
