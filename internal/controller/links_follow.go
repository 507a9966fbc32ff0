package controller

// Following a link's source (issue 32): the operations internal/link's syncer (on the
// active controller's node) calls after reading the source, each re-checking under
// the proposal lock that the topic is still a mirror topic of that link and not
// promoted or failed, so a promote racing a sync round always wins: a promoted topic
// is the destination's own and never changes because the source did.

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/runnel-io/runnel/internal/auth"
	"github.com/runnel-io/runnel/internal/metadata"
)

// following returns topic's mirror state when it is a mirror topic of link that the
// link still follows (mirroring or paused), nil otherwise.
func following(im *metadata.Image, link, topic string) *metadata.MirrorTopic {
	m := im.MirrorOf(topic)
	if m == nil || m.Link != link || (m.State != metadata.MirrorMirroring && m.State != metadata.MirrorPaused) {
		return nil
	}
	return m
}

// GrowMirror gives mirror topic topic of link partitions partitions, the source's new
// count, placed as a new topic's. A topic the link no longer follows, or that has as
// many already, is left as it is (no error).
func (c *Controller) GrowMirror(ctx context.Context, link, topic string, partitions int32) error {
	return c.withLeader(ctx, func(im *metadata.Image) error {
		t := im.Topics[topic]
		if following(im, link, topic) == nil || t == nil || partitions <= int32(len(t.Partitions)) {
			return nil
		}
		if partitions > maxPartitions {
			return fmt.Errorf("%w: mirror topic %q of link %q: the source has %d partitions, more than %d",
				ErrInvalidPartitions, topic, link, partitions, maxPartitions)
		}
		assign, err := c.newPartitionAssignment(im, t, partitions, nil)
		if err != nil {
			return fmt.Errorf("mirror topic %q of link %q: %w", topic, link, err)
		}
		_, err = c.proposeLocked(ctx, []metadata.Record{{
			Type: metadata.CreatePartitionsType, TopicName: topic, NewPartitions: newPartitions(assign),
		}})
		return err
	})
}

// SyncMirrorConfigs applies set (a nil value deletes the key) to mirror topic topic of
// link, when the link still follows it. Values are checked as any topic config's.
func (c *Controller) SyncMirrorConfigs(ctx context.Context, link, topic string, set map[string]*string) error {
	return c.withLeader(ctx, func(im *metadata.Image) error {
		t := im.Topics[topic]
		if following(im, link, topic) == nil || t == nil || len(set) == 0 {
			return nil
		}
		return c.alterConfigsLocked(ctx, c.cfg.ValidateTopicConfig, topic, t.Configs, set, false, false)
	})
}

// SyncMirrorACLs makes the LITERAL TOPIC ACLs of the mirror topics of link that it
// still follows and that topics names exactly those of want naming them: the missing
// ones are added, the others removed, in one entry. want's entries for other
// resources, and the ones auth.ValidateACL refuses, are ignored. It returns what it
// added and removed.
func (c *Controller) SyncMirrorACLs(ctx context.Context, link string, topics []string, want []metadata.ACL) (added, removed []metadata.ACL, err error) {
	err = c.withLeader(ctx, func(im *metadata.Image) error {
		added, removed = nil, nil
		synced := map[string]bool{}
		for _, t := range topics {
			if following(im, link, t) != nil {
				synced[t] = true
			}
		}
		wanted := map[metadata.ACL]bool{}
		for _, a := range want {
			if a.ResourceType == metadata.ACLResourceTopic && a.PatternType == metadata.ACLPatternLiteral &&
				synced[a.ResourceName] && auth.ValidateACL(a) == nil {
				wanted[a] = true
			}
		}
		var recs []metadata.Record
		for _, a := range im.ACLs.All() {
			if a.ResourceType == metadata.ACLResourceTopic && a.PatternType == metadata.ACLPatternLiteral &&
				synced[a.ResourceName] && !wanted[a] {
				removed = append(removed, a)
				recs = append(recs, metadata.Record{Type: metadata.ACLType, ACL: &metadata.ACLChange{ACL: a, Remove: true}})
			}
		}
		for a := range wanted {
			if !im.ACLs.Has(a) {
				added = append(added, a)
			}
		}
		// One order whatever the map's, so that the entry is the same for the same sync.
		slices.SortFunc(added, func(x, y metadata.ACL) int { return strings.Compare(x.String(), y.String()) })
		for _, a := range added {
			recs = append(recs, metadata.Record{Type: metadata.ACLType, ACL: &metadata.ACLChange{ACL: a}})
		}
		if len(recs) == 0 {
			return nil
		}
		_, err := c.proposeLocked(ctx, recs)
		return err
	})
	return added, removed, err
}
