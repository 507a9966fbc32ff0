package share

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"sort"
	"sync"
	"time"

	"github.com/runnel-io/runnel/internal/coordshard"
	"github.com/runnel-io/runnel/internal/group"
	"github.com/runnel-io/runnel/internal/replica"
)

// A share group as ListGroups v5 shows it: its type and protocol type.
const (
	GroupType    = "share"
	ProtocolType = "share"
)

// Membership errors, mapped to Kafka's codes by the protocol layer.
var (
	ErrNotCoordinator    = errors.New("not the coordinator of this group")
	ErrUnknownMemberID   = errors.New("unknown share group member")
	ErrFencedMemberEpoch = errors.New("member epoch is fenced")
	ErrGroupMaxSize      = errors.New("share group is full (group.share.max.size)")
	ErrNotShareGroup     = errors.New("group is not a share group")
	ErrGroupNotEmpty     = errors.New("share group has members")
)

// notShareGroupError is ErrNotShareGroup for one group, with Kafka's message.
type notShareGroupError struct{ group string }

func (e notShareGroupError) Error() string        { return "Group " + e.group + " is not a share group." }
func (e notShareGroupError) Is(target error) bool { return target == ErrNotShareGroup }

func notShareGroup(group string) error { return notShareGroupError{group} }

// GroupsConfig configures Groups.
type GroupsConfig struct {
	// NumPartitions is offsets.topic.num.partitions: a share group is coordinated by
	// the leader of its __consumer_offsets partition, as every group (group.PartitionFor).
	NumPartitions int32
	// SessionTimeout and HeartbeatInterval are group.share.session.timeout.ms and
	// group.share.heartbeat.interval.ms, the defaults of a group's own configs.
	SessionTimeout, HeartbeatInterval time.Duration
	// MaxSize is group.share.max.size.
	MaxSize int
	// Serving says whether this node may act as a coordinator now (its lease); nil:
	// always.
	Serving func() bool
	// OtherKind names the kind ("classic", "consumer") of a group this node's group
	// coordinator has with this id, "" when none: group ids are exclusive across kinds,
	// so such an id never becomes a share group. Nil: none.
	OtherKind func(groupID string) string
}

// Groups is the membership side of share groups (Kafka's GroupMetadataManager
// shareGroupHeartbeat): members, epochs and the assignment of partitions to members.
// A group lives on the node leading its __consumer_offsets partition; membership is
// kept in memory only (a coordinator move makes members rejoin with their member ids,
// see doc.go), while what members consumed lives in the share-partition state.
type Groups struct {
	cfg    GroupsConfig
	shards *coordshard.Set[*groupShard]
}

// groupShard is the share groups of one __consumer_offsets partition this node leads.
type groupShard struct {
	ctx    context.Context
	mu     sync.Mutex // guards groups
	groups map[string]*shareGroup
}

// NewGroups returns share group membership; OnLeadershipChange feeds it.
func NewGroups(cfg GroupsConfig) *Groups {
	if cfg.NumPartitions <= 0 {
		cfg.NumPartitions = 50
	}
	if cfg.MaxSize <= 0 {
		cfg.MaxSize = 200
	}
	return &Groups{cfg: cfg, shards: coordshard.New[*groupShard]()}
}

// OnLeadershipChange is the replica hook: this node coordinates the share groups of
// the __consumer_offsets partitions it leads. Nothing is replayed: a new coordinator
// starts with no members.
func (g *Groups) OnLeadershipChange(p *replica.Partition, leader bool, _ int32) {
	tp := p.TopicPartition()
	if tp.Topic != group.OffsetsTopic {
		return
	}
	if !leader {
		g.shards.Unload(tp.Partition)
		return
	}
	g.shards.Load(tp.Partition, func(old *groupShard) bool { return old.ctx.Err() == nil },
		func(ctx context.Context) *groupShard {
			return &groupShard{ctx: ctx, groups: map[string]*shareGroup{}}
		}, func(*groupShard) {})
}

// Close drops every shard.
func (g *Groups) Close() { g.shards.Close() }

// shardFor returns the shard coordinating groupID.
func (g *Groups) shardFor(groupID string) (*groupShard, error) {
	sh, ok := g.shards.Get(group.PartitionFor(groupID, g.cfg.NumPartitions))
	if !ok || sh.ctx.Err() != nil || g.cfg.Serving != nil && !g.cfg.Serving() {
		return nil, ErrNotCoordinator
	}
	return sh, nil
}

