package kafka

// DescribeShareGroupOffsets: v0-1 (KIP-932; v1 Lag, KIP-1226), AlterShareGroupOffsets:
// v0, DeleteShareGroupOffsets: v0.
//
// Served by the group's coordinator (FindCoordinator key type 0), NOT_COORDINATOR
// elsewhere, from the share-partition state in __share_group_state (internal/share
// admin.go). A group id of another kind is GROUP_ID_NOT_FOUND "Group G is not a share
// group." as Kafka.
//
// Describe answers each share partition's start offset and the leader epoch of its
// last write; a partition without state has start offset -1. Lag (v1) is answered
// when this node leads the data partition (the high watermark less the start offset
// and the records done in the in-flight window), -1 otherwise. A group that is neither
// a share group here nor has state is GROUP_ID_NOT_FOUND.
//
// Alter and Delete need an empty group (NON_EMPTY_GROUP while it has members). Alter
// sets start offsets (any offset >= 0; a negative one is INVALID_REQUEST) with nothing
// in flight, and creates the share group when the id is free; Delete drops the state
// of whole topics, which then start again from share.auto.offset.reset. Both start a
// new state epoch (admin.go), so a leader holding the earlier state in memory never
// writes over them.

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/runnel-io/runnel/internal/auth"
	"github.com/runnel-io/runnel/internal/metadata"
	"github.com/runnel-io/runnel/internal/share"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() {
	regKey(90, 0, 1, handleDescribeShareGroupOffsets)
	regKey(91, 0, 0, handleAlterShareGroupOffsets)
	regKey(92, 0, 0, handleDeleteShareGroupOffsets)
}

// shareAdminTimeout bounds one admin request's reads and writes of the state.
const shareAdminTimeout = 15 * time.Second

func handleDescribeShareGroupOffsets(ctx context.Context, s *Server, r *request) (kmsg.Response, error) {
	req := r.kreq.(*kmsg.DescribeShareGroupOffsetsRequest)
	resp := req.ResponseKind().(*kmsg.DescribeShareGroupOffsetsResponse)
	ctx, cancel := context.WithTimeout(ctx, shareAdminTimeout)
	defer cancel()
	for _, g := range req.Groups {
		resp.Groups = append(resp.Groups, s.describeShareOffsets(ctx, r, g))
	}
	return resp, nil
}

