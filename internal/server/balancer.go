package server

// The partition balancer's settings and its view of the nodes' disks. The controller
// calls no broker itself (it only proposes and publishes images), so the node gives it
// a function that asks a broker for its data directory's usage with DescribeLogDirs
// (key 35; v4 carries TotalBytes and UsableBytes, KIP-827, which Runnel fills from
// statfs of the data directory): a standard request, no new protocol, answered by any
// node, and the same figures `runnel cluster status` shows.

import (
	"context"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/runnel-io/runnel/internal/controller"
	"github.com/runnel-io/runnel/internal/kafka"
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
		d := &diskUsageAsker{self: cfg.NodeID, peerClient: n.peerClient}
		cfg0.DiskUsage = d.ask
	}
	n.logger.Info("partition balancer", "mode", cfg0.Mode, "throttle_bytes_per_sec", cfg0.ThrottleRate,
		"node_availability_timeout", cfg0.NodeAvailabilityTimeout, "max_disk_usage_percent", cfg0.MaxDiskUsedPercent,
		"disk_poll_interval", cfg0.DiskPollInterval)
	return cfg0
}

// diskUsageAsker sends DescribeLogDirs to brokers. It dials each time (every
// partition.autobalancing.tick.interval.ms per node, on the active controller only):
// a connection a poll is cheap, and no client outlives the controller that asks.
type diskUsageAsker struct {
	self int32
	// peerClient dials the brokers' inter-broker listener (network, TLS, SASL).
	peerClient kafka.PeerClient
}

// ask is BalancerConfig.DiskUsage: DescribeLogDirs (every partition) of broker b.
func (d *diskUsageAsker) ask(ctx context.Context, b metadata.Broker) (controller.DiskUsage, error) {
	var out controller.DiskUsage
	addr := b.Addr()
	opts := append([]kgo.Opt{kgo.SeedBrokers(addr), kgo.ClientID(fmt.Sprintf("runnel-balancer-%d", d.self)),
		kgo.RequestRetries(0)}, d.peerClient(5*time.Second)...)
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return out, err
	}
	defer cl.Close()
	req := kmsg.NewPtrDescribeLogDirsRequest() // v4 (KIP-827) carries the totals; kgo asks the highest both know
	// To node b itself: kgo shards a DescribeLogDirs sent to "any broker" over every
	// broker in the metadata and merges the answers, which would mix the nodes' disks.
	kresp, err := cl.Broker(int(b.ID)).Request(ctx, req)
	if err != nil {
		return out, fmt.Errorf("DescribeLogDirs to node %d at %s: %w", b.ID, addr, err)
	}
	resp := kresp.(*kmsg.DescribeLogDirsResponse)
	if err != nil {
		return out, fmt.Errorf("DescribeLogDirs to node %d at %s: %w", b.ID, addr, err)
	}
	if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
		return out, fmt.Errorf("DescribeLogDirs to node %d at %s: %w", b.ID, addr, err)
	}
	out.TotalBytes, out.UsableBytes = -1, -1
	out.Partitions = map[metadata.TopicPartition]int64{}
	for _, dir := range resp.Dirs {
		if err := kerr.ErrorForCode(dir.ErrorCode); err != nil {
			return out, fmt.Errorf("DescribeLogDirs to node %d at %s: directory %s: %w", b.ID, addr, dir.Dir, err)
		}
		// Runnel has one data directory; with several, the fullest counts.
		if dir.TotalBytes > 0 && (out.TotalBytes <= 0 ||
			float64(dir.TotalBytes-dir.UsableBytes)/float64(dir.TotalBytes) > float64(out.TotalBytes-out.UsableBytes)/float64(out.TotalBytes)) {
			out.TotalBytes, out.UsableBytes = dir.TotalBytes, dir.UsableBytes
		}
		for _, t := range dir.Topics {
			for _, p := range t.Partitions {
				out.Partitions[metadata.TopicPartition{Topic: t.Topic, Partition: p.Partition}] += p.Size
			}
		}
	}
	return out, nil
}
