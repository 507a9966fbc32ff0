package kafka

// ShareFetch: v0-2 (KIP-932; v1 BatchSize and ShareAcquireMode of KIP-1206, v2
// IsRenewAck of KIP-1222).
//
// Runs on each partition's leader. A share session (ShareSessionEpoch 0 opens it with
// the request's partitions, then 1, 2, ...; -1 closes it and releases what the member
// holds of its partitions) names the partitions fetched. Piggybacked acknowledgements
// are applied first, each partition's result in AcknowledgeErrorCode; an ACCEPT,
// RELEASE or REJECT is written to __share_group_state (acks=-1) before the answer.
// Then records are acquired for the member on every session partition this node leads,
// up to MaxRecords (500 when unset) in total: whole batches read through the replica
// from the first acquirable offset, AcquiredRecords naming the offsets locked to the
// member (for the group's share.record.lock.duration.ms, answered in
// AcquisitionLockTimeoutMillis) with their delivery counts. With nothing acquired the
// fetch waits up to MaxWaitMillis for new records, released records or an expiring
// lock. ShareAcquireMode 1 (record limit) is honoured as MaxRecords is a hard limit
// here anyway; BatchSize is ignored (ranges are not split). A group whose
// share.isolation.level is read_committed acquires only below the last stable offset
// and never the records of aborted transactions (archived, as Kafka does).

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"time"

	"github.com/runnel-io/runnel/internal/auth"
	"github.com/runnel-io/runnel/internal/config"
	"github.com/runnel-io/runnel/internal/metadata"
	"github.com/runnel-io/runnel/internal/recordbatch"
	"github.com/runnel-io/runnel/internal/replica"
	"github.com/runnel-io/runnel/internal/share"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() { regKey(78, 0, 2, handleShareFetch) }

// shareFetchMaxWait bounds MaxWaitMillis, as the request timeout would.
const shareFetchMaxWait = 30 * time.Second

func handleShareFetch(ctx context.Context, s *Server, r *request) (kmsg.Response, error) {
	req := r.kreq.(*kmsg.ShareFetchRequest)
	resp := req.ResponseKind().(*kmsg.ShareFetchResponse)
	if req.GroupID == nil || req.MemberID == nil || *req.MemberID == "" || len(*req.MemberID) > 36 {
		resp.ErrorCode = kerr.InvalidRequest.Code
		return resp, nil
	}
	group, member := *req.GroupID, *req.MemberID
	if err := s.authorize(r, metadata.ACLOpRead, auth.Group(group)); err != nil {
		resp.ErrorCode, resp.ErrorMessage = errorCode(err), errorMessage(err)
		return resp, nil
	}
	if s.share == nil {
		resp.ErrorCode = kerr.CoordinatorNotAvailable.Code
		return resp, nil
	}
	resp.AcquisitionLockTimeoutMillis = int32(s.shareLimits(group).LockDuration / time.Millisecond)
	renew := req.Version >= 2 && req.IsRenewAck
	if renew && (req.MaxBytes != 0 || req.MinBytes != 0 || req.MaxRecords != 0 || req.MaxWaitMillis != 0) {
		resp.ErrorCode = kerr.InvalidRequest.Code
		return resp, nil
	}
	mgr := s.share.parts
	sk := share.SessionKey{Group: group, Member: member}
	var sess *share.Session
	var err error
	var reqParts []share.PartitionID
	for _, t := range req.Topics {
		for _, p := range t.Partitions {
			reqParts = append(reqParts, share.PartitionID{TopicID: t.TopicID, Partition: p.Partition})
		}
	}
	switch req.ShareSessionEpoch {
	case 0:
		sess = mgr.OpenSession(sk, reqParts)
	case -1:
		var ok bool
		if sess, ok = mgr.CloseSession(sk); !ok {
			resp.ErrorCode = kerr.ShareSessionNotFound.Code
			return resp, nil
		}
	default:
		var forget []share.PartitionID
		for _, f := range req.ForgottenTopicsData {
			for _, p := range f.Partitions {
				forget = append(forget, share.PartitionID{TopicID: f.TopicID, Partition: p})
			}
		}
		if sess, err = mgr.UpdateSession(sk, req.ShareSessionEpoch, reqParts, forget); err != nil {
			resp.ErrorCode, resp.ErrorMessage = errorCode(err), shareSessionMessage(group, member, err)
			return resp, nil
		}
	}
	sf := &shareFetch{shareMember: shareMember{s: s, r: r, group: group, member: member, im: s.leadership.Image()}, req: req, resp: resp, readCommitted: s.shareReadCommitted(group)}
	sf.acknowledge(ctx, renew)
	if req.ShareSessionEpoch == -1 {
		releaseShareSession(mgr, group, member, sess)
		return resp, nil
	}
	if renew {
		return resp, nil
	}
	if req.ShareSessionEpoch == 0 {
		for _, p := range sess.Partitions() {
			sf.part(p) // a new session answers every partition
		}
	}
	sf.fetch(ctx, sess.Partitions())
	return resp, nil
}

