package controller

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/runnel-io/runnel/internal/metadata"
)

// Heartbeat is one BrokerHeartbeat (Kafka key 63).
type Heartbeat struct {
	ID    metadata.NodeID
	Epoch int64
	// MetadataOffset is the offset of the newest image the broker has applied.
	MetadataOffset uint64
	// WantShutdown asks for a controlled shutdown.
	WantShutdown bool
	// DiskFull says the broker's data disk is full (degraded.go).
	DiskFull bool
	// Damaged are the broker's replicas whose logs hold a damaged range, sorted by
	// metadata.SortDamage (degraded.go); nil when none.
	Damaged []metadata.DamagedReplica
}

// HeartbeatReply is the controller's answer to a Heartbeat.
type HeartbeatReply struct {
	// IsCaughtUp: the broker had applied every record the controller had when it
	// answered, or did so less than half a session timeout ago (or this controller's
	// grace period started that recently). A broker serves as a leader or coordinator
	// only while it holds a lease from a caught-up, unfenced answer (controlplane/lease.go),
	// so that a node whose metadata cannot advance stops answering for roles that may
	// have moved; a fenced one (it was paused past its session) loses it at once.
	IsCaughtUp bool
	IsFenced   bool
	// ShouldShutdown answers WantShutdown: the broker leads nothing any more (it is
	// fenced) and may stop.
	ShouldShutdown bool
}

// BrokerHeartbeat records that the broker is alive. A fenced broker that has caught up
// with the metadata (applied every record up to this heartbeat, its registration and
// the record that fenced it included) is unfenced, and offline
// partitions it can lead get it as leader. WantShutdown starts a controlled shutdown:
// leadership moves to other in-sync replicas, the broker leaves every ISR and is
// fenced, and the reply says ShouldShutdown. Errors: ErrBrokerNotRegistered,
// ErrStaleBrokerEpoch (register again), ErrNotController.
func (c *Controller) BrokerHeartbeat(ctx context.Context, hb Heartbeat) (HeartbeatReply, error) {
	var reply HeartbeatReply
	// The reply grants the broker its lease (IsCaughtUp, not fenced). A controller that
	// was deposed without noticing yet (it was paused, and Raft's own lease check has
	// not run since it resumed) must not grant one from its stale image, to its own
	// node least of all: confirm the leadership with a quorum first.
	if err := c.verifyLeader(ctx); err != nil {
		return reply, err
	}
	err := c.withLeader(ctx, func(im *metadata.Image) error {
		b, err := checkBrokerEpoch(im, hb.ID, hb.Epoch)
		if err != nil {
			return err
		}
		s := c.sessions.get(hb.ID, hb.Epoch)
		s.lastContact = time.Now()
		c.applied.report(hb.ID, hb.Epoch, hb.MetadataOffset)
		now := time.Now()
		caughtUp := hb.MetadataOffset >= max(im.Offset, b.RegisteredOffset)
		if caughtUp {
			s.caughtUpAt = now
		}
		reply.IsCaughtUp = caughtUp || now.Sub(s.caughtUpAt) < c.cfg.SessionTimeout/2
		if hb.WantShutdown {
			s.shuttingDown = true
			return c.controlledShutdownLocked(ctx, im, hb.ID, &reply)
		}
		// The degraded state first: the elections that unfencing runs must already
		// pass over this broker's damaged replicas.
		if im, err = c.degradedStateLocked(ctx, im, hb.ID, hb.DiskFull, hb.Damaged); err != nil {
			return err
		}
		if b.Fenced && caughtUp {
			if im, err = c.unfenceLocked(ctx, im, hb.ID); err != nil {
				return err
			}
		}
		reply.IsFenced = im.Brokers[hb.ID].Fenced
		return nil
	})
	return reply, err
}

// checkBrokerEpoch returns id's registration if epoch is its current epoch.
func checkBrokerEpoch(im *metadata.Image, id metadata.NodeID, epoch int64) (metadata.Broker, error) {
	b, ok := im.Brokers[id]
	switch {
	case !ok:
		return b, fmt.Errorf("%w: broker %d", ErrBrokerNotRegistered, id)
	case b.Epoch != epoch:
		return b, fmt.Errorf("%w: broker %d sent epoch %d, its registration has epoch %d", ErrStaleBrokerEpoch, id, epoch, b.Epoch)
	}
	return b, nil
}

