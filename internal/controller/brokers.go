package controller

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/runnel-io/runnel/internal/metadata"
)

// producerIDBlockSize is how many producer ids one ProducerIDs record grants.
const producerIDBlockSize = 1000

// Registration is one BrokerRegistration (Kafka key 62).
type Registration struct {
	// Broker carries the id, the advertised Kafka host and port, and the rack; the
	// controller sets Epoch, Fenced and IncarnationID.
	Broker metadata.Broker
	// IncarnationID identifies this run of the broker's process. Registering again
	// with the same one is a retry and returns the same epoch.
	IncarnationID string
	// ClusterID is the cluster the broker believes it belongs to; "" if it does not
	// know yet (a new node). Another cluster's id fails with ErrInconsistentClusterID.
	ClusterID string
	// RaftAddr is the broker's Raft address. A node that is not in the quorum's
	// configuration is added as a non-voter there, so that it replays the metadata log.
	RaftAddr string
	// UncleanShutdown: the broker's previous run did not close its logs cleanly, so
	// its copy of a partition with relaxed durability may lack acknowledged records.
	UncleanShutdown bool
}

// RegisterBroker registers a broker, fenced, with an epoch one above its previous
// registration's, and returns that epoch. The broker is unfenced by its first
// heartbeat that shows it has applied the registration. A registration from a new
// incarnation while the old one is unfenced (a restart faster than the session
// timeout) first fences the old one: its leadership moves and it leaves every ISR,
// since a crashed process may have lost unflushed records.
func (c *Controller) RegisterBroker(ctx context.Context, r Registration) (int64, error) {
	id := r.Broker.ID
	if id < 0 {
		return 0, fmt.Errorf("%w: broker id %d is negative", ErrInvalidRequest, id)
	}
	var epoch int64
	err := c.withLeader(ctx, func(im *metadata.Image) error {
		if r.ClusterID != "" && r.ClusterID != im.ClusterID {
			return fmt.Errorf("%w: broker %d belongs to cluster %s, this is %s", ErrInconsistentClusterID, id, r.ClusterID, im.ClusterID)
		}
		if err := c.addNonvoterLocked(ctx, id, r.RaftAddr); err != nil {
			return err
		}
		old, had := im.Brokers[id]
		if had && r.IncarnationID != "" && old.IncarnationID == r.IncarnationID {
			epoch = old.Epoch
			c.sessions.get(id, epoch).lastContact = time.Now()
			return nil
		}
		var recs []metadata.Record
		if had && !old.Fenced {
			c.log.Warn("broker registered again while its previous incarnation was unfenced; fencing that one",
				"broker", id, "old_incarnation", old.IncarnationID, "new_incarnation", r.IncarnationID)
			es := fenceElections(im, id, c.liveLocked(im), c.uncleanFunc(im))
			recs = records(es)
			c.logUnclean(es)
		}
		b := r.Broker
		b.Epoch, b.Fenced, b.IncarnationID, b.RegisteredOffset = old.Epoch+1, true, r.IncarnationID, 0
		// A new node awaits its share until the balancer plans it (balance.go), also
		// across its restarts and a change of active controller. A node that registers
		// while the cluster holds no topic is forming the cluster, not joining it: it
		// has no share to wait for, and a mark left on it would let the first tick
		// after the cluster filled up (or a controller taking over) rebalance the
		// founding nodes' replicas and leaders under the clients' feet.
		b.AwaitsShare = old.AwaitsShare || !had && c.cfg.BalanceOnNodeAdd && len(im.Topics) > 0
		if r.UncleanShutdown && had {
			recs = append(recs, c.distrustLastReplicaLocked(im, recs, id)...)
		}
		recs = append(recs, metadata.Record{Type: metadata.RegisterBrokerType, Broker: &b})
		if _, err := c.proposeLocked(ctx, recs); err != nil {
			return err
		}
		c.sessions.register(id, b.Epoch, time.Now())
		epoch = b.Epoch
		c.log.Info("registered broker", "broker", id, "epoch", epoch, "addr", fmt.Sprintf("%s:%d", b.Host, b.Port), "rack", b.Rack)
		return nil
	})
	return epoch, err
}

