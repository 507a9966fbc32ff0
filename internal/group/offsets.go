package group

import (
	"slices"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// groupRecords is the group metadata record for the current state, with the given
// assignment per member (nil: none).
func (g *groupMetadata) groupRecords(assignment map[string][]byte, now time.Time) []kv {
	v := kmsg.NewGroupMetadataValue()
	v.Version = groupMetadataValVersion
	v.ProtocolType = g.protocolType
	v.Generation = g.generation
	v.CurrentStateTimestamp = now.UnixMilli()
	if g.protocol != "" {
		p, l := g.protocol, g.leader
		v.Protocol, v.Leader = &p, &l
	}
	for _, id := range g.order {
		m := g.members[id]
		vm := kmsg.NewGroupMetadataValueMember()
		vm.MemberID, vm.InstanceID, vm.ClientID, vm.ClientHost = m.id, m.instanceID, m.clientID, m.clientHost
		vm.RebalanceTimeoutMillis = int32(m.rebalanceTimeout / time.Millisecond)
		vm.SessionTimeoutMillis = int32(m.sessionTimeout / time.Millisecond)
		vm.Subscription = m.metadataFor(g.protocol)
		vm.Assignment = assignment[id]
		if vm.Subscription == nil {
			vm.Subscription = []byte{}
		}
		if vm.Assignment == nil {
			vm.Assignment = []byte{}
		}
		v.Members = append(v.Members, vm)
	}
	g.persisted = true
	return []kv{{key: groupMetadataKey(g.id), value: v.AppendTo(nil)}}
}

// validateCommit is Kafka's ClassicGroup.validateOffsetCommit.
func (g *groupMetadata) validateCommit(memberID string, instanceID *string, generation int32) error {
	if g.phase == Dead {
		return ErrCoordinatorNotAvailable
	}
	if generation < 0 && g.phase == Empty {
		return nil // a commit from outside the group protocol, to an empty group
	}
	if generation >= 0 || memberID != "" || instanceID != nil {
		if instanceID != nil {
			holder, ok := g.static[*instanceID]
			if !ok {
				return ErrUnknownMemberID
			} else if holder != memberID {
				return ErrFencedInstanceID
			}
		} else if g.members[memberID] == nil {
			return ErrUnknownMemberID
		}
		if generation != g.generation {
			return ErrIllegalGeneration
		}
	} else if g.phase != Empty {
		return ErrUnknownMemberID
	}
	if g.phase == CompletingRebalance {
		return ErrRebalanceInProgress
	}
	return nil
}

// commit handles an OffsetCommit: the offsets are written and, once durable, become
// the group's committed offsets. reply gets one error per offset, in request order.
func (g *groupMetadata) commit(now time.Time, req CommitRequest, reply func([]error)) {
	if g.consumer != nil {
		g.consumerCommit(now, req, reply)
		return
	}
	if err := g.validateCommit(req.MemberID, req.InstanceID, req.Generation); err != nil {
		reply(sameError(len(req.Offsets), err))
		return
	}
	if m := g.members[req.MemberID]; m != nil {
		m.lastHeartbeat = now
	}
	errs := make([]error, len(req.Offsets))
	records, accepted := g.offsetRecords(req.Offsets, now, errs)
	if len(records) == 0 {
		reply(errs)
		return
	}
	g.issue(records, func(err error) {
		for _, i := range accepted {
			errs[i] = err
			if err == nil {
				o := req.Offsets[i]
				g.offsets[TopicPartition{o.Topic, o.Partition}] = toOffset(o, now)
			}
		}
		reply(errs)
	})
}

// offsetRecords encodes the offset records of a commit (plain or transactional):
// offsets whose metadata is over offset.metadata.max.bytes get
// ErrOffsetMetadataTooLarge in errs and no record; accepted are the indexes of the
// others, in order.
func (g *groupMetadata) offsetRecords(offsets []OffsetCommit, now time.Time, errs []error) (records []kv, accepted []int) {
	for i, o := range offsets {
		if o.Metadata != nil && len(*o.Metadata) > g.lim.maxMetadataBytes {
			errs[i] = ErrOffsetMetadataTooLarge
			continue
		}
		records = append(records, kv{offsetCommitKey(g.id, o.Topic, o.Partition), offsetCommitValue(toOffset(o, now))})
		accepted = append(accepted, i)
	}
	return records, accepted
}

// sameError is n times err: the answer of a commit refused as a whole.
func sameError(n int, err error) []error {
	errs := make([]error, n)
	for i := range errs {
		errs[i] = err
	}
	return errs
}

func toOffset(o OffsetCommit, now time.Time) offsetAndMetadata {
	om := offsetAndMetadata{offset: o.Offset, leaderEpoch: o.LeaderEpoch, commitTimestamp: now.UnixMilli()}
	if o.Metadata != nil {
		om.metadata = *o.Metadata
	}
	return om
}

// fetchOffsets returns the committed offsets of partitions (in order, -1 for none), or
// of every partition with one (sorted) when partitions is nil.
func (g *groupMetadata) fetchOffsets(partitions []TopicPartition) []CommittedOffset {
	if partitions == nil {
		for tp := range g.offsets {
			partitions = append(partitions, tp)
		}
		slices.SortFunc(partitions, func(a, b TopicPartition) int {
			if c := strings.Compare(a.Topic, b.Topic); c != 0 {
				return c
			}
			return int(a.Partition - b.Partition)
		})
	}
	out := make([]CommittedOffset, len(partitions))
	for i, tp := range partitions {
		out[i] = CommittedOffset{Topic: tp.Topic, Partition: tp.Partition, Offset: -1, LeaderEpoch: -1}
		if o, ok := g.offsets[tp]; ok {
			out[i].Offset, out[i].LeaderEpoch, out[i].Metadata = o.offset, o.leaderEpoch, o.metadata
		}
		out[i].Unstable = g.hasPendingTxnOffset(tp)
	}
	return out
}

// deleteOffsets handles an OffsetDelete (Kafka handleDeleteOffsets): partitions of
// topics an active consumer group subscribes to are refused; the others' offsets are
// tombstoned. reply gets the group error, or one error per partition.
func (g *groupMetadata) deleteOffsets(partitions []TopicPartition, reply func(error, []error)) {
	errs := make([]error, len(partitions))
	switch {
	case g.phase == Dead:
		reply(ErrGroupIDNotFound, nil)
		return
	case g.consumer == nil && g.phase != Empty && g.protocolType != "consumer":
		reply(ErrNonEmptyGroup, nil)
		return
	}
	subscribed, known := g.subscribedTopics()
	active := g.phase != Empty
	if g.consumer != nil {
		active = len(g.consumer.members) > 0
	}
	var records []kv
	var eligible []TopicPartition
	for i, tp := range partitions {
		if active && (!known || subscribed[tp.Topic]) {
			errs[i] = ErrGroupSubscribedToTopic
			continue
		}
		if _, ok := g.offsets[tp]; ok {
			records = append(records, kv{key: offsetCommitKey(g.id, tp.Topic, tp.Partition)})
			eligible = append(eligible, tp)
		}
	}
	if len(records) == 0 {
		reply(nil, errs)
		return
	}
	g.issue(records, func(err error) {
		for i, tp := range partitions {
			if errs[i] == nil && slices.Contains(eligible, tp) {
				errs[i] = err
				if err == nil {
					delete(g.offsets, tp)
				}
			}
		}
		reply(nil, errs)
	})
}

// subscribedTopics is the union of the members' subscriptions for a consumer group,
// decoded from their metadata for the selected protocol; known is false when some
// metadata cannot be decoded.
func (g *groupMetadata) subscribedTopics() (topics map[string]bool, known bool) {
	topics = map[string]bool{}
	if g.consumer != nil {
		// Names only: a regex subscription counts as subscribed to every topic.
		for _, m := range g.consumer.members {
			if m.regex != "" {
				return nil, false
			}
			for _, t := range m.subscribedNames {
				topics[t] = true
			}
		}
		return topics, true
	}
	for _, m := range g.members {
		var meta kmsg.ConsumerMemberMetadata
		if err := meta.ReadFrom(m.metadataFor(g.protocol)); err != nil {
			return nil, false
		}
		for _, t := range meta.Topics {
			topics[t] = true
		}
	}
	return topics, true
}

// deleteGroup handles one group of a DeleteGroups: an empty group's metadata and
// offsets are tombstoned and the group becomes Dead.
func (g *groupMetadata) deleteGroup(now time.Time, reply func(error)) {
	if cg := g.consumer; cg != nil && g.phase != Dead {
		if len(cg.members) > 0 {
			reply(ErrNonEmptyGroup)
			return
		}
		g.transition(Dead, now)
		records := consumerGroupTombstones(g.id, cg)
		for tp := range g.offsets {
			records = append(records, kv{key: offsetCommitKey(g.id, tp.Topic, tp.Partition)})
		}
		g.issue(records, func(err error) {
			if err == nil {
				clear(g.offsets)
				cg.persisted = false
			}
			reply(err)
		})
		return
	}
	switch g.phase {
	case Dead:
		reply(ErrGroupIDNotFound)
		return
	case Empty:
	default:
		reply(ErrNonEmptyGroup)
		return
	}
	g.transition(Dead, now)
	records := []kv{{key: groupMetadataKey(g.id)}}
	for tp := range g.offsets {
		records = append(records, kv{key: offsetCommitKey(g.id, tp.Topic, tp.Partition)})
	}
	g.issue(records, func(err error) {
		if err == nil {
			clear(g.offsets)
			g.persisted = false
		}
		reply(err)
	})
}

// describe is the group's DescribeGroups entry.
func (g *groupMetadata) describe() GroupDescription {
	if g.consumer != nil {
		return GroupDescription{GroupID: g.id}
	}
	d := GroupDescription{GroupID: g.id, State: g.phase.String(), ProtocolType: g.protocolType}
	stable := g.phase == Stable
	if stable {
		d.Protocol = g.protocol
	}
	for _, id := range g.order {
		m := g.members[id]
		md := MemberDescription{MemberID: id, InstanceID: m.instanceID, ClientID: m.clientID, ClientHost: m.clientHost}
		if stable {
			md.Metadata, md.Assignment = m.metadataFor(g.protocol), m.assignment
		}
		d.Members = append(d.Members, md)
	}
	return d
}

// tombstoneIfPersisted queues the removal of the group's metadata record before the
// group is dropped from memory, so that a reload does not bring it back.
func (g *groupMetadata) tombstoneIfPersisted(now time.Time) bool {
	if cg := g.consumer; cg != nil && cg.persisted {
		g.transition(Dead, now)
		g.issue(consumerGroupTombstones(g.id, cg), func(err error) {
			if err == nil {
				cg.persisted = false
			}
		})
		return true
	}
	if !g.persisted {
		return false
	}
	g.transition(Dead, now)
	g.issue([]kv{{key: groupMetadataKey(g.id)}}, func(err error) {
		if err == nil {
			g.persisted = false
		}
	})
	return true
}

// offsetExpiry is when an offset of an empty group expires (KIP-211): retention after
// both the group became empty and the offset was committed. Zero: never.
func (g *groupMetadata) offsetExpiry(o offsetAndMetadata) time.Time {
	if g.phase != Empty || g.lim.offsetsRetention <= 0 || g.consumer != nil && len(g.consumer.members) > 0 {
		return time.Time{}
	}
	base := g.stateSince
	if c := time.UnixMilli(o.commitTimestamp); c.After(base) {
		base = c
	}
	return base.Add(g.lim.offsetsRetention)
}

func (g *groupMetadata) nextOffsetExpiry() time.Time {
	var next time.Time
	for _, o := range g.offsets {
		if exp := g.offsetExpiry(o); !exp.IsZero() && (next.IsZero() || exp.Before(next)) {
			next = exp
		}
	}
	return next
}

// expireOffsets tombstones the offsets of an empty group whose retention passed, and
// drops them from memory at once, as Kafka's offset cleanup does.
func (g *groupMetadata) expireOffsets(now time.Time) {
	var records []kv
	for tp, o := range g.offsets {
		if exp := g.offsetExpiry(o); !exp.IsZero() && !now.Before(exp) {
			records = append(records, kv{key: offsetCommitKey(g.id, tp.Topic, tp.Partition)})
			delete(g.offsets, tp)
		}
	}
	if len(records) > 0 {
		g.issue(records, nil)
	}
}
