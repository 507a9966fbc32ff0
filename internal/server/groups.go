package server

import (
	"github.com/runnel-io/runnel/internal/group"
	"github.com/runnel-io/runnel/internal/replica"
)

// startGroups creates the node's group coordinator and returns the replica hook that
// loads and unloads its __consumer_offsets partitions.
func (n *Node) startGroups() func(p *replica.Partition, leader bool, leaderEpoch int32) {
	cfg := group.ConfigFromBroker(n.cfg)
	cfg.Serving = n.lease.Valid
	cfg.Logger = n.logger
	n.groups = group.NewCoordinator(cfg)
	return n.groups.OnLeadershipChange
}

// groupCoordinator is the node's coordinator, for the protocol server.
func (n *Node) groupCoordinator() *group.Coordinator { return n.groups }

// closeGroups stops the coordinator's goroutines; call it after the Kafka server stopped
// and before the replicas close.
func (n *Node) closeGroups() error {
	if n.groups == nil {
		return nil
	}
	return n.groups.Close()
}
