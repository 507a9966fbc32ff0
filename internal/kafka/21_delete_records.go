package kafka

// DeleteRecords: v0-2.
//
// Advances a partition's log start offset to the given offset (-1 = the high
// watermark); whole segments below it are deleted. An offset above the high watermark
// is OFFSET_OUT_OF_RANGE. The response's low watermark is the new log start offset.

import (
	"context"

	"github.com/runnel-io/runnel/internal/auth"
	"github.com/runnel-io/runnel/internal/metadata"
	"github.com/runnel-io/runnel/internal/replica"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() { regKey(21, 0, 2, handleDeleteRecords) }

func handleDeleteRecords(_ context.Context, s *Server, r *request) (kmsg.Response, error) {
	req := r.kreq.(*kmsg.DeleteRecordsRequest)
	resp := req.ResponseKind().(*kmsg.DeleteRecordsResponse)
	for _, rt := range req.Topics {
		st := kmsg.NewDeleteRecordsResponseTopic()
		st.Topic = rt.Topic
		// With ACLs on, as Kafka: DELETE on the topic (TOPIC_AUTHORIZATION_FAILED).
		denial := s.authorize(r, metadata.ACLOpDelete, auth.Topic(rt.Topic))
		for _, rp := range rt.Partitions {
			sp := kmsg.NewDeleteRecordsResponseTopicPartition()
			sp.Partition = rp.Partition
			if denial != nil {
				sp.LowWatermark, sp.ErrorCode = -1, errorCode(denial)
				st.Partitions = append(st.Partitions, sp)
				continue
			}
			low, err := s.deleteRecords(metadata.TopicPartition{Topic: rt.Topic, Partition: rp.Partition}, rp.Offset)
			sp.LowWatermark, sp.ErrorCode = low, errorCode(err)
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	return resp, nil
}

func (s *Server) deleteRecords(tp metadata.TopicPartition, offset int64) (int64, error) {
	p, err := s.leaderPartition(tp)
	if err != nil {
		return -1, err
	}
	if !p.IsLeader() {
		return -1, replica.ErrNotLeader
	}
	hw := p.HighWatermark()
	if offset == -1 {
		offset = hw
	}
	if offset < 0 || offset > hw {
		return -1, replica.ErrOffsetOutOfRange
	}
	return p.Log().DeleteRecordsBefore(offset)
}
