package replica

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/runnel-io/runnel/internal/log"
	"github.com/runnel-io/runnel/internal/metadata"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// errThrottled: every partition ready to fetch is a throttled moving replica and the
// follower throttle is over its rate; the fetcher waits its backoff.
var errThrottled = errors.New("every partition to fetch is throttled (follower.replication.throttled.rate)")

// fetchOnce sends one Fetch for every truncated partition and appends what comes back.
func (f *Fetcher) fetchOnce(ctx context.Context, parts []*fetchState) error {
	round := f.newFetchRound(parts)
	if len(round.byKey) == 0 {
		if round.overQuota {
			return errThrottled
		}
		return errors.New("no partition ready to fetch")
	}
	o := f.m.opts
	rctx, cancel := context.WithTimeout(ctx, o.FetchWait+10*time.Second)
	defer cancel()
	kresp, err := f.client.Broker(int(f.source)).Request(rctx, round.req)
	if err != nil {
		return err
	}
	resp := kresp.(*kmsg.FetchResponse)
	if resp.ErrorCode != 0 {
		return kerr.ErrorForCode(resp.ErrorCode)
	}
	return f.applyResponse(round, resp)
}

// fetchRound is one Fetch of a follower fetcher: its request, and the partitions it
// names, to read the response by.
type fetchRound struct {
	req     *kmsg.FetchRequest
	byTopic map[string]int // topic name to its index in req.Topics
	byKey   map[metadata.TopicPartition]*fetchState
	// throttled are the partitions counted against the follower replication throttle
	// (KIP-73: moving replicas); overQuota says the throttle was over its rate, so
	// those were left out.
	throttled map[metadata.TopicPartition]bool
	overQuota bool
}

// newFetchRound builds the Fetch of the partitions ready to fetch: truncated, online,
// and, for a moving replica, only while the follower throttle is under its rate.
func (f *Fetcher) newFetchRound(parts []*fetchState) *fetchRound {
	o := f.m.opts
	req := kmsg.NewPtrFetchRequest()
	req.ReplicaID = int32(o.Node)
	req.ReplicaState.ID, req.ReplicaState.Epoch = int32(o.Node), -1
	req.MaxWaitMillis = int32(o.FetchWait.Milliseconds())
	req.MinBytes = o.FetchMinBytes
	req.MaxBytes = o.FetchResponseMaxBytes
	req.SessionID, req.SessionEpoch = 0, -1
	round := &fetchRound{req: req, byTopic: map[string]int{}, byKey: map[metadata.TopicPartition]*fetchState{},
		throttled: map[metadata.TopicPartition]bool{}, overQuota: f.m.followerQuota.Exceeded(time.Now())}
	for _, s := range parts {
		// An offline log's end may include records whose fsync failed: fetching
		// from there would report them to the leader as replicated. The node stops
		// (in a cluster) and recovers the log on restart; until then it stays behind.
		if !s.truncated || s.p.log.Offline() {
			continue
		}
		maxBytes := o.FetchMaxBytes
		if s.p.followerThrottledNow() {
			if round.overQuota {
				continue // a moving replica over follower.replication.throttled.rate
			}
			round.throttled[s.p.tp] = true
			maxBytes = f.m.followerQuota.Chunk(o.FetchMaxBytes)
		}
		round.add(s, maxBytes)
	}
	return round
}

// add names s's partition in the request, fetching from its log end.
func (round *fetchRound) add(s *fetchState, maxBytes int32) {
	req := round.req
	i, ok := round.byTopic[s.p.tp.Topic]
	if !ok {
		t := kmsg.NewFetchRequestTopic()
		t.Topic, t.TopicID = s.p.tp.Topic, s.topicID
		req.Topics = append(req.Topics, t)
		i = len(req.Topics) - 1
		round.byTopic[s.p.tp.Topic] = i
	}
	rp := kmsg.NewFetchRequestTopicPartition()
	rp.Partition, rp.CurrentLeaderEpoch = s.p.tp.Partition, s.leaderEpoch
	rp.FetchOffset, rp.LogStartOffset = s.p.log.LogEndOffset(), s.p.log.LogStartOffset()
	rp.LastFetchedEpoch, rp.PartitionMaxBytes = -1, maxBytes
	req.Topics[i].Partitions = append(req.Topics[i].Partitions, rp)
	round.byKey[s.p.tp] = s
}

// applyResponse appends every partition of the response first, then makes them durable
// together: concurrent fsyncs of several files cost the disk about one journal commit,
// where one after another each paid its own, and the next fetch (which reports our new
// log ends to the leader) waits for all of them. It returns the first error.
func (f *Fetcher) applyResponse(round *fetchRound, resp *kmsg.FetchResponse) error {
	var firstErr error
	applied := make([]appliedPart, 0, len(round.byKey))
	for _, t := range resp.Topics {
		for _, rp := range t.Partitions {
			s := f.match(round.byKey, t, rp.Partition)
			if s == nil {
				continue
			}
			if round.throttled[s.p.tp] {
				f.m.followerQuota.Record(len(rp.RecordBatches), time.Now())
			}
			a, err := f.applyFetched(s, rp)
			if err != nil && firstErr == nil {
				firstErr = err
			}
			if a.p != nil {
				applied = append(applied, a)
			}
		}
	}
	if err := flushFetched(applied); err != nil && firstErr == nil {
		firstErr = err
	}
	return firstErr
}

