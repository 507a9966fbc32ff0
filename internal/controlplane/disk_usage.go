package controlplane

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

// DiskUsageAsker is the partition balancer's view of the nodes' disks
// (controller.BalancerConfig.DiskUsage): the controller calls no broker itself (it
// only proposes and publishes images), so node self gives it this function, which asks
// broker b for its data directory's usage and each partition's size with
// DescribeLogDirs (key 35; v4 carries TotalBytes and UsableBytes, KIP-827, which Runnel
// fills from statfs of the data directory): a standard request answered by any node,
// and the same figures `runnel cluster status` shows. peerClient dials the brokers'
// inter-broker listener (network, TLS, SASL). It dials each time (every
// partition.autobalancing.tick.interval.ms per node, on the active controller only): a
// connection a poll is cheap, and no client outlives the controller that asks.
func DiskUsageAsker(self metadata.NodeID, peerClient kafka.PeerClient) func(context.Context, metadata.Broker) (controller.DiskUsage, error) {
	return func(ctx context.Context, b metadata.Broker) (controller.DiskUsage, error) {
		return askDiskUsage(ctx, self, peerClient, b)
	}
}

func askDiskUsage(ctx context.Context, self metadata.NodeID, peerClient kafka.PeerClient, b metadata.Broker) (controller.DiskUsage, error) {
	var out controller.DiskUsage
	addr := b.Addr()
	opts := append([]kgo.Opt{kgo.SeedBrokers(addr), kgo.ClientID(fmt.Sprintf("runnel-balancer-%d", self)),
		kgo.RequestRetries(0)}, peerClient(5*time.Second)...)
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