// liveLocked is the liveFunc of im: registered, unfenced, not shutting down.
func (c *Controller) liveLocked(im *metadata.Image) liveFunc {
	return func(r metadata.NodeID) bool {
		b, ok := im.Brokers[r]
		return ok && !b.Fenced && !c.sessions.shuttingDown(r)
	}
}

// uncleanFunc says whether a topic allows unclean leader election: its
// unclean.leader.election.enable, else the cluster's dynamic default, else
// Config.UncleanLeaderElection.
func (c *Controller) uncleanFunc(im *metadata.Image) func(topic string) bool {
	const key = "unclean.leader.election.enable"
	return func(topic string) bool {
		if t := im.Topics[topic]; t != nil {
			if v, ok := t.Configs[key]; ok {
				return strings.EqualFold(v, "true")
			}
		}
		if v, ok := im.Configs[key]; ok {
			return strings.EqualFold(v, "true")
		}
		return c.cfg.UncleanLeaderElection
	}
}

// unfenceLocked unfences id and elects leaders for the offline partitions it makes
// electable. It returns the new image.
func (c *Controller) unfenceLocked(ctx context.Context, im *metadata.Image, id metadata.NodeID) (*metadata.Image, error) {
	es := unfenceElections(im, id, c.liveLocked(im), c.uncleanFunc(im))
	recs := append([]metadata.Record{{Type: metadata.UnfenceBrokerType, BrokerID: id}}, records(es)...)
	res, err := c.proposeLocked(ctx, recs)
	if err != nil {
		return im, err
	}
	c.log.Info("unfenced broker", "broker", id, "partitions_elected", len(es))
	c.logUnclean(es)
	return res.cur, nil
}

// fenceLocked fences id (it stops leading, leaves every ISR) and returns the new image.
func (c *Controller) fenceLocked(ctx context.Context, im *metadata.Image, id metadata.NodeID, why string) (*metadata.Image, error) {
	es := fenceElections(im, id, c.liveLocked(im), c.uncleanFunc(im))
	recs := append([]metadata.Record{{Type: metadata.FenceBrokerType, BrokerID: id, AtMs: time.Now().UnixMilli()}}, records(es)...)
	res, err := c.proposeLocked(ctx, recs)
	if err != nil {
		return im, err
	}
	c.log.Warn("fenced broker", "broker", id, "reason", why, "partitions_changed", len(es))
	c.logUnclean(es)
	return res.cur, nil
}

// controlledShutdownLocked moves id's leadership away, takes it out of every ISR and
// fences it, all in one Raft entry, then tells it to shut down.
func (c *Controller) controlledShutdownLocked(ctx context.Context, im *metadata.Image, id metadata.NodeID, reply *HeartbeatReply) error {
	live := c.liveLocked(im)
	moved := shutdownElections(im, id, live)
	recs := records(moved)
	if !im.Brokers[id].Fenced {
		scratch := applyElections(im, moved)
		fenced := fenceElections(scratch, id, live, c.uncleanFunc(scratch))
		recs = append(recs, metadata.Record{Type: metadata.FenceBrokerType, BrokerID: id, AtMs: time.Now().UnixMilli()})
		recs = append(recs, records(fenced)...)
		c.logUnclean(fenced)
	}
	if len(recs) > 0 {
		if _, err := c.proposeLocked(ctx, recs); err != nil {
			return err
		}
		c.log.Info("controlled shutdown of broker", "broker", id, "partitions_moved", len(moved))
	}
	reply.IsFenced, reply.ShouldShutdown = true, true
	return nil
}

func records(es []election) []metadata.Record {
	recs := make([]metadata.Record, len(es))
	for i, e := range es {
		recs[i] = e.record()
	}
	return recs
}

func (c *Controller) logUnclean(es []election) {
	for _, e := range es {
		if e.unclean() {
			c.log.Warn("unclean leader election: the new leader was not in sync, acknowledged records may be lost",
				"topic", e.tp.Topic, "partition", e.tp.Partition, "leader", e.next.Leader, "previous_isr", e.prev.ISR)
		}
	}
}

// livenessLoop fences brokers whose session expired, elects leaders for offline
// partitions that can have one, and (unless disabled) moves leadership back to
// preferred replicas. It acts only while this node is the active controller.
func (c *Controller) livenessLoop() {
	check := time.NewTicker(c.cfg.FenceCheckInterval)
	defer check.Stop()
	var rebalance <-chan time.Time
	if !c.cfg.DisableAutoLeaderRebalance {
		t := time.NewTicker(c.cfg.LeaderImbalanceCheckInterval)
		defer t.Stop()
		rebalance = t.C
	}
	var swept uint64 // the image offset of the last offline sweep
	for {
		select {
		case <-check.C:
			deaf := false
			c.runIfLeader("fence expired brokers", func(ctx context.Context, im *metadata.Image) error {
				var err error
				deaf, err = c.checkSessionsLocked(ctx, im, &swept)
				return err
			})
			if deaf {
				c.resignDeaf()
			}
		case <-rebalance:
			c.runIfLeader("preferred leader election", c.rebalanceLocked)
		case <-c.done:
			return
		}
	}
}

