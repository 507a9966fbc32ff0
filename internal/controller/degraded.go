package controller

import (
	"context"
	"errors"

	"github.com/runnel-io/runnel/internal/metadata"
)

// A broker whose data disk is full is degraded, not dead (issue 11, part 3): it stays
// up, serves reads and keeps following, but it cannot append. Its heartbeats say so;
// the controller records it in the image (Broker.DiskFull, so that every node and
// `runnel cluster status` see it), moves the leadership of the partitions it leads to
// in-sync replicas that can write, and elects it leader only when no other replica
// can lead (election.go). Its ISR memberships are left to the leaders' lag rule: it
// falls out of the ISR of a partition once it misses writes, and rejoins once it has
// caught up after space is freed. When its heartbeat says the disk has room again, the
// flag clears; leadership comes back with the preferred leader election.

// diskFull is the diskFull func of im's elections: the brokers it marks full.
func diskFull(im *metadata.Image) func(metadata.NodeID) bool {
	return func(r metadata.NodeID) bool { return im.Brokers[r].DiskFull }
}

// fullDiskElections moves the leadership of every partition whose leader's disk is
// full to the first replica, in assignment order, that is in the ISR, live and not on
// a full disk. A partition without one keeps its leader (a shared full disk: nowhere
// to move it). The ISR is left as it is.
func fullDiskElections(im *metadata.Image, live liveFunc) []election {
	full := diskFull(im)
	var out []election
	for _, name := range im.TopicNames() {
		for i, p := range im.Topics[name].Partitions {
			if p.Leader == metadata.NoLeader || !full(p.Leader) {
				continue
			}
			for _, r := range p.Replicas {
				if r == p.Leader || full(r) || !live(r) || !metadata.Contains(p.ISR, r) {
					continue
				}
				next := p
				next.Leader = r
				next.LeaderEpoch++
				next.PartitionEpoch++
				out = append(out, election{metadata.TopicPartition{Topic: name, Partition: int32(i)}, p, next})
				break
			}
		}
	}
	return out
}

// diskStateLocked takes in what id's heartbeat says of its disk: a change of state is
// recorded, and while any broker's disk is full, the partitions it leads move to
// replicas that can write (checked on every heartbeat of a full broker, so that a
// replica that can take over later, one that caught up or has room again, gets them).
// It returns the image after its records. A proposal that fails while this node
// still leads does not fail the heartbeat (the session was kept alive; the next
// heartbeat tries again): on a disk shared with the controller the Raft log may not
// take it until space is freed.
func (c *Controller) diskStateLocked(ctx context.Context, im *metadata.Image, id metadata.NodeID, full bool) (*metadata.Image, error) {
	b, ok := im.Brokers[id]
	if !ok || (b.DiskFull == full && !full) {
		return im, nil
	}
	var recs []metadata.Record
	next := im
	if b.DiskFull != full {
		rec := metadata.Record{Type: metadata.BrokerDiskType, BrokerID: id, DiskFull: full}
		recs = append(recs, rec)
		next = im.Apply(rec, im.Offset)
	}
	es := fullDiskElections(next, c.liveLocked(next))
	if len(recs) == 0 && len(es) == 0 {
		return im, nil
	}
	res, err := c.proposeLocked(ctx, append(recs, records(es)...))
	if errors.Is(err, ErrNotController) || errors.Is(err, ErrClosed) {
		return im, err
	}
	if err != nil {
		c.log.Warn("could not record a broker's disk state; the next heartbeat tries again",
			"broker", id, "disk_full", full, "err", err)
		return im, nil
	}
	switch {
	case b.DiskFull == full:
		c.log.Info("moved leadership off a full disk", "broker", id, "partitions_moved", len(es))
	case full:
		c.log.Warn("broker's disk is full: it stays up, its leadership moves to replicas that can write",
			"broker", id, "partitions_moved", len(es))
	default:
		c.log.Info("broker's disk has room again", "broker", id, "partitions_moved", len(es))
	}
	return res.cur, nil
}
