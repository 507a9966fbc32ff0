package link

import (
	"cmp"
	"context"
	"errors"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/runnel-io/runnel/internal/metadata"
)

// Consumer group offset sync (--groups): every --group-sync-interval, the active
// controller's node reads the committed offsets of the source's groups that the
// filters match (ListGroups, OffsetFetch) and commits them, unchanged (the offsets are
// the same on both clusters), to this cluster's group coordinator, as an admin commit
// (OffsetCommit with no member and generation -1, which a coordinator accepts only for
// a group with no member: a group active here is never overwritten). Only the mirror
// topics the link has not promoted are synced: a promoted topic's offsets are this
// cluster's own from then on.

// groupCommit decides one group partition: src is the source's committed offset,
// end the destination's end (high watermark) of the mirror partition, cur the
// destination group's committed offset (-1: none). The destination should hold src,
// but never past end (a consumer that fails over must not skip records not copied
// yet) and never below cur (a commit made here is never moved backwards). It returns
// that offset (want), whether to commit it (commit), and whether the destination
// holds it once committed (synced: false when the destination is left as it is).
func groupCommit(src, end, cur int64) (want int64, commit, synced bool) {
	want = min(src, end)
	switch {
	case want < 0 || cur > want:
		return want, false, false
	case cur == want:
		return want, false, true
	}
	return want, true, true
}

// syncGroups runs one round of group offset sync.
func (s *syncer) syncGroups(ctx context.Context, a *Admin, src, dst *kgo.Client) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	sadm, dadm := kadm.NewClient(src), kadm.NewClient(dst)
	listed, err := sadm.ListGroups(ctx)
	if err != nil && len(listed) == 0 {
		if ctx.Err() == nil {
			s.m.logger.Warn("link: listing the source's groups", "link", s.link.Name, "source", s.link.Source, "err", err)
		}
		return
	}
	var groups []string
	for g := range listed {
		if matchAny(s.groups, g) {
			groups = append(groups, g)
		}
	}
	slices.Sort(groups)
	synced := map[string]bool{}
	var topics []string
	for _, mt := range a.cfg.Image().MirrorsOf(s.link.Name) {
		if mt.State != metadata.MirrorPromoted {
			synced[mt.Topic] = true
			topics = append(topics, mt.Topic)
		}
	}
	if len(groups) == 0 || len(topics) == 0 {
		return
	}
	srcOffs := sadm.FetchManyOffsets(ctx, groups...)
	ends, err := dadm.ListEndOffsets(ctx, topics...)
	if err != nil {
		s.m.logger.Warn("link: group offset sync: the mirror topics' ends", "link", s.link.Name, "err", err)
		return
	}
	dstOffs := dadm.FetchManyOffsets(ctx, groups...)
	for _, g := range groups {
		sr, dr := srcOffs[g], dstOffs[g]
		if sr.Err != nil || dr.Err != nil {
			s.m.logger.Warn("link: group offset sync: fetching offsets", "link", s.link.Name, "group", g,
				"source_err", sr.Err, "destination_err", dr.Err)
			continue
		}
		s.syncGroup(ctx, dadm, g, sr.Fetched, dr.Fetched, ends, synced)
	}
}

// syncGroup commits group g's offsets that need it and records what is synced.
func (s *syncer) syncGroup(ctx context.Context, dadm *kadm.Client, g string, src, dst kadm.OffsetResponses,
	ends kadm.ListedOffsets, synced map[string]bool) {
	var commit kadm.Offsets
	var ok []kadm.Offset
	src.Each(func(o kadm.OffsetResponse) {
		if o.Err != nil || !synced[o.Topic] {
			return
		}
		end, found := ends.Lookup(o.Topic, o.Partition)
		if !found || end.Err != nil {
			return
		}
		cur := int64(-1)
		if d, found := dst.Lookup(o.Topic, o.Partition); found && d.Err == nil {
			cur = d.At
		}
		want, doCommit, isSynced := groupCommit(o.At, end.Offset, cur)
		if !isSynced {
			return
		}
		// The source's leader epoch means nothing here (this cluster stamps its own):
		// -1 keeps a consumer from validating it.
		off := kadm.Offset{Topic: o.Topic, Partition: o.Partition, At: want, LeaderEpoch: -1, Metadata: o.Metadata}
		if !doCommit {
			ok = append(ok, off)
			return
		}
		commit.Add(off)
	})
	if len(commit) > 0 {
		resp, err := dadm.CommitOffsets(ctx, g, commit)
		if err != nil {
			s.m.logger.Warn("link: group offset sync: commit", "link", s.link.Name, "group", g, "err", err)
		}
		active := false
		resp.Each(func(r kadm.OffsetResponse) {
			switch {
			case r.Err == nil:
				ok = append(ok, r.Offset)
			case errors.Is(r.Err, kerr.UnknownMemberID), errors.Is(r.Err, kerr.IllegalGeneration),
				errors.Is(r.Err, kerr.RebalanceInProgress):
				active = true // members here: the group is theirs
			default:
				s.m.logger.Warn("link: group offset sync: commit", "link", s.link.Name, "group", g,
					"topic", r.Topic, "partition", r.Partition, "offset", r.At, "err", r.Err)
			}
		})
		if active {
			s.m.logger.Debug("link: group offset sync skips a group with members on this cluster", "link", s.link.Name, "group", g)
		}
	}
	now := time.Now().UnixMilli()
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, o := range ok {
		s.synced[groupPartition{g, metadata.TopicPartition{Topic: o.Topic, Partition: o.Partition}}] =
			GroupStatus{Group: g, Topic: o.Topic, Partition: o.Partition, Offset: o.At, SyncedAtMs: now}
	}
}

// groupStatus returns what the syncer synced, sorted by group, topic and partition.
func (s *syncer) groupStatus() []GroupStatus {
	s.mu.Lock()
	out := make([]GroupStatus, 0, len(s.synced))
	for _, st := range s.synced {
		out = append(out, st)
	}
	s.mu.Unlock()
	slices.SortFunc(out, compareGroupStatus)
	return out
}

func compareGroupStatus(a, b GroupStatus) int {
	return cmp.Or(cmp.Compare(a.Group, b.Group), cmp.Compare(a.Topic, b.Topic), cmp.Compare(a.Partition, b.Partition))
}
