package link

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/runnel-io/runnel/internal/metadata"
	"github.com/runnel-io/runnel/internal/recordbatch"
	"github.com/runnel-io/runnel/internal/replica"
)

// fetchOnce sends one Fetch for parts to the source broker and appends what it
// answers. It is a consumer's fetch (ReplicaID -1) at read_uncommitted: the source
// serves up to its high watermark (never what it could still lose) and every batch,
// aborted data and transaction markers included, as stored. Each partition is fetched
// at its destination log end, which is the next offset to copy. An error is returned
// only for the request as a whole; a partition's own error is handled here.
func (f *fetcher) fetchOnce(ctx context.Context, parts []*mpart) error {
	if err := f.s.throttle.wait(ctx); err != nil {
		return nil // the session or fetcher ends
	}
	maxBytes, partMaxBytes := f.s.throttle.fetchBytes()
	req := kmsg.NewPtrFetchRequest()
	req.ReplicaID, req.MaxWaitMillis, req.MinBytes, req.MaxBytes = -1, int32(fetchMaxWait/time.Millisecond), 1, maxBytes
	req.IsolationLevel, req.SessionEpoch = 0, -1
	byTopic := map[string]int{}
	byID := map[[16]byte]string{} // a v13+ answer names topics by id
	ends := map[metadata.TopicPartition]int64{}
	f.s.mu.Lock()
	for _, p := range parts {
		_, leading, _, end, _ := p.dest.MirrorEnds()
		if !leading || p.removed.Load() {
			continue
		}
		i, ok := byTopic[p.tp.Topic]
		if !ok {
			t := kmsg.NewFetchRequestTopic()
			t.Topic, t.TopicID = p.tp.Topic, p.topicID
			byID[p.topicID] = p.tp.Topic
			req.Topics = append(req.Topics, t)
			i = len(req.Topics) - 1
			byTopic[p.tp.Topic] = i
		}
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.Partition, rp.CurrentLeaderEpoch, rp.FetchOffset = p.tp.Partition, p.sourceEpoch, end
		rp.LastFetchedEpoch, rp.LogStartOffset, rp.PartitionMaxBytes = -1, -1, partMaxBytes
		req.Topics[i].Partitions = append(req.Topics[i].Partitions, rp)
		ends[p.tp] = end
	}
	f.s.mu.Unlock()
	if len(ends) == 0 {
		return nil
	}
	sent := time.Now()
	kresp, err := f.s.cl.Broker(int(f.broker)).Request(ctx, req)
	if err != nil {
		return err
	}
	resp := kresp.(*kmsg.FetchResponse)
	if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
		return err
	}
	byKey := map[metadata.TopicPartition]*mpart{}
	for _, p := range parts {
		byKey[p.tp] = p
	}
	fetched := 0
	for _, t := range resp.Topics {
		for _, rp := range t.Partitions {
			fetched += len(rp.RecordBatches)
		}
	}
	f.s.throttle.take(fetched)
	var todo []applyJob
	for _, t := range resp.Topics {
		name := t.Topic
		if name == "" {
			name = byID[t.TopicID]
		}
		for _, rp := range t.Partitions {
			tp := metadata.TopicPartition{Topic: name, Partition: rp.Partition}
			p := byKey[tp]
			if p == nil || p.removed.Load() {
				continue
			}
			if _, asked := ends[tp]; !asked {
				continue
			}
			todo = append(todo, applyJob{p, rp})
		}
	}
	// Each partition's append waits for its own fsync (a leader's acks=1 durability):
	// the partitions of one answer are appended concurrently so that their fsyncs
	// overlap instead of adding up. Still one appender per partition (this fetcher).
	if len(todo) == 1 {
		f.applyPartition(ctx, todo[0].p, todo[0].rp, ends[todo[0].p.tp], sent)
		return nil
	}
	var wg sync.WaitGroup
	for _, j := range todo {
		wg.Add(1)
		go func() {
			defer wg.Done()
			f.applyPartition(ctx, j.p, j.rp, ends[j.p.tp], sent)
		}()
	}
	wg.Wait()
	return nil
}

// applyJob is one partition of a fetch answer to append.
type applyJob struct {
	p  *mpart
	rp kmsg.FetchResponseTopicPartition
}

