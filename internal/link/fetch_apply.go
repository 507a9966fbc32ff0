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

// fetch is one Fetch request to the source broker: what it asked, and (once done)
// the answer.
type fetch struct {
	// at is the offset each partition was asked from: its destination log end, or
	// where the answer before this one (not yet appended when this one was sent) ends.
	at   map[metadata.TopicPartition]int64
	byID map[[16]byte]string // a v13+ answer names topics by id
	sent time.Time

	done chan struct{}
	resp *kmsg.FetchResponse
	err  error
}

// send sends one Fetch for parts to the source broker, in the background (it waits
// for the throttle first). It is a consumer's fetch (ReplicaID -1) at
// read_uncommitted: the source serves up to its high watermark (never what it could
// still lose) and every batch, aborted data and transaction markers included, as
// stored. Each partition is asked from ahead[tp] when the previous answer (still
// being appended) holds data for it, else from its destination log end, the next
// offset to copy. It returns nil when there is nothing to ask.
func (f *fetcher) send(ctx context.Context, parts []*mpart, ahead map[metadata.TopicPartition]int64) *fetch {
	maxBytes, partMaxBytes := f.s.throttle.fetchBytes()
	req := kmsg.NewPtrFetchRequest()
	req.ReplicaID, req.MaxWaitMillis, req.MinBytes, req.MaxBytes = -1, int32(fetchMaxWait/time.Millisecond), 1, maxBytes
	req.IsolationLevel, req.SessionEpoch = 0, -1
	fe := &fetch{at: map[metadata.TopicPartition]int64{}, byID: map[[16]byte]string{}, done: make(chan struct{})}
	byTopic := map[string]int{}
	f.s.mu.Lock()
	for _, p := range parts {
		_, leading, _, end, _ := p.dest.MirrorEnds()
		if !leading || p.removed.Load() {
			continue
		}
		if a, ok := ahead[p.tp]; ok {
			end = a
		}
		i, ok := byTopic[p.tp.Topic]
		if !ok {
			t := kmsg.NewFetchRequestTopic()
			t.Topic, t.TopicID = p.tp.Topic, p.topicID
			fe.byID[p.topicID] = p.tp.Topic
			req.Topics = append(req.Topics, t)
			i = len(req.Topics) - 1
			byTopic[p.tp.Topic] = i
		}
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.Partition, rp.CurrentLeaderEpoch, rp.FetchOffset = p.tp.Partition, p.sourceEpoch, end
		rp.LastFetchedEpoch, rp.LogStartOffset, rp.PartitionMaxBytes = -1, -1, partMaxBytes
		req.Topics[i].Partitions = append(req.Topics[i].Partitions, rp)
		fe.at[p.tp] = end
	}
	f.s.mu.Unlock()
	if len(fe.at) == 0 {
		return nil
	}
	go func() {
		defer close(fe.done)
		if fe.err = f.s.throttle.wait(ctx); fe.err != nil {
			return // the session or fetcher ends
		}
		fe.sent = time.Now()
		var kresp kmsg.Response
		if kresp, fe.err = f.s.cl.Broker(int(f.broker)).Request(ctx, req); fe.err != nil {
			return
		}
		fe.resp = kresp.(*kmsg.FetchResponse)
		fe.err = kerr.ErrorForCode(fe.resp.ErrorCode)
	}()
	return fe
}

// answer waits for fe's answer and returns it by partition of parts (the ones asked
// and still fetched here), with where each partition's whole batches in it end (the
// offset to ask next, for the partitions it holds data of). An error is one of the
// request as a whole; a partition's own error is handled by apply.
func (f *fetcher) answer(fe *fetch, parts []*mpart) (todo []applyJob, ahead map[metadata.TopicPartition]int64, err error) {
	<-fe.done
	if fe.err != nil {
		return nil, nil, fe.err
	}
	byKey := map[metadata.TopicPartition]*mpart{}
	for _, p := range parts {
		byKey[p.tp] = p
	}
	fetched := 0
	for _, t := range fe.resp.Topics {
		for _, rp := range t.Partitions {
			fetched += len(rp.RecordBatches)
		}
	}
	f.s.throttle.take(fetched)
	ahead = map[metadata.TopicPartition]int64{}
	for _, t := range fe.resp.Topics {
		name := t.Topic
		if name == "" {
			name = fe.byID[t.TopicID]
		}
		for _, rp := range t.Partitions {
			tp := metadata.TopicPartition{Topic: name, Partition: rp.Partition}
			p := byKey[tp]
			at, asked := fe.at[tp]
			if p == nil || p.removed.Load() || !asked {
				continue
			}
			todo = append(todo, applyJob{p, rp, at})
			if rp.ErrorCode == 0 {
				if next := wholeBatchesEnd(rp.RecordBatches, at); next > at {
					ahead[tp] = next
				}
			}
		}
	}
	return todo, ahead, nil
}

// apply appends the partitions of an answer. Each partition's append waits for its
// own fsync (a leader's acks=1 durability): the partitions of one answer are appended
// concurrently so that their fsyncs overlap instead of adding up. Still one appender
// per partition (this fetcher).
func (f *fetcher) apply(ctx context.Context, todo []applyJob, sent time.Time) {
	if len(todo) == 1 {
		f.applyPartition(ctx, todo[0].p, todo[0].rp, todo[0].at, sent)
		return
	}
	var wg sync.WaitGroup
	for _, j := range todo {
		wg.Add(1)
		go func() {
			defer wg.Done()
			f.applyPartition(ctx, j.p, j.rp, j.at, sent)
		}()
	}
	wg.Wait()
}

// applyJob is one partition of a fetch answer to append, asked from offset at.
type applyJob struct {
	p  *mpart
	rp kmsg.FetchResponseTopicPartition
	at int64
}

// applyPartition handles one partition of a fetch answer, asked from offset end. An
// answer sent ahead was asked from where the answer before it was to end; when the
// destination's end is elsewhere (that append failed or stopped short, or the
// partition restarted at the source's log start), it is dropped: the next fetch asks
// from the destination's end.
func (f *fetcher) applyPartition(ctx context.Context, p *mpart, rp kmsg.FetchResponseTopicPartition, end int64, sent time.Time) {
	if _, _, _, cur, _ := p.dest.MirrorEnds(); cur != end {
		return
	}
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
		// The partition may have been paused (or moved) since this answer was asked
		// for: then write drops it, and nothing lands after the pause is applied.
		var info replica.AppendInfo
		var wrote bool
		wrote, err = p.write(func() (err error) {
			info, err = p.dest.AppendMirrored(records, p.destEpoch)
			return err
		})
		if !wrote {
			return
		}
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

// wholeBatchesEnd is where the whole batches of buf end past from (from when none).
func wholeBatchesEnd(buf []byte, from int64) int64 {
	end := from
	for rest := buf; len(rest) >= recordbatch.HeaderSize; {
		size := recordbatch.LengthPrefixSize + int(recordbatch.Batch(rest).BatchLength())
		if size > len(rest) || size < recordbatch.HeaderSize {
			break
		}
		end = max(end, recordbatch.Batch(rest[:size]).NextOffset())
		rest = rest[size:]
	}
	return end
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
		wrote, err := p.write(func() error { return p.dest.RestartMirrorAt(start, p.destEpoch) })
		if err != nil {
			p.setErr(fmt.Errorf("restarting %s-%d at the source's log start %d: %w", p.tp.Topic, p.tp.Partition, start, err))
			return
		}
		if !wrote {
			return // stopped meanwhile (paused, moved): the next leader's fetch finds it again
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
