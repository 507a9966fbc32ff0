package server

// The partition balancer's settings, and its view of the nodes' disks: the controller
// calls no broker itself, so the node gives it controlplane.DiskUsageAsker.

import (
	"time"

	"github.com/runnel-io/runnel/internal/controller"
	"github.com/runnel-io/runnel/internal/controlplane"
	"github.com/runnel-io/runnel/internal/metadata"
)

// balancerConfig is the controller's BalancerConfig from the node's properties
// (partition.autobalancing.*).
func (n *Node) balancerConfig() controller.BalancerConfig {
	cfg := n.cfg
	cfg0 := controller.BalancerConfig{
		Mode:                    cfg.PartitionAutobalancingMode,
		ThrottleRate:            cfg.PartitionAutobalancingThrottledRate,
		NodeAvailabilityTimeout: time.Duration(cfg.PartitionAutobalancingNodeTimeoutSec) * time.Second,
		MaxDiskUsedPercent:      int(cfg.PartitionAutobalancingMaxDiskUsedPercent),
		DiskPollInterval:        time.Duration(cfg.PartitionAutobalancingTickIntervalMs) * time.Millisecond,
	}
	if cfg0.Mode == controller.BalanceContinuous {
		cfg0.DiskUsage = controlplane.DiskUsageAsker(metadata.NodeID(cfg.NodeID), n.peerClient)
	}
	n.logger.Info("partition balancer", "mode", cfg0.Mode, "throttle_bytes_per_sec", cfg0.ThrottleRate,
		"node_availability_timeout", cfg0.NodeAvailabilityTimeout, "max_disk_usage_percent", cfg0.MaxDiskUsedPercent,
		"disk_poll_interval", cfg0.DiskPollInterval)
	return cfg0
}