// releaseShareSession releases what member holds of its closed session's partitions.
func releaseShareSession(mgr *share.Manager, group, member string, sess *share.Session) {
	var keys []share.Key
	for _, p := range sess.Partitions() {
		keys = append(keys, shareKey(group, p.TopicID, p.Partition))
	}
	mgr.ReleaseMember(keys, member)
}

// shareMember is what a ShareFetch and a ShareAcknowledge have in common: the member
// answered and the partitions' leadership as this node sees it.
type shareMember struct {
	s             *Server
	r             *request
	group, member string
	im            *metadata.Image
	// hinted: a partition's answer names another node as its leader, so the
	// response names every live broker (NodeEndpoints).
	hinted bool
}

// shareLeaderHint is a partition's CurrentLeader in an answer refused for leadership.
type shareLeaderHint struct {
	id, epoch int32
	ok        bool
}

// leader returns the local leader of p and its share key, or the error to answer with
// and, when another node leads p, that leader.
func (sm *shareMember) leader(p share.PartitionID) (*replica.Partition, share.Key, shareLeaderHint, error) {
	tp, kerrv := shareTopicPartition(sm.im, p.TopicID, p.Partition)
	if kerrv != nil {
		return nil, share.Key{}, shareLeaderHint{}, kerrv
	}
	if !sm.s.allowed(sm.r, metadata.ACLOpRead, auth.Topic(tp.Topic)) {
		return nil, share.Key{}, shareLeaderHint{}, kerr.TopicAuthorizationFailed
	}
	rp, err := sm.s.leaderPartition(tp)
	if err == nil && !rp.IsLeader() {
		err = replica.ErrNotLeader
	}
	if err != nil {
		var hint shareLeaderHint
		if mp := sm.im.Topics[tp.Topic].Partitions[tp.Partition]; mp.Leader != metadata.NoLeader {
			hint = shareLeaderHint{id: int32(mp.Leader), epoch: mp.LeaderEpoch, ok: true}
			sm.hinted = true
		}
		return nil, share.Key{}, hint, err
	}
	return rp, shareKey(sm.group, p.TopicID, p.Partition), shareLeaderHint{}, nil
}

// acknowledge applies the member's acknowledgement batches of p (ackBatch's) on p's
// leader here and returns p's error, with the leader's hint when another node leads
// p.
func (sm *shareMember) acknowledge(ctx context.Context, p share.PartitionID, batches []share.AckBatch) (shareLeaderHint, error) {
	lp, key, hint, err := sm.leader(p)
	if err != nil {
		return hint, err
	}
	return hint, sm.s.share.parts.Acknowledge(ctx, key, dataLog{lp}, sm.member, batches)
}

