package controller

import (
	"context"
	"fmt"

	"github.com/hashicorp/raft"

	"github.com/runnel-io/runnel/internal/metadata"
)

// UnregisterBroker removes broker id from the cluster for good (Kafka's
// UnregisterBroker, the last step of `runnel cluster decommission`): its registration
// leaves the metadata and, if it is a metadata non-voter, the Raft configuration. Unlike
// Kafka it refuses (ErrInvalidRequest, in this order) while that could lose anything or
// be undone: while the node holds a replica (move them off first), while it runs (it is
// not fenced, and would register again at its next heartbeat), and while it is a
// metadata voter (the quorum's voters are changed separately).
func (c *Controller) UnregisterBroker(ctx context.Context, id metadata.NodeID) error {
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
			return fmt.Errorf("%w: node %d is running (unfenced): stop it, then unregister it", ErrInvalidRequest, id)
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
				return fmt.Errorf("%w: node %d is a metadata voter; remove it from the quorum's voters first", ErrInvalidRequest, id)
			}
			if err := c.waitFuture(ctx, c.raft.RemoveServer(s.ID, 0, timeoutOf(ctx))); err != nil {
				return err
			}
		}
		if _, err := c.proposeLocked(ctx, []metadata.Record{{Type: metadata.UnregisterBrokerType, BrokerID: id}}); err != nil {
			return err
		}
		c.forgetNewNodes([]metadata.NodeID{id})
		c.log.Info("unregistered node", "node", id)
		return nil
	})
}
