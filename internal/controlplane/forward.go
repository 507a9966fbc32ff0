package controlplane

// Forwarding of admin operations (KIP-590): a node that is not the active controller
// re-encodes the operation as the Kafka request a client would send and sends it to
// the active controller's Kafka listener through the controller channel, so clients
// never see NOT_CONTROLLER from a plain broker. Each call retries while the
// controller is unknown or moves, until its context ends, and returns per-item errors
// wrapping the *kerr.Error of the answer.

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/runnel-io/runnel/internal/metadata"
)

// Kafka config resource types.
const (
	resourceTypeTopic  = 2
	resourceTypeBroker = 4
	resourceTypeGroup  = 32
)

// timeoutMillis is the time left on ctx for a request's TimeoutMillis (30 s without a deadline).
func timeoutMillis(ctx context.Context) int32 {
	if d, ok := ctx.Deadline(); ok {
		return int32(max(time.Until(d), time.Millisecond) / time.Millisecond)
	}
	return 30_000
}

// answerError is the error of one item of an answer, keeping the message.
func answerError(code int16, msg *string) error {
	err := kerr.ErrorForCode(code)
	if err == nil || msg == nil || *msg == "" {
		return err
	}
	return &forwardedError{kerr: err, msg: *msg}
}

// forwardedError is a Kafka error code with the controller's message.
type forwardedError struct {
	kerr error
	msg  string
}

func (e *forwardedError) Error() string { return e.msg }
func (e *forwardedError) Unwrap() error { return e.kerr }

// topicName names a topic in an error.
func topicName(t string) string { return fmt.Sprintf("topic %q", t) }

// allNotController reports whether every error is NOT_CONTROLLER (then the whole
// request is retried at the new controller).
func allNotController(errs []error) bool {
	for _, err := range errs {
		if !errors.Is(err, kerr.NotController) {
			return false
		}
	}
	return len(errs) > 0
}

func (ch *Channel) createTopics(ctx context.Context, specs []metadata.TopicSpec, validateOnly bool) []error {
	errs := make([]error, len(specs))
	err := ch.do(ctx, "forward CreateTopics", func(ctx context.Context) error {
		req := kmsg.NewPtrCreateTopicsRequest()
		req.TimeoutMillis, req.ValidateOnly = timeoutMillis(ctx), validateOnly
		for _, s := range specs {
			req.Topics = append(req.Topics, createTopic(s))
		}
		resp, err := ch.send(ctx, req)
		if err != nil {
			return err
		}
		answers := map[string]error{}
		for _, t := range resp.(*kmsg.CreateTopicsResponse).Topics {
			answers[t.Topic] = answerError(t.ErrorCode, t.ErrorMessage)
		}
		names := make([]string, len(specs))
		for i, s := range specs {
			names[i] = s.Name
		}
		return matchAnswers(errs, names, answers, topicName)
	})
	fillErrors(errs, err)
	return errs
}

func createTopic(s metadata.TopicSpec) kmsg.CreateTopicsRequestTopic {
	t := kmsg.NewCreateTopicsRequestTopic()
	t.Topic, t.NumPartitions, t.ReplicationFactor = s.Name, s.NumPartitions, s.ReplicationFactor
	for p := int32(0); p < int32(len(s.Assignments)); p++ {
		a := kmsg.NewCreateTopicsRequestTopicReplicaAssignment()
		a.Partition = p
		for _, id := range s.Assignments[p] {
			a.Replicas = append(a.Replicas, int32(id))
		}
		t.ReplicaAssignment = append(t.ReplicaAssignment, a)
	}
	for k, v := range s.Configs {
		c := kmsg.NewCreateTopicsRequestTopicConfig()
		c.Name, c.Value = k, kmsg.StringPtr(v)
		t.Configs = append(t.Configs, c)
	}
	return t
}

func (ch *Channel) deleteTopics(ctx context.Context, names []string) []error {
	errs := make([]error, len(names))
	err := ch.do(ctx, "forward DeleteTopics", func(ctx context.Context) error {
		req := kmsg.NewPtrDeleteTopicsRequest()
		req.TimeoutMillis = timeoutMillis(ctx)
		for _, n := range names {
			req.TopicNames = append(req.TopicNames, n)
			t := kmsg.NewDeleteTopicsRequestTopic()
			t.Topic = kmsg.StringPtr(n)
			req.Topics = append(req.Topics, t)
		}
		resp, err := ch.send(ctx, req)
		if err != nil {
			return err
		}
		answers := map[string]error{}
		for _, t := range resp.(*kmsg.DeleteTopicsResponse).Topics {
			if t.Topic != nil {
				answers[*t.Topic] = answerError(t.ErrorCode, t.ErrorMessage)
			}
		}
		return matchAnswers(errs, names, answers, topicName)
	})
	fillErrors(errs, err)
	return errs
}

func (ch *Channel) createPartitions(ctx context.Context, topic string, total int32, as [][]metadata.NodeID, validateOnly bool) error {
	return ch.do(ctx, "forward CreatePartitions", func(ctx context.Context) error {
		req := kmsg.NewPtrCreatePartitionsRequest()
		req.TimeoutMillis, req.ValidateOnly = timeoutMillis(ctx), validateOnly
		t := kmsg.NewCreatePartitionsRequestTopic()
		t.Topic, t.Count = topic, total
		for _, replicas := range as {
			a := kmsg.NewCreatePartitionsRequestTopicAssignment()
			for _, id := range replicas {
				a.Replicas = append(a.Replicas, int32(id))
			}
			t.Assignment = append(t.Assignment, a)
		}
		req.Topics = append(req.Topics, t)
		resp, err := ch.send(ctx, req)
		if err != nil {
			return err
		}
		for _, rt := range resp.(*kmsg.CreatePartitionsResponse).Topics {
			if rt.Topic == topic {
				return answerError(rt.ErrorCode, rt.ErrorMessage)
			}
		}
		return kerr.UnknownServerError
	})
}

