package console

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sort"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/runnel-io/runnel/internal/auth"
	"github.com/runnel-io/runnel/internal/httpd"
	"github.com/runnel-io/runnel/internal/metadata"
)

// The console's edits of a topic: its partition count (CreatePartitions) and its
// configs (IncrementalAlterConfigs), checked against the signed-in user's ACLs as the
// broker checks those requests, then sent through the node's own listener.

// AddPartitionsRequest is the body of POST /api/v1/topics/T/partitions.
type AddPartitionsRequest struct {
	// Count is the topic's partition count after the change: above the current one.
	Count int32 `json:"count"`
}

// PartitionsAction is the answer of POST /api/v1/topics/T/partitions.
type PartitionsAction struct {
	Topic      string `json:"topic"`
	Partitions int32  `json:"partitions"`
}

// addPartitions serves POST /api/v1/topics/T/partitions: ALTER on the topic, as
// CreatePartitions. A count not above the current one is refused (400) here, naming
// both, since a partition count only grows.
func (s *source) addPartitions(ctx context.Context, r *http.Request) (any, error) {
	topic := r.PathValue("name")
	var req AddPartitionsRequest
	if err := decodeBody(r, &req); err != nil {
		return nil, err
	}
	v, err := s.requireOn(ctx, metadata.ACLOpAlter, auth.Topic(topic))
	if err != nil {
		return nil, err
	}
	t := v.im.Topic(topic)
	if t == nil {
		return nil, fmt.Errorf("%w: topic %q does not exist", httpd.ErrNotFound, topic)
	}
	if cur := int32(len(t.Partitions)); req.Count <= cur {
		return nil, fmt.Errorf("%w: topic %s has %d partitions: the count %d must be above it (a partition count only grows)",
			ErrBadRequest, topic, cur, req.Count)
	}
	return s.withAdmin(func(adm *kadm.Client) (any, error) {
		res, err := adm.UpdatePartitions(ctx, int(req.Count), topic)
		var tr kadm.CreatePartitionsResponse
		if err == nil {
			var ok bool
			if tr, ok = res[topic]; !ok {
				err = fmt.Errorf("CreatePartitions answered nothing for topic %s", topic)
			} else {
				err = tr.Err
			}
		}
		if err != nil {
			return nil, kafkaError(err, "raising topic %s to %d partitions%s", topic, req.Count, detail(tr.ErrMessage))
		}
		return &PartitionsAction{Topic: topic, Partitions: req.Count}, nil
	})
}

// AlterTopicConfigsRequest is the body of POST /api/v1/topics/T/configs: the configs
// to set, and those to delete (back to the node's default).
type AlterTopicConfigsRequest struct {
	Set    map[string]string `json:"set"`
	Delete []string          `json:"delete"`
}

// ConfigsAction is the answer of POST /api/v1/topics/T/configs.
type ConfigsAction struct {
	Topic   string   `json:"topic"`
	Set     []string `json:"set"`
	Deleted []string `json:"deleted"`
}

// alterTopicConfigs serves POST /api/v1/topics/T/configs: ALTER_CONFIGS on the topic,
// as IncrementalAlterConfigs with SET and DELETE. An unknown config or a bad value
// comes back as the broker's refusal, which names the config (400).
func (s *source) alterTopicConfigs(ctx context.Context, r *http.Request) (any, error) {
	topic := r.PathValue("name")
	var req AlterTopicConfigsRequest
	if err := decodeBody(r, &req); err != nil {
		return nil, err
	}
	if len(req.Set) == 0 && len(req.Delete) == 0 {
		return nil, fmt.Errorf("%w: nothing to change on topic %s: give set or delete", ErrBadRequest, topic)
	}
	for _, k := range req.Delete {
		if _, ok := req.Set[k]; ok {
			return nil, fmt.Errorf("%w: config %s of topic %s is both set and deleted", ErrBadRequest, k, topic)
		}
	}
	v, err := s.requireOn(ctx, metadata.ACLOpAlterConfigs, auth.Topic(topic))
	if err != nil {
		return nil, err
	}
	if v.im.Topic(topic) == nil {
		return nil, fmt.Errorf("%w: topic %q does not exist", httpd.ErrNotFound, topic)
	}
	out := &ConfigsAction{Topic: topic, Set: []string{}, Deleted: []string{}}
	var alter []kadm.AlterConfig
	for k, val := range req.Set {
		alter = append(alter, kadm.AlterConfig{Op: kadm.SetConfig, Name: k, Value: &val})
		out.Set = append(out.Set, k)
	}
	for _, k := range req.Delete {
		alter = append(alter, kadm.AlterConfig{Op: kadm.DeleteConfig, Name: k})
		out.Deleted = append(out.Deleted, k)
	}
	sort.Strings(out.Set)
	sort.Strings(out.Deleted)
	return s.withAdmin(func(adm *kadm.Client) (any, error) {
		res, err := adm.AlterTopicConfigs(ctx, alter, topic)
		var msg string
		if err == nil {
			if len(res) == 0 {
				err = errors.New("IncrementalAlterConfigs answered nothing")
			}
			for _, tr := range res {
				if tr.Err != nil {
					err, msg = tr.Err, tr.ErrMessage
					break
				}
			}
		}
		if err != nil {
			return nil, kafkaError(err, "changing the configs of topic %s%s", topic, detail(msg))
		}
		return out, nil
	})
}