// TopicInfo is what the assignment needs of a subscribed topic.
type TopicInfo struct {
	ID         [16]byte
	Partitions int32
}

// TopicPartitions is an assignment's partitions of one topic.
type TopicPartitions struct {
	TopicID    [16]byte
	Partitions []int32
}

// HeartbeatRequest is one ShareGroupHeartbeat.
type HeartbeatRequest struct {
	GroupID, MemberID        string
	MemberEpoch              int32
	RackID                   *string
	SubscribedTopicNames     []string // nil: unchanged
	ClientID, ClientHost     string
	Topics                   func(name string) (TopicInfo, bool)
	SessionTimeout, Interval time.Duration // the group's own configs (0: the broker's)
}

// HeartbeatResult is its answer.
type HeartbeatResult struct {
	MemberEpoch       int32
	HeartbeatInterval time.Duration
	// Assignment is sent when it changed for the member or the request was full; nil
	// otherwise.
	Assignment []TopicPartitions
}

// shareGroup is one share group's membership. Invariant: every member's epoch is at
// most epoch; assignment has an entry for every member, computed at epoch.
type shareGroup struct {
	id         string
	epoch      int32 // group epoch: grows on every membership, subscription or metadata change
	members    map[string]*shareMember
	assignment map[string][]TopicPartitions
	topicsHash uint64 // of the subscribed topics' ids and partition counts at epoch
}

type shareMember struct {
	id, clientID, clientHost string
	rack                     *string
	epoch                    int32
	subscribed               []string
	lastSeen                 time.Time
	sessionTimeout           time.Duration
}

// Heartbeat runs one ShareGroupHeartbeat: epoch 0 joins (member ids are the
// client's, KIP-932 v1), -1 leaves, anything else must be the member's current epoch
// (FENCED_MEMBER_EPOCH otherwise). Every change of members, subscriptions or the
// subscribed topics' partitions bumps the group epoch and reassigns; a member moves
// to the group epoch at its next heartbeat, getting its new assignment: share groups
// have no revocation phase (a partition may be shared).
func (g *Groups) Heartbeat(r HeartbeatRequest, now time.Time) (HeartbeatResult, error) {
	sh, err := g.shardFor(r.GroupID)
	if err != nil {
		return HeartbeatResult{}, err
	}
	// Asked before sh.mu is taken: the group coordinator asks IsShareGroup under its
	// own lock.
	other := r.MemberEpoch == 0 && g.otherKind(r.GroupID)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	sg := sh.groups[r.GroupID]
	if sg == nil {
		if r.MemberEpoch != 0 {
			return HeartbeatResult{}, ErrUnknownMemberID
		}
		if other {
			return HeartbeatResult{}, notShareGroup(r.GroupID)
		}
		sg = &shareGroup{id: r.GroupID, members: map[string]*shareMember{}, assignment: map[string][]TopicPartitions{}}
		sh.groups[r.GroupID] = sg
	}
	timeout, interval := r.SessionTimeout, r.Interval
	if timeout <= 0 {
		timeout = g.cfg.SessionTimeout
	}
	if interval <= 0 {
		interval = g.cfg.HeartbeatInterval
	}
	changed := sg.expire(now)
	m := sg.members[r.MemberID]
	switch {
	case r.MemberEpoch == -1:
		if m == nil {
			return HeartbeatResult{}, ErrUnknownMemberID
		}
		delete(sg.members, r.MemberID)
		sg.reassign(r.Topics)
		return HeartbeatResult{MemberEpoch: -1, HeartbeatInterval: interval}, nil
	case r.MemberEpoch == 0 && m == nil:
		if len(sg.members) >= g.cfg.MaxSize {
			return HeartbeatResult{}, ErrGroupMaxSize
		}
		m = &shareMember{id: r.MemberID}
		sg.members[r.MemberID] = m
		changed = true
	case m == nil:
		return HeartbeatResult{}, ErrUnknownMemberID
	case r.MemberEpoch != 0 && r.MemberEpoch != m.epoch:
		return HeartbeatResult{}, ErrFencedMemberEpoch
	}
	full := r.SubscribedTopicNames != nil || r.MemberEpoch == 0
	if r.SubscribedTopicNames != nil && !sameStrings(m.subscribed, r.SubscribedTopicNames) {
		m.subscribed = append([]string(nil), r.SubscribedTopicNames...)
		sort.Strings(m.subscribed)
		changed = true
	}
	m.clientID, m.clientHost, m.rack = r.ClientID, r.ClientHost, r.RackID
	m.lastSeen, m.sessionTimeout = now, timeout
	if changed || sg.topicsHash != sg.hashTopics(r.Topics) {
		sg.reassign(r.Topics)
	}
	res := HeartbeatResult{HeartbeatInterval: interval}
	if m.epoch != sg.epoch || full {
		m.epoch = sg.epoch
		res.Assignment = sg.assignment[m.id]
		if res.Assignment == nil {
			res.Assignment = []TopicPartitions{}
		}
	}
	res.MemberEpoch = m.epoch
	return res, nil
}

