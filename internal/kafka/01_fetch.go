package kafka

// Fetch: v4-16.
//
// Consumers read below the high watermark; followers (replica id >= 0, v15+ in
// ReplicaState) read up to the log end. Long poll: when fewer than MinBytes are
// available the request waits, without holding a thread's worth of anything but a
// parked goroutine, until the high watermark of one of its partitions moves or
// MaxWaitMillis passes. Response size is bounded by MaxBytes and each partition's
// PartitionMaxBytes, except that the first batch of the first partition with data is
// always returned whole (KIP-74), so a consumer makes progress past a large batch.
// Fetch sessions (v7+, KIP-227) are in fetch_sessions.go. Topic ids replace names from
// v13. Read committed reads stop at the last stable offset and list the aborted
// transactions of the range.
//
// Fetch from the closest replica (KIP-392, fetch_replica.go): with the rack-aware
// replica.selector.class, a leader answers a consumer's v11+ fetch whose RackID matches
// a live in-sync follower's broker.rack (and not its own) with PreferredReadReplica and
// no records; any node serves a consumer's v11+ fetch for a partition it follows, up to
// its own high watermark (whatever its selector: clients only go there when a leader
// sent them). Below v11, and for replica fetches, only the leader answers.

import (
	"context"
	"fmt"
	"time"

	"github.com/runnel-io/runnel/internal/auth"
	"github.com/runnel-io/runnel/internal/metadata"
	"github.com/runnel-io/runnel/internal/replica"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() { regKeyOverlapping(kmsg.Fetch.Int16(), 4, 16, handleFetch) }

// fetchPart is one partition to read in this request.
type fetchPart struct {
	sp   *sessionPartition
	part *replica.Partition
	err  error
	// sent is set when the latest read put this partition in the response, with the
	// offsets it reported (committed to the session once the response is final).
	sent        bool
	sentOffsets partitionOffsets
	// throttled is the bytes of the latest read that count against the leader's
	// replication throttle (KIP-73); recorded once, for the response actually sent.
	throttled int
	// served is the record bytes of the latest read for a consumer, and asFollower
	// whether this node read them as a follower (KIP-392): counted once, for the
	// response actually sent (runnel_consumer_fetch_bytes_total).
	served     int
	asFollower bool
	// logStartOffset is a follower fetch's LogStartOffset for this partition (v5+),
	// -1 when unknown (recordFollowerFetch).
	logStartOffset int64
}

func handleFetch(ctx context.Context, s *Server, r *request) (kmsg.Response, error) {
	f := newFetch(s, r)
	// The fetch's turn in its connection's order covers taking its session and the
	// first read; the long poll overlaps the connection's later requests (pipeline.go).
	if err := r.turn.wait(ctx); err != nil {
		return nil, err
	}
	im := s.leadership.Image()
	var code int16
	f.parts, f.session, f.incremental, code = s.fetchPartitions(f.req, im)
	if code != 0 {
		f.resp.ErrorCode = code
		return f.resp, nil
	}
	if f.session != nil {
		defer f.session.mu.Unlock()
		f.resp.SessionID = f.session.id
	}
	s.resolveParts(r, f.parts, f.follower, followerMayServe(f.req.Version, f.replicaID))
	if f.follower {
		recordFollowerFetch(f.req, f.parts, f.session != nil, metadata.NodeID(f.replicaID))
	}
	f.sel = s.readReplicaSelection(ctx, f.req, im, f.follower)
	poll := f.delayed()
	complete := f.read()
	r.turn.end()
	var woken int64
	if !complete {
		woken = poll.Poll(ctx)
	}
	f.finish(ctx, woken)
	return f.resp, nil
}

// fetch is one Fetch request on its way through the handler's steps.
type fetch struct {
	s    *Server
	r    *request
	req  *kmsg.FetchRequest
	resp *kmsg.FetchResponse
	// replicaID is the fetching replica's node id, -1 for a consumer; follower says
	// it is one.
	replicaID int32
	follower  bool
	stages    stageRecorder[FetchStage]
	parts     []*fetchPart
	// session is the fetch session taken (locked until the handler returns), nil
	// without one; incremental when the request continued it.
	session     *fetchSession
	incremental bool
	// sel is the consumer's preferred read replica selection, nil when none applies.
	sel *readReplicaSelection
	// total is the record bytes of the latest read, and collect its duration: the
	// read whose result is sent.
	total   int
	collect time.Duration
}

func newFetch(s *Server, r *request) *fetch {
	start := time.Now()
	req := r.kreq.(*kmsg.FetchRequest)
	f := &fetch{s: s, r: r, req: req, resp: req.ResponseKind().(*kmsg.FetchResponse), replicaID: fetchReplicaID(req)}
	f.follower = f.replicaID >= 0
	f.stages = s.metrics.fetchRecorder(f.follower)
	f.stages.started(r, start)
	return f
}

// read reads every partition once into the response, replacing what an earlier read
// put there, and reports whether the fetch is complete: MinBytes of records, or, as
// Kafka, a partition error (OFFSET_OUT_OF_RANGE, NOT_LEADER_OR_FOLLOWER, ...) or a
// preferred read replica, which the client has to act on and waiting cannot change.
func (f *fetch) read() bool {
	f.resp.Topics = f.resp.Topics[:0]
	f.r.releaseRecords()
	t := time.Now()
	f.total = f.s.readParts(f.r, f.req, f.resp, f.parts, f.replicaID, f.incremental, f.sel)
	f.collect = time.Since(t)
	return f.total >= int(f.req.MinBytes) || answersNow(f.resp)
}

// delayed is the fetch's long poll (replica.DelayedFetch), up to MaxWaitMillis from
// now. A follower's fetch also ends when this node takes on new leaderships, and does
// not park long while it names fewer partitions than its node follows here: either
// way the follower's next fetch names the partitions it has just started following
// (see replica.leaderView).
func (f *fetch) delayed() *replica.DelayedFetch {
	d := &replica.DelayedFetch{
		LogEnd:   f.follower,
		Deadline: time.Now().Add(time.Duration(f.req.MaxWaitMillis) * time.Millisecond),
		Read:     f.read,
		Parked: func(waited, parked time.Duration) {
			f.stages.observe(FetchStageWait, waited)
			f.r.quota.parked += parked // a long poll is not request handling time
		},
		Woken: func(delay time.Duration) { f.stages.observe(FetchStageWake, delay) },
	}
	for _, fp := range f.parts {
		if fp.part != nil {
			d.Partitions = append(d.Partitions, fp.part)
		}
	}
	if f.follower {
		d.Abort = f.s.replicas.LeadershipChanged()
		if len(d.Partitions) < f.s.replicas.FollowerExpects(metadata.NodeID(f.replicaID)) {
			d.Deadline = minTime(d.Deadline, time.Now().Add(followerCatchUpWait))
		}
	}
	return d
}

// finish records the fetch's last stages, adds KIP-951 leader hints, applies client
// quotas and, unless a quota emptied the response, counts its bytes and commits it
// to the fetch session. woken is the wake-up (Unix ns) that preceded the latest read,
// 0 for none.
func (f *fetch) finish(ctx context.Context, woken int64) {
	s, r, resp := f.s, f.r, f.resp
	f.stages.observe(FetchStageCollect, f.collect)
	if woken > 0 && f.total > 0 {
		f.stages.observe(FetchStageServe, time.Since(time.Unix(0, woken)))
	}
	if !f.follower {
		s.addFetchLeaderHints(ctx, resp)
	}
	if s.throttleFetch(r, resp) {
		return // emptied by a client quota: the session keeps what it last reported
	}
	if f.follower {
		s.recordThrottled(f.parts)
	} else {
		s.metrics.recordConsumerBytes(f.parts)
		s.metrics.recordTopicBytesOut(f.parts)
	}
	if f.session != nil {
		commitSession(f.parts)
	}
}

// fetchPartitions turns the request (and its session) into the list of partitions to
// read. It returns a top-level error code for session errors. The returned session, if
// any, is locked.
func (s *Server) fetchPartitions(req *kmsg.FetchRequest, im *metadata.Image) ([]*fetchPart, *fetchSession, bool, int16) {
	reqParts := requestedPartitions(req, im)
	switch {
	case req.Version < 7 || (req.SessionID == 0 && req.SessionEpoch == -1):
		return partsFrom(reqParts), nil, false, 0
	case req.SessionEpoch == -1:
		s.sessions.remove(req.SessionID)
		return partsFrom(reqParts), nil, false, 0
	case req.SessionEpoch == 0:
		if req.SessionID != 0 {
			s.sessions.remove(req.SessionID)
		}
		fs := s.sessions.create()
		fs.mu.Lock()
		for _, sp := range reqParts {
			fs.upsert(sp)
		}
		return partsFromSession(fs), fs, false, 0
	}
	fs, code := s.continueSession(req, im, reqParts)
	if fs == nil {
		return nil, nil, false, code
	}
	return partsFromSession(fs), fs, true, 0
}

// requestedPartitions lists the partitions the request names, with the fetch state it
// gives each. A topic id this node does not know (v13+) is named "".
func requestedPartitions(req *kmsg.FetchRequest, im *metadata.Image) []sessionPartition {
	var reqParts []sessionPartition
	for _, rt := range req.Topics {
		name := rt.Topic
		if req.Version >= 13 {
			if t := im.TopicByID(rt.TopicID); t != nil {
				name = t.Name
			} else {
				name = ""
			}
		}
		for _, rp := range rt.Partitions {
			reqParts = append(reqParts, sessionPartition{
				tp:          metadata.TopicPartition{Topic: name, Partition: rp.Partition},
				topicID:     rt.TopicID,
				fetchOffset: rp.FetchOffset, maxBytes: rp.PartitionMaxBytes, currentLeaderEpoch: rp.CurrentLeaderEpoch,
			})
		}
	}
	return reqParts
}

// continueSession applies an incremental fetch to its session: the epoch moves on, the
// forgotten topics' partitions leave it and the named ones are updated. It returns the
// session, locked, or nil and the error code (unknown session, wrong epoch).
func (s *Server) continueSession(req *kmsg.FetchRequest, im *metadata.Image, reqParts []sessionPartition) (*fetchSession, int16) {
	fs := s.sessions.get(req.SessionID)
	if fs == nil {
		return nil, kerr.FetchSessionIDNotFound.Code
	}
	fs.mu.Lock()
	if req.SessionEpoch != fs.epoch {
		fs.mu.Unlock()
		return nil, kerr.InvalidFetchSessionEpoch.Code
	}
	fs.epoch++
	if fs.epoch <= 0 {
		fs.epoch = 1
	}
	for _, ft := range req.ForgottenTopics {
		name := ft.Topic
		if req.Version >= 13 {
			if t := im.TopicByID(ft.TopicID); t != nil {
				name = t.Name
			}
		}
		for _, p := range ft.Partitions {
			fs.forget(metadata.TopicPartition{Topic: name, Partition: p})
		}
	}
	for _, sp := range reqParts {
		fs.upsert(sp)
	}
	return fs, 0
}

func partsFrom(sps []sessionPartition) []*fetchPart {
	out := make([]*fetchPart, len(sps))
	for i := range sps {
		sp := sps[i]
		sp.last = noOffsets
		out[i] = &fetchPart{sp: &sp}
	}
	return out
}

func partsFromSession(fs *fetchSession) []*fetchPart {
	out := make([]*fetchPart, len(fs.order))
	for i, sp := range fs.order {
		out[i] = &fetchPart{sp: sp}
	}
	return out
}

// resolveParts finds each partition's replica, once the fetch is authorized: a
// follower's (replica id >= 0) needs CLUSTER_ACTION on the cluster, else every
// partition is TOPIC_AUTHORIZATION_FAILED, as Kafka; a consumer's needs READ on
// each topic. With fromFollower a consumer's partition may be one this node follows
// (readablePartition).
func (s *Server) resolveParts(r *request, parts []*fetchPart, follower, fromFollower bool) {
	var denial error
	if follower && !s.allowed(r, metadata.ACLOpClusterAction, auth.Cluster) {
		denial = fmt.Errorf("%w: %w", kerr.TopicAuthorizationFailed, denied(r, metadata.ACLOpClusterAction, auth.Cluster))
	}
	topicDenied := s.topicCheck(r, metadata.ACLOpRead)
	for _, fp := range parts {
		switch {
		case fp.sp.tp.Topic == "":
			fp.err = errUnknownTopicID
		case denial != nil:
			fp.err = denial
		case !follower && topicDenied != nil:
			if fp.err = topicDenied(fp.sp.tp.Topic); fp.err == nil {
				fp.part, fp.err = s.readablePartition(fp.sp.tp, fromFollower)
			}
		case !follower:
			fp.part, fp.err = s.readablePartition(fp.sp.tp, fromFollower)
		default:
			fp.part, fp.err = s.leaderPartition(fp.sp.tp)
		}
	}
}

// recordFollowerFetch tells each partition led here where the follower's fetch starts,
// and its log start, once per request (the long poll below may read several times). A
// partition that refuses (not leader, fenced epoch, out of range) records nothing; its
// read reports the error. The log starts are taken from a sessionless request, whose
// partitions are in request order (Runnel's followers send no session); in a session
// they are left unknown (-1), which the preferred read replica rule accepts, as Kafka
// does a replica's before its first fetch.
func recordFollowerFetch(req *kmsg.FetchRequest, parts []*fetchPart, sessioned bool, follower metadata.NodeID) {
	for _, fp := range parts {
		fp.logStartOffset = -1
	}
	if !sessioned {
		i := 0
		for _, rt := range req.Topics {
			for _, rp := range rt.Partitions {
				if i < len(parts) {
					parts[i].logStartOffset = rp.LogStartOffset
				}
				i++
			}
		}
	}
	now := time.Now()
	for _, fp := range parts {
		if fp.part != nil {
			_ = fp.part.RecordFollowerFetch(follower, fp.sp.fetchOffset, fp.logStartOffset, fp.sp.currentLeaderEpoch, now)
		}
	}
}

// answersNow reports whether any partition of resp carries an error code or a
// preferred read replica. A partition that could not be resolved (fetchPart.err) is
// always in the response with its code, so this covers those too.
func answersNow(resp *kmsg.FetchResponse) bool {
	for _, rt := range resp.Topics {
		for _, rp := range rt.Partitions {
			if rp.ErrorCode != 0 || rp.PreferredReadReplica >= 0 {
				return true
			}
		}
	}
	return false
}

// followerCatchUpWait bounds the long poll of a follower fetch that names fewer
// partitions than the follower follows here: its fetcher has not yet learnt of some,
// and its next fetch will name them.
const followerCatchUpWait = 20 * time.Millisecond

func minTime(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

// followerMayServe is Kafka's !fetchOnlyLeader: a consumer's fetch from v11 on
// (KIP-392) may be served by a follower; a replica's fetch, or an older one, only by
// the leader.
func followerMayServe(version int16, replicaID int32) bool {
	return replicaID < 0 && version >= 11
}
