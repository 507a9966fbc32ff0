package mirror

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
)

// groupSync reads the selected groups' committed source offsets every
// GroupSyncInterval, hands them to the workers of the partitions this process owns
// (which checkpoint their exact translations in their next transaction), and
// commits the translations on the target for groups with no active member there,
// never moving a target group backwards.
type groupSync struct {
	m *Mirror

	mu      sync.Mutex                               // guards the fields below
	pending map[string]map[TopicPartition]Checkpoint // translated, not yet committed on the target
	status  map[string]*GroupStatus
}

// GroupStatus is one group's sync state in this process.
type GroupStatus struct {
	Group string `json:"group"`
	// State is synced, active-on-target (not synced: consumers are running there) or
	// error.
	State    string `json:"state"`
	Error    string `json:"error,omitempty"`
	LastSync int64  `json:"last_sync_ms"`
	// Partitions counts the partitions whose offsets are synced.
	Partitions int `json:"partitions"`
}

func newGroupSync(m *Mirror) *groupSync {
	return &groupSync{m: m, pending: map[string]map[TopicPartition]Checkpoint{}, status: map[string]*GroupStatus{}}
}

// translated is called by a worker after it committed checkpoint c.
func (g *groupSync) translated(c Checkpoint) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.pending[c.Group] == nil {
		g.pending[c.Group] = map[TopicPartition]Checkpoint{}
	}
	g.pending[c.Group][TopicPartition{c.Topic, c.Partition}] = c
}

func (g *groupSync) loop(ctx context.Context) {
	t := time.NewTicker(g.m.cfg.GroupSyncInterval)
	defer t.Stop()
	for {
		if err := g.offer(ctx); err != nil && ctx.Err() == nil {
			g.m.log.Warn("group sync: reading source groups failed", "err", err)
		}
		g.commitTarget(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// offer reads the source groups' commits and offers them to the owning workers.
func (g *groupSync) offer(ctx context.Context) error {
	listed, err := g.m.srcAdm.ListGroups(ctx)
	if err != nil {
		return err
	}
	var groups []string
	for _, name := range listed.Groups() {
		if g.m.groups.match(name) {
			groups = append(groups, name)
		}
	}
	if len(groups) == 0 {
		return nil
	}
	fetched := g.m.srcAdm.FetchManyOffsets(ctx, groups...)
	fetched.EachError(func(r kadm.FetchOffsetsResponse) {
		g.setStatus(r.Group, func(s *GroupStatus) { s.State, s.Error = "error", r.Err.Error() })
	})
	for _, r := range fetched {
		if r.Err != nil {
			continue
		}
		r.Fetched.Each(func(o kadm.OffsetResponse) {
			if o.Err != nil || o.At < 0 {
				return
			}
			if w := g.m.worker(TopicPartition{o.Topic, o.Partition}); w != nil {
				w.offerGroup(r.Group, o.At)
			}
		})
	}
	return nil
}

func (g *groupSync) setStatus(group string, fn func(*GroupStatus)) {
	g.mu.Lock()
	defer g.mu.Unlock()
	s := g.status[group]
	if s == nil {
		s = &GroupStatus{Group: group}
		g.status[group] = s
	}
	fn(s)
}

// commitTarget commits the pending translations on the target.
func (g *groupSync) commitTarget(ctx context.Context) {
	g.mu.Lock()
	pending := g.pending
	g.pending = map[string]map[TopicPartition]Checkpoint{}
	g.mu.Unlock()
	for group, cps := range pending {
		n, err := CommitCheckpoints(ctx, g.m.tgtAdm, group, cps, false)
		g.setStatus(group, func(s *GroupStatus) {
			switch {
			case err == errActive:
				s.State, s.Error = "active-on-target", ""
			case err != nil:
				s.State, s.Error = "error", err.Error()
			default:
				s.State, s.Error, s.LastSync = "synced", "", time.Now().UnixMilli()
				s.Partitions += n
			}
		})
		if err != nil && err != errActive {
			g.m.log.Warn("group sync: commit on the target failed", "group", group, "err", err)
		}
	}
}

// Statuses returns the group sync states, by group.
func (g *groupSync) statuses() []GroupStatus {
	g.mu.Lock()
	defer g.mu.Unlock()
	out := make([]GroupStatus, 0, len(g.status))
	for _, s := range g.status {
		out = append(out, *s)
	}
	return out
}

// errActive is CommitCheckpoints' answer for a group with members on the target.
var errActive = fmt.Errorf("group has active members on the target")

// OffsetMove is one partition's committed offset on the target, before and after.
type OffsetMove struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	Old       int64  `json:"old_offset"` // -1: none
	New       int64  `json:"new_offset"`
}

// CommitCheckpoints commits the checkpoints' target offsets for group on the target
// (adm), if the group has no active members there. Unless exact, an offset never
// moves backwards. It returns how many offsets it committed.
func CommitCheckpoints(ctx context.Context, adm *kadm.Client, group string, cps map[TopicPartition]Checkpoint, exact bool) (int, error) {
	moves, err := PlanCommit(ctx, adm, group, cps, exact)
	if err != nil || len(moves) == 0 {
		return 0, err
	}
	return len(moves), ApplyMoves(ctx, adm, group, moves)
}

// PlanCommit returns the offset moves CommitCheckpoints would make.
func PlanCommit(ctx context.Context, adm *kadm.Client, group string, cps map[TopicPartition]Checkpoint, exact bool) ([]OffsetMove, error) {
	described, err := adm.DescribeGroups(ctx, group)
	if err != nil {
		return nil, fmt.Errorf("describing group %s on the target: %w", group, err)
	}
	if d, ok := described[group]; ok && d.Err == nil && len(d.Members) > 0 {
		return nil, errActive
	}
	current, err := adm.FetchOffsets(ctx, group)
	if err != nil {
		return nil, fmt.Errorf("fetching group %s's offsets on the target: %w", group, err)
	}
	var moves []OffsetMove
	for _, c := range cps {
		old := int64(-1)
		if o, ok := current.Lookup(c.TargetTopic, c.Partition); ok && o.Err == nil {
			old = o.At
		}
		if old == c.TargetOffset || (!exact && old > c.TargetOffset) {
			continue
		}
		moves = append(moves, OffsetMove{Topic: c.TargetTopic, Partition: c.Partition, Old: old, New: c.TargetOffset})
	}
	return moves, nil
}

// ApplyMoves commits the moves' new offsets for group (OffsetMove.Topic is the target topic).
func ApplyMoves(ctx context.Context, adm *kadm.Client, group string, moves []OffsetMove) error {
	var os kadm.Offsets
	for _, mv := range moves {
		os.Add(kadm.Offset{Topic: mv.Topic, Partition: mv.Partition, At: mv.New, LeaderEpoch: -1})
	}
	resp, err := adm.CommitOffsets(ctx, group, os)
	if err == nil {
		err = resp.Error()
	}
	if err != nil {
		return fmt.Errorf("committing group %s's offsets on the target: %w", group, err)
	}
	return nil
}