// expire drops members not heard from within their session timeout.
func (sg *shareGroup) expire(now time.Time) bool {
	changed := false
	for id, m := range sg.members {
		if now.Sub(m.lastSeen) > m.sessionTimeout {
			delete(sg.members, id)
			changed = true
		}
	}
	return changed
}

// subscribedTopics is the union of the members' subscriptions, sorted.
func (sg *shareGroup) subscribedTopics() []string {
	set := map[string]bool{}
	for _, m := range sg.members {
		for _, t := range m.subscribed {
			set[t] = true
		}
	}
	out := make([]string, 0, len(set))
	for t := range set {
		out = append(out, t)
	}
	sort.Strings(out)
	return out
}

func (sg *shareGroup) hashTopics(topics func(string) (TopicInfo, bool)) uint64 {
	h := fnv.New64a()
	for _, name := range sg.subscribedTopics() {
		if ti, ok := topics(name); ok {
			h.Write([]byte(name))
			h.Write(ti.ID[:])
			h.Write([]byte{byte(ti.Partitions >> 24), byte(ti.Partitions >> 16), byte(ti.Partitions >> 8), byte(ti.Partitions)})
		}
	}
	return h.Sum64()
}

// reassign bumps the group epoch and recomputes every member's assignment.
func (sg *shareGroup) reassign(topics func(string) (TopicInfo, bool)) {
	sg.epoch++
	sg.topicsHash = sg.hashTopics(topics)
	sg.assignment = simpleAssign(sg.members, topics)
}

// simpleAssign is Kafka's SimpleAssignor for homogeneous and heterogeneous
// subscriptions alike, per topic: with at least as many members as partitions, every
// member gets one partition, round robin, so every partition is shared by about
// members/partitions members; with fewer members, every partition goes to one member,
// round robin. Every partition is assigned whenever a member subscribes to its topic.
func simpleAssign(members map[string]*shareMember, topics func(string) (TopicInfo, bool)) map[string][]TopicPartitions {
	out := map[string][]TopicPartitions{}
	byTopic := map[string][]string{}
	for id, m := range members {
		out[id] = nil
		for _, t := range m.subscribed {
			byTopic[t] = append(byTopic[t], id)
		}
	}
	names := make([]string, 0, len(byTopic))
	for t := range byTopic {
		names = append(names, t)
	}
	sort.Strings(names)
	for _, name := range names {
		ti, ok := topics(name)
		if !ok || ti.Partitions == 0 {
			continue
		}
		ids := byTopic[name]
		sort.Strings(ids)
		per := map[string][]int32{}
		n := int(ti.Partitions)
		if len(ids) >= n {
			for i, id := range ids {
				per[id] = append(per[id], int32(i%n))
			}
		} else {
			for p := 0; p < n; p++ {
				id := ids[p%len(ids)]
				per[id] = append(per[id], int32(p))
			}
		}
		for _, id := range ids {
			if len(per[id]) > 0 {
				out[id] = append(out[id], TopicPartitions{TopicID: ti.ID, Partitions: per[id]})
			}
		}
	}
	return out
}

func sameStrings(sorted, b []string) bool {
	c := append([]string(nil), b...)
	sort.Strings(c)
	if len(sorted) != len(c) {
		return false
	}
	for i := range c {
		if sorted[i] != c[i] {
			return false
		}
	}
	return true
}

// MemberDescription is one member as ShareGroupDescribe shows it.
type MemberDescription struct {
	MemberID, ClientID, ClientHost string
	RackID                         *string
	MemberEpoch                    int32
	SubscribedTopicNames           []string
	Assignment                     []TopicPartitions
}

// GroupDescription is one share group as ShareGroupDescribe shows it.
type GroupDescription struct {
	GroupID, State string // Empty or Stable
	GroupEpoch     int32
	Members        []MemberDescription
}

