package link

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/runnel-io/runnel/internal/metadata"
	"github.com/runnel-io/runnel/internal/replica"
)

const (
	// routeInterval is how often the router looks the source's leaders up even when
	// no fetch failed (a source leader change shows as an error before that).
	routeInterval = 10 * time.Second
	// fetchMaxWait is the source fetch's long poll.
	fetchMaxWait = 500 * time.Millisecond
	// partitionMaxBytes and fetchMaxBytes bound one fetch. Each partition's answer is
	// appended and then fsynced before the partition's next answer is, so the
	// partition bound is 4 MiB rather than the consumer's 1 MiB: a quarter of the
	// fsyncs per byte copied. The request bound is the consumer's 50 MiB; a fetcher
	// holds at most two answers (the one it appends, the one sent ahead).
	partitionMaxBytes = 4 << 20
	fetchMaxBytes     = 50 << 20
	// retryBackoff is the wait after a failed fetch or lookup.
	retryBackoff = 500 * time.Millisecond
)

// mpart is one mirror partition this node leads and fetches.
type mpart struct {
	tp            metadata.TopicPartition
	dest          *replica.Partition
	destEpoch     int32
	sourceTopicID [16]byte // as recorded at creation; zero: the source has none
	// paused: the partition is not fetched; only its source end is followed
	// (paused.go), so that its lag shows while paused.
	paused bool

	// removed is set when the session stops fetching the partition.
	removed atomic.Bool
	// writeMu orders p's writes to its destination against its stop (pause.go): a
	// write checks removed under it, stop sets removed and then takes it.
	writeMu sync.Mutex

	// Routing, under session.mu: the source's leader (-1: look it up) and its epoch.
	sourceLeader int32
	sourceEpoch  int32
	topicID      [16]byte // the source topic's id as last seen (for Fetch v13+)

	// Progress, written by the fetcher, read by status and metrics.
	sourceEnd   atomic.Int64 // the source's high watermark at the last answer; -1 unknown
	lastOK      atomic.Int64 // Unix ns of the last successful fetch of it
	behindSince atomic.Int64 // Unix ns since when it is known behind the source; 0 caught up
	failing     atomic.Bool  // the last fetch of it failed
	errMsg      atomic.Pointer[string]
}

func newMpart(tp metadata.TopicPartition, w wanted) *mpart {
	p := &mpart{tp: tp, dest: w.dest, destEpoch: w.destEpoch, sourceTopicID: w.sourceTopicID, paused: w.paused, sourceLeader: -1, sourceEpoch: -1}
	p.sourceEnd.Store(-1)
	p.lastOK.Store(time.Now().UnixNano())
	return p
}

func (p *mpart) setErr(err error) {
	if err == nil {
		p.errMsg.Store(nil)
		p.failing.Store(false)
		return
	}
	msg := err.Error()
	p.errMsg.Store(&msg)
	p.failing.Store(true)
}

// sawSourceEnd records a successful answer of the source at sent: its end hw
// against the destination's end.
func (p *mpart) sawSourceEnd(hw, end int64, sent time.Time) {
	p.setErr(nil)
	p.lastOK.Store(time.Now().UnixNano())
	p.sourceEnd.Store(hw)
	switch {
	case hw <= end:
		p.behindSince.Store(0)
	case p.behindSince.Load() == 0:
		p.behindSince.Store(sent.UnixNano())
	}
}

// partStats is a partition's lag as status and /metrics report it.
type partStats struct {
	link                       string
	sourceEnd, end, lagRecords int64
	lagSeconds                 float64
	err                        string
}

// stats computes the lag at now. lag_seconds is how long the destination is known to
// be behind: since the first answer that showed a source end past the destination's
// end (the oldest record known and not yet copied is at least that old); while the
// source cannot be fetched, at least the time since the last successful fetch.
func (p *mpart) stats(now time.Time) partStats {
	_, _, _, end, _ := p.dest.MirrorEnds()
	st := partStats{sourceEnd: p.sourceEnd.Load(), end: end}
	if st.sourceEnd > end {
		st.lagRecords = st.sourceEnd - end
	}
	var since time.Duration
	if b := p.behindSince.Load(); b != 0 && st.lagRecords > 0 {
		since = now.Sub(time.Unix(0, b))
	}
	if p.failing.Load() {
		since = max(since, now.Sub(time.Unix(0, p.lastOK.Load())))
	}
	st.lagSeconds = since.Seconds()
	if e := p.errMsg.Load(); e != nil {
		st.err = *e
	}
	return st
}