// partError is the error code and message of p's answer failing with err (0 and nil
// for none). The message names the group and the topic partition, with err's reason
// (the state machine's says which offset and why); a failure of the share-partition
// state store is logged, as the client sees only COORDINATOR_NOT_AVAILABLE and
// retries.
func (sm *shareMember) partError(p share.PartitionID, err error) (int16, *string) {
	if err == nil {
		return 0, nil
	}
	topic, where := shareTopicName(sm.im, p)
	reason := err.Error()
	if r := reasonMessage(err); r != nil {
		reason = *r
	}
	msg := fmt.Sprintf("share group %s on %s: %s", sm.group, where, reason)
	if errors.Is(err, share.ErrStore) {
		sm.s.logger.Warn("share-partition state store failed", "group", sm.group, "topic", topic, "partition", p.Partition, "member", sm.member, "err", err)
	}
	return errorCode(err), &msg
}

// shareTopicName names p's topic in messages and logs: the topic's name, or its id in
// Kafka's form when im has no such topic; where is the topic partition ("T-P").
func shareTopicName(im *metadata.Image, p share.PartitionID) (topic, where string) {
	if t := im.TopicByID(p.TopicID); t != nil {
		return t.Name, fmt.Sprintf("%s-%d", t.Name, p.Partition)
	}
	topic = base64.RawURLEncoding.EncodeToString(p.TopicID[:])
	return topic, fmt.Sprintf("unknown topic id %s partition %d", topic, p.Partition)
}

// shareSessionMessage is the ErrorMessage of a share session refused with err.
func shareSessionMessage(group, member string, err error) *string {
	msg := fmt.Sprintf("share session of member %s of share group %s: %v", member, group, err)
	return &msg
}

// shareFetch is one ShareFetch being answered.
type shareFetch struct {
	shareMember
	req  *kmsg.ShareFetchRequest
	resp *kmsg.ShareFetchResponse
	// readCommitted: the group's share.isolation.level is read_committed.
	readCommitted bool
}

// part returns p's answer, adding it.
func (sf *shareFetch) part(p share.PartitionID) *kmsg.ShareFetchResponseTopicPartition {
	ti := -1
	for i := range sf.resp.Topics {
		if sf.resp.Topics[i].TopicID == p.TopicID {
			ti = i
		}
	}
	if ti < 0 {
		t := kmsg.NewShareFetchResponseTopic()
		t.TopicID = p.TopicID
		sf.resp.Topics = append(sf.resp.Topics, t)
		ti = len(sf.resp.Topics) - 1
	}
	t := &sf.resp.Topics[ti]
	for i := range t.Partitions {
		if t.Partitions[i].Partition == p.Partition {
			return &t.Partitions[i]
		}
	}
	kp := kmsg.NewShareFetchResponseTopicPartition()
	kp.Partition = p.Partition
	t.Partitions = append(t.Partitions, kp)
	return &t.Partitions[len(t.Partitions)-1]
}

// setLeader puts a leadership hint in p's answer.
func (sf *shareFetch) setLeader(p share.PartitionID, hint shareLeaderHint) {
	if hint.ok {
		kp := sf.part(p)
		kp.CurrentLeader.LeaderID, kp.CurrentLeader.LeaderEpoch = hint.id, hint.epoch
	}
}

// acknowledge applies the piggybacked acknowledgements.
func (sf *shareFetch) acknowledge(ctx context.Context, renew bool) {
	for _, t := range sf.req.Topics {
		for _, rp := range t.Partitions {
			if len(rp.AcknowledgementBatches) == 0 {
				continue
			}
			p := share.PartitionID{TopicID: t.TopicID, Partition: rp.Partition}
			batches := make([]share.AckBatch, 0, len(rp.AcknowledgementBatches))
			for _, b := range rp.AcknowledgementBatches {
				batches = append(batches, ackBatch(b.FirstOffset, b.LastOffset, b.AcknowledgeTypes, renew))
			}
			hint, err := sf.shareMember.acknowledge(ctx, p, batches)
			kp := sf.part(p)
			kp.AcknowledgeErrorCode, kp.AcknowledgeErrorMessage = sf.partError(p, err)
			sf.setLeader(p, hint)
		}
	}
}

