package link

import (
	"context"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/runnel-io/runnel/internal/metadata"
)

// pausedInterval is how often the source's end of the paused partitions is asked.
// A paused partition copies nothing, but its lag must still show in status and
// /metrics (growing while paused): a ListOffsets per interval per session costs the
// source little.
const pausedInterval = 5 * time.Second

// watchPaused is the session's goroutine that follows the source's end of its paused
// partitions (ListOffsets latest through the session's client, which routes each
// partition to its source leader; no records are fetched). lag_seconds of a paused
// partition is then the time since its source end was first seen past the
// destination's end, as for a fetched one; an unreachable source keeps the last end
// known, and the time since the last successful answer counts.
func (s *session) watchPaused() {
	t := time.NewTicker(pausedInterval)
	defer t.Stop()
	for {
		s.pollPaused()
		select {
		case <-s.ctx.Done():
			return
		case <-s.pausedWake:
		case <-t.C:
		}
	}
}

func (s *session) wakePaused() {
	select {
	case s.pausedWake <- struct{}{}:
	default:
	}
}

func (s *session) pollPaused() {
	s.mu.Lock()
	parts := map[metadata.TopicPartition]*mpart{}
	for tp, p := range s.parts {
		if p.paused {
			parts[tp] = p
		}
	}
	s.mu.Unlock()
	if len(parts) == 0 {
		return
	}
	req := kmsg.NewPtrListOffsetsRequest()
	req.ReplicaID = -1
	byTopic := map[string]int{}
	for tp := range parts {
		i, ok := byTopic[tp.Topic]
		if !ok {
			i = len(req.Topics)
			byTopic[tp.Topic] = i
			rt := kmsg.NewListOffsetsRequestTopic()
			rt.Topic = tp.Topic
			req.Topics = append(req.Topics, rt)
		}
		rp := kmsg.NewListOffsetsRequestTopicPartition()
		rp.Partition, rp.Timestamp = tp.Partition, -1 // latest: the high watermark
		req.Topics[i].Partitions = append(req.Topics[i].Partitions, rp)
	}
	ctx, cancel := context.WithTimeout(s.ctx, 10*time.Second)
	defer cancel()
	sent := time.Now()
	resp, err := req.RequestWith(ctx, s.cl)
	if err != nil {
		if s.ctx.Err() == nil {
			for _, p := range parts {
				p.setErr(fmt.Errorf("end offsets of paused %s-%d from source %s: %w", p.tp.Topic, p.tp.Partition, s.link.Source, err))
			}
		}
		return
	}
	for _, rt := range resp.Topics {
		for _, rp := range rt.Partitions {
			p := parts[metadata.TopicPartition{Topic: rt.Topic, Partition: rp.Partition}]
			if p == nil || p.removed.Load() {
				continue
			}
			if err := kerr.ErrorForCode(rp.ErrorCode); err != nil {
				p.setErr(fmt.Errorf("end offset of paused %s-%d from source %s: %w", p.tp.Topic, p.tp.Partition, s.link.Source, err))
				continue
			}
			_, _, _, end, _ := p.dest.MirrorEnds()
			p.sawSourceEnd(rp.Offset, end, sent)
		}
	}
}