func (s *Server) describeShareOffsets(ctx context.Context, r *request, g kmsg.DescribeShareGroupOffsetsRequestGroup) kmsg.DescribeShareGroupOffsetsResponseGroup {
	rg := kmsg.NewDescribeShareGroupOffsetsResponseGroup()
	rg.GroupID = g.GroupID
	fail := func(err error) kmsg.DescribeShareGroupOffsetsResponseGroup {
		rg.ErrorCode, rg.ErrorMessage = errorCode(err), reasonMessage(err)
		return rg
	}
	if err := s.authorize(r, metadata.ACLOpDescribe, auth.Group(g.GroupID)); err != nil {
		return fail(err)
	}
	if s.share == nil {
		return fail(kerr.CoordinatorNotAvailable)
	}
	if err := s.share.groups.CheckEmpty(g.GroupID, time.Now()); err != nil && !errors.Is(err, share.ErrGroupNotEmpty) {
		return fail(err)
	}
	snaps, err := share.Offsets(ctx, s.share.parts.Store(), g.GroupID)
	if err != nil {
		return fail(err)
	}
	if len(snaps) == 0 && !s.share.groups.IsShareGroup(g.GroupID) {
		return fail(fmt.Errorf("%w: Group %s not found.", kerr.GroupIDNotFound, g.GroupID))
	}
	im := s.leadership.Image()
	readCommitted := s.shareReadCommitted(g.GroupID)
	type tp struct {
		name string
		id   [16]byte
		ps   []int32
	}
	var topics []tp
	if g.Topics == nil {
		byID := map[[16]byte][]int32{}
		for k := range snaps {
			byID[k.TopicID] = append(byID[k.TopicID], k.Partition)
		}
		for id, ps := range byID {
			t := im.TopicByID(id)
			if t == nil {
				continue // deleted topic: its state is left for compaction
			}
			sort.Slice(ps, func(i, j int) bool { return ps[i] < ps[j] })
			topics = append(topics, tp{t.Name, id, ps})
		}
		sort.Slice(topics, func(i, j int) bool { return topics[i].name < topics[j].name })
	} else {
		for _, t := range g.Topics {
			var id [16]byte
			if mt := im.Topics[t.Topic]; mt != nil {
				id = mt.ID
			}
			topics = append(topics, tp{t.Topic, id, t.Partitions})
		}
	}
	for _, t := range topics {
		rt := kmsg.NewDescribeShareGroupOffsetsResponseGroupTopic()
		rt.Topic, rt.TopicID = t.name, t.id
		mt := im.Topics[t.name]
		denied := s.authorize(r, metadata.ACLOpDescribe, auth.Topic(t.name))
		if denied != nil && g.Topics == nil {
			continue // listing all: topics the principal may not describe are left out
		}
		for _, p := range t.ps {
			rp := kmsg.NewDescribeShareGroupOffsetsResponseGroupTopicPartition()
			rp.Partition, rp.StartOffset, rp.LeaderEpoch = p, -1, -1
			switch {
			case denied != nil:
				rp.ErrorCode, rp.ErrorMessage = errorCode(denied), reasonMessage(denied)
			case mt == nil || p < 0 || int(p) >= len(mt.Partitions):
				rp.ErrorCode, rp.ErrorMessage = kerr.UnknownTopicOrPartition.Code, unknownSharePartition(mt, t.name, p)
			default:
				if snap, ok := snaps[shareKey(g.GroupID, t.id, p)]; ok {
					rp.StartOffset, rp.LeaderEpoch = snap.Start, snap.LeaderEpoch
					rp.Lag = s.shareLag(metadata.TopicPartition{Topic: t.name, Partition: p}, snap, readCommitted)
				}
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		rg.Topics = append(rg.Topics, rt)
	}
	return rg
}

// shareLag is a share partition's lag (KIP-1226) when this node leads its data
// partition: the records from the start offset to the end the group reads to (the
// high watermark, or the last stable offset for a read_committed group) not yet done
// (acknowledged or archived); -1 when that end is not known here.
func (s *Server) shareLag(tp metadata.TopicPartition, snap share.Snapshot, readCommitted bool) int64 {
	p, err := s.leaderPartition(tp)
	if err != nil || !p.IsLeader() {
		return -1
	}
	end := p.HighWatermark()
	if readCommitted {
		end = p.Log().LastStableOffset(end)
	}
	lag := end - snap.Start
	for _, b := range snap.Batches {
		if b.State == share.Acknowledged || b.State == share.Archived {
			lag -= b.Last - b.First + 1
		}
	}
	return max(lag, 0)
}

func handleAlterShareGroupOffsets(ctx context.Context, s *Server, r *request) (kmsg.Response, error) {
	req := r.kreq.(*kmsg.AlterShareGroupOffsetsRequest)
	resp := req.ResponseKind().(*kmsg.AlterShareGroupOffsetsResponse)
	ctx, cancel := context.WithTimeout(ctx, shareAdminTimeout)
	defer cancel()
	fail := func(err error) (kmsg.Response, error) {
		resp.ErrorCode, resp.ErrorMessage = errorCode(err), reasonMessage(err)
		for _, t := range req.Topics {
			rt := kmsg.NewAlterShareGroupOffsetsResponseTopic()
			rt.Topic = t.Topic
			for _, p := range t.Partitions {
				rp := kmsg.NewAlterShareGroupOffsetsResponseTopicPartition()
				rp.Partition, rp.ErrorCode, rp.ErrorMessage = p.Partition, resp.ErrorCode, resp.ErrorMessage
				rt.Partitions = append(rt.Partitions, rp)
			}
			resp.Topics = append(resp.Topics, rt)
		}
		return resp, nil
	}
	if err := s.authorize(r, metadata.ACLOpRead, auth.Group(req.GroupID)); err != nil {
		return fail(err)
	}
	if s.share == nil {
		return fail(kerr.CoordinatorNotAvailable)
	}
	if err := s.share.groups.CheckEmpty(req.GroupID, time.Now()); err != nil {
		return fail(err)
	}
	im := s.leadership.Image()
	starts := map[share.Key]int64{}
	for _, t := range req.Topics {
		rt := kmsg.NewAlterShareGroupOffsetsResponseTopic()
		rt.Topic = t.Topic
		mt := im.Topics[t.Topic]
		if mt != nil {
			rt.TopicID = mt.ID
		}
		denied := s.authorize(r, metadata.ACLOpRead, auth.Topic(t.Topic))
		for _, p := range t.Partitions {
			rp := kmsg.NewAlterShareGroupOffsetsResponseTopicPartition()
			rp.Partition = p.Partition
			switch {
			case denied != nil:
				rp.ErrorCode, rp.ErrorMessage = errorCode(denied), reasonMessage(denied)
			case mt == nil || p.Partition < 0 || int(p.Partition) >= len(mt.Partitions):
				rp.ErrorCode, rp.ErrorMessage = kerr.UnknownTopicOrPartition.Code, unknownSharePartition(mt, t.Topic, p.Partition)
			case p.StartOffset < 0:
				rp.ErrorCode = kerr.InvalidRequest.Code
				msg := fmt.Sprintf("start offset %d of %s-%d is negative", p.StartOffset, t.Topic, p.Partition)
				rp.ErrorMessage = &msg
			default:
				starts[shareKey(req.GroupID, mt.ID, p.Partition)] = p.StartOffset
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	if len(starts) == 0 {
		return resp, nil
	}
	if err := s.share.groups.Create(req.GroupID); err != nil {
		return fail(err)
	}
	err := share.AlterOffsets(ctx, s.share.parts.Store(), req.GroupID, starts, time.Now(), topicNames(im))
	s.share.parts.Forget(func(k share.Key) bool { _, ok := starts[k]; return ok })
	if err != nil {
		resp.Topics = nil
		return fail(err)
	}
	return resp, nil
}

func handleDeleteShareGroupOffsets(ctx context.Context, s *Server, r *request) (kmsg.Response, error) {
	req := r.kreq.(*kmsg.DeleteShareGroupOffsetsRequest)
	resp := req.ResponseKind().(*kmsg.DeleteShareGroupOffsetsResponse)
	ctx, cancel := context.WithTimeout(ctx, shareAdminTimeout)
	defer cancel()
	fail := func(err error) (kmsg.Response, error) {
		resp.ErrorCode, resp.ErrorMessage = errorCode(err), reasonMessage(err)
		return resp, nil
	}
	if err := s.authorize(r, metadata.ACLOpDelete, auth.Group(req.GroupID)); err != nil {
		return fail(err)
	}
	if s.share == nil {
		return fail(kerr.CoordinatorNotAvailable)
	}
	if err := s.share.groups.CheckEmpty(req.GroupID, time.Now()); err != nil {
		return fail(err)
	}
	snaps, err := share.Offsets(ctx, s.share.parts.Store(), req.GroupID)
	if err != nil {
		return fail(err)
	}
	if len(snaps) == 0 && !s.share.groups.IsShareGroup(req.GroupID) {
		return fail(fmt.Errorf("%w: Group %s not found.", kerr.GroupIDNotFound, req.GroupID))
	}
	im := s.leadership.Image()
	var keys []share.Key
	for _, t := range req.Topics {
		rt := kmsg.NewDeleteShareGroupOffsetsResponseTopic()
		rt.Topic = t.Topic
		mt := im.Topics[t.Topic]
		switch denied := s.authorize(r, metadata.ACLOpRead, auth.Topic(t.Topic)); {
		case denied != nil:
			rt.ErrorCode, rt.ErrorMessage = errorCode(denied), reasonMessage(denied)
		case mt == nil:
			rt.ErrorCode, rt.ErrorMessage = kerr.UnknownTopicOrPartition.Code, unknownSharePartition(nil, t.Topic, -1)
		default:
			rt.TopicID = mt.ID
			for k := range snaps {
				if k.TopicID == mt.ID {
					keys = append(keys, k)
				}
			}
		}
		resp.Topics = append(resp.Topics, rt)
	}
	if len(keys) == 0 {
		return resp, nil
	}
	err = share.DeleteOffsets(ctx, s.share.parts.Store(), req.GroupID, keys, time.Now(), topicNames(im))
	s.share.parts.Forget(func(k share.Key) bool { return k.Group == req.GroupID })
	if err != nil {
		return fail(err)
	}
	return resp, nil
}

// unknownSharePartition is the ErrorMessage of an UNKNOWN_TOPIC_OR_PARTITION answer
// for partition p of topic (mt: its metadata, nil when the topic does not exist).
func unknownSharePartition(mt *metadata.Topic, topic string, p int32) *string {
	msg := fmt.Sprintf("topic %s is unknown", topic)
	if mt != nil {
		msg = fmt.Sprintf("topic %s has no partition %d (it has %d)", topic, p, len(mt.Partitions))
	}
	return &msg
}

// topicNames names topics by id as im knows them, for the share state's errors.
func topicNames(im *metadata.Image) share.TopicName {
	return func(id [16]byte) string {
		if t := im.TopicByID(id); t != nil {
			return t.Name
		}
		return ""
	}
}