// AllocateProducerID returns a producer id never returned before by any node of the
// cluster, across restarts. Ids come from blocks of producerIDBlockSize granted by a
// Raft record, so most calls do not touch Raft; ids of a block left unused when the
// node stops are skipped.
func (c *Controller) AllocateProducerID(ctx context.Context) (int64, error) {
	var id int64
	err := c.withLeader(ctx, func(*metadata.Image) error {
		if c.pidNext == c.pidEnd {
			start, end, err := c.proposeProducerIDBlockLocked(ctx)
			if err != nil {
				return err
			}
			c.pidNext, c.pidEnd = start, end
		}
		id = c.pidNext
		c.pidNext++
		return nil
	})
	return id, err
}

// AllocateProducerIDBlock grants a whole block of producer ids to another broker
// (Kafka AllocateProducerIDs, key 67), which hands them out itself. brokerEpoch must be
// the broker's current epoch (ErrStaleBrokerEpoch), or -1 to skip the check.
func (c *Controller) AllocateProducerIDBlock(ctx context.Context, broker metadata.NodeID, brokerEpoch int64) (start int64, n int32, err error) {
	err = c.withLeader(ctx, func(im *metadata.Image) error {
		if brokerEpoch >= 0 {
			if _, err := checkBrokerEpoch(im, broker, brokerEpoch); err != nil {
				return err
			}
		}
		s, end, err := c.proposeProducerIDBlockLocked(ctx)
		start, n = s, int32(end-s)
		return err
	})
	return start, n, err
}

// proposeProducerIDBlockLocked proposes the next block. The record applies only if
// its start is still the image's NextProducerID, and the apply result says whether
// ours did; a few attempts cover a stale image.
func (c *Controller) proposeProducerIDBlockLocked(ctx context.Context) (start, end int64, err error) {
	for attempt := 0; attempt < 3; attempt++ {
		start = c.Image().NextProducerID
		end = start + producerIDBlockSize
		res, err := c.proposeLocked(ctx, []metadata.Record{{
			Type: metadata.ProducerIDsType, ProducerIDBlockStart: start, NextProducerID: end,
		}})
		if err != nil {
			return 0, 0, err
		}
		if res.prev.NextProducerID == start && res.cur.NextProducerID == end {
			return start, end, nil
		}
	}
	return 0, 0, fmt.Errorf("%w: producer id block allocation kept conflicting", ErrNotController)
}