// alterConfigs forwards a topic (or, with topic "", cluster default) config change:
// AlterConfigs when replaceAll, else IncrementalAlterConfigs with SET and DELETE.
func (ch *Channel) alterConfigs(ctx context.Context, topic string, set map[string]*string, replaceAll, validateOnly bool) error {
	rtype := int8(resourceTypeTopic)
	if topic == "" {
		rtype = resourceTypeBroker
	}
	return ch.do(ctx, "forward config change", func(ctx context.Context) error {
		if replaceAll {
			return ch.sendAlterConfigs(ctx, rtype, topic, set, validateOnly)
		}
		return ch.sendIncrementalAlterConfigs(ctx, rtype, topic, set, validateOnly)
	})
}

// alterBrokerConfigs forwards a change of one broker's own dynamic configs (the
// broker resource named name, a broker id) as IncrementalAlterConfigs.
func (ch *Channel) alterBrokerConfigs(ctx context.Context, name string, set map[string]*string, validateOnly bool) error {
	return ch.do(ctx, "forward config change of node "+name, func(ctx context.Context) error {
		return ch.sendIncrementalAlterConfigs(ctx, resourceTypeBroker, name, set, validateOnly)
	})
}

// alterGroupConfigs forwards a change of a group's configs (the GROUP resource named
// group): AlterConfigs when replaceAll, else IncrementalAlterConfigs.
func (ch *Channel) alterGroupConfigs(ctx context.Context, group string, set map[string]*string, replaceAll, validateOnly bool) error {
	return ch.do(ctx, "forward config change of group "+group, func(ctx context.Context) error {
		if replaceAll {
			return ch.sendAlterConfigs(ctx, resourceTypeGroup, group, set, validateOnly)
		}
		return ch.sendIncrementalAlterConfigs(ctx, resourceTypeGroup, group, set, validateOnly)
	})
}

func (ch *Channel) sendAlterConfigs(ctx context.Context, rtype int8, name string, set map[string]*string, validateOnly bool) error {
	req := kmsg.NewPtrAlterConfigsRequest()
	req.ValidateOnly = validateOnly
	r := kmsg.NewAlterConfigsRequestResource()
	r.ResourceType, r.ResourceName = kmsg.ConfigResourceType(rtype), name
	for k, v := range set {
		if v != nil {
			c := kmsg.NewAlterConfigsRequestResourceConfig()
			c.Name, c.Value = k, kmsg.StringPtr(*v)
			r.Configs = append(r.Configs, c)
		}
	}
	req.Resources = append(req.Resources, r)
	resp, err := ch.send(ctx, req)
	if err != nil {
		return err
	}
	for _, rr := range resp.(*kmsg.AlterConfigsResponse).Resources {
		return answerError(rr.ErrorCode, rr.ErrorMessage)
	}
	return kerr.UnknownServerError
}

func (ch *Channel) sendIncrementalAlterConfigs(ctx context.Context, rtype int8, name string, set map[string]*string, validateOnly bool) error {
	req := kmsg.NewPtrIncrementalAlterConfigsRequest()
	req.ValidateOnly = validateOnly
	r := kmsg.NewIncrementalAlterConfigsRequestResource()
	r.ResourceType, r.ResourceName = kmsg.ConfigResourceType(rtype), name
	for k, v := range set {
		c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
		c.Name, c.Op = k, kmsg.IncrementalAlterConfigOpDelete
		if v != nil {
			c.Op, c.Value = kmsg.IncrementalAlterConfigOpSet, kmsg.StringPtr(*v)
		}
		r.Configs = append(r.Configs, c)
	}
	req.Resources = append(req.Resources, r)
	resp, err := ch.send(ctx, req)
	if err != nil {
		return err
	}
	for _, rr := range resp.(*kmsg.IncrementalAlterConfigsResponse).Resources {
		return answerError(rr.ErrorCode, rr.ErrorMessage)
	}
	return kerr.UnknownServerError
}

// fillErrors sets err on every item without an error of its own.
func fillErrors(errs []error, err error) {
	if err == nil {
		return
	}
	for i := range errs {
		if errs[i] == nil || errors.Is(errs[i], kerr.NotController) {
			errs[i] = err
		}
	}
}

// matchAnswers fills errs with the controller's answer for each requested item (keys,
// in request order; no answer: UNKNOWN_SERVER_ERROR naming the item as name says).
// It returns NOT_CONTROLLER when every
// answer is, so that the channel retries against the new controller.
func matchAnswers[K comparable](errs []error, keys []K, answers map[K]error, name func(K) string) error {
	for i, k := range keys {
		err, ok := answers[k]
		if !ok {
			err = fmt.Errorf("%w: the controller did not answer for %s", kerr.UnknownServerError, name(k))
		}
		errs[i] = err
	}
	if allNotController(errs) {
		return kerr.NotController
	}
	return nil
}
