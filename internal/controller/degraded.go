package controller

import (
	"context"
	"errors"
	"slices"

	"github.com/runnel-io/runnel/internal/metadata"
)

// A broker whose data disk is full is degraded, not dead: it stays
// up, serves reads and keeps following, but it cannot append. Its heartbeats say so;
// the controller records it in the image (Broker.DiskFull, so that every node and
// `runnel cluster status` see it), moves the leadership of the partitions it leads to
// in-sync replicas that can write, and elects it leader only when no other replica
// can lead (election.go). Its ISR memberships are left to the leaders' lag rule: it
// falls out of the ISR of a partition once it misses writes, and rejoins once it has
// caught up after space is freed. When its heartbeat says the disk has room again, the
// flag clears; leadership comes back with the preferred leader election.

// A replica whose log holds a damaged range (a batch that fails its CRC below what a
// crash can tear: bit rot) is degraded too, for that one partition. Its broker reports
// the damaged ranges in its heartbeats; the controller records them (Broker.Damaged),
// moves the leadership off a damaged replica to an intact in-sync one, takes damaged
// followers out of the ISR (they lack an intact copy of acknowledged records, so they
// must not count towards min.insync.replicas nor be elected), and refuses to let them
// back in (AlterPartition) until their broker reports the range repaired. A damaged
// replica still leads when no intact in-sync replica can: it serves everything before
// the damage, which is better than nothing, and it never shrinks the ISR to nothing.

// unfit is the rule elections pass replicas of tp over by while another qualifies:
// the broker's disk is full, or its copy of tp is damaged.
func unfit(im *metadata.Image, tp metadata.TopicPartition) func(metadata.NodeID) bool {
	return func(r metadata.NodeID) bool { return im.Brokers[r].DiskFull || im.Damaged(tp, r) }
}

// degradedElections moves the leadership of every partition whose leader is unfit
// (a full disk, a damaged replica) to the first replica, in assignment order, that is
// in the ISR, live and fit. A partition without one keeps its leader (a shared full
// disk, the only intact copy lost: nowhere to move it). Damaged replicas other than
// the leader leave the ISR; the rest of the ISR is left as it is.
func degradedElections(im *metadata.Image, live liveFunc) []election {
	var out []election
	for _, name := range im.TopicNames() {
		for i, p := range im.Topics[name].Partitions {
			tp := metadata.TopicPartition{Topic: name, Partition: int32(i)}
			if p.Leader == metadata.NoLeader {
				continue
			}
			bad := unfit(im, tp)
			next := p
			if bad(p.Leader) {
				for _, r := range p.Replicas {
					if r != p.Leader && !bad(r) && live(r) && metadata.Contains(p.ISR, r) {
						next.Leader = r
						next.LeaderEpoch++
						break
					}
				}
			}
			next.ISR = slices.DeleteFunc(slices.Clone(p.ISR), func(r metadata.NodeID) bool {
				return r != next.Leader && im.Damaged(tp, r)
			})
			if next.Leader == p.Leader && len(next.ISR) == len(p.ISR) {
				continue
			}
			next.PartitionEpoch++
			out = append(out, election{tp, p, next})
		}
	}
	return out
}

// degradedStateLocked takes in what id's heartbeat says of its disk and of its
// damaged replicas: a change of either is recorded, and while the broker is degraded
// the partitions it leads unfitly move to replicas that can lead them, and its
// damaged replicas leave their ISRs (checked on every heartbeat of a degraded broker,
// so that a replica that can take over later, one that caught up, has room again or
// was repaired, gets them). damaged is sorted (metadata.SortDamage). It returns the
// image after its records. A proposal that fails while this node still leads does
// not fail the heartbeat (the session was kept alive; the next heartbeat tries
// again): on a disk shared with the controller the Raft log may not take it until
// space is freed.
func (c *Controller) degradedStateLocked(ctx context.Context, im *metadata.Image, id metadata.NodeID, full bool, damaged []metadata.DamagedReplica) (*metadata.Image, error) {
	b, ok := im.Brokers[id]
	if !ok || (!b.DiskFull && !full && len(b.Damaged) == 0 && len(damaged) == 0) {
		return im, nil
	}
	var recs []metadata.Record
	next := im
	if b.DiskFull != full {
		rec := metadata.Record{Type: metadata.BrokerDiskType, BrokerID: id, DiskFull: full}
		recs = append(recs, rec)
		next = next.Apply(rec, next.Offset)
	}
	damageChanged := !slices.Equal(b.Damaged, damaged)
	if damageChanged {
		rec := metadata.Record{Type: metadata.BrokerDamageType, BrokerID: id, Damaged: damaged}
		recs = append(recs, rec)
		next = next.Apply(rec, next.Offset)
	}
	es := degradedElections(next, c.liveLocked(next))
	if len(recs) == 0 && len(es) == 0 {
		return im, nil
	}
	res, err := c.proposeLocked(ctx, append(recs, records(es)...))
	if errors.Is(err, ErrNotController) || errors.Is(err, ErrClosed) {
		return im, err
	}
	if err != nil {
		c.log.Warn("could not record a broker's disk state; the next heartbeat tries again",
			"broker", id, "disk_full", full, "damaged_replicas", len(damaged), "err", err)
		return im, nil
	}
	switch {
	case b.DiskFull != full && full:
		c.log.Warn("broker's disk is full: it stays up, its leadership moves to replicas that can write",
			"broker", id, "partitions_moved", len(es))
	case b.DiskFull != full:
		c.log.Info("broker's disk has room again", "broker", id, "partitions_moved", len(es))
	}
	switch {
	case damageChanged && len(damaged) > 0:
		c.log.Warn("broker reports damaged replicas: they lead only where no intact in-sync replica can, and stay out of the ISR until repaired",
			"broker", id, "damaged", damageList(damaged), "partitions_changed", len(es))
	case damageChanged:
		c.log.Info("broker's damaged replicas are repaired", "broker", id, "repaired", damageList(b.Damaged))
	}
	if b.DiskFull == full && !damageChanged {
		c.log.Info("moved leadership off a degraded broker", "broker", id, "partitions_changed", len(es))
	}
	return res.cur, nil
}

// damageList names damaged ranges for a log line.
func damageList(ds []metadata.DamagedReplica) []string {
	out := make([]string, len(ds))
	for i, d := range ds {
		out[i] = d.String()
	}
	return out
}
