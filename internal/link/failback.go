package link

// Failback and switchover, the brokers' side (docs/cluster-links.md "Failback and
// switchover"). The orchestration runs in the client that holds both clusters'
// bootstraps (failback_run.go: the CLI): it reads the data of both clusters over
// Kafka, so no broker holds a long request open. The brokers answer four phases
// of OpFailback (Request.Failback.Phase):
//
//   - info, on the new primary (any broker, from its image): the promoted mirror
//     topics of the link with what their promote recorded per partition (the end of
//     what was mirrored, the source's leader epoch of the last mirrored batch).
//   - fence, on the old primary's active controller: the topics become mirror topics
//     of the link (pointing at the new primary) in state failing_back, read-only and
//     not fetched, their quarantine topics named (controller.FenceFailback).
//   - cut, on the old primary's active controller, once the tails are in quarantine:
//     the divergence points are recorded and the leader epochs bumped; each leader
//     cuts its log there and the mirror starts (controller.CutFailback).
//   - promoted, sent by a promoted mirror partition's leader to its active
//     controller: what its promote cut (controller.RecordPromoted).
//
// Each phase is idempotent, so a failback that stopped anywhere is run again.

import (
	"context"
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/runnel-io/runnel/internal/controller"
	"github.com/runnel-io/runnel/internal/metadata"
)

// Failback phases (FailbackArgs.Phase).
const (
	PhaseInfo     = "info"
	PhaseFence    = "fence"
	PhaseCut      = "cut"
	PhasePromoted = "promoted"
)

// FailbackArgs carries a failback phase (Request.Failback) and its answer
// (Response.Failback).
type FailbackArgs struct {
	Phase  string          `json:"phase"`
	Topics []FailbackTopic `json:"topics,omitempty"`
}

// FailbackTopic is one topic of a failback phase.
type FailbackTopic struct {
	Topic string `json:"topic"`
	// TopicID: info's answer, the new primary's id of the topic; fence's request,
	// the same (the mirror's source topic id).
	TopicID [16]byte `json:"topic_id"`
	// State, Quarantine, StartedAtMs: fence's and cut's answers.
	State       string              `json:"state,omitempty"`
	Quarantine  string              `json:"quarantine,omitempty"`
	StartedAtMs int64               `json:"started_at_ms,omitempty"`
	Partitions  []FailbackPartition `json:"partitions,omitempty"`
}

// FailbackPartition is one partition of a failback phase.
type FailbackPartition struct {
	Partition int32 `json:"partition"`
	// PromoteEpoch, MirroredEnd, SourceEpoch: info's answer and promoted's request
	// (MirroredEnd -1: not recorded yet; SourceEpoch -1: unknown).
	PromoteEpoch int32 `json:"promote_epoch"`
	MirroredEnd  int64 `json:"mirrored_end"`
	SourceEpoch  int32 `json:"source_epoch"`
	// CutTo, Quarantined: cut's request, and the answers of fence and cut once cut
	// (CutTo -1: not cut yet).
	CutTo       int64 `json:"cut_to"`
	Quarantined int64 `json:"quarantined"`
}

