package console

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sort"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/runnel-io/runnel/internal/auth"
	"github.com/runnel-io/runnel/internal/httpd"
	"github.com/runnel-io/runnel/internal/metadata"
	"github.com/runnel-io/runnel/internal/offsetspec"
)

// The console's write actions on topics and groups. Each is the Kafka operation a
// client would send (CreateTopics, DeleteTopics, OffsetCommit, DeleteGroups), checked
// first against the signed-in user's ACLs for that operation, then sent through the
// node's own listener.

// kafkaError wraps err, an answer of the cluster, with the error that picks its HTTP
// status: the request's fault (400), what is not there (404), a conflicting state
// (409); anything else is the cluster's failure (502).
func kafkaError(err error, format string, args ...any) error {
	var ke *kerr.Error
	msg := fmt.Sprintf(format, args...)
	if !errors.As(err, &ke) {
		return fmt.Errorf("%s: %w", msg, err)
	}
	var kind error
	switch ke {
	case kerr.TopicAlreadyExists, kerr.NonEmptyGroup, kerr.RebalanceInProgress:
		kind = errConflict
	case kerr.UnknownTopicOrPartition, kerr.GroupIDNotFound:
		kind = httpd.ErrNotFound
	case kerr.InvalidTopicException, kerr.InvalidPartitions, kerr.InvalidReplicationFactor, kerr.InvalidConfig,
		kerr.PolicyViolation, kerr.InvalidRequest, kerr.InvalidReplicaAssignment, kerr.InvalidRecord:
		kind = ErrBadRequest
	case kerr.TopicAuthorizationFailed, kerr.GroupAuthorizationFailed, kerr.ClusterAuthorizationFailed:
		kind = httpd.ErrForbidden
	default:
		return fmt.Errorf("%s: %w", msg, err)
	}
	return fmt.Errorf("%w: %s: %w", kind, msg, err)
}

// CreateTopicRequest is the body of POST /api/v1/topics.
type CreateTopicRequest struct {
	Name string `json:"name"`
	// Partitions and ReplicationFactor: 0 or absent takes the cluster's defaults
	// (num.partitions, default.replication.factor).
	Partitions        int32             `json:"partitions"`
	ReplicationFactor int16             `json:"replication_factor"`
	Configs           map[string]string `json:"configs"`
}

// TopicAction is the answer of POST /api/v1/topics and DELETE /api/v1/topics/T.
type TopicAction struct {
	Topic             string `json:"topic"`
	Created           bool   `json:"created,omitempty"`
	Deleted           bool   `json:"deleted,omitempty"`
	Partitions        int32  `json:"partitions,omitempty"`
	ReplicationFactor int16  `json:"replication_factor,omitempty"`
}

// createTopic serves POST /api/v1/topics: CREATE on the cluster or on the topic, as
// CreateTopics.
func (s *source) createTopic(ctx context.Context, r *http.Request) (any, error) {
	var req CreateTopicRequest
	if err := decodeBody(r, &req); err != nil {
		return nil, err
	}
	if req.Name == "" {
		return nil, fmt.Errorf("%w: the topic needs a name", ErrBadRequest)
	}
	v, err := s.snapshot()
	if err != nil {
		return nil, err
	}
	if !s.acl.allowed(ctx, v.im, metadata.ACLOpCreate, auth.Cluster) {
		if err := s.require(ctx, v.im, metadata.ACLOpCreate, auth.Topic(req.Name)); err != nil {
			return nil, err
		}
	}
	partitions, rf := req.Partitions, req.ReplicationFactor
	if partitions <= 0 {
		partitions = -1
	}
	if rf <= 0 {
		rf = -1
	}
	configs := map[string]*string{}
	for k, val := range req.Configs {
		configs[k] = &val
	}
	return s.withAdmin(func(adm *kadm.Client) (any, error) {
		res, err := adm.CreateTopic(ctx, partitions, rf, configs, req.Name)
		if err == nil {
			err = res.Err
		}
		if err != nil {
			return nil, kafkaError(err, "creating topic %s%s", req.Name, detail(res.ErrMessage))
		}
		return &TopicAction{Topic: req.Name, Created: true, Partitions: res.NumPartitions, ReplicationFactor: res.ReplicationFactor}, nil
	})
}

// withClient runs ask with a client of the node's own listener (opts added to the
// console's), closed after it. A client that cannot be made is the console's failure
// to reach its own node: ErrUnavailable (503).
func (s *source) withClient(ask func(*kgo.Client) (any, error), opts ...kgo.Opt) (any, error) {
	cl, err := s.kafkaClient(opts...)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", httpd.ErrUnavailable, err)
	}
	defer cl.Close()
	return ask(cl)
}

// withAdmin is withClient for a request kadm sends.
func (s *source) withAdmin(ask func(*kadm.Client) (any, error)) (any, error) {
	return s.withClient(func(cl *kgo.Client) (any, error) { return ask(kadm.NewClient(cl)) })
}