// route is the session's router goroutine: it looks up the source leaders of the
// partitions that need one (and all of them every routeInterval) and hands each
// partition to the fetcher of its source leader.
func (s *session) route() {
	t := time.NewTicker(routeInterval)
	defer t.Stop()
	for {
		if err := s.lookupLeaders(); err != nil && s.ctx.Err() == nil {
			s.m.logger.Warn("link: source metadata", "link", s.link.Name, "source", s.link.Source, "err", err)
			s.markAll(err)
			select {
			case <-time.After(retryBackoff):
			case <-s.ctx.Done():
			}
			s.wakeRouter()
		}
		select {
		case <-s.ctx.Done():
			s.mu.Lock()
			for _, f := range s.fetchers {
				f.cancel()
			}
			s.mu.Unlock()
			return
		case <-s.refresh:
		case <-t.C:
		}
	}
}

func (s *session) markAll(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, p := range s.parts {
		p.setErr(fmt.Errorf("source %s: %w", s.link.Source, err))
	}
}

// lookupLeaders asks the source for the leaders of the session's topics and routes
// every partition to its leader's fetcher. A topic the source does not have (any
// more), or has under another id than the mirror was created from, stops its mirror
// topic in state failed (reported to the controller).
func (s *session) lookupLeaders() error {
	s.mu.Lock()
	topics := map[string][16]byte{}
	for tp, p := range s.parts {
		topics[tp.Topic] = p.sourceTopicID
	}
	s.mu.Unlock()
	if len(topics) == 0 {
		return nil
	}
	req := kmsg.NewPtrMetadataRequest()
	for t := range topics {
		rt := kmsg.NewMetadataRequestTopic()
		rt.Topic = kmsg.StringPtr(t)
		req.Topics = append(req.Topics, rt)
	}
	ctx, cancel := context.WithTimeout(s.ctx, 10*time.Second)
	defer cancel()
	resp, err := req.RequestWith(ctx, s.cl)
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, t := range resp.Topics {
		name := ""
		if t.Topic != nil {
			name = *t.Topic
		}
		want, ok := topics[name]
		if !ok {
			continue
		}
		switch err := kerr.ErrorForCode(t.ErrorCode); {
		case errors.Is(err, kerr.UnknownTopicOrPartition):
			s.fail(name, fmt.Sprintf("source topic %q of link %s no longer exists on %s", name, s.link.Name, s.link.Source))
			continue
		case err != nil:
			s.markTopic(name, fmt.Errorf("source metadata of topic %q: %w", name, err))
			continue
		case want != [16]byte{} && t.TopicID != [16]byte{} && t.TopicID != want:
			s.fail(name, fmt.Sprintf("source topic %q of link %s was deleted and re-created on %s (topic id changed): the mirror stops", name, s.link.Name, s.link.Source))
			continue
		}
		for _, rp := range t.Partitions {
			p := s.parts[metadata.TopicPartition{Topic: name, Partition: rp.Partition}]
			if p == nil {
				continue
			}
			p.topicID = t.TopicID
			if p.paused {
				continue // not fetched: watchPaused follows its source end
			}
			if err := kerr.ErrorForCode(rp.ErrorCode); err != nil || rp.Leader < 0 {
				p.setErr(fmt.Errorf("source partition %s-%d has no leader (%v)", name, rp.Partition, err))
				s.moveLocked(p, -1, -1)
				continue
			}
			s.moveLocked(p, rp.Leader, rp.LeaderEpoch)
		}
	}
	return nil
}

func (s *session) markTopic(topic string, err error) {
	for tp, p := range s.parts {
		if tp.Topic == topic {
			p.setErr(err)
		}
	}
}