// appliedPart is a partition whose fetched records were appended: it adopts leaderHW
// once flushTo (0: nothing to flush) is durable, if it still follows leaderEpoch.
type appliedPart struct {
	p           *Partition
	leaderEpoch int32
	flushTo     int64
	leaderHW    int64
}

// flushFetched makes the appended partitions durable per their flush policy, all at
// once, and then adopts each one's high watermark. A partition whose fsync failed keeps
// its old high watermark; its log is offline (log.Flush failed it).
func flushFetched(applied []appliedPart) error {
	errs := make([]error, len(applied))
	flush := func(i int) { errs[i] = applied[i].p.log.Flush(applied[i].flushTo) }
	var wg sync.WaitGroup
	last := -1 // the last partition to flush runs on this goroutine, the others beside it
	for i, a := range applied {
		if a.flushTo == 0 {
			continue
		}
		if prev := last; prev >= 0 {
			wg.Go(func() { flush(prev) })
		}
		last = i
	}
	if last >= 0 {
		flush(last)
	}
	wg.Wait()
	var firstErr error
	for i, a := range applied {
		if errs[i] != nil {
			if firstErr == nil {
				firstErr = errs[i]
			}
			continue
		}
		a.p.adoptLeaderHighWatermark(a.leaderHW, a.leaderEpoch)
	}
	return firstErr
}

// match finds the fetch state of a response partition, by topic id (Fetch v13+) or name.
func (f *Fetcher) match(byKey map[metadata.TopicPartition]*fetchState, t kmsg.FetchResponseTopic, partition int32) *fetchState {
	if t.Topic != "" {
		return byKey[metadata.TopicPartition{Topic: t.Topic, Partition: partition}]
	}
	for tp, s := range byKey {
		if s.topicID == t.TopicID && tp.Partition == partition {
			return s
		}
	}
	return nil
}

// applyFetched appends one partition's records as follower and says up to where the
// flush policy wants them fsynced before the partition adopts the leader's high
// watermark (capped by our log end). A partition it returns with p nil is done.
func (f *Fetcher) applyFetched(s *fetchState, rp kmsg.FetchResponseTopicPartition) (appliedPart, error) {
	p := s.p
	switch err := kerr.ErrorForCode(rp.ErrorCode); {
	case err == nil:
	case errors.Is(err, kerr.OffsetOutOfRange):
		return appliedPart{}, f.handleOutOfRange(s, rp)
	default:
		// NOT_LEADER, FENCED/UNKNOWN_LEADER_EPOCH...: the next metadata image tells us
		// whom to follow; until then, back off.
		return appliedPart{}, err
	}
	a := appliedPart{p: p, leaderEpoch: s.leaderEpoch, leaderHW: rp.HighWatermark}
	if len(rp.RecordBatches) > 0 {
		info, err := p.appendAsFollower(rp.RecordBatches, s.leaderEpoch)
		if errors.Is(err, errRoleChanged) {
			return appliedPart{}, nil // the next round works for the new role
		}
		if errors.Is(err, log.ErrDiskFull) {
			return appliedPart{}, err // logged once per episode (noteDisk)
		}
		if errors.Is(err, log.ErrClosed) {
			// The replica was deleted (moved away, drained, its topic deleted) or the
			// node is stopping while this fetch was in flight: nothing failed.
			f.m.logger.Debug("follower append to a closed log dropped", "topic", p.tp.Topic, "partition", p.tp.Partition,
				"leader", f.source)
			return appliedPart{}, nil
		}
		if err != nil {
			f.m.logger.Error("follower append failed", "topic", p.tp.Topic, "partition", p.tp.Partition,
				"leader", f.source, "log_end_offset", p.log.LogEndOffset(), "err", err)
			return appliedPart{}, err
		}
		if p.log.NeedsFlush(info) {
			a.flushTo = info.LastOffset + 1
		}
	}
	return a, nil
}

// handleOutOfRange: our log end is below the leader's log start (we were away while it
// deleted segments): start over at its log start.
func (f *Fetcher) handleOutOfRange(s *fetchState, rp kmsg.FetchResponseTopicPartition) error {
	p := s.p
	if rp.LogStartOffset > p.log.LogEndOffset() {
		f.m.logger.Warn("follower is behind the leader's log start; restarting the log there",
			"topic", p.tp.Topic, "partition", p.tp.Partition, "leader", f.source,
			"log_end_offset", p.log.LogEndOffset(), "leader_log_start", rp.LogStartOffset)
		if err := p.restartAsFollowerAt(rp.LogStartOffset, s.leaderEpoch); !errors.Is(err, errRoleChanged) {
			return err
		}
		return nil
	}
	// Ahead of the leader: divergence; resolve it again through the epochs.
	s.truncated = false
	return log.ErrOffsetOutOfRange
}