// ackBatch converts a wire batch; RENEW (4) is an error unless the request renews.
func ackBatch(first, last int64, types []int8, renew bool) share.AckBatch {
	b := share.AckBatch{First: first, Last: last}
	for _, t := range types {
		if t == int8(share.AckRenew) && !renew {
			t = -1 // refused as INVALID_REQUEST by the state machine
		}
		b.Types = append(b.Types, share.AckType(t))
	}
	return b
}

// fetch acquires records on parts and, while there are none, long-polls up to
// MaxWaitMillis.
func (sf *shareFetch) fetch(ctx context.Context, parts []share.PartitionID) {
	deadline := time.Now().Add(min(time.Duration(sf.req.MaxWaitMillis)*time.Millisecond, shareFetchMaxWait))
	var leds []shareLed
	for _, id := range parts {
		lp, key, hint, err := sf.leader(id)
		if err != nil {
			kp := sf.part(id)
			kp.ErrorCode, kp.ErrorMessage = sf.partError(id, err)
			sf.setLeader(id, hint)
			continue
		}
		leds = append(leds, shareLed{id, lp, key})
	}
	if sf.acquire(ctx, leds) == 0 && len(leds) > 0 {
		sf.poll(ctx, leds, deadline)
	}
	if sf.hinted {
		sf.nodeEndpoints(ctx, func(ne kmsg.ShareFetchResponseNodeEndpoint) {
			sf.resp.NodeEndpoints = append(sf.resp.NodeEndpoints, ne)
		})
	}
}

// shareLed is a session partition this node leads.
type shareLed struct {
	id  share.PartitionID
	p   *replica.Partition
	key share.Key
}

// poll is the share fetch's long poll: replica.DelayedFetch, as a fetch's, until
// records are acquired, the deadline passes or ctx ends. Records become acquirable in
// three ways: the high watermark moving (what DelayedFetch watches), another member
// releasing them (the Manager's Changed) and a lock expiring (its NextDeadline): the
// last two are the poll's Also, taken each round before its read, so a release after
// that read ends the park and none between reads goes unseen.
func (sf *shareFetch) poll(ctx context.Context, leds []shareLed, deadline time.Time) {
	mgr := sf.s.share.parts
	watch := make([]*replica.Partition, len(leds))
	keys := make([]share.Key, len(leds))
	for i, l := range leds {
		watch[i], keys[i] = l.p, l.key
	}
	d := &replica.DelayedFetch{
		Partitions: watch,
		Deadline:   deadline,
		Also: func() (<-chan struct{}, time.Time) {
			at := mgr.NextDeadline(keys)
			if !at.IsZero() {
				// A lock already past its deadline expires at the next read.
				at = laterTime(at, time.Now().Add(time.Millisecond))
			}
			return mgr.Changed(), at
		},
		Read: func() bool { return sf.acquire(ctx, leds) > 0 },
		// As a fetch's, the long poll is not request handling time for the
		// request_percentage quota.
		Parked: func(_, parked time.Duration) { sf.r.quota.parked += parked },
	}
	d.Poll(ctx)
}

