package controller

import (
	"context"
	"fmt"
	"slices"

	"github.com/runnel-io/runnel/internal/metadata"
)

// producerIDBlockSize is how many producer ids one ProducerIDs record grants.
const producerIDBlockSize = 1000

// RegisterBroker records b as registered and unfenced, with an epoch one above its
// previous registration's (b.Epoch and b.Fenced are ignored).
//
// TODO(cluster): heartbeats (BrokerHeartbeat) and fencing after
// Config.SessionTimeout, with leader re-election through electLeader.
func (c *Controller) RegisterBroker(ctx context.Context, b metadata.Broker) error {
	if b.ID < 0 {
		return fmt.Errorf("%w: broker id %d is negative", ErrInvalidRequest, b.ID)
	}
	return c.withLeader(ctx, func(im *metadata.Image) error {
		b.Epoch = im.Brokers[b.ID].Epoch + 1
		b.Fenced = false
		_, err := c.proposeLocked(ctx, []metadata.Record{{Type: metadata.RegisterBrokerType, Broker: &b}})
		return err
	})
}

// AllocateProducerID returns a producer id never returned before by any node of the
// cluster, across restarts. Ids come from blocks of producerIDBlockSize granted by a
// Raft record, so most calls do not touch Raft; ids of a block left unused when the
// node stops are skipped.
func (c *Controller) AllocateProducerID(ctx context.Context) (int64, error) {
	var id int64
	err := c.withLeader(ctx, func(*metadata.Image) error {
		if c.pidNext == c.pidEnd {
			if err := c.allocateProducerIDBlockLocked(ctx); err != nil {
				return err
			}
		}
		id = c.pidNext
		c.pidNext++
		return nil
	})
	return id, err
}

// allocateProducerIDBlockLocked proposes the next block. The record applies only if
// its start is still the image's NextProducerID, and the apply result says whether
// ours did; a few attempts cover a stale image.
func (c *Controller) allocateProducerIDBlockLocked(ctx context.Context) error {
	for attempt := 0; attempt < 3; attempt++ {
		start := c.Image().NextProducerID
		end := start + producerIDBlockSize
		res, err := c.proposeLocked(ctx, []metadata.Record{{
			Type: metadata.ProducerIDsType, ProducerIDBlockStart: start, NextProducerID: end,
		}})
		if err != nil {
			return err
		}
		if res.prev.NextProducerID == start && res.cur.NextProducerID == end {
			c.pidNext, c.pidEnd = start, end
			return nil
		}
	}
	return fmt.Errorf("%w: producer id block allocation kept conflicting", ErrNotController)
}

// AlterPartition applies an ISR change asked for by the partition's leader (Kafka
// AlterPartition). leaderEpoch and partitionEpoch are the leader's view; stale ones
// fail with ErrFencedLeaderEpoch or ErrInvalidUpdateVersion. The new ISR must contain
// the leader and only replicas (ErrInvalidRequest), all registered and unfenced
// (ErrIneligibleReplica). Epochs ahead of the image's give ErrNotController. It returns the partition's new
// state (its PartitionEpoch one higher), or the current state if the ISR is unchanged.
func (c *Controller) AlterPartition(ctx context.Context, tp metadata.TopicPartition, leader metadata.NodeID,
	leaderEpoch, partitionEpoch int32, newISR []metadata.NodeID) (metadata.Partition, error) {
	var out metadata.Partition
	err := c.withLeader(ctx, func(im *metadata.Image) error {
		p, ok := im.Partition(tp)
		if !ok {
			return fmt.Errorf("%w: %s-%d", ErrUnknownTopic, tp.Topic, tp.Partition)
		}
		if err := validateAlterPartition(im, tp, p, leader, leaderEpoch, partitionEpoch, newISR); err != nil {
			return err
		}
		out = p
		if sameNodes(p.ISR, newISR) {
			return nil
		}
		next := p
		next.ISR = slices.Clone(newISR)
		next.PartitionEpoch++
		res, err := c.proposeLocked(ctx, []metadata.Record{{
			Type: metadata.PartitionChangeType, TopicName: tp.Topic, Partition: tp.Partition, PartitionState: &next,
		}})
		if err != nil {
			return err
		}
		out, _ = res.cur.Partition(tp)
		return nil
	})
	return out, err
}

// validateAlterPartition is AlterPartition's checks, in Kafka's order. Epochs above
// the current ones mean this controller's image is behind: ErrNotController, so the
// leader retries and finds the real controller.
func validateAlterPartition(im *metadata.Image, tp metadata.TopicPartition, p metadata.Partition,
	leader metadata.NodeID, leaderEpoch, partitionEpoch int32, newISR []metadata.NodeID) error {
	name := fmt.Sprintf("%s-%d", tp.Topic, tp.Partition)
	switch {
	case leaderEpoch > p.LeaderEpoch || partitionEpoch > p.PartitionEpoch:
		return fmt.Errorf("%w: %s epochs %d/%d are ahead of this controller's %d/%d",
			ErrNotController, name, leaderEpoch, partitionEpoch, p.LeaderEpoch, p.PartitionEpoch)
	case leaderEpoch < p.LeaderEpoch:
		return fmt.Errorf("%w: %s leader epoch %d, current %d", ErrFencedLeaderEpoch, name, leaderEpoch, p.LeaderEpoch)
	case leader != p.Leader:
		return fmt.Errorf("%w: broker %d is not the leader of %s (the leader is %d)", ErrInvalidRequest, leader, name, p.Leader)
	case partitionEpoch < p.PartitionEpoch:
		return fmt.Errorf("%w: %s partition epoch %d, current %d", ErrInvalidUpdateVersion, name, partitionEpoch, p.PartitionEpoch)
	}
	for i, r := range newISR {
		if !metadata.Contains(p.Replicas, r) || slices.Contains(newISR[:i], r) {
			return fmt.Errorf("%w: the new ISR %v of %s names %d, which is repeated or not a replica %v",
				ErrInvalidRequest, newISR, name, r, p.Replicas)
		}
	}
	if !metadata.Contains(newISR, leader) {
		return fmt.Errorf("%w: the new ISR %v of %s does not contain the leader %d", ErrInvalidRequest, newISR, name, leader)
	}
	for _, r := range newISR {
		if b, ok := im.Brokers[r]; !ok || b.Fenced {
			return fmt.Errorf("%w: broker %d cannot be in the ISR of %s: it is not registered or is fenced",
				ErrIneligibleReplica, r, name)
		}
	}
	return nil
}
