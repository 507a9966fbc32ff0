package controlplane

// Partition reassignments and leader elections: both run on the active controller
// (forwarded there from any other node, KIP-590) and answer once every live node has
// applied the change, so that ListPartitionReassignments and Metadata on any node show
// it right after the answer.

import (
	"context"
	"fmt"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/runnel-io/runnel/internal/kafka"
	"github.com/runnel-io/runnel/internal/metadata"
)

func (a *Admin) AlterPartitionReassignments(ctx context.Context, changes []metadata.Reassignment) []error {
	return a.run(ctx, change{
		local:   func() []error { return a.ctrl.AlterPartitionReassignments(ctx, changes) },
		forward: func() []error { return a.ch.alterPartitionReassignments(ctx, changes) },
		applied: allApplied(len(changes), func(im *metadata.Image, i int) bool {
			c := changes[i]
			p, ok := im.Partition(c.TP)
			return !ok || (c.Target == nil && !p.Reassigning() || c.Target != nil && slices.Equal(p.TargetReplicas(), c.Target))
		}),
		item: func(i int) string {
			return fmt.Sprintf("reassignment of %s-%d", changes[i].TP.Topic, changes[i].TP.Partition)
		},
	})
}

func (a *Admin) ElectLeaders(ctx context.Context, unclean bool, tps []metadata.TopicPartition) (map[metadata.TopicPartition]error, error) {
	out, err := a.ctrl.ElectLeaders(ctx, unclean, tps)
	if mayForward(ctx, err) {
		return a.ch.electLeaders(ctx, unclean, tps)
	}
	if err != nil {
		return nil, kafka.WithCode(err)
	}
	for tp, e := range out {
		out[tp] = kafka.WithCode(e)
	}
	if err := a.awaitEveryNode(ctx); err != nil {
		for tp, e := range out {
			if e == nil {
				out[tp] = fmt.Errorf("leader election of %s-%d: %w", tp.Topic, tp.Partition, err)
			}
		}
	}
	return out, nil
}

// alterPartitionReassignments forwards an AlterPartitionReassignments to the active
// controller.
func (ch *Channel) alterPartitionReassignments(ctx context.Context, changes []metadata.Reassignment) []error {
	errs := make([]error, len(changes))
	err := ch.do(ctx, "forward AlterPartitionReassignments", func(ctx context.Context) error {
		req := kmsg.NewPtrAlterPartitionAssignmentsRequest()
		req.TimeoutMillis = timeoutMillis(ctx)
		var rate int64
		for _, c := range changes {
			rate = max(rate, c.Throttle)
		}
		if rate > 0 {
			kafka.SetReassignmentThrottle(req, rate)
		}
		for _, c := range changes {
			if n := len(req.Topics); n == 0 || req.Topics[n-1].Topic != c.TP.Topic {
				t := kmsg.NewAlterPartitionAssignmentsRequestTopic()
				t.Topic = c.TP.Topic
				req.Topics = append(req.Topics, t)
			}
			rp := kmsg.NewAlterPartitionAssignmentsRequestTopicPartition()
			rp.Partition = c.TP.Partition
			if c.Target != nil {
				rp.Replicas = make([]int32, len(c.Target))
				for i, id := range c.Target {
					rp.Replicas[i] = int32(id)
				}
			}
			t := &req.Topics[len(req.Topics)-1]
			t.Partitions = append(t.Partitions, rp)
		}
		resp, err := ch.send(ctx, req)
		if err != nil {
			return err
		}
		r := resp.(*kmsg.AlterPartitionAssignmentsResponse)
		if r.ErrorCode != 0 {
			return answerError(r.ErrorCode, r.ErrorMessage)
		}
		answers := map[metadata.TopicPartition]error{}
		for _, rt := range r.Topics {
			for _, rp := range rt.Partitions {
				answers[metadata.TopicPartition{Topic: rt.Topic, Partition: rp.Partition}] = answerError(rp.ErrorCode, rp.ErrorMessage)
			}
		}
		tps := make([]metadata.TopicPartition, len(changes))
		for i, c := range changes {
			tps[i] = c.TP
		}
		return matchAnswers(errs, tps, answers, func(tp metadata.TopicPartition) string { return fmt.Sprintf("%s-%d", tp.Topic, tp.Partition) })
	})
	fillErrors(errs, err)
	return errs
}

// electLeaders forwards an ElectLeaders to the active controller.
func (ch *Channel) electLeaders(ctx context.Context, unclean bool, tps []metadata.TopicPartition) (map[metadata.TopicPartition]error, error) {
	var out map[metadata.TopicPartition]error
	err := ch.do(ctx, "forward ElectLeaders", func(ctx context.Context) error {
		req := kmsg.NewPtrElectLeadersRequest()
		req.Version = 2 // ElectionType and the top-level error need v1+; pin what Runnel serves
		req.TimeoutMillis = timeoutMillis(ctx)
		if unclean {
			req.ElectionType = 1
		}
		if tps != nil {
			req.Topics = []kmsg.ElectLeadersRequestTopic{}
			for _, tp := range tps {
				if n := len(req.Topics); n == 0 || req.Topics[n-1].Topic != tp.Topic {
					t := kmsg.NewElectLeadersRequestTopic()
					t.Topic = tp.Topic
					req.Topics = append(req.Topics, t)
				}
				t := &req.Topics[len(req.Topics)-1]
				t.Partitions = append(t.Partitions, tp.Partition)
			}
		}
		resp, err := ch.send(ctx, req)
		if err != nil {
			return err
		}
		r := resp.(*kmsg.ElectLeadersResponse)
		if r.ErrorCode != 0 {
			return kerr.ErrorForCode(r.ErrorCode)
		}
		out = map[metadata.TopicPartition]error{}
		for _, rt := range r.Topics {
			for _, rp := range rt.Partitions {
				out[metadata.TopicPartition{Topic: rt.Topic, Partition: rp.Partition}] = answerError(rp.ErrorCode, rp.ErrorMessage)
			}
		}
		return nil
	})
	return out, err
}

func (a *Admin) UnregisterBroker(ctx context.Context, id metadata.NodeID) error {
	err := a.ctrl.UnregisterBroker(ctx, id)
	if mayForward(ctx, err) {
		err = a.ch.do(ctx, "forward UnregisterBroker", func(ctx context.Context) error {
			req := kmsg.NewPtrUnregisterBrokerRequest()
			req.BrokerID = int32(id)
			resp, err := a.ch.send(ctx, req)
			if err != nil {
				return err
			}
			r := resp.(*kmsg.UnregisterBrokerResponse)
			return answerError(r.ErrorCode, r.ErrorMessage)
		})
		if err == nil {
			a.settleFor(ctx, func(im *metadata.Image) bool { _, ok := im.Brokers[id]; return !ok })
		}
		return err
	}
	if err != nil {
		return kafka.WithCode(err)
	}
	return a.settle(ctx, fmt.Sprintf("unregistering node %d", id))
}