// resultError is a result's ErrorCode as an error (nil for none), followed by the
// broker's ErrorMessage when it gave one.
func resultError(code int16, msg *string) error {
	err := kerr.ErrorForCode(code)
	if err != nil && msg != nil {
		err = fmt.Errorf("%w: %s", err, *msg)
	}
	return err
}

// detail is a broker's error message as a suffix, "" when it gave none.
func detail(msg string) string {
	if msg == "" {
		return ""
	}
	return " (" + msg + ")"
}

// deleteTopic serves DELETE /api/v1/topics/T: DELETE on the topic, as DeleteTopics.
func (s *source) deleteTopic(ctx context.Context, r *http.Request) (any, error) {
	topic := r.PathValue("name")
	if _, err := s.requireOn(ctx, metadata.ACLOpDelete, auth.Topic(topic)); err != nil {
		return nil, err
	}
	return s.withAdmin(func(adm *kadm.Client) (any, error) {
		res, err := adm.DeleteTopic(ctx, topic)
		if err == nil {
			err = res.Err
		}
		if err != nil {
			return nil, kafkaError(err, "deleting topic %s%s", topic, detail(res.ErrMessage))
		}
		return &TopicAction{Topic: topic, Deleted: true}, nil
	})
}

// GroupAction is the answer of DELETE /api/v1/groups/G.
type GroupAction struct {
	Group   string `json:"group"`
	Deleted bool   `json:"deleted"`
}

// deleteGroup serves DELETE /api/v1/groups/G: DELETE on the group, as DeleteGroups
// (refused, 409, while the group has members).
func (s *source) deleteGroup(ctx context.Context, r *http.Request) (any, error) {
	group := r.PathValue("id")
	if _, err := s.requireOn(ctx, metadata.ACLOpDelete, auth.Group(group)); err != nil {
		return nil, err
	}
	return s.withAdmin(func(adm *kadm.Client) (any, error) {
		res, err := adm.DeleteGroup(ctx, group)
		if err == nil {
			err = res.Err
		}
		if err != nil {
			return nil, kafkaError(err, "deleting group %s%s", group, detail(res.ErrMessage))
		}
		return &GroupAction{Group: group, Deleted: true}, nil
	})
}

// ResetOffsetsRequest is the body of POST /api/v1/groups/G/reset-offsets.
type ResetOffsetsRequest struct {
	Topic string `json:"topic"`
	// To is the CLI's position (runnel group reset-offsets --to): earliest, latest,
	// current, an offset, @TIMESTAMP (ms or RFC 3339) or an RFC 3339 time.
	To string `json:"to"`
	// Partitions limits the reset to these partitions; empty is every partition.
	Partitions []int32 `json:"partitions"`
	DryRun     bool    `json:"dry_run"`
}

// ResetOffsets is the answer of POST /api/v1/groups/G/reset-offsets: per partition
// the committed offset before (null: none) and the one set (or, with dry_run, that
// would be).
type ResetOffsets struct {
	Group      string           `json:"group"`
	Topic      string           `json:"topic"`
	To         string           `json:"to"`
	DryRun     bool             `json:"dry_run"`
	Partitions []ResetPartition `json:"partitions"`
}

type ResetPartition struct {
	Partition int32  `json:"partition"`
	Old       *int64 `json:"old"`
	New       int64  `json:"new"`
}

// parsePosition reads a reset's "to" as the CLI reads reset-offsets --to
// (offsetspec.ParseReset); a bad one is a bad request (400).
func parsePosition(s string) (offsetspec.Spec, error) {
	to, err := offsetspec.ParseReset(s)
	if err != nil {
		return to, fmt.Errorf("%w: to=%q: want earliest, latest, current, an offset, @TIMESTAMP (ms or RFC 3339) or an RFC 3339 time", ErrBadRequest, s)
	}
	return to, nil
}

