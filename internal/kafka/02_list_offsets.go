package kafka

// ListOffsets: v1-8.
//
// Timestamp -2 is the log start offset (earliest), -1 the high watermark for
// read_uncommitted or the last stable offset for read_committed (latest), -3 (v7+) the
// offset and timestamp of the record with the largest timestamp, and t >= 0 the first
// offset whose timestamp is at or after t (-1/-1 when none is). Only the leader answers;
// CurrentLeaderEpoch (v4+) is checked as in Fetch. Results above the high watermark are
// never returned to consumers. Replica id >= 0 (followers) sees the log end. With ACLs
// on, each topic needs DESCRIBE (TOPIC_AUTHORIZATION_FAILED on its partitions).

import (
	"context"

	"github.com/runnel-io/runnel/internal/auth"
	"github.com/runnel-io/runnel/internal/metadata"
	"github.com/runnel-io/runnel/internal/replica"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() { regKey(2, 1, 8, handleListOffsets) }

func handleListOffsets(_ context.Context, s *Server, r *request) (kmsg.Response, error) {
	req := r.kreq.(*kmsg.ListOffsetsRequest)
	resp := req.ResponseKind().(*kmsg.ListOffsetsResponse)
	for _, rt := range req.Topics {
		st := kmsg.NewListOffsetsResponseTopic()
		st.Topic = rt.Topic
		denial := s.authorize(r, metadata.ACLOpDescribe, auth.Topic(rt.Topic))
		for _, rp := range rt.Partitions {
			sp := kmsg.NewListOffsetsResponseTopicPartition()
			sp.Partition = rp.Partition
			tp := metadata.TopicPartition{Topic: rt.Topic, Partition: rp.Partition}
			if denial != nil {
				sp.Offset, sp.Timestamp, sp.LeaderEpoch, sp.ErrorCode = -1, -1, -1, errorCode(denial)
				st.Partitions = append(st.Partitions, sp)
				continue
			}
			sp.Offset, sp.Timestamp, sp.LeaderEpoch, sp.ErrorCode = s.listOffset(tp, rp, req.ReplicaID, req.IsolationLevel == 1)
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	return resp, nil
}

func (s *Server) listOffset(tp metadata.TopicPartition, rp kmsg.ListOffsetsRequestTopicPartition, replicaID int32, readCommitted bool) (offset, ts int64, epoch int32, code int16) {
	p, err := s.leaderPartition(tp)
	if err != nil {
		return -1, -1, -1, errorCode(err)
	}
	// A zero-byte read checks leadership and the client's leader epoch.
	res, err := p.Read(replica.ReadOptions{FetchOffset: p.Log().LogStartOffset(), CurrentLeaderEpoch: rp.CurrentLeaderEpoch, ReplicaID: -1})
	if err != nil {
		return -1, -1, -1, errorCode(err)
	}
	epoch = p.LeaderEpoch()
	limit := res.HighWatermark
	if replicaID >= 0 {
		limit = res.LogEndOffset
	} else if readCommitted {
		limit = res.LastStableOffset
	}
	switch rp.Timestamp {
	case -2:
		return res.LogStartOffset, -1, epoch, 0
	case -1:
		return limit, -1, epoch, 0
	}
	off, t, ok := p.Log().FetchOffsetByTimestamp(rp.Timestamp)
	if !ok || off >= limit {
		if rp.Timestamp == -3 && !ok {
			return -1, -1, -1, 0
		}
		if !ok {
			return -1, -1, -1, 0
		}
		// Found only above the high watermark: not visible yet.
		return -1, -1, -1, 0
	}
	return off, t, epoch, 0
}
