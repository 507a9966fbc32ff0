package kafka

// DeleteTopics: v1-6.
//
// Topics are named (v0-5 TopicNames, v6 Topics by name or id). Each is deleted on its
// own; an unknown name is UNKNOWN_TOPIC_OR_PARTITION, an unknown id UNKNOWN_TOPIC_ID.
// Logs are removed asynchronously once the metadata no longer names the topic.

import (
	"context"

	"github.com/runnel-io/runnel/internal/auth"
	"github.com/runnel-io/runnel/internal/metadata"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() { regKey(20, 1, 6, handleDeleteTopics) }

func handleDeleteTopics(ctx context.Context, s *Server, r *request) (kmsg.Response, error) {
	req := r.kreq.(*kmsg.DeleteTopicsRequest)
	resp := req.ResponseKind().(*kmsg.DeleteTopicsResponse)
	im := s.leadership.Image()
	type item struct {
		name string
		id   [16]byte
		err  error
	}
	var items []item
	if req.Version >= 6 {
		for _, t := range req.Topics {
			it := item{}
			if t.Topic != nil {
				it.name = *t.Topic
			} else if tt := im.TopicByID(t.TopicID); tt != nil {
				it.name, it.id = tt.Name, t.TopicID
			} else {
				it.id, it.err = t.TopicID, kerr.UnknownTopicID
			}
			items = append(items, it)
		}
	} else {
		for _, n := range req.TopicNames {
			items = append(items, item{name: n})
		}
	}
	var names []string
	var idx []int
	for i, it := range items {
		if it.err == nil {
			// With ACLs on, as Kafka: DELETE on the topic (TOPIC_AUTHORIZATION_FAILED).
			items[i].err = s.authorize(r, metadata.ACLOpDelete, auth.Topic(it.name))
		}
		if items[i].err == nil {
			names = append(names, it.name)
			idx = append(idx, i)
		}
	}
	ctx, cancel := withRequestTimeout(ctx, req.TimeoutMillis)
	defer cancel()
	errs := s.admin.DeleteTopics(ctx, names)
	for j, i := range idx {
		items[i].err = errs[j]
	}
	for _, it := range items {
		st := kmsg.NewDeleteTopicsResponseTopic()
		if it.name != "" {
			n := it.name
			st.Topic = &n
		}
		if t := im.Topics[it.name]; t != nil {
			st.TopicID = t.ID
		} else {
			st.TopicID = it.id
		}
		st.ErrorCode, st.ErrorMessage = errorCode(it.err), errorMessage(it.err)
		resp.Topics = append(resp.Topics, st)
	}
	return resp, nil
}
