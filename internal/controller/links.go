package controller

// Cluster links (issue 32; metadata/links.go holds the state). The controller owns the
// link and mirror-topic records; it never talks to the source cluster: whoever calls
// these operations (internal/link's Admin, on the active controller's node) read the
// source's topics first and hands over what to create. Promote is a controller
// operation that the partition leaders carry out: it marks the topics promoted and
// bumps every partition's leader epoch in the same Raft entry, so that a mirrored
// append (which holds the epoch it fetched for) can never land after it, and the
// first leader of the new epoch cuts the log to its last stable offset before any
// write (replica/mirror.go).

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/runnel-io/runnel/internal/metadata"
)

// MirrorSpec is one mirror topic to create: the source topic's name, partition
// count, non-default configs and id (zero when the source has none).
type MirrorSpec struct {
	Name          string
	Partitions    int32
	Configs       map[string]string
	SourceTopicID [16]byte
}

// CreateLink creates link and its first mirror topics in one Raft entry. It fails
// as a whole (ErrInvalidRequest naming the problem) when the link exists, its name is
// not a valid topic-like name, or a mirror topic cannot be created (exists, an
// internal name, a bad config, not enough brokers).
func (c *Controller) CreateLink(ctx context.Context, link metadata.Link, mirrors []MirrorSpec) error {
	return c.withLeader(ctx, func(im *metadata.Image) error {
		if err := ValidateTopicName(link.Name); err != nil {
			return fmt.Errorf("%w: link name: %w", ErrInvalidRequest, err)
		}
		if im.Link(link.Name) != nil {
			return fmt.Errorf("%w: link %q already exists", ErrInvalidRequest, link.Name)
		}
		if link.CreatedAtMs == 0 {
			link.CreatedAtMs = time.Now().UnixMilli()
		}
		recs := []metadata.Record{{Type: metadata.LinkType, Link: &metadata.LinkChange{Link: &link}}}
		more, err := c.mirrorRecords(im, &link, mirrors)
		if err != nil {
			return err
		}
		_, err = c.proposeLocked(ctx, append(recs, more...))
		return err
	})
}

// AddMirrorTopics creates more mirror topics of an existing link, all or none.
func (c *Controller) AddMirrorTopics(ctx context.Context, name string, mirrors []MirrorSpec) error {
	return c.withLeader(ctx, func(im *metadata.Image) error {
		link := im.Link(name)
		if link == nil {
			return fmt.Errorf("%w: no link %q", ErrInvalidRequest, name)
		}
		recs, err := c.mirrorRecords(im, link, mirrors)
		if err != nil || len(recs) == 0 {
			return err
		}
		_, err = c.proposeLocked(ctx, recs)
		return err
	})
}

// mirrorRecords plans the topics of mirrors (the source's partition count and
// configs, the link's replication factor) and their mirror states.
func (c *Controller) mirrorRecords(im *metadata.Image, link *metadata.Link, mirrors []MirrorSpec) ([]metadata.Record, error) {
	specs := make([]TopicSpec, len(mirrors))
	for i, m := range mirrors {
		if strings.HasPrefix(m.Name, "__") {
			return nil, fmt.Errorf("%w: topic %q: internal topics (__*) are never mirrored", ErrInvalidRequest, m.Name)
		}
		if m.Partitions < 1 {
			return nil, fmt.Errorf("%w: topic %q: the source reported %d partitions", ErrInvalidRequest, m.Name, m.Partitions)
		}
		specs[i] = TopicSpec{Name: m.Name, NumPartitions: m.Partitions, ReplicationFactor: link.ReplicationFactor, Configs: m.Configs}
	}
	errs := make([]error, len(specs))
	planned := c.planTopics(im, specs, errs)
	for i, err := range errs {
		if err != nil {
			return nil, fmt.Errorf("mirror topic %q of link %q: %w", specs[i].Name, link.Name, err)
		}
	}
	state := metadata.MirrorMirroring
	if link.Paused {
		state = metadata.MirrorPaused
	}
	var recs []metadata.Record
	for _, p := range planned {
		recs = append(recs, metadata.Record{Type: metadata.CreateTopicType, Topic: p.t})
		recs = append(recs, metadata.Record{Type: metadata.MirrorTopicType, Mirror: &metadata.MirrorChange{Mirror: &metadata.MirrorTopic{
			Topic: p.t.Name, TopicID: p.t.ID, Link: link.Name, SourceTopicID: mirrors[p.i].SourceTopicID, State: state,
		}}})
	}
	return recs, nil
}

// linkMirrors returns the mirror topics of link name that topics names (all of them
// when topics is empty). A named topic that is not one of them is ErrInvalidRequest.
// A link that was deleted still has its mirror topics (read-only until promoted).
func linkMirrors(im *metadata.Image, name string, topics []string) ([]*metadata.MirrorTopic, error) {
	all := im.MirrorsOf(name)
	if im.Link(name) == nil && len(all) == 0 {
		return nil, fmt.Errorf("%w: no link %q", ErrInvalidRequest, name)
	}
	if len(topics) == 0 {
		return all, nil
	}
	var out []*metadata.MirrorTopic
	for _, t := range topics {
		i := slices.IndexFunc(all, func(m *metadata.MirrorTopic) bool { return m.Topic == t })
		if i < 0 {
			return nil, fmt.Errorf("%w: topic %q is not a mirror topic of link %q", ErrInvalidRequest, t, name)
		}
		out = append(out, all[i])
	}
	return out, nil
}

