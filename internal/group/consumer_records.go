package group

// Records of consumer groups in __consumer_offsets, keyed as Kafka keys them (the key's
// leading int16 is the record type; see doc.go). kmsg has no types for them, so they
// are encoded here: keys as Kafka's non-flexible key schemas (int16 type, then int16-
// length strings), values as version 0 of flexible schemas (int16 version, compact
// strings and arrays, an empty tag section closing each struct).
//
//	3 ConsumerGroupMetadata            key {group}         value {epoch int32, metadataHash int64}
//	5 ConsumerGroupMemberMetadata      key {group, member} value {instanceId?, rackId?, clientId, clientHost,
//	                                                              subscribedTopicNames[], subscribedTopicRegex?,
//	                                                              serverAssignor?, rebalanceTimeoutMs int32, classicMember? (null)}
//	6 ConsumerGroupTargetAssignmentMetadata key {group}    value {assignmentEpoch int32}
//	7 ConsumerGroupTargetAssignmentMember   key {group, member} value {topicPartitions[{topicId uuid, partitions[] int32}]}
//	8 ConsumerGroupCurrentMemberAssignment  key {group, member} value {memberEpoch, previousMemberEpoch int32,
//	                                                              state int8, assigned[tp], pendingRevocation[tp]}
//
// In record 8 each topic's entry also lists the partitions' assignment epochs
// (Runnel's field, parallel to partitions), so that commits stay fenced by assignment
// epoch across a coordinator failover.

import (
	"encoding/binary"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"
)

const (
	recConsumerGroupMetadata   = 3
	recConsumerMemberMetadata  = 5
	recTargetAssignmentMeta    = 6
	recTargetAssignmentMember  = 7
	recCurrentMemberAssignment = 8
)

type recWriter struct{ b []byte }

func (w *recWriter) i8(v int8)   { w.b = append(w.b, byte(v)) }
func (w *recWriter) i16(v int16) { w.b = binary.BigEndian.AppendUint16(w.b, uint16(v)) }
func (w *recWriter) i32(v int32) { w.b = binary.BigEndian.AppendUint32(w.b, uint32(v)) }
func (w *recWriter) i64(v int64) { w.b = binary.BigEndian.AppendUint64(w.b, uint64(v)) }
func (w *recWriter) uv(v int)    { w.b = binary.AppendUvarint(w.b, uint64(v)) }
func (w *recWriter) keyStr(s string) {
	w.i16(int16(len(s)))
	w.b = append(w.b, s...)
}
func (w *recWriter) str(s string) {
	w.uv(len(s) + 1)
	w.b = append(w.b, s...)
}
func (w *recWriter) nstr(s *string) {
	if s == nil {
		w.uv(0)
		return
	}
	w.str(*s)
}
func (w *recWriter) tags() { w.uv(0) }

// parts writes a partSet as compact array of {topicId, partitions[], [epochs[]]}.
func (w *recWriter) parts(s partSet, epochs bool) {
	tps := s.sorted()
	w.uv(len(tps) + 1)
	for _, tp := range tps {
		w.b = append(w.b, tp.TopicID[:]...)
		w.uv(len(tp.Partitions) + 1)
		for _, p := range tp.Partitions {
			w.i32(p)
		}
		if epochs {
			w.uv(len(tp.Partitions) + 1)
			for _, p := range tp.Partitions {
				w.i32(s[tp.TopicID][p])
			}
		}
		w.tags()
	}
}

func consumerKey(typ int16, group string, member *string) []byte {
	w := recWriter{}
	w.i16(typ)
	w.keyStr(group)
	if member != nil {
		w.keyStr(*member)
	}
	return w.b
}

func groupEpochRecord(group string, cg *consumerGroup) kv {
	w := recWriter{}
	w.i16(0)
	w.i32(cg.groupEpoch)
	w.i64(int64(cg.subscriptionHash))
	w.tags()
	cg.persisted = true
	return kv{consumerKey(recConsumerGroupMetadata, group, nil), w.b}
}

func targetEpochRecord(group string, cg *consumerGroup) kv {
	w := recWriter{}
	w.i16(0)
	w.i32(cg.assignmentEpoch)
	w.tags()
	return kv{consumerKey(recTargetAssignmentMeta, group, nil), w.b}
}