// failbackOp runs OpFailback's phases. OpSwitchover has no broker side: the client
// runs it as a promote on the destination and a failback on the source.
func (a *Admin) failbackOp(ctx context.Context, req Request) Response {
	if req.Op == OpSwitchover {
		return errorResponse(fmt.Errorf("%w: link switchover runs in the client (runnel link switchover): it promotes here and fails back on the source", kerr.InvalidRequest))
	}
	if req.Failback == nil || req.Link == "" {
		return errorResponse(fmt.Errorf("%w: link failback needs a link and a phase (runnel link failback)", kerr.InvalidRequest))
	}
	if req.Failback.Phase == PhaseInfo {
		return a.failbackInfo(req)
	}
	if !a.cfg.Controller.IsLeader() {
		if req.Forwarded {
			return errorResponse(fmt.Errorf("%w: node %d is not the active controller", kerr.NotController, a.cfg.Node))
		}
		return a.forward(ctx, req)
	}
	var ms []*metadata.MirrorTopic
	var err error
	switch req.Failback.Phase {
	case PhaseFence:
		if req.Source == "" {
			return errorResponse(fmt.Errorf("%w: link %s: failback needs the new primary's bootstrap (--source)", kerr.InvalidRequest, req.Link))
		}
		link := metadata.Link{Name: req.Link, Source: req.Source, SourceProps: req.SourceProps}
		// A reference this node cannot resolve is no reason to refuse: the link's
		// partitions may be led by nodes that can (each one shows its own start error).
		var unresolved *UnresolvedError
		if _, err := sourceOptions(&link); err != nil && !errors.As(err, &unresolved) {
			return errorResponse(fmt.Errorf("%w: %w", kerr.InvalidRequest, err))
		}
		var topics []controller.FailbackTopic
		for _, t := range req.Failback.Topics {
			topics = append(topics, controller.FailbackTopic{Name: t.Topic, SourceTopicID: t.TopicID})
		}
		ms, err = a.cfg.Controller.FenceFailback(ctx, link, topics)
	case PhaseCut:
		var cuts []controller.FailbackCutSpec
		for _, t := range req.Failback.Topics {
			cs := controller.FailbackCutSpec{Topic: t.Topic, CutTo: make([]int64, len(t.Partitions)), Quarantined: make([]int64, len(t.Partitions))}
			for i, p := range t.Partitions {
				if p.Partition != int32(i) {
					return errorResponse(fmt.Errorf("%w: cut of topic %q: partition %d out of order", kerr.InvalidRequest, t.Topic, p.Partition))
				}
				cs.CutTo[i], cs.Quarantined[i] = p.CutTo, p.Quarantined
			}
			cuts = append(cuts, cs)
		}
		ms, err = a.cfg.Controller.CutFailback(ctx, req.Link, cuts)
	case PhasePromoted:
		for _, t := range req.Failback.Topics {
			var parts []controller.PromotedPartition
			for _, p := range t.Partitions {
				parts = append(parts, controller.PromotedPartition{Partition: p.Partition, PromoteEpoch: p.PromoteEpoch,
					MirroredEnd: p.MirroredEnd, SourceEpoch: p.SourceEpoch})
			}
			if err = a.cfg.Controller.RecordPromoted(ctx, t.Topic, parts); err != nil {
				break
			}
		}
	default:
		return errorResponse(fmt.Errorf("%w: unknown failback phase %q", kerr.InvalidRequest, req.Failback.Phase))
	}
	if err != nil {
		return errorResponse(err)
	}
	answer := &FailbackArgs{Phase: req.Failback.Phase}
	for _, m := range ms {
		answer.Topics = append(answer.Topics, failbackState(m))
	}
	return Response{Failback: answer}
}

// failbackState is a fenced or cut topic as fence and cut answer it.
func failbackState(m *metadata.MirrorTopic) FailbackTopic {
	ft := FailbackTopic{Topic: m.Topic, State: string(m.State)}
	if f := m.Failback; f != nil {
		ft.Quarantine, ft.StartedAtMs = f.Quarantine, f.StartedAtMs
		for i := range f.CutTo {
			q := int64(0)
			if i < len(f.Quarantined) {
				q = f.Quarantined[i]
			}
			ft.Partitions = append(ft.Partitions, FailbackPartition{Partition: int32(i), CutTo: f.CutTo[i], Quarantined: q,
				PromoteEpoch: -1, MirroredEnd: -1, SourceEpoch: -1})
		}
	}
	return ft
}

// failbackInfo answers info from this node's image: the promoted mirror topics of
// the link that req names (all of them with All) and what their promotes recorded.
// A named topic that is not a promoted mirror topic of the link is an error naming
// its state.
func (a *Admin) failbackInfo(req Request) Response {
	im := a.cfg.Image()
	all := im.MirrorsOf(req.Link)
	if len(all) == 0 {
		return errorResponse(fmt.Errorf("%w: no mirror topics of link %q on this cluster (the new primary): promote there first", kerr.InvalidRequest, req.Link))
	}
	var ms []*metadata.MirrorTopic
	if req.All {
		for _, m := range all {
			if m.State == metadata.MirrorPromoted {
				ms = append(ms, m)
			}
		}
	} else {
		for _, name := range req.Topics {
			var found *metadata.MirrorTopic
			for _, m := range all {
				if m.Topic == name {
					found = m
				}
			}
			switch {
			case found == nil:
				return errorResponse(fmt.Errorf("%w: topic %q is not a mirror topic of link %q on the new primary", kerr.InvalidRequest, name, req.Link))
			case found.State != metadata.MirrorPromoted:
				return errorResponse(fmt.Errorf("%w: topic %q of link %q is %s on the new primary, not promoted: promote it there first", kerr.InvalidRequest, name, req.Link, found.State))
			}
			ms = append(ms, found)
		}
	}
	answer := &FailbackArgs{Phase: PhaseInfo}
	for _, m := range ms {
		t := im.Topics[m.Topic]
		if t == nil {
			continue
		}
		ft := FailbackTopic{Topic: m.Topic, TopicID: t.ID, State: string(m.State)}
		for i := range t.Partitions {
			end, se, _ := m.PromoteRecord(int32(i))
			pe := int32(-1)
			if i < len(m.PromoteEpochs) {
				pe = m.PromoteEpochs[i]
			}
			ft.Partitions = append(ft.Partitions, FailbackPartition{Partition: int32(i), PromoteEpoch: pe, MirroredEnd: end, SourceEpoch: se, CutTo: -1})
		}
		answer.Topics = append(answer.Topics, ft)
	}
	return Response{Failback: answer}
}
