package kafka

// DescribeTopicPartitions: v0 (KIP-966).
//
// The paged Metadata of Kafka 3.8+: topics in name order (all the principal may
// DESCRIBE when the request names none; else the named ones, each
// UNKNOWN_TOPIC_OR_PARTITION or TOPIC_AUTHORIZATION_FAILED on its own), partitions in
// index order, at most min(ResponsePartitionLimit, 2000) partitions per answer. The
// request's Cursor says where to start (its topic, from its partition; earlier topics
// are skipped); when the limit stops the answer before the end, NextCursor names the
// first partition not sent. A cursor naming a topic the request does not list is
// INVALID_REQUEST, as Kafka.
//
// ELR (KIP-966 eligible leader replicas): Runnel has no ELR (its controller elects
// from the ISR only), so EligibleLeaderReplicas and LastKnownELR are empty lists, which
// is the truth: no replica outside the ISR is eligible. TopicAuthorizedOperations is
// always answered (the request has no flag).

import (
	"context"
	"sort"

	"github.com/runnel-io/runnel/internal/auth"
	"github.com/runnel-io/runnel/internal/metadata"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() { regKey(75, 0, 0, handleDescribeTopicPartitions) }

// maxDescribePartitions is Kafka's max.request.partition.size.limit default: the most
// partitions one answer carries, whatever the request's limit.
const maxDescribePartitions = 2000

func handleDescribeTopicPartitions(ctx context.Context, s *Server, r *request) (kmsg.Response, error) {
	req := r.kreq.(*kmsg.DescribeTopicPartitionsRequest)
	resp := req.ResponseKind().(*kmsg.DescribeTopicPartitionsResponse)
	im := s.leadership.Image()
	limit := int(req.ResponsePartitionLimit)
	if limit <= 0 || limit > maxDescribePartitions {
		limit = maxDescribePartitions
	}
	all := len(req.Topics) == 0
	var names []string
	if all {
		names = im.TopicNames() // sorted
	} else {
		seen := map[string]bool{}
		for _, t := range req.Topics {
			if !seen[t.Topic] {
				seen[t.Topic] = true
				names = append(names, t.Topic)
			}
		}
		sort.Strings(names)
	}
	startTopic, startPartition := "", int32(0)
	if c := req.Cursor; c != nil {
		if i := sort.SearchStrings(names, c.Topic); !all && (i == len(names) || names[i] != c.Topic) {
			// Kafka's error answer: every requested topic with the error (the
			// response has no top-level error code).
			for _, name := range names {
				dt := kmsg.NewDescribeTopicPartitionsResponseTopic()
				dt.Topic, dt.ErrorCode = &name, kerr.InvalidRequest.Code
				resp.Topics = append(resp.Topics, dt)
			}
			return resp, nil
		}
		startTopic, startPartition = c.Topic, max(c.Partition, 0)
	}
	sent := 0
	for _, name := range names {
		if name < startTopic {
			continue
		}
		from := int32(0)
		if name == startTopic {
			from = startPartition
		}
		t := im.Topics[name]
		dt := kmsg.NewDescribeTopicPartitionsResponseTopic()
		dt.Topic = &name
		switch {
		case t == nil || !s.allowedQuiet(r, metadata.ACLOpDescribe, auth.Topic(name)):
			if all {
				continue // all topics: only those the principal may describe
			}
			dt.ErrorCode = kerr.UnknownTopicOrPartition.Code
			if t != nil || !s.allowed(r, metadata.ACLOpDescribe, auth.Topic(name)) {
				dt.ErrorCode = kerr.TopicAuthorizationFailed.Code
			}
			resp.Topics = append(resp.Topics, dt)
			continue
		}
		dt.TopicID, dt.IsInternal = t.ID, t.Internal
		dt.AuthorizedOperations = s.authorizedOperations(r, auth.Topic(name))
		for i := from; int(i) < len(t.Partitions); i++ {
			if sent == limit {
				next := kmsg.NewDescribeTopicPartitionsResponseNextCursor()
				next.Topic, next.Partition = name, i
				resp.NextCursor = &next
				if len(dt.Partitions) > 0 {
					resp.Topics = append(resp.Topics, dt)
				}
				return resp, nil
			}
			dt.Partitions = append(dt.Partitions, describePartition(im, t.Partitions[i], i))
			sent++
		}
		resp.Topics = append(resp.Topics, dt)
	}
	return resp, nil
}

// describePartition is one partition's answer: as Metadata's, with empty ELR lists
// (Runnel has no eligible leader replicas outside the ISR).
func describePartition(im *metadata.Image, p metadata.Partition, index int32) kmsg.DescribeTopicPartitionsResponseTopicPartition {
	dp := kmsg.NewDescribeTopicPartitionsResponseTopicPartition()
	dp.Partition = index
	dp.LeaderID, dp.LeaderEpoch = int32(p.Leader), p.LeaderEpoch
	dp.Replicas, dp.ISR = nodeIDs(p.Replicas), nodeIDs(p.ISR)
	dp.EligibleLeaderReplicas, dp.LastKnownELR = []int32{}, []int32{}
	dp.OfflineReplicas = []int32{}
	for _, r := range p.Replicas {
		if b, ok := im.Brokers[r]; !ok || b.Fenced {
			dp.OfflineReplicas = append(dp.OfflineReplicas, int32(r))
		}
	}
	if p.Leader == metadata.NoLeader {
		dp.ErrorCode = kerr.LeaderNotAvailable.Code
	}
	return dp
}
