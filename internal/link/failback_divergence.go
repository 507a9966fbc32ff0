package link

// The divergence point of a failback (KIP-101/KIP-279 between two clusters). The new
// primary's promote recorded, per partition, the end of what it mirrored (W) and the
// old primary's leader epoch E of the last mirrored batch, as the old primary stamped
// it. The old primary's own epoch cache says where its epoch E ends: if it ends
// before W, the old primary lost part of what was mirrored (an unclean election) and
// wrote other records there since, so the logs diverge at that end at the latest.
// The batches on both sides are then compared (bytes, but the partition leader epoch
// field, which each cluster stamps with its own): the divergence point is the end of
// the last batch the two logs share, found by bisection (a log diverges from another
// by its suffix only), so a missing or stale record never keeps records the new
// primary does not hold.

import (
	"bytes"
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/runnel-io/runnel/internal/recordbatch"
)

// batchSource reads, from one cluster, the batch of a partition holding an offset.
type batchSource interface {
	// batchAt returns the first batch that ends past off (nil when there is none
	// below the high watermark).
	batchAt(ctx context.Context, off int64) (recordbatch.Batch, error)
}

// divergence returns where the old primary's log must be cut: the largest offset
// d <= min(mirroredEnd, epochEnd, oldEnd) such that both logs hold the same batches
// below d, where floor, the larger of the two log starts, bounds the comparison
// (below it one side has nothing to compare). epochEnd is the old primary's end of
// the recorded source epoch (-1: unknown). d may be below the old primary's log start
// (retention removed all it shared with the new primary): its whole log is then the
// tail, and the cut restarts it at d.
func divergence(ctx context.Context, old, cur batchSource, mirroredEnd, epochEnd, oldEnd, floor int64) (int64, error) {
	d := min(mirroredEnd, oldEnd)
	if epochEnd >= 0 {
		d = min(d, epochEnd)
	}
	if d <= floor {
		return d, nil
	}
	same := func(off int64) (bool, int64, error) {
		a, err := old.batchAt(ctx, off)
		if err != nil {
			return false, 0, fmt.Errorf("the old primary's batch at offset %d: %w", off, err)
		}
		b, err := cur.batchAt(ctx, off)
		if err != nil {
			return false, 0, fmt.Errorf("the new primary's batch at offset %d: %w", off, err)
		}
		if a == nil || b == nil {
			return false, 0, nil
		}
		return sameBatch(a, b), a.NextOffset(), nil
	}
	ok, next, err := same(d - 1)
	if err != nil {
		return 0, err
	}
	if ok && next == d {
		return d, nil
	}
	// Bisect: the batch holding lo is shared (or lo is the floor), the one holding hi
	// is not.
	lo, hi := floor-1, d-1
	loNext := floor
	for hi-lo > 1 {
		mid := lo + (hi-lo)/2
		ok, next, err := same(mid)
		if err != nil {
			return 0, err
		}
		if ok && next <= d {
			lo, loNext = mid, next
		} else {
			hi = mid
		}
	}
	return loNext, nil
}

// sameBatch reports whether two batches are the same but for the partition leader
// epoch field (outside the CRC), which each cluster stamps with its own.
func sameBatch(a, b recordbatch.Batch) bool {
	if len(a) != len(b) || a.BaseOffset() != b.BaseOffset() || a.CRC() != b.CRC() {
		return false
	}
	x, y := recordbatch.Batch(bytes.Clone(a)), recordbatch.Batch(bytes.Clone(b))
	x.SetPartitionLeaderEpoch(0)
	y.SetPartitionLeaderEpoch(0)
	return bytes.Equal(x, y)
}

// clusterPartition reads one partition of one cluster through its leader.
type clusterPartition struct {
	cl        *kgo.Client
	topic     string
	topicID   [16]byte
	partition int32
	leader    int32
}

// lookupPartition finds topic's id and partition's leader on cl's cluster.
func lookupPartition(ctx context.Context, cl *kgo.Client, topic string, partition int32) (*clusterPartition, error) {
	req := kmsg.NewPtrMetadataRequest()
	rt := kmsg.NewMetadataRequestTopic()
	rt.Topic = kmsg.StringPtr(topic)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return nil, err
	}
	for _, t := range resp.Topics {
		if t.Topic == nil || *t.Topic != topic {
			continue
		}
		if err := kerr.ErrorForCode(t.ErrorCode); err != nil {
			return nil, fmt.Errorf("topic %q: %w", topic, err)
		}
		for _, p := range t.Partitions {
			if p.Partition == partition {
				if p.Leader < 0 {
					return nil, fmt.Errorf("%s-%d has no leader", topic, partition)
				}
				return &clusterPartition{cl: cl, topic: topic, topicID: t.TopicID, partition: partition, leader: p.Leader}, nil
			}
		}
	}
	return nil, fmt.Errorf("%s-%d: no such partition", topic, partition)
}