// fail reports the mirror topic failed (the controller records it; the image then
// stops its partitions everywhere). Caller holds s.mu.
func (s *session) fail(topic, reason string) {
	s.markTopic(topic, errors.New(reason))
	s.m.logger.Error("link: mirror topic failed", "link", s.link.Name, "topic", topic, "reason", reason)
	if s.m.report == nil {
		return
	}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		ctx, cancel := context.WithTimeout(s.ctx, 30*time.Second)
		defer cancel()
		if r := s.m.report(ctx, Request{Op: OpFail, Link: s.link.Name, Topics: []string{topic}, Reason: reason}); r.Error != "" {
			s.m.logger.Warn("link: reporting a failed mirror topic", "link", s.link.Name, "topic", topic, "err", r.Error)
		}
	}()
}

// moveLocked routes p to the fetcher of source broker leader (-1: none until the
// next lookup). Caller holds s.mu.
func (s *session) moveLocked(p *mpart, leader, epoch int32) {
	if p.sourceLeader == leader && p.sourceEpoch == epoch && (leader < 0 || s.fetchers[leader] != nil && s.fetchers[leader].has(p.tp)) {
		return
	}
	if f := s.fetchers[p.sourceLeader]; f != nil {
		f.remove(p.tp)
	}
	p.sourceLeader, p.sourceEpoch = leader, epoch
	if leader < 0 {
		return
	}
	f := s.fetchers[leader]
	if f == nil {
		f = newFetcher(s, leader)
		s.fetchers[leader] = f
	}
	f.add(p)
}

// unroute takes p off its fetcher until the next lookup (its source leader moved).
func (s *session) unroute(p *mpart) {
	s.mu.Lock()
	if s.parts[p.tp] == p {
		s.moveLocked(p, -1, -1)
	}
	s.mu.Unlock()
	s.wakeRouter()
}

// fetcher fetches, from one source broker, every partition it leads that this node
// mirrors, in one Fetch request at a time (as a follower's fetcher does).
type fetcher struct {
	s      *session
	broker int32
	cancel context.CancelFunc
	wake   chan struct{}

	mu    sync.Mutex // guards parts
	parts map[metadata.TopicPartition]*mpart
}

func newFetcher(s *session, broker int32) *fetcher {
	ctx, cancel := context.WithCancel(s.ctx)
	f := &fetcher{s: s, broker: broker, cancel: cancel, wake: make(chan struct{}, 1), parts: map[metadata.TopicPartition]*mpart{}}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		f.run(ctx)
	}()
	return f
}

func (f *fetcher) add(p *mpart) {
	f.mu.Lock()
	f.parts[p.tp] = p
	f.mu.Unlock()
	select {
	case f.wake <- struct{}{}:
	default:
	}
}

func (f *fetcher) remove(tp metadata.TopicPartition) {
	f.mu.Lock()
	delete(f.parts, tp)
	f.mu.Unlock()
}

func (f *fetcher) has(tp metadata.TopicPartition) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.parts[tp] != nil
}

func (f *fetcher) snapshot() []*mpart {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make([]*mpart, 0, len(f.parts))
	for _, p := range f.parts {
		out = append(out, p)
	}
	return out
}

// run fetches until ctx ends. While an answer with data is appended, the next fetch
// is already on its way, asked from where that answer ends: the source's read and the
// transfer overlap the destination's append and fsync, instead of taking turns.
func (f *fetcher) run(ctx context.Context) {
	var next *fetch // sent ahead, at the offsets the answer being appended ends at
	for ctx.Err() == nil {
		parts := f.snapshot()
		cur := next
		next = nil
		if cur == nil {
			if len(parts) == 0 {
				select {
				case <-ctx.Done():
				case <-f.wake:
				}
				continue
			}
			if cur = f.send(ctx, parts, nil); cur == nil {
				continue
			}
		}
		todo, ahead, err := f.answer(cur, parts)
		if err != nil {
			if ctx.Err() != nil {
				break
			}
			for _, p := range parts {
				p.setErr(fmt.Errorf("fetch from source broker %d of %s: %w", f.broker, f.s.link.Source, err))
			}
			f.s.wakeRouter()
			select {
			case <-ctx.Done():
			case <-time.After(retryBackoff):
			}
			continue
		}
		if len(ahead) > 0 {
			next = f.send(ctx, parts, ahead)
		}
		f.apply(ctx, todo, cur.sent)
	}
	if next != nil {
		<-next.done // ctx is done: it ends at once
	}
}