func memberMetadataRecord(group string, m *consumerMember) kv {
	w := recWriter{}
	w.i16(0)
	w.nstr(m.instanceID)
	w.nstr(m.rackID)
	w.str(m.clientID)
	w.str(m.clientHost)
	w.uv(len(m.subscribedNames) + 1)
	for _, n := range m.subscribedNames {
		w.str(n)
	}
	var regex, assignor *string
	if m.regex != "" {
		regex = &m.regex
	}
	if m.serverAssignor != "" {
		assignor = &m.serverAssignor
	}
	w.nstr(regex)
	w.nstr(assignor)
	w.i32(int32(m.rebalanceTimeout / time.Millisecond))
	w.classicMember(m.classic)
	w.tags()
	return kv{consumerKey(recConsumerMemberMetadata, group, &m.id), w.b}
}

func targetMemberRecord(group, member string, s partSet) kv {
	w := recWriter{}
	w.i16(0)
	w.parts(s, false)
	w.tags()
	return kv{consumerKey(recTargetAssignmentMember, group, &member), w.b}
}

func currentAssignmentRecord(group string, m *consumerMember) kv {
	w := recWriter{}
	w.i16(0)
	w.i32(m.epoch)
	w.i32(m.previousEpoch)
	w.i8(int8(m.state))
	w.parts(m.assigned, true)
	w.parts(m.pending, true)
	w.tags()
	return kv{consumerKey(recCurrentMemberAssignment, group, &m.id), w.b}
}

// memberTombstones remove a member's three records.
func memberTombstones(group, member string) []kv {
	return []kv{
		{key: consumerKey(recCurrentMemberAssignment, group, &member)},
		{key: consumerKey(recTargetAssignmentMember, group, &member)},
		{key: consumerKey(recConsumerMemberMetadata, group, &member)},
	}
}

// consumerGroupTombstones remove every record of a consumer group (its offsets aside).
func consumerGroupTombstones(group string, cg *consumerGroup) []kv {
	var out []kv
	for _, id := range cg.sortedMemberIDs() {
		out = append(out, memberTombstones(group, id)...)
	}
	return append(out,
		kv{key: consumerKey(recTargetAssignmentMeta, group, nil)},
		kv{key: consumerKey(recConsumerGroupMetadata, group, nil)})
}

// recReader decodes the fields recWriter wrote; the first error sticks.
type recReader struct {
	b   []byte
	err error
}

var errShortConsumerRecord = errors.New("truncated consumer group record")

func (r *recReader) take(n int) []byte {
	if r.err != nil || n < 0 || len(r.b) < n {
		r.err = errShortConsumerRecord
		return nil
	}
	v := r.b[:n]
	r.b = r.b[n:]
	return v
}
func (r *recReader) i8() int8 {
	if v := r.take(1); v != nil {
		return int8(v[0])
	}
	return 0
}
func (r *recReader) i16() int16 {
	if v := r.take(2); v != nil {
		return int16(binary.BigEndian.Uint16(v))
	}
	return 0
}
func (r *recReader) i32() int32 {
	if v := r.take(4); v != nil {
		return int32(binary.BigEndian.Uint32(v))
	}
	return 0
}
func (r *recReader) i64() int64 {
	if v := r.take(8); v != nil {
		return int64(binary.BigEndian.Uint64(v))
	}
	return 0
}
func (r *recReader) uv() int {
	if r.err != nil {
		return 0
	}
	v, n := binary.Uvarint(r.b)
	if n <= 0 || v > 1<<30 {
		r.err = errShortConsumerRecord
		return 0
	}
	r.b = r.b[n:]
	return int(v)
}
func (r *recReader) keyStr() string { return string(r.take(int(r.i16()))) }
func (r *recReader) nstr() *string {
	n := r.uv()
	if n == 0 || r.err != nil {
		return nil
	}
	s := string(r.take(n - 1))
	return &s
}
func (r *recReader) str() string {
	if s := r.nstr(); s != nil {
		return *s
	}
	return ""
}
func (r *recReader) skipTags() {
	for n := r.uv(); n > 0 && r.err == nil; n-- {
		r.uv()
		r.take(r.uv())
	}
}
func (r *recReader) parts(epochs bool) partSet {
	s := partSet{}
	for n := r.uv() - 1; n > 0 && r.err == nil; n-- {
		var t topicID
		copy(t[:], r.take(16))
		ps := make([]int32, max(r.uv()-1, 0))
		for i := range ps {
			ps[i] = r.i32()
		}
		es := make([]int32, len(ps))
		if epochs {
			if m := r.uv() - 1; m == len(ps) {
				for i := range es {
					es[i] = r.i32()
				}
			} else {
				r.err = fmt.Errorf("%w: %d epochs for %d partitions", errShortConsumerRecord, m, len(ps))
			}
		}
		for i, p := range ps {
			s.add(t, p, es[i])
		}
		r.skipTags()
	}
	return s
}

