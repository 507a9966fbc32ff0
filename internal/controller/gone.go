package controller

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/hashicorp/raft"

	"github.com/runnel-io/runnel/internal/metadata"
)

// goneCheckTimeout bounds one Config.ProcessGone call.
const goneCheckTimeout = 500 * time.Millisecond

// goneCheckInterval spaces the checks of one node: Raft reports every failed
// heartbeat, with a backoff of its own, and one check per interval is enough.
const goneCheckInterval = 100 * time.Millisecond

// watchFailedHeartbeats asks Config.ProcessGone about every node whose Raft heartbeat
// from this leader failed, and fences the node at once when its process is gone (a
// kill: the kernel refuses connections to its Kafka listener). A node that is paused,
// cut off or slow still answers "not gone" and keeps its session until it expires.
func (c *Controller) watchFailedHeartbeats() {
	if c.cfg.ProcessGone == nil {
		return
	}
	checked := map[metadata.NodeID]time.Time{} // last check start per node; used by the observer goroutine only
	observe(c, 64, func(f raft.FailedHeartbeatObservation) {
		id, err := strconv.Atoi(string(f.PeerID))
		if err != nil || !c.IsLeader() {
			return
		}
		node := metadata.NodeID(id)
		if time.Since(checked[node]) >= goneCheckInterval {
			checked[node] = time.Now()
			c.wg.Add(1)
			go func() {
				defer c.wg.Done()
				c.fenceIfGone(node)
			}()
		}
	})
}

// fenceIfGone fences node if it is registered and unfenced and its process is gone.
func (c *Controller) fenceIfGone(node metadata.NodeID) {
	b, ok := c.Image().Brokers[node]
	if !ok || b.Fenced {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), goneCheckTimeout)
	gone := c.cfg.ProcessGone(ctx, b)
	cancel()
	if !gone {
		return
	}
	why := fmt.Sprintf("its Kafka listener %s:%d refuses connections: the process is gone", b.Host, b.Port)
	c.runIfLeader("fence a node whose process is gone", func(ctx context.Context, im *metadata.Image) error {
		if now, ok := im.Brokers[node]; !ok || now.Fenced || now.Epoch != b.Epoch {
			return nil // fenced meanwhile, or registered anew by a restarted process
		}
		_, err := c.fenceLocked(ctx, im, node, why)
		return err
	})
}
