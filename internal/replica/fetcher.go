package replica

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/runnel-io/runnel/internal/log"
	"github.com/runnel-io/runnel/internal/metadata"
	"github.com/runnel-io/runnel/internal/nodenet"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Fetcher replicates every partition this node follows from one source broker (Kafka's
// ReplicaFetcherThread): one goroutine, one connection, one Fetch request for all of
// them. Before fetching a partition it truncates any divergent tail, using
// OffsetForLeaderEpoch (KIP-101, KIP-279). What it appends it makes durable per the
// topic's flush policy before the next fetch reports the new log end to the leader.
type Fetcher struct {
	m      *Manager
	source metadata.NodeID
	client *kgo.Client

	mu sync.Mutex // guards parts
	// parts are the partitions fetched from source, with the leader epoch they follow.
	parts map[metadata.TopicPartition]*fetchState
	wake  chan struct{}

	// diskFull is set (by the run goroutine only) while appends fail on a full disk:
	// the fetcher then retries every diskFullBackoff and logs once per episode.
	diskFull bool

	cancel context.CancelFunc
	done   chan struct{}
}

type fetchState struct {
	p           *Partition
	leaderEpoch int32
	topicID     [16]byte
	// truncated: divergence has been resolved for this leader epoch.
	truncated bool
}

func newFetcher(m *Manager, source metadata.NodeID, addr string) (*Fetcher, error) {
	const dialTimeout = 3 * time.Second
	opts := []kgo.Opt{
		kgo.SeedBrokers(addr),
		kgo.ClientID(fmt.Sprintf("runnel-replica-fetcher-%d-from-%d", m.opts.Node, source)),
		kgo.RetryTimeout(5 * time.Second),
		kgo.DialTimeout(dialTimeout),
		kgo.MetadataMinAge(250 * time.Millisecond),
	}
	if m.opts.PeerClient != nil {
		opts = append(opts, m.opts.PeerClient(dialTimeout)...)
	} else {
		opts = append(opts, kgo.Dialer(nodenet.Dialer(m.opts.Network, dialTimeout))) // nil (kgo's own) on the host's network
	}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	f := &Fetcher{m: m, source: source, client: cl, parts: map[metadata.TopicPartition]*fetchState{},
		wake: make(chan struct{}, 1), cancel: cancel, done: make(chan struct{})}
	go f.run(ctx)
	return f, nil
}

func (f *Fetcher) add(p *Partition, leaderEpoch int32, topicID [16]byte) {
	f.mu.Lock()
	cur := f.parts[p.tp]
	if cur == nil || cur.leaderEpoch != leaderEpoch || cur.p != p {
		f.parts[p.tp] = &fetchState{p: p, leaderEpoch: leaderEpoch, topicID: topicID}
	}
	f.mu.Unlock()
	select {
	case f.wake <- struct{}{}:
	default:
	}
}

func (f *Fetcher) remove(tp metadata.TopicPartition) (empty bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.parts, tp)
	return len(f.parts) == 0
}

func (f *Fetcher) close() {
	f.cancel()
	<-f.done
	f.client.Close()
}

func (f *Fetcher) snapshot() []*fetchState {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make([]*fetchState, 0, len(f.parts))
	for _, s := range f.parts {
		out = append(out, s)
	}
	return out
}

func (f *Fetcher) run(ctx context.Context) {
	defer close(f.done)
	backoff := time.Duration(0)
	for ctx.Err() == nil {
		if backoff > 0 {
			select {
			case <-ctx.Done():
				return
			case <-time.After(backoff):
			}
		}
		parts := f.snapshot()
		if len(parts) == 0 {
			select {
			case <-ctx.Done():
				return
			case <-f.wake:
			}
			continue
		}
		f.repairDamaged(parts)
		if err := f.truncateDiverged(ctx, parts); err != nil {
			backoff = f.backoff(err)
			continue
		}
		err := f.fetchOnce(ctx, parts)
		f.noteDisk(err)
		if err != nil {
			backoff = f.backoff(err)
			continue
		}
		backoff = 0
	}
}

// diskFullBackoff paces a follower's fetches while its appends find the disk full:
// each retry costs the leader a read, and space is rarely freed within a second.
const diskFullBackoff = time.Second

