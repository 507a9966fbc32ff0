package kafka

// CreatePartitions: v0-3.
//
// Count is the new total; it must exceed the current count (INVALID_PARTITIONS
// otherwise). Assignments, when given, place the new partitions. ValidateOnly checks
// without changing anything.

import (
	"context"

	"github.com/runnel-io/runnel/internal/auth"
	"github.com/runnel-io/runnel/internal/metadata"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() { regKey(37, 0, 3, handleCreatePartitions) }

func handleCreatePartitions(ctx context.Context, s *Server, r *request) (kmsg.Response, error) {
	req := r.kreq.(*kmsg.CreatePartitionsRequest)
	resp := req.ResponseKind().(*kmsg.CreatePartitionsResponse)
	ctx, cancel := withRequestTimeout(ctx, req.TimeoutMillis)
	defer cancel()
	for _, rt := range req.Topics {
		var assignments [][]metadata.NodeID
		for _, a := range rt.Assignment {
			ids := make([]metadata.NodeID, len(a.Replicas))
			for i, id := range a.Replicas {
				ids[i] = metadata.NodeID(id)
			}
			assignments = append(assignments, ids)
		}
		// With ACLs on, as Kafka: ALTER on the topic (TOPIC_AUTHORIZATION_FAILED).
		err := s.authorize(r, metadata.ACLOpAlter, auth.Topic(rt.Topic))
		if err == nil {
			err = s.mirrorDenial(rt.Topic) // links.go: a mirror topic follows its source's count
		}
		if err == nil {
			err = s.admin.CreatePartitions(ctx, rt.Topic, rt.Count, assignments, req.ValidateOnly)
		}
		st := kmsg.NewCreatePartitionsResponseTopic()
		st.Topic, st.ErrorCode, st.ErrorMessage = rt.Topic, errorCode(err), reasonMessage(err)
		resp.Topics = append(resp.Topics, st)
	}
	return resp, nil
}