// runIfLeader runs fn under withLeader if this node is the active controller, and
// logs its failure.
func (c *Controller) runIfLeader(what string, fn func(ctx context.Context, im *metadata.Image) error) {
	if !c.IsLeader() {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), max(c.cfg.SessionTimeout, time.Second))
	defer cancel()
	err := c.withLeader(ctx, func(im *metadata.Image) error { return fn(ctx, im) })
	if err != nil && !errors.Is(err, ErrNotController) && !errors.Is(err, ErrClosed) {
		c.log.Warn("controller background task failed", "task", what, "err", err)
	}
}

// checkSessionsLocked fences every broker whose session expired, then, if the image
// changed since the last sweep, elects leaders for offline partitions that can have
// one (an ISR member came back, or unclean election was enabled). When sessions
// expired but the controller is deaf (see deaf) it fences nobody and reports it: the
// caller resigns, so that a controller that can hear the brokers takes over.
func (c *Controller) checkSessionsLocked(ctx context.Context, im *metadata.Image, swept *uint64) (deafNow bool, err error) {
	now := time.Now()
	expired := expiredBrokers(im, c.sessions, now, c.cfg.SessionTimeout)
	if len(expired) > 0 && deaf(im, c.sessions, now, c.cfg.SessionTimeout, c.cfg.NodeID) {
		if !c.sessions.deafLogged {
			c.sessions.deafLogged = true
			c.log.Warn("the active controller hears no broker heartbeat, its own node's included: resigning instead of fencing",
				"node", c.cfg.NodeID, "brokers_expired", fmt.Sprint(expired), "silent_for_more_than", c.cfg.SessionTimeout/2)
		}
		return true, nil
	}
	for _, id := range expired {
		why := fmt.Sprintf("no heartbeat for %v (broker.session.timeout.ms)", c.cfg.SessionTimeout)
		if im, err = c.fenceLocked(ctx, im, id, why); err != nil {
			return false, err
		}
	}
	if err := c.balanceNewNodesLocked(ctx, c.Image()); err != nil {
		return false, err
	}
	if im = c.Image(); im.Offset == *swept {
		return false, nil
	}
	es := reelect(im, offline, c.liveLocked(im), c.uncleanFunc(im))
	if len(es) > 0 {
		if _, err := c.proposeLocked(ctx, records(es)); err != nil {
			return false, err
		}
		c.log.Info("elected leaders for offline partitions", "partitions", len(es))
		c.logUnclean(es)
	}
	*swept = c.Image().Offset
	return false, nil
}

// resignDeaf hands Raft leadership to another voter because this controller hears no
// broker (checkSessionsLocked). A lone voter has no one to hand it to: it keeps the
// lead and keeps fencing nobody until a heartbeat arrives.
func (c *Controller) resignDeaf() {
	ctx, cancel := context.WithTimeout(context.Background(), max(c.cfg.SessionTimeout, time.Second))
	defer cancel()
	// ErrNotController: leadership was lost meanwhile (a paused leader resumed after
	// an election), which is what resigning is for.
	if err := c.Resign(ctx); err != nil && !errors.Is(err, ErrClosed) && !errors.Is(err, ErrNotController) {
		c.log.Warn("a deaf controller could not resign", "node", c.cfg.NodeID, "err", err)
	}
}

// rebalanceLocked is the preferred leader election.
func (c *Controller) rebalanceLocked(ctx context.Context, im *metadata.Image) error {
	es := preferredElections(im, c.liveLocked(im), c.cfg.LeaderImbalanceRatio)
	if len(es) == 0 {
		return nil
	}
	if _, err := c.proposeLocked(ctx, records(es)); err != nil {
		return err
	}
	c.log.Info("moved leadership back to preferred replicas", "partitions", len(es))
	return nil
}

// verifyLeader confirms with a quorum of voters that this node is still the leader.
func (c *Controller) verifyLeader(ctx context.Context) error {
	if !c.IsLeader() {
		return c.notController()
	}
	return c.waitFuture(ctx, c.raft.VerifyLeader())
}