// loadedConsumer is what the replay of a partition knows about a consumer group.
type loadedConsumer struct {
	// epoch is nil when the group record is absent or tombstoned.
	epoch       *int32
	hash        uint64
	targetEpoch int32
	members     map[string]*consumerMember
	targets     map[string]partSet
	currents    map[string]*consumerMember // epoch, state and partitions only
}

func newLoadedConsumer() *loadedConsumer {
	return &loadedConsumer{members: map[string]*consumerMember{}, targets: map[string]partSet{}, currents: map[string]*consumerMember{}}
}

// decodeConsumerRecord applies one consumer group record (key type 3, 5-8) to lc.
func decodeConsumerRecord(typ int16, key, value []byte, groupOf func(string) *loadedConsumer) error {
	kr := recReader{b: key[2:]}
	group := kr.keyStr()
	member := ""
	if typ == recConsumerMemberMetadata || typ == recTargetAssignmentMember || typ == recCurrentMemberAssignment {
		member = kr.keyStr()
	}
	if kr.err != nil {
		return fmt.Errorf("consumer group record key type %d: %w", typ, kr.err)
	}
	lc := groupOf(group)
	r := recReader{b: value}
	if value != nil {
		r.i16() // value version 0
	}
	switch typ {
	case recConsumerGroupMetadata:
		if value == nil {
			*lc = *newLoadedConsumer()
			return nil
		}
		e := r.i32()
		lc.epoch, lc.hash = &e, uint64(r.i64())
	case recTargetAssignmentMeta:
		if value != nil {
			lc.targetEpoch = r.i32()
		}
	case recConsumerMemberMetadata:
		if value == nil {
			delete(lc.members, member)
			return nil
		}
		m := &consumerMember{id: member, instanceID: r.nstr(), rackID: r.nstr(), clientID: r.str(), clientHost: r.str()}
		for n := r.uv() - 1; n > 0 && r.err == nil; n-- {
			m.subscribedNames = append(m.subscribedNames, r.str())
		}
		if re := r.nstr(); re != nil {
			m.regex = *re
			m.re, _ = compileSubscription(m.regex)
		}
		if a := r.nstr(); a != nil {
			m.serverAssignor = *a
		}
		m.rebalanceTimeout = time.Duration(r.i32()) * time.Millisecond
		m.classic = r.classicMember()
		lc.members[member] = m
	case recTargetAssignmentMember:
		if value == nil {
			delete(lc.targets, member)
			return nil
		}
		lc.targets[member] = r.parts(false)
	case recCurrentMemberAssignment:
		if value == nil {
			delete(lc.currents, member)
			return nil
		}
		m := &consumerMember{epoch: r.i32(), previousEpoch: r.i32(), state: memberState(r.i8())}
		m.assigned, m.pending = r.parts(true), r.parts(true)
		lc.currents[member] = m
	}
	if r.err != nil {
		return fmt.Errorf("consumer group record type %d of group %s: %w", typ, group, r.err)
	}
	return nil
}

// restoreConsumerGroup rebuilds a consumer group from its replayed records. Members
// start a fresh session at now, as Kafka does on load, and keep their epochs and
// assignments, so that a coordinator failover moves no partition.
func restoreConsumerGroup(lc *loadedConsumer, lim limits, now time.Time) *consumerGroup {
	cg := newConsumerGroup()
	cg.persisted = true
	cg.groupEpoch, cg.subscriptionHash, cg.assignmentEpoch = *lc.epoch, lc.hash, lc.targetEpoch
	for _, id := range slices.Sorted(maps.Keys(lc.members)) {
		m := lc.members[id]
		m.assigned, m.pending, m.state = partSet{}, partSet{}, memberStable
		if cur := lc.currents[id]; cur != nil {
			m.epoch, m.previousEpoch, m.state = cur.epoch, cur.previousEpoch, cur.state
			m.assigned, m.pending = cur.assigned, cur.pending
		}
		m.sessionTimeout, m.lastHeartbeat = lim.consumerSessionTimeout, now
		if m.classic != nil {
			m.sessionTimeout = m.classic.sessionTimeout
		}
		if m.state == memberUnrevoked {
			m.revokeDeadline = now.Add(m.rebalanceTimeout)
		}
		cg.members[id] = m
		if m.instanceID != nil {
			cg.static[*m.instanceID] = id
		}
		cg.setOwnership(id, nil, nil, m.assigned, m.pending)
		if t, ok := lc.targets[id]; ok {
			cg.target[id] = t
		}
	}
	cg.assignor = cg.preferredAssignor(lim.consumerAssignors)
	return cg
}