// resetOffsets serves POST /api/v1/groups/G/reset-offsets: as OffsetCommit, READ on
// the group and the topic (a dry run, as OffsetFetch, DESCRIBE on both). Refused (409)
// while the group has members, as kafka-consumer-groups --reset-offsets.
func (s *source) resetOffsets(ctx context.Context, r *http.Request) (any, error) {
	group := r.PathValue("id")
	var req ResetOffsetsRequest
	if err := decodeBody(r, &req); err != nil {
		return nil, err
	}
	if req.Topic == "" {
		return nil, fmt.Errorf("%w: the reset needs a topic", ErrBadRequest)
	}
	to, err := parsePosition(req.To)
	if err != nil {
		return nil, err
	}
	v, err := s.snapshot()
	if err != nil {
		return nil, err
	}
	op := metadata.ACLOpRead
	if req.DryRun {
		op = metadata.ACLOpDescribe
	}
	if err := s.require(ctx, v.im, op, auth.Group(group)); err != nil {
		return nil, err
	}
	if err := s.require(ctx, v.im, op, auth.Topic(req.Topic)); err != nil {
		return nil, err
	}
	t := v.im.Topic(req.Topic)
	if t == nil {
		return nil, fmt.Errorf("%w: topic %q does not exist", httpd.ErrNotFound, req.Topic)
	}
	parts := req.Partitions
	if len(parts) == 0 {
		for i := range t.Partitions {
			parts = append(parts, int32(i))
		}
	}
	for _, p := range parts {
		if p < 0 || int(p) >= len(t.Partitions) {
			return nil, fmt.Errorf("%w: topic %q has no partition %d", httpd.ErrNotFound, req.Topic, p)
		}
	}
	return s.withAdmin(func(adm *kadm.Client) (any, error) { return resetPartitions(ctx, adm, group, req, to, parts) })
}

// resetPartitions is resetOffsets once checked: group's offsets on req.Topic's parts
// moved to to (or, with req.DryRun, only computed).
func resetPartitions(ctx context.Context, adm *kadm.Client, group string, req ResetOffsetsRequest, to offsetspec.Spec, parts []int32) (*ResetOffsets, error) {
	if !req.DryRun {
		described, err := adm.DescribeGroups(ctx, group)
		if err != nil {
			return nil, kafkaError(err, "describing group %s", group)
		}
		if d, ok := described[group]; ok && len(d.Members) > 0 {
			members := fmt.Sprintf("%d active members", len(d.Members))
			if len(d.Members) == 1 {
				members = "1 active member"
			}
			return nil, fmt.Errorf("%w: group %s has %s (state %s): stop its consumers first, "+
				"as kafka-consumer-groups --reset-offsets requires", errConflict, group, members, d.State)
		}
	}
	out := &ResetOffsets{Group: group, Topic: req.Topic, To: req.To, DryRun: req.DryRun, Partitions: []ResetPartition{}}
	committed, err := adm.FetchOffsetsForTopics(ctx, group, req.Topic)
	if err != nil {
		return nil, kafkaError(err, "the committed offsets of group %s", group)
	}
	starts, err := adm.ListStartOffsets(ctx, req.Topic)
	if err != nil {
		return nil, kafkaError(err, "the log start offsets of topic %s", req.Topic)
	}
	ends, err := adm.ListEndOffsets(ctx, req.Topic)
	if err != nil {
		return nil, kafkaError(err, "the end offsets of topic %s", req.Topic)
	}
	var atTime kadm.ListedOffsets
	if to.Kind == offsetspec.Timestamp {
		if atTime, err = adm.ListOffsetsAfterMilli(ctx, to.N, req.Topic); err != nil {
			return nil, kafkaError(err, "the offsets of topic %s at time %d", req.Topic, to.N)
		}
	}
	commit := kadm.Offsets{}
	for _, p := range parts {
		st, sok := starts.Lookup(req.Topic, p)
		en, eok := ends.Lookup(req.Topic, p)
		if !sok || !eok || st.Err != nil || en.Err != nil {
			return nil, fmt.Errorf("topic %s partition %d: its leader did not answer ListOffsets: %v", req.Topic, p, errors.Join(st.Err, en.Err))
		}
		rp := ResetPartition{Partition: p}
		at := offsetspec.Partition{Start: st.Offset, End: en.Offset, Committed: -1, AtTime: -1}
		if c, ok := committed.Lookup(req.Topic, p); ok && c.Err == nil && c.At >= 0 {
			old := c.At
			rp.Old, at.Committed = &old, old
		}
		if to.Kind == offsetspec.Timestamp {
			if o, ok := atTime.Lookup(req.Topic, p); ok && o.Err == nil && o.Offset >= 0 {
				at.AtTime = o.Offset
			}
		}
		if to.Kind == offsetspec.Current && rp.Old == nil {
			continue // nothing committed: nothing to keep
		}
		// Clamped to the log, as kafka-consumer-groups does; no error, with a position.
		rp.New, _ = offsetspec.Target(&to, 0, at)
		out.Partitions = append(out.Partitions, rp)
		commit.Add(kadm.Offset{Topic: req.Topic, Partition: p, At: rp.New, LeaderEpoch: -1})
	}
	sort.Slice(out.Partitions, func(i, j int) bool { return out.Partitions[i].Partition < out.Partitions[j].Partition })
	if req.DryRun || len(out.Partitions) == 0 {
		return out, nil
	}
	res, err := adm.CommitOffsets(ctx, group, commit)
	if err == nil {
		err = res.Error()
	}
	if err != nil {
		return nil, kafkaError(err, "committing the offsets of group %s on topic %s", group, req.Topic)
	}
	return out, nil
}
