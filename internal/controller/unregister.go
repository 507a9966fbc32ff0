package controller

import (
	"context"
	"fmt"
	"time"

	"github.com/hashicorp/raft"

	"github.com/runnel-io/runnel/internal/metadata"
)

// UnregisterBroker removes broker id from the cluster for good (Kafka's
// UnregisterBroker, the last step of `runnel cluster decommission`): its registration
// leaves the metadata and, if it is a metadata non-voter, the Raft configuration. Unlike
// Kafka it refuses (ErrInvalidRequest, in this order) while that could lose anything or
// be undone: while the node holds a replica (move them off first), while it runs (it is
// not fenced, and would register again at its next heartbeat), and while it is a
// metadata voter (RemoveVoter, voters.go, makes it a non-voter first).
//
// A node killed a moment ago is still registered as alive until its session expires
// (broker.session.timeout.ms). When its process is provably gone (Config.ProcessGone:
// its Kafka listener refuses connections) it is fenced here at once, as the Raft
// heartbeat watcher would, and unregistered; otherwise the error says when it will
// be fenced if it is stopped.
func (c *Controller) UnregisterBroker(ctx context.Context, id metadata.NodeID) error {
	// Probed outside proposeMu (a dial, up to goneCheckTimeout), used under it only for
	// the registration that was probed.
	gone, probedEpoch := false, int64(-1)
	if b, ok := c.Image().Brokers[id]; ok && !b.Fenced && c.cfg.ProcessGone != nil {
		pctx, cancel := context.WithTimeout(ctx, goneCheckTimeout)
		gone, probedEpoch = c.cfg.ProcessGone(pctx, b), b.Epoch
		cancel()
	}
	return c.withLeader(ctx, func(im *metadata.Image) error {
		b, ok := im.Brokers[id]
		if !ok {
			return fmt.Errorf("%w: node %d is not registered", ErrBrokerNotRegistered, id)
		}
		held := 0
		example := ""
		for _, name := range im.TopicNames() {
			for i, p := range im.Topics[name].Partitions {
				if metadata.Contains(p.Replicas, id) {
					if held == 0 {
						example = fmt.Sprintf("%s-%d", name, i)
					}
					held++
				}
			}
		}
		if held > 0 {
			return fmt.Errorf("%w: node %d still holds replicas of %d partitions (%s first): move them off first (runnel cluster decommission %d)",
				ErrInvalidRequest, id, held, example, id)
		}
		if !b.Fenced {
			if !gone || b.Epoch != probedEpoch {
				return c.stillAliveError(id, b)
			}
			var err error
			if im, err = c.fenceLocked(ctx, im, id, "unregistering it: its Kafka listener refuses connections, the process is gone"); err != nil {
				return err
			}
		}
		cf := c.raft.GetConfiguration()
		if err := c.waitFuture(ctx, cf); err != nil {
			return err
		}
		for _, s := range cf.Configuration().Servers {
			if s.ID != serverID(id) {
				continue
			}
			if s.Suffrage == raft.Voter {
				return fmt.Errorf("%w: node %d is a metadata voter; remove it from the quorum's voters first (runnel cluster remove-voter %d)",
					ErrInvalidRequest, id, id)
			}
			if err := c.waitFuture(ctx, c.raft.RemoveServer(s.ID, 0, timeoutOf(ctx))); err != nil {
				return err
			}
		}
		if _, err := c.proposeLocked(ctx, []metadata.Record{{Type: metadata.UnregisterBrokerType, BrokerID: id}}); err != nil {
			return err
		}
		c.log.Info("unregistered node", "node", id)
		return nil
	})
}

// stillAliveError is UnregisterBroker's answer for a node registered as alive whose
// process is not known to be gone: when it last heartbeated, and by when the
// controller fences it if it is stopped (a session timeout after that heartbeat, at
// the next session check). proposeMu held (sessions).
func (c *Controller) stillAliveError(id metadata.NodeID, b metadata.Broker) error {
	since := time.Since(c.sessions.get(id, b.Epoch).lastContact)
	timeout := c.cfg.SessionTimeout
	left := max(timeout-since, 0) + c.cfg.FenceCheckInterval
	return fmt.Errorf("%w: node %d is still registered as alive (last heartbeat %v ago): if its process is stopped, it will be fenced within %v (broker.session.timeout.ms=%d), then run decommission again; if it is still running, stop it first",
		ErrInvalidRequest, id, since.Round(100*time.Millisecond), (left + 99*time.Millisecond).Truncate(100*time.Millisecond), timeout.Milliseconds())
}
