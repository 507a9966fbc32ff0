package link

// Promote's record: after a promote, each promoted mirror partition's leader reports
// to the active controller what its cut left (the end of what was mirrored) and the
// source's leader epoch of the last mirrored batch, which the replica read from the
// batches before it stamped this cluster's epoch (replica.Partition.PromoteSealed).
// The controller keeps the first report per partition and promote epoch
// (metadata.MirrorTopic.MirroredEnds, SourceEpochs), so it survives restarts and
// leader changes, and the failback of the old primary reads it (PhaseInfo).

import (
	"context"
	"sync"
	"time"

	"github.com/runnel-io/runnel/internal/metadata"
)

// promoteInflight dedups the reports in flight: one per manager, partition and
// promote epoch (a promoteKey's presence).
var promoteInflight sync.Map

type promoteKey struct {
	m     *Manager
	tp    metadata.TopicPartition
	epoch int32
}

// reportPromotes reports, for every promoted mirror partition this node leads at or
// past its promote epoch whose record im does not hold yet, what its promote left.
// A leader that did not make the cut itself (it took over after the promote, or
// restarted) reports where its own writes start, from its epoch cache, and an
// unknown source epoch. Each report runs in its own goroutine, retried for up to a
// minute; the image holding the record ends the reporting.
func (m *Manager) reportPromotes(im *metadata.Image) {
	if m.report == nil || im.Links == nil {
		return
	}
	for name, mt := range im.Links.Mirrors {
		if mt = im.MirrorOf(name); mt == nil || mt.State != metadata.MirrorPromoted {
			continue
		}
		t := im.Topics[mt.Topic]
		for i := range t.Partitions {
			tp := metadata.TopicPartition{Topic: mt.Topic, Partition: int32(i)}
			promote, ok := im.PromoteEpoch(tp)
			if _, _, recorded := mt.PromoteRecord(int32(i)); recorded || !ok || t.Partitions[i].Leader != m.node {
				continue
			}
			p, err := m.replicas.Partition(tp)
			if err != nil {
				continue
			}
			epoch, leading, _, end, _ := p.MirrorEnds()
			if !leading || epoch < promote {
				continue
			}
			fp := FailbackPartition{Partition: int32(i), PromoteEpoch: promote, SourceEpoch: -1, CutTo: -1,
				MirroredEnd: writableFrom(p.Log().EpochEntries(), promote, end)}
			if seal, ok := p.PromoteSealed(); ok && seal.LeaderEpoch >= promote {
				fp.MirroredEnd, fp.SourceEpoch = seal.MirroredEnd, seal.SourceEpoch
			}
			m.sendPromoteReport(mt.Link, tp, fp)
		}
	}
}

func (m *Manager) sendPromoteReport(link string, tp metadata.TopicPartition, fp FailbackPartition) {
	key := promoteKey{m: m, tp: tp, epoch: fp.PromoteEpoch}
	if _, busy := promoteInflight.LoadOrStore(key, true); busy {
		return
	}
	req := Request{Op: OpFailback, Link: link, Failback: &FailbackArgs{Phase: PhasePromoted,
		Topics: []FailbackTopic{{Topic: tp.Topic, Partitions: []FailbackPartition{fp}}}}}
	go func() {
		defer promoteInflight.Delete(key)
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		for {
			resp := m.report(ctx, req)
			if resp.Error == "" {
				m.logger.Info("link: promote recorded", "link", link, "topic", tp.Topic, "partition", tp.Partition,
					"mirrored_end", fp.MirroredEnd, "source_epoch", fp.SourceEpoch)
				return
			}
			select {
			case <-ctx.Done():
				m.logger.Warn("link: recording the promote", "link", link, "topic", tp.Topic, "partition", tp.Partition, "err", resp.Error)
				return
			case <-time.After(retryBackoff):
			}
		}
	}()
}
