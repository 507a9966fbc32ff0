package controller

// Cluster links, the records of promote's lineage and of failback (issue 32;
// internal/link/failback*.go runs the operations, metadata/links.go holds the
// state). A failback turns a topic of this cluster, the old primary, into a mirror
// topic of the new primary in two Raft entries: FenceFailback makes it read-only and
// fixes its quarantine; CutFailback, once the caller copied each partition's tail
// into the quarantine, records the divergence points and bumps every partition's
// leader epoch, so that the first leader of the new epoch cuts its log there
// (replica/mirror.go) and the mirror fetches the new primary's records from it.

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"time"

	"github.com/runnel-io/runnel/internal/metadata"
)

// PromotedPartition is what a promoted mirror partition's leader reports after its
// cut: the promote epoch it reports for, the end of what was mirrored and the
// source's leader epoch of the last mirrored batch (-1: unknown).
type PromotedPartition struct {
	Partition    int32
	PromoteEpoch int32
	MirroredEnd  int64
	SourceEpoch  int32
}

// RecordPromoted records, for the promoted mirror topic topic, what its partition
// leaders report (metadata.MirrorTopic.MirroredEnds, SourceEpochs). The first report
// of a partition for its current promote epoch wins; a stale report (another promote
// epoch, a topic no longer promoted) is dropped.
func (c *Controller) RecordPromoted(ctx context.Context, topic string, parts []PromotedPartition) error {
	return c.withLeader(ctx, func(im *metadata.Image) error {
		m := im.MirrorOf(topic)
		if m == nil || m.State != metadata.MirrorPromoted {
			return nil
		}
		n := *m
		n.MirroredEnds, n.SourceEpochs = slices.Clone(m.MirroredEnds), slices.Clone(m.SourceEpochs)
		for len(n.MirroredEnds) < len(m.PromoteEpochs) {
			n.MirroredEnds = append(n.MirroredEnds, -1)
		}
		for len(n.SourceEpochs) < len(m.PromoteEpochs) {
			n.SourceEpochs = append(n.SourceEpochs, -1)
		}
		changed := false
		for _, p := range parts {
			i := int(p.Partition)
			if i < 0 || i >= len(m.PromoteEpochs) || m.PromoteEpochs[i] != p.PromoteEpoch || n.MirroredEnds[i] >= 0 {
				continue
			}
			n.MirroredEnds[i], n.SourceEpochs[i] = p.MirroredEnd, p.SourceEpoch
			changed = true
		}
		if !changed {
			return nil
		}
		_, err := c.proposeLocked(ctx, []metadata.Record{{Type: metadata.MirrorTopicType, Mirror: &metadata.MirrorChange{Mirror: &n}}})
		return err
	})
}

// FailbackTopic is one topic a failback fences: its name (on both clusters) and the
// new primary's id of it (zero when unknown).
type FailbackTopic struct {
	Name          string
	SourceTopicID [16]byte
}

// QuarantineTopic is the name of the topic that holds what the failback of topic
// started at startedAtMs set aside: an ordinary topic users can consume.
func QuarantineTopic(topic string, startedAtMs int64) string {
	return fmt.Sprintf("%s.quarantine.%d", topic, startedAtMs)
}

// FenceFailback makes each of topics a mirror topic of link (created following only
// them, or its source replaced with link's, its filters widened to the topics, and
// resumed if paused) in state
// MirrorFailingBack: read-only, not fetched, its quarantine named. A topic fenced or
// cut already by a failback of the same link is left as it is, so a failback can be
// run again after a crash. A topic that is a mirror topic not promoted (mirroring,
// paused, failed, or fenced by another link) is refused: only a primary's topic fails
// back. It returns the topics' mirror states after the change.
func (c *Controller) FenceFailback(ctx context.Context, link metadata.Link, topics []FailbackTopic) ([]*metadata.MirrorTopic, error) {
	var out []*metadata.MirrorTopic
	err := c.withLeader(ctx, func(im *metadata.Image) error {
		out = nil
		if err := ValidateTopicName(link.Name); err != nil {
			return fmt.Errorf("%w: link name: %w", ErrInvalidRequest, err)
		}
		now := time.Now().UnixMilli()
		lk := im.Link(link.Name)
		var nl metadata.Link
		if lk == nil {
			// A new link follows the failed-back topics only (an empty filter would
			// mirror every topic of the new primary).
			nl = metadata.Link{Name: link.Name, ReplicationFactor: -1, CreatedAtMs: now}
			for _, ft := range topics {
				nl.Topics = append(nl.Topics, regexp.QuoteMeta(ft.Name))
			}
		} else {
			nl = *lk
			nl.Topics = slices.Clone(lk.Topics)
		}
		// The failback is asked to mirror the new primary: a paused link resumes
		// (topics paused one by one stay paused).
		nl.Source, nl.SourceProps, nl.Paused = link.Source, link.SourceProps, false
		var recs []metadata.Record
		for _, ft := range topics {
			t := im.Topics[ft.Name]
			if t == nil {
				return fmt.Errorf("%w: topic %q does not exist on this cluster: nothing to fail back", ErrInvalidRequest, ft.Name)
			}
			if len(nl.Topics) > 0 && !matchesAnyFilter(nl.Topics, ft.Name) {
				nl.Topics = append(nl.Topics, regexp.QuoteMeta(ft.Name))
			}
			m := im.MirrorOf(ft.Name)
			switch {
			case m != nil && m.Link == link.Name && (m.State == metadata.MirrorFailingBack || m.Failback.Cut() && m.State != metadata.MirrorPromoted):
				out = append(out, m) // fenced or cut by an earlier run
				continue
			case m != nil && m.State != metadata.MirrorPromoted:
				return fmt.Errorf("%w: topic %q is a mirror topic of link %q in state %s: only a primary's topic (not a mirror, or promoted) fails back",
					ErrInvalidRequest, ft.Name, m.Link, m.State)
			}
			q := QuarantineTopic(ft.Name, now)
			if err := ValidateTopicName(q); err != nil {
				return fmt.Errorf("%w: quarantine topic of %q: %w", ErrInvalidRequest, ft.Name, err)
			}
			n := &metadata.MirrorTopic{Topic: ft.Name, TopicID: t.ID, Link: link.Name, SourceTopicID: ft.SourceTopicID,
				State: metadata.MirrorFailingBack, Failback: &metadata.Failback{StartedAtMs: now, Quarantine: q}}
			recs = append(recs, metadata.Record{Type: metadata.MirrorTopicType, Mirror: &metadata.MirrorChange{Mirror: n}})
			out = append(out, n)
		}
		if lk == nil || nl.Source != lk.Source || !equalProps(nl.SourceProps, lk.SourceProps) || !slices.Equal(nl.Topics, lk.Topics) || lk.Paused {
			recs = append([]metadata.Record{{Type: metadata.LinkType, Link: &metadata.LinkChange{Link: &nl}}}, recs...)
		}
		if len(recs) == 0 {
			return nil
		}
		_, err := c.proposeLocked(ctx, recs)
		return err
	})
	return out, err
}