func laterTime(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// acquire acquires records for the member on leds, up to MaxRecords (500 when unset)
// and MaxBytes in total, into the partitions' answers, and returns how many.
func (sf *shareFetch) acquire(ctx context.Context, leds []shareLed) int {
	maxRecords := int(sf.req.MaxRecords)
	if maxRecords <= 0 {
		maxRecords = 500
	}
	maxBytes := sf.req.MaxBytes
	if maxBytes <= 0 {
		maxBytes = 50 << 20
	}
	got := 0
	for _, l := range leds {
		if got >= maxRecords || maxBytes <= 0 {
			break
		}
		var log share.DataLog = dataLog{l.p}
		if sf.readCommitted {
			log = stableLog{l.p}
		}
		records, ranges, err := sf.s.share.parts.Acquire(ctx, l.key, log, sf.member, maxRecords-got, func(off int64) (share.Batches, error) {
			return readShareBatches(l.p, off, maxBytes, sf.readCommitted)
		})
		kp := sf.part(l.id)
		if err != nil {
			kp.ErrorCode, kp.ErrorMessage = sf.partError(l.id, err)
			continue
		}
		if len(ranges) == 0 {
			continue
		}
		kp.Records = records
		maxBytes -= int32(len(records))
		for _, ar := range ranges {
			a := kmsg.NewShareFetchResponseTopicPartitionAcquiredRecord()
			a.FirstOffset, a.LastOffset, a.DeliveryCount = ar.First, ar.Last, ar.DeliveryCount
			kp.AcquiredRecords = append(kp.AcquiredRecords, a)
			got += int(ar.Last - ar.First + 1)
		}
	}
	return got
}

// readShareBatches reads whole batches of p from off (at least one). readCommitted
// (share.isolation.level): up to the last stable offset, the aborted transactions'
// batches Unread (Kafka's SharePartition archives them: a ShareFetch answer has no
// aborted transactions for the client to filter with).
func readShareBatches(p *replica.Partition, off int64, maxBytes int32, readCommitted bool) (share.Batches, error) {
	res, err := p.Read(replica.ReadOptions{FetchOffset: off, MaxBytes: maxBytes, MinOneBatch: true, CurrentLeaderEpoch: -1, ReplicaID: -1, ReadCommitted: readCommitted})
	if err != nil {
		return share.Batches{Next: off}, err
	}
	buf, err := res.Info.AppendTo(nil)
	if err != nil {
		return share.Batches{Next: off}, err
	}
	out := share.Batches{Records: buf, Next: off}
	for rest := buf; len(rest) > 0; {
		var b recordbatch.Batch
		b, rest, err = recordbatch.Next(rest, 0)
		if err != nil {
			break
		}
		out.Next = max(out.Next, b.NextOffset())
		if b.IsTransactional() && !b.IsControl() && aborted(res.AbortedTransactions, b.ProducerID(), b.BaseOffset()) {
			if n := len(out.Unread); n > 0 && out.Unread[n-1].Last == b.BaseOffset()-1 {
				out.Unread[n-1].Last = b.LastOffset()
			} else {
				out.Unread = append(out.Unread, share.OffsetRange{First: b.BaseOffset(), Last: b.LastOffset()})
			}
		}
	}
	return out, nil
}

// aborted reports whether producer's batch at base is in one of txns: between the
// aborted transaction's first offset and its ABORT marker.
func aborted(txns []replica.AbortedTxn, producer, base int64) bool {
	for _, t := range txns {
		if t.ProducerID == producer && t.FirstOffset <= base && base < t.LastOffset {
			return true
		}
	}
	return false
}

// stableLog is a led partition as a read_committed share group sees it: it ends at
// the last stable offset.
type stableLog struct{ p *replica.Partition }

func (d stableLog) LeaderEpoch() int32 { return d.p.LeaderEpoch() }
func (d stableLog) Bounds() (int64, int64) {
	return d.p.Log().LogStartOffset(), d.p.Log().LastStableOffset(d.p.HighWatermark())
}

// shareReadCommitted is whether group reads read_committed (share.isolation.level).
func (s *Server) shareReadCommitted(group string) bool {
	return config.GroupOwnConfigs(s.leadership.Image().Configs, group)["share.isolation.level"] == "read_committed"
}

// nodeEndpoints gives add every live broker, for the CurrentLeader hints (as
// ShareFetch's type; ShareAcknowledge's has the same fields).
func (sm *shareMember) nodeEndpoints(ctx context.Context, add func(kmsg.ShareFetchResponseNodeEndpoint)) {
	for _, id := range sm.im.BrokerIDs() {
		b := sm.im.Brokers[id]
		if b.Fenced {
			continue
		}
		host, port, ok := sm.s.listenerEndpoint(ctx, b)
		if !ok {
			continue
		}
		ne := kmsg.NewShareFetchResponseNodeEndpoint()
		ne.NodeID, ne.Host, ne.Port = int32(b.ID), host, port
		if b.Rack != "" {
			rack := b.Rack
			ne.Rack = &rack
		}
		add(ne)
	}
}