// AlterPartition applies an ISR change asked for by the partition's leader (Kafka
// AlterPartition). leaderEpoch and partitionEpoch are the leader's view; stale ones
// fail with ErrFencedLeaderEpoch or ErrInvalidUpdateVersion. The new ISR must contain
// the leader and only replicas (ErrInvalidRequest), all registered and unfenced
// and not in controlled shutdown (ErrIneligibleReplica). Epochs ahead of the image's give ErrNotController. It returns the partition's new
// state (its PartitionEpoch one higher), or the current state if the ISR is unchanged.
func (c *Controller) AlterPartition(ctx context.Context, tp metadata.TopicPartition, leader metadata.NodeID,
	leaderEpoch, partitionEpoch int32, newISR []metadata.NodeID) (metadata.Partition, error) {
	var out metadata.Partition
	err := c.withLeader(ctx, func(im *metadata.Image) error {
		p, ok := im.Partition(tp)
		if !ok {
			return fmt.Errorf("%w: %s-%d", ErrUnknownTopic, tp.Topic, tp.Partition)
		}
		if err := validateAlterPartition(im, tp, p, leader, leaderEpoch, partitionEpoch, newISR, c.liveLocked(im)); err != nil {
			return err
		}
		out = p
		if sameNodes(p.ISR, newISR) {
			return nil
		}
		next := p
		next.ISR = slices.Clone(newISR)
		next.PartitionEpoch++
		// A reassignment completes with the ISR change that brings its last target
		// replica in (reassign.go), in the same record.
		if done, ok := completeReassignment(next, c.liveLocked(im), unfit(im, tp)); ok {
			c.log.Info("reassignment complete", "topic", tp.Topic, "partition", tp.Partition,
				"replicas", done.Replicas, "removed", p.RemovingReplicas, "leader", done.Leader)
			next = done
		}
		recs := []metadata.Record{{
			Type: metadata.PartitionChangeType, TopicName: tp.Topic, Partition: tp.Partition, PartitionState: &next,
		}}
		// The last reassignment's completion removes the throttles the controller set
		// for the moves, in the same proposal (balance_throttle.go).
		recs = append(recs, throttlesDoneRecords(im.Apply(recs[0], im.Offset))...)
		res, err := c.proposeLocked(ctx, recs)
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
	leader metadata.NodeID, leaderEpoch, partitionEpoch int32, newISR []metadata.NodeID, eligible liveFunc) error {
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
		if !eligible(r) {
			return fmt.Errorf("%w: broker %d cannot be in the ISR of %s: it is not registered, fenced or shutting down",
				ErrIneligibleReplica, r, name)
		}
		// A damaged replica lacks an intact copy of acknowledged records: it rejoins
		// once its broker reports the range repaired (degraded.go).
		if !metadata.Contains(p.ISR, r) && im.Damaged(tp, r) {
			return fmt.Errorf("%w: broker %d cannot rejoin the ISR of %s: its replica holds a damaged range until repaired",
				ErrIneligibleReplica, r, name)
		}
	}
	return nil
}

// distrustLastReplicaLocked handles the KIP-966 case: broker id comes back after an
// unclean shutdown, and for a partition with relaxed durability it is the last member
// of the ISR, so it is the only replica the controller would elect, yet it may have
// lost acknowledged records that lived only in its page cache. Electing it would turn
// that local loss into the cluster's. Instead it leaves the ISR, which becomes empty:
// the partition stays offline (LEADER_NOT_AVAILABLE) until a replica is elected
// uncleanly, by unclean.leader.election.enable, which says data may be lost. Partitions
// with the default durability (an fsync before every acknowledgement) keep it: it lost
// nothing it acknowledged, and so do single-replica partitions, which have nobody better
// to wait for. prior are the records proposed before these, applied first.
func (c *Controller) distrustLastReplicaLocked(im *metadata.Image, prior []metadata.Record, id metadata.NodeID) []metadata.Record {
	if c.cfg.RelaxedDurability == nil {
		return nil
	}
	next := im
	for _, rec := range prior {
		next = next.Apply(rec, next.Offset)
	}
	var recs []metadata.Record
	for _, name := range next.TopicNames() {
		t := next.Topics[name]
		if !c.cfg.RelaxedDurability(next, name) {
			continue
		}
		for i, p := range t.Partitions {
			// With a single replica there is nobody better to wait for: it leads again,
			// as Kafka's unclean recovery would elect it (KIP-966 "balanced").
			if len(p.ISR) != 1 || p.ISR[0] != id || len(p.Replicas) == 1 {
				continue
			}
			np := p
			np.ISR, np.PartitionEpoch = []metadata.NodeID{}, p.PartitionEpoch+1
			if np.Leader != metadata.NoLeader {
				np.Leader, np.LeaderEpoch = metadata.NoLeader, p.LeaderEpoch+1
			}
			c.log.Warn("broker restarted after an unclean shutdown and was the last in-sync replica of a partition with relaxed durability: "+
				"not electing it, the partition stays offline unless unclean.leader.election.enable is set",
				"broker", id, "topic", name, "partition", i)
			recs = append(recs, metadata.Record{Type: metadata.PartitionChangeType, TopicName: name, Partition: int32(i), PartitionState: &np})
		}
	}
	return recs
}