// applyPartition handles one partition of a fetch answer.
func (f *fetcher) applyPartition(ctx context.Context, p *mpart, rp kmsg.FetchResponseTopicPartition, end int64, sent time.Time) {
	switch err := kerr.ErrorForCode(rp.ErrorCode); {
	case err == nil:
	case errors.Is(err, kerr.OffsetOutOfRange):
		f.outOfRange(ctx, p, end)
		return
	case errors.Is(err, kerr.NotLeaderForPartition), errors.Is(err, kerr.FencedLeaderEpoch),
		errors.Is(err, kerr.UnknownLeaderEpoch), errors.Is(err, kerr.LeaderNotAvailable),
		errors.Is(err, kerr.UnknownTopicOrPartition), errors.Is(err, kerr.UnknownTopicID),
		errors.Is(err, kerr.ReplicaNotAvailable), errors.Is(err, kerr.KafkaStorageError):
		// The source's leadership moved (or the topic is going): look it up again.
		p.setErr(fmt.Errorf("source %s-%d on broker %d: %w", p.tp.Topic, p.tp.Partition, f.broker, err))
		f.s.unroute(p)
		return
	default:
		p.setErr(fmt.Errorf("source %s-%d on broker %d: %w", p.tp.Topic, p.tp.Partition, f.broker, err))
		return
	}
	records, err := wholeBatches(rp.RecordBatches, end)
	if err == nil && len(records) > 0 {
		var info replica.AppendInfo
		info, err = p.dest.AppendMirrored(records, p.destEpoch)
		if err == nil {
			f.s.bytes.Add(int64(len(records)))
			end = info.LastOffset + 1
		}
	}
	if errors.Is(err, replica.ErrNotLeader) {
		p.removed.Store(true) // the next image hands it to the new leader
		return
	}
	if err != nil {
		p.setErr(fmt.Errorf("mirroring %s-%d at offset %d: %w", p.tp.Topic, p.tp.Partition, end, err))
		return
	}
	p.sawSourceEnd(rp.HighWatermark, end, sent)
}

// wholeBatches returns the prefix of buf made of whole v2 batches that end past
// from (the destination's end): a fetch may end in a partial batch (cut at the byte
// limit), and may begin with a batch the destination already holds.
func wholeBatches(buf []byte, from int64) ([]byte, error) {
	start, n := -1, 0
	for rest := buf; len(rest) >= recordbatch.HeaderSize; {
		size := recordbatch.LengthPrefixSize + int(recordbatch.Batch(rest).BatchLength())
		if size > len(rest) || size < recordbatch.HeaderSize {
			break // the partial batch a byte limit cut
		}
		b := recordbatch.Batch(rest[:size])
		if b.Magic() != 2 {
			return nil, fmt.Errorf("%w: batch at offset %d has magic %d; links copy v2 batches only (Kafka 0.11+ message format)", replica.ErrInvalidRecord, b.BaseOffset(), b.Magic())
		}
		if b.NextOffset() <= from {
			buf, rest = rest[size:], rest[size:]
			continue
		}
		if start < 0 {
			start = len(buf) - len(rest)
		}
		n = len(buf) - len(rest) + size
		rest = rest[size:]
	}
	if start < 0 {
		return nil, nil
	}
	return buf[start:n], nil
}

// outOfRange handles OFFSET_OUT_OF_RANGE at the destination's end: below the
// source's log start (a new mirror of a source whose start was deleted, or a
// destination that fell behind the source's retention), the destination restarts at
// the source's start; past the source's end, the source lost records the destination
// holds (an unclean election there), and the mirror topic fails rather than diverge.
func (f *fetcher) outOfRange(ctx context.Context, p *mpart, end int64) {
	start, err := f.listOffset(ctx, p, -2)
	var last int64
	if err == nil {
		last, err = f.listOffset(ctx, p, -1)
	}
	switch {
	case err != nil:
		p.setErr(fmt.Errorf("source %s-%d: offsets after OFFSET_OUT_OF_RANGE at %d: %w", p.tp.Topic, p.tp.Partition, end, err))
	case end < start:
		if err := p.dest.RestartMirrorAt(start, p.destEpoch); err != nil {
			p.setErr(fmt.Errorf("restarting %s-%d at the source's log start %d: %w", p.tp.Topic, p.tp.Partition, start, err))
			return
		}
		f.s.m.logger.Info("link: mirror partition starts at the source's log start", "link", f.s.link.Name,
			"topic", p.tp.Topic, "partition", p.tp.Partition, "offset", start, "was", end)
	case end > last:
		f.s.mu.Lock()
		f.s.fail(p.tp.Topic, fmt.Sprintf("source partition %s-%d ends at offset %d, before the mirror's end %d: the source lost records the mirror holds", p.tp.Topic, p.tp.Partition, last, end))
		f.s.mu.Unlock()
	}
}

// listOffset asks the source leader for partition p's earliest (-2) or latest (-1)
// offset.
func (f *fetcher) listOffset(ctx context.Context, p *mpart, ts int64) (int64, error) {
	req := kmsg.NewPtrListOffsetsRequest()
	req.ReplicaID = -1
	t := kmsg.NewListOffsetsRequestTopic()
	t.Topic = p.tp.Topic
	rp := kmsg.NewListOffsetsRequestTopicPartition()
	rp.Partition, rp.Timestamp, rp.CurrentLeaderEpoch = p.tp.Partition, ts, -1
	t.Partitions = append(t.Partitions, rp)
	req.Topics = append(req.Topics, t)
	kresp, err := f.s.cl.Broker(int(f.broker)).Request(ctx, req)
	if err != nil {
		return 0, err
	}
	for _, t := range kresp.(*kmsg.ListOffsetsResponse).Topics {
		for _, rp := range t.Partitions {
			if err := kerr.ErrorForCode(rp.ErrorCode); err != nil {
				return 0, err
			}
			return rp.Offset, nil
		}
	}
	return 0, fmt.Errorf("source answered ListOffsets without %s-%d", p.tp.Topic, p.tp.Partition)
}