// batchAt implements batchSource with a consumer Fetch at read_uncommitted.
func (c *clusterPartition) batchAt(ctx context.Context, off int64) (recordbatch.Batch, error) {
	bs, _, err := c.fetch(ctx, off, 1<<20)
	if err != nil {
		return nil, err
	}
	for _, b := range bs {
		if b.NextOffset() > off {
			return b, nil
		}
	}
	return nil, nil
}

// fetch returns the whole batches a consumer Fetch at read_uncommitted answers from
// off (up to about maxBytes), and the high watermark.
func (c *clusterPartition) fetch(ctx context.Context, off int64, maxBytes int32) ([]recordbatch.Batch, int64, error) {
	req := kmsg.NewPtrFetchRequest()
	req.ReplicaID, req.MaxWaitMillis, req.MaxBytes, req.SessionEpoch = -1, 0, maxBytes, -1
	ft := kmsg.NewFetchRequestTopic()
	ft.Topic, ft.TopicID = c.topic, c.topicID
	fp := kmsg.NewFetchRequestTopicPartition()
	fp.Partition, fp.FetchOffset, fp.PartitionMaxBytes, fp.CurrentLeaderEpoch, fp.LogStartOffset = c.partition, off, maxBytes, -1, -1
	ft.Partitions = append(ft.Partitions, fp)
	req.Topics = append(req.Topics, ft)
	kresp, err := c.cl.Broker(int(c.leader)).Request(ctx, req)
	if err != nil {
		return nil, 0, err
	}
	resp := kresp.(*kmsg.FetchResponse)
	if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
		return nil, 0, err
	}
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		return nil, 0, fmt.Errorf("fetch of %s-%d: unexpected answer", c.topic, c.partition)
	}
	rp := resp.Topics[0].Partitions[0]
	if err := kerr.ErrorForCode(rp.ErrorCode); err != nil {
		return nil, 0, fmt.Errorf("fetch of %s-%d at %d: %w", c.topic, c.partition, off, err)
	}
	var out []recordbatch.Batch
	for buf := rp.RecordBatches; len(buf) >= recordbatch.HeaderSize; {
		size := recordbatch.LengthPrefixSize + int(recordbatch.Batch(buf).BatchLength())
		if size > len(buf) || size < recordbatch.HeaderSize {
			break
		}
		out = append(out, recordbatch.Batch(bytes.Clone(buf[:size])))
		buf = buf[size:]
	}
	return out, rp.HighWatermark, nil
}

// epochEnd asks the partition's leader where its leader epoch epoch ends
// (OffsetForLeaderEpoch, as a consumer does): the start of the next larger epoch, or
// its log end. -1 when it knows no epoch at or below epoch.
func (c *clusterPartition) epochEnd(ctx context.Context, epoch int32) (int64, error) {
	req := kmsg.NewPtrOffsetForLeaderEpochRequest()
	req.ReplicaID = -1
	rt := kmsg.NewOffsetForLeaderEpochRequestTopic()
	rt.Topic = c.topic
	rp := kmsg.NewOffsetForLeaderEpochRequestTopicPartition()
	rp.Partition, rp.CurrentLeaderEpoch, rp.LeaderEpoch = c.partition, -1, epoch
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	kresp, err := c.cl.Broker(int(c.leader)).Request(ctx, req)
	if err != nil {
		return 0, err
	}
	for _, t := range kresp.(*kmsg.OffsetForLeaderEpochResponse).Topics {
		for _, p := range t.Partitions {
			if err := kerr.ErrorForCode(p.ErrorCode); err != nil {
				return 0, fmt.Errorf("OffsetForLeaderEpoch of %s-%d: %w", c.topic, c.partition, err)
			}
			if p.LeaderEpoch < 0 {
				return -1, nil
			}
			return p.EndOffset, nil
		}
	}
	return 0, fmt.Errorf("OffsetForLeaderEpoch of %s-%d: no answer", c.topic, c.partition)
}