// Describe returns groupID's membership; false when this coordinator has no such
// share group.
func (g *Groups) Describe(groupID string, now time.Time) (GroupDescription, bool, error) {
	sh, err := g.shardFor(groupID)
	if err != nil {
		return GroupDescription{}, false, err
	}
	sh.mu.Lock()
	defer sh.mu.Unlock()
	sg := sh.groups[groupID]
	if sg == nil {
		return GroupDescription{}, false, nil
	}
	sg.expire(now)
	d := GroupDescription{GroupID: groupID, State: "Empty", GroupEpoch: sg.epoch}
	if len(sg.members) > 0 {
		d.State = "Stable"
	}
	for _, m := range sg.members {
		d.Members = append(d.Members, MemberDescription{
			MemberID: m.id, ClientID: m.clientID, ClientHost: m.clientHost, RackID: m.rack,
			MemberEpoch: m.epoch, SubscribedTopicNames: m.subscribed, Assignment: sg.assignment[m.id],
		})
	}
	sort.Slice(d.Members, func(i, j int) bool { return d.Members[i].MemberID < d.Members[j].MemberID })
	return d, true, nil
}

// Listed is one share group as ListGroups shows it.
type Listed struct{ GroupID, State string }

// List returns the share groups this node coordinates.
func (g *Groups) List(now time.Time) []Listed {
	var out []Listed
	for _, sh := range g.shards.All() {
		if sh.ctx.Err() != nil {
			continue
		}
		sh.mu.Lock()
		for id, sg := range sh.groups {
			sg.expire(now)
			st := "Empty"
			if len(sg.members) > 0 {
				st = "Stable"
			}
			out = append(out, Listed{GroupID: id, State: st})
		}
		sh.mu.Unlock()
	}
	sort.Slice(out, func(i, j int) bool { return out[i].GroupID < out[j].GroupID })
	return out
}

// IsShareGroup reports whether this coordinator has groupID as a share group.
func (g *Groups) IsShareGroup(groupID string) bool {
	sh, err := g.shardFor(groupID)
	if err != nil {
		return false
	}
	sh.mu.Lock()
	defer sh.mu.Unlock()
	return sh.groups[groupID] != nil
}

// Delete removes an empty share group's membership (DeleteGroups); ErrGroupNotEmpty
// while it has members.
func (g *Groups) Delete(groupID string, now time.Time) (bool, error) {
	sh, err := g.shardFor(groupID)
	if err != nil {
		return false, err
	}
	sh.mu.Lock()
	defer sh.mu.Unlock()
	sg := sh.groups[groupID]
	if sg == nil {
		return false, nil
	}
	if sg.expire(now); len(sg.members) > 0 {
		return true, ErrGroupNotEmpty
	}
	delete(sh.groups, groupID)
	return true, nil
}

// otherKind reports whether groupID is a group of another kind on this node. Never
// call it holding a shard's lock (lock order: the group coordinator's, then ours).
func (g *Groups) otherKind(groupID string) bool {
	return g.cfg.OtherKind != nil && g.cfg.OtherKind(groupID) != ""
}

// Create makes groupID an empty share group on its coordinator when it is not one
// (AlterShareGroupOffsets of a group that does not exist yet): ErrNotShareGroup when
// the id belongs to a group of another kind.
func (g *Groups) Create(groupID string) error {
	sh, err := g.shardFor(groupID)
	if err != nil {
		return err
	}
	other := g.otherKind(groupID)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if sh.groups[groupID] != nil {
		return nil
	}
	if other {
		return notShareGroup(groupID)
	}
	sh.groups[groupID] = &shareGroup{id: groupID, members: map[string]*shareMember{}, assignment: map[string][]TopicPartitions{}}
	return nil
}

// CheckEmpty is nil when groupID may have its offsets changed by an admin request: a
// share group without members, or no group at all on this coordinator (its state may
// outlive the membership, which is not persisted); ErrNotShareGroup for a group of
// another kind, ErrGroupNotEmpty while it has members.
func (g *Groups) CheckEmpty(groupID string, now time.Time) error {
	sh, err := g.shardFor(groupID)
	if err != nil {
		return err
	}
	other := g.otherKind(groupID)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	sg := sh.groups[groupID]
	if sg == nil {
		if other {
			return notShareGroup(groupID)
		}
		return nil
	}
	if sg.expire(now); len(sg.members) > 0 {
		return fmt.Errorf("%w: share group %s has %d members", ErrGroupNotEmpty, groupID, len(sg.members))
	}
	return nil
}