// SetLinkPaused pauses (or resumes) the fetching of link name's mirror topics named
// in topics, or of the whole link (and the topics it adds later) when topics is
// empty. Promoted and failed topics are left as they are.
func (c *Controller) SetLinkPaused(ctx context.Context, name string, topics []string, paused bool) error {
	return c.withLeader(ctx, func(im *metadata.Image) error {
		ms, err := linkMirrors(im, name, topics)
		if err != nil {
			return err
		}
		var recs []metadata.Record
		if link := im.Link(name); link != nil && len(topics) == 0 && link.Paused != paused {
			l := *link
			l.Paused = paused
			recs = append(recs, metadata.Record{Type: metadata.LinkType, Link: &metadata.LinkChange{Link: &l}})
		}
		from, to := metadata.MirrorMirroring, metadata.MirrorPaused
		if !paused {
			from, to = to, from
		}
		for _, m := range ms {
			if m.State != from {
				continue
			}
			n := *m
			n.State = to
			recs = append(recs, metadata.Record{Type: metadata.MirrorTopicType, Mirror: &metadata.MirrorChange{Mirror: &n}})
		}
		if len(recs) == 0 {
			return nil
		}
		_, err = c.proposeLocked(ctx, recs)
		return err
	})
}

// PromoteMirrors promotes link name's mirror topics named in topics (all when empty):
// each becomes MirrorPromoted with PromoteEpochs set to its partitions' next leader
// epochs, and each partition's leader epoch is bumped in the same entry (same leader,
// same ISR). It needs nothing from the source. Topics already promoted are skipped;
// it returns the topics it promoted.
func (c *Controller) PromoteMirrors(ctx context.Context, name string, topics []string) ([]string, error) {
	var promoted []string
	err := c.withLeader(ctx, func(im *metadata.Image) error {
		ms, err := linkMirrors(im, name, topics)
		if err != nil {
			return err
		}
		recs := promoteRecords(im, ms, time.Now().UnixMilli())
		for _, m := range ms {
			if m.State != metadata.MirrorPromoted {
				promoted = append(promoted, m.Topic)
			}
		}
		if len(recs) == 0 {
			return nil
		}
		_, err = c.proposeLocked(ctx, recs)
		return err
	})
	return promoted, err
}

// promoteRecords are the records that promote ms (those not promoted yet).
func promoteRecords(im *metadata.Image, ms []*metadata.MirrorTopic, nowMs int64) []metadata.Record {
	var recs []metadata.Record
	for _, m := range ms {
		t := im.Topics[m.Topic]
		if m.State == metadata.MirrorPromoted || t == nil {
			continue
		}
		n := *m
		n.State, n.Error, n.PromotedAtMs = metadata.MirrorPromoted, "", nowMs
		n.PromoteEpochs = make([]int32, len(t.Partitions))
		for i, p := range t.Partitions {
			next := p
			next.LeaderEpoch++
			next.PartitionEpoch++
			n.PromoteEpochs[i] = next.LeaderEpoch
			recs = append(recs, metadata.Record{Type: metadata.PartitionChangeType, TopicName: t.Name, Partition: int32(i), PartitionState: &next})
		}
		recs = append(recs, metadata.Record{Type: metadata.MirrorTopicType, Mirror: &metadata.MirrorChange{Mirror: &n}})
	}
	return recs
}

// FailMirror stops mirror topic topic in state MirrorFailed with reason (a partition
// leader found the source topic gone or re-created). A topic no longer mirroring or
// paused is left as it is.
func (c *Controller) FailMirror(ctx context.Context, topic, reason string) error {
	return c.withLeader(ctx, func(im *metadata.Image) error {
		m := im.MirrorOf(topic)
		if m == nil || (m.State != metadata.MirrorMirroring && m.State != metadata.MirrorPaused) {
			return nil
		}
		n := *m
		n.State, n.Error = metadata.MirrorFailed, reason
		_, err := c.proposeLocked(ctx, []metadata.Record{{Type: metadata.MirrorTopicType, Mirror: &metadata.MirrorChange{Mirror: &n}}})
		return err
	})
}

// DeleteLink removes link name. Its mirror topics stay, read-only (paused; `link
// promote NAME` still promotes them), unless promote is set: then they are promoted in
// the same entry.
func (c *Controller) DeleteLink(ctx context.Context, name string, promote bool) error {
	return c.withLeader(ctx, func(im *metadata.Image) error {
		if im.Link(name) == nil {
			return fmt.Errorf("%w: no link %q", ErrInvalidRequest, name)
		}
		var recs []metadata.Record
		if promote {
			recs = promoteRecords(im, im.MirrorsOf(name), time.Now().UnixMilli())
		} else {
			// Nothing fetches for a link that is gone: say so rather than "mirroring".
			for _, m := range im.MirrorsOf(name) {
				if m.State == metadata.MirrorMirroring {
					n := *m
					n.State = metadata.MirrorPaused
					recs = append(recs, metadata.Record{Type: metadata.MirrorTopicType, Mirror: &metadata.MirrorChange{Mirror: &n}})
				}
			}
		}
		recs = append(recs, metadata.Record{Type: metadata.LinkType, Link: &metadata.LinkChange{Remove: name}})
		_, err := c.proposeLocked(ctx, recs)
		return err
	})
}