func matchesAnyFilter(filters []string, name string) bool {
	for _, f := range filters {
		if re, err := regexp.Compile("^(?:" + f + ")$"); err == nil && re.MatchString(name) {
			return true
		}
	}
	return false
}

func equalProps(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// FailbackCutSpec is one fenced topic's cut: per partition, the divergence point and
// how many records its tail put in the quarantine.
type FailbackCutSpec struct {
	Topic       string
	CutTo       []int64
	Quarantined []int64
}

// CutFailback records the cut of each fenced topic of link and bumps every
// partition's leader epoch in the same entry (same leader, same ISR): the first
// leader of the new epoch cuts its log to the divergence point before anything is
// mirrored (metadata.Failback's invariant), and the topic becomes mirroring (paused
// when the link is). A topic cut already is left as it is. It returns the topics'
// mirror states after the change.
func (c *Controller) CutFailback(ctx context.Context, link string, cuts []FailbackCutSpec) ([]*metadata.MirrorTopic, error) {
	var out []*metadata.MirrorTopic
	err := c.withLeader(ctx, func(im *metadata.Image) error {
		out = nil
		lk := im.Link(link)
		if lk == nil {
			return fmt.Errorf("%w: no link %q", ErrInvalidRequest, link)
		}
		var recs []metadata.Record
		for _, cs := range cuts {
			m := im.MirrorOf(cs.Topic)
			t := im.Topics[cs.Topic]
			switch {
			case m == nil || m.Link != link || t == nil:
				return fmt.Errorf("%w: topic %q is not failing back on link %q", ErrInvalidRequest, cs.Topic, link)
			case m.Failback.Cut() && m.State != metadata.MirrorPromoted:
				out = append(out, m)
				continue
			case m.State != metadata.MirrorFailingBack:
				return fmt.Errorf("%w: topic %q of link %q is %s, not failing back", ErrInvalidRequest, cs.Topic, link, m.State)
			case len(cs.CutTo) != len(t.Partitions) || len(cs.Quarantined) != len(t.Partitions):
				return fmt.Errorf("%w: topic %q has %d partitions, the cut names %d", ErrInvalidRequest, cs.Topic, len(t.Partitions), len(cs.CutTo))
			}
			n := *m
			f := *m.Failback
			f.CutTo, f.Quarantined = slices.Clone(cs.CutTo), slices.Clone(cs.Quarantined)
			f.CutEpochs = make([]int32, len(t.Partitions))
			for i, p := range t.Partitions {
				next := p
				next.LeaderEpoch++
				next.PartitionEpoch++
				f.CutEpochs[i] = next.LeaderEpoch
				recs = append(recs, metadata.Record{Type: metadata.PartitionChangeType, TopicName: t.Name, Partition: int32(i), PartitionState: &next})
			}
			n.Failback = &f
			n.State = metadata.MirrorMirroring
			if lk.Paused {
				n.State = metadata.MirrorPaused
			}
			n.Error, n.PromoteEpochs, n.PromotedAtMs, n.MirroredEnds, n.SourceEpochs = "", nil, 0, nil, nil
			recs = append(recs, metadata.Record{Type: metadata.MirrorTopicType, Mirror: &metadata.MirrorChange{Mirror: &n}})
			out = append(out, &n)
		}
		if len(recs) == 0 {
			return nil
		}
		_, err := c.proposeLocked(ctx, recs)
		return err
	})
	return out, err
}
