package server

import (
	"sync"

	"github.com/runnel-io/runnel/internal/group"
	"github.com/runnel-io/runnel/internal/replica"
)

// nodeGroups holds each node's group coordinator (kept here rather than in a Node field
// so that the wiring stays in this file).
var nodeGroups sync.Map // *Node -> *group.Coordinator

// startGroups creates the node's group coordinator and returns the replica hook that
// loads and unloads its __consumer_offsets partitions.
func (n *Node) startGroups() func(p *replica.Partition, leader bool, leaderEpoch int32) {
	cfg := group.ConfigFromBroker(n.cfg)
	cfg.Logger = n.logger
	c := group.NewCoordinator(cfg)
	nodeGroups.Store(n, c)
	return c.OnLeadershipChange
}

// groupCoordinator is the node's coordinator, for the protocol server.
func (n *Node) groupCoordinator() *group.Coordinator {
	c, _ := nodeGroups.Load(n)
	gc, _ := c.(*group.Coordinator)
	return gc
}

// closeGroups stops the coordinator's goroutines; call it after the Kafka server stopped
// and before the replicas close.
func (n *Node) closeGroups() error {
	c, ok := nodeGroups.LoadAndDelete(n)
	if !ok {
		return nil
	}
	return c.(*group.Coordinator).Close()
}
