package kafka

// ElectLeaders: v0-2 (KIP-183, KIP-460).
//
// ElectionType 0 (preferred, the only one before v1) moves each partition's leadership
// to its first replica when that replica is live and in the ISR: ELECTION_NOT_NEEDED
// when it leads already, PREFERRED_LEADER_NOT_AVAILABLE when it cannot. ElectionType 1
// (unclean) gives a partition without a live leader a live replica even outside the
// ISR, which may lose acknowledged records: ELECTION_NOT_NEEDED when the partition has
// a leader, ELIGIBLE_LEADERS_NOT_AVAILABLE when no replica is live. Null topics: every
// partition (the result then lists only those that changed or failed for another
// reason than ELECTION_NOT_NEEDED, as Kafka). Carried out by the controller (forwarded
// by any node).

import (
	"context"
	"errors"
	"slices"

	"github.com/runnel-io/runnel/internal/auth"
	"github.com/runnel-io/runnel/internal/metadata"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() { regKey(43, 0, 2, handleElectLeaders) }

func handleElectLeaders(ctx context.Context, s *Server, r *request) (kmsg.Response, error) {
	req := r.kreq.(*kmsg.ElectLeadersRequest)
	resp := req.ResponseKind().(*kmsg.ElectLeadersResponse)
	ctx, cancel := withRequestTimeout(ctx, req.TimeoutMillis)
	defer cancel()
	// With ACLs on, as Kafka: ALTER on the cluster; a denial is answered like any
	// error of the whole request below.
	denial := s.authorize(r, metadata.ACLOpAlter, auth.Cluster)
	var tps []metadata.TopicPartition
	if req.Topics != nil {
		tps = []metadata.TopicPartition{}
		for _, rt := range req.Topics {
			for _, p := range rt.Partitions {
				tps = append(tps, metadata.TopicPartition{Topic: rt.Topic, Partition: p})
			}
		}
	}
	results, err := map[metadata.TopicPartition]error(nil), denial
	if denial == nil {
		results, err = s.admin.ElectLeaders(ctx, req.ElectionType == 1, tps)
	}
	if err != nil {
		if req.Version >= 1 {
			resp.ErrorCode = errorCode(err)
			return resp, nil
		}
		// v0 has no top-level error: every partition asked for carries it.
		results = map[metadata.TopicPartition]error{}
		for _, tp := range tps {
			results[tp] = err
		}
	}
	keys := make([]metadata.TopicPartition, 0, len(results))
	for tp, e := range results {
		if req.Topics == nil && errors.Is(e, kerr.ElectionNotNeeded) {
			continue
		}
		keys = append(keys, tp)
	}
	slices.SortFunc(keys, func(a, b metadata.TopicPartition) int {
		if a.Topic != b.Topic {
			if a.Topic < b.Topic {
				return -1
			}
			return 1
		}
		return int(a.Partition - b.Partition)
	})
	for _, tp := range keys {
		if n := len(resp.Topics); n == 0 || resp.Topics[n-1].Topic != tp.Topic {
			t := kmsg.NewElectLeadersResponseTopic()
			t.Topic = tp.Topic
			resp.Topics = append(resp.Topics, t)
		}
		rp := kmsg.NewElectLeadersResponseTopicPartition()
		rp.Partition = tp.Partition
		rp.ErrorCode, rp.ErrorMessage = errorCode(results[tp]), reasonMessage(results[tp])
		t := &resp.Topics[len(resp.Topics)-1]
		t.Partitions = append(t.Partitions, rp)
	}
	return resp, nil
}