func (f *Fetcher) backoff(err error) time.Duration {
	if errors.Is(err, log.ErrDiskFull) {
		return diskFullBackoff
	}
	if !errors.Is(err, context.Canceled) {
		f.m.logger.Debug("replica fetch failed", "source", f.source, "err", err)
	}
	return f.m.opts.FetchBackoff
}

// noteDisk logs the start and the end of a full-disk episode of this fetcher's
// appends, once each (the log names each partition once too). The partitions fall out
// of their ISRs by the leader's lag rule meanwhile, and rejoin once caught up.
func (f *Fetcher) noteDisk(err error) {
	full := errors.Is(err, log.ErrDiskFull)
	switch {
	case full && !f.diskFull:
		f.m.logger.Warn("follower appends fail: the disk is full; retrying every "+diskFullBackoff.String()+" until space is freed",
			"leader", f.source, "err", err)
	case !full && err == nil && f.diskFull:
		f.m.logger.Info("follower appends resumed: the disk has room again", "leader", f.source)
	default:
		return
	}
	f.diskFull = full
}

// truncateDiverged resolves divergence for partitions new to this leader epoch.
func (f *Fetcher) truncateDiverged(ctx context.Context, parts []*fetchState) error {
	req := kmsg.NewPtrOffsetForLeaderEpochRequest()
	req.ReplicaID = int32(f.m.opts.Node)
	var pending []*fetchState
	for _, s := range parts {
		if s.truncated {
			continue
		}
		latest, ok := s.p.log.LatestEpoch()
		if !ok {
			s.truncated = true // an empty epoch history has nothing to diverge
			continue
		}
		t := kmsg.NewOffsetForLeaderEpochRequestTopic()
		t.Topic = s.p.tp.Topic
		rp := kmsg.NewOffsetForLeaderEpochRequestTopicPartition()
		rp.Partition, rp.CurrentLeaderEpoch, rp.LeaderEpoch = s.p.tp.Partition, s.leaderEpoch, latest
		t.Partitions = append(t.Partitions, rp)
		req.Topics = append(req.Topics, t)
		pending = append(pending, s)
	}
	if len(pending) == 0 {
		return nil
	}
	rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	kresp, err := f.client.Broker(int(f.source)).Request(rctx, req)
	if err != nil {
		return err
	}
	resp := kresp.(*kmsg.OffsetForLeaderEpochResponse)
	for _, t := range resp.Topics {
		for _, rp := range t.Partitions {
			tp := metadata.TopicPartition{Topic: t.Topic, Partition: rp.Partition}
			for _, s := range pending {
				if s.p.tp == tp {
					f.applyEpochEnd(s, rp)
				}
			}
		}
	}
	return nil
}

// applyEpochEnd truncates a follower log to where it agrees with the leader
// (divergencePoint, KIP-101 and KIP-279).
func (f *Fetcher) applyEpochEnd(s *fetchState, rp kmsg.OffsetForLeaderEpochResponseTopicPartition) {
	if rp.ErrorCode != 0 {
		f.m.logger.Debug("OffsetForLeaderEpoch failed", "topic", s.p.tp.Topic, "partition", s.p.tp.Partition,
			"leader", f.source, "err", kerr.ErrorForCode(rp.ErrorCode))
		return
	}
	leo := s.p.log.LogEndOffset()
	to := divergencePoint(s.p.log, s.p.HighWatermark(), rp.LeaderEpoch, rp.EndOffset)
	if to < leo {
		f.m.logger.Warn("truncating divergent log tail before following the new leader",
			"topic", s.p.tp.Topic, "partition", s.p.tp.Partition, "leader", f.source, "leader_epoch", s.leaderEpoch,
			"log_end_offset", leo, "truncate_to", to, "records_dropped", leo-to)
		if err := s.p.truncateAsFollower(to, s.leaderEpoch); err != nil {
			if !errors.Is(err, errRoleChanged) {
				f.m.logger.Error("truncate failed", "topic", s.p.tp.Topic, "partition", s.p.tp.Partition, "err", err)
			}
			return
		}
	}
	s.truncated = true
}
