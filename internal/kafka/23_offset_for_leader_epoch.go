package kafka

// OffsetForLeaderEpoch: v0-4 (KIP-101, KIP-279, KIP-320).
//
// For each partition, the largest epoch <= the requested one that this leader knows
// and the end offset of that epoch (the start of the next epoch, or the log end for the
// current epoch). Consumers use it to detect truncation after a leader change;
// followers to find where their log diverges. CurrentLeaderEpoch (v2+) is checked.
// With ACLs on, as Kafka: CLUSTER_ACTION on the cluster (nodes), else DESCRIBE on each
// topic (TOPIC_AUTHORIZATION_FAILED on its partitions).

import (
	"context"

	"github.com/runnel-io/runnel/internal/auth"
	"github.com/runnel-io/runnel/internal/metadata"
	"github.com/runnel-io/runnel/internal/replica"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() { regKey(23, 0, 4, handleOffsetForLeaderEpoch) }

func handleOffsetForLeaderEpoch(_ context.Context, s *Server, r *request) (kmsg.Response, error) {
	req := r.kreq.(*kmsg.OffsetForLeaderEpochRequest)
	resp := req.ResponseKind().(*kmsg.OffsetForLeaderEpochResponse)
	// Followers hold CLUSTER_ACTION; consumers (KIP-320) need DESCRIBE on the topic.
	nodeAllowed := s.allowedQuiet(r, metadata.ACLOpClusterAction, auth.Cluster)
	for _, rt := range req.Topics {
		st := kmsg.NewOffsetForLeaderEpochResponseTopic()
		st.Topic = rt.Topic
		var denial error
		if !nodeAllowed {
			denial = s.authorize(r, metadata.ACLOpDescribe, auth.Topic(rt.Topic))
		}
		for _, rp := range rt.Partitions {
			sp := kmsg.NewOffsetForLeaderEpochResponseTopicPartition()
			sp.Partition, sp.LeaderEpoch, sp.EndOffset = rp.Partition, -1, -1
			if denial != nil {
				sp.ErrorCode = errorCode(denial)
				st.Partitions = append(st.Partitions, sp)
				continue
			}
			p, err := s.leaderPartition(metadata.TopicPartition{Topic: rt.Topic, Partition: rp.Partition})
			if err == nil {
				_, err = p.Read(replica.ReadOptions{FetchOffset: p.Log().LogStartOffset(), CurrentLeaderEpoch: rp.CurrentLeaderEpoch, ReplicaID: -1})
			}
			if err != nil {
				sp.ErrorCode = errorCode(err)
			} else {
				sp.LeaderEpoch, sp.EndOffset = p.Log().EndOffsetForEpoch(rp.LeaderEpoch)
			}
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	return resp, nil
}
