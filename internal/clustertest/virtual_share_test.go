package clustertest_test

import (
	"context"
	"encoding/base64"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/runnel-io/runnel/internal/clustertest"
)

// shareMember is a raw KIP-932 share group member (ShareGroupHeartbeat to the group's
// coordinator, ShareFetch to the partition's leader with its acknowledgements
// piggybacked) that records exactly which acknowledgements were answered, which a
// share consumer library does not say record by record.
type shareMember struct {
	t       *testing.T
	c       *clustertest.Cluster
	cl      *kgo.Client
	group   string
	id      string
	topic   string
	topicID [16]byte
	n       int64 // records produced: offsets 0..n-1

	epoch    int32           // member epoch; 0: (re)join at the next heartbeat
	sessions map[int32]int32 // next share session epoch by leader; absent: open one
	pending  []kmsg.ShareFetchRequestTopicPartitionAcknowledgementBatch
	// pendingOffs are the offsets in pending with their types, and uncertain the
	// acknowledgements sent in a request whose answer never came (the leader died):
	// applied or not, nobody knows until the offset is delivered again or the share
	// partition's start offset passes it.
	pendingOffs map[int64]int8
	uncertain   map[int64]int8

	done       map[int64]int8  // offset -> type of its answered ACCEPT (1) or REJECT (3)
	deliveries map[int64]int16 // offset -> highest delivery count seen
	violations []string
	failovers  int // fetches refused or lost while a leader moved
}

// heartbeat keeps the membership (rejoining after a coordinator move with the same
// member id, as KIP-932 members do); errors only wait for the next round.
func (m *shareMember) heartbeat(ctx context.Context) {
	req := kmsg.NewPtrShareGroupHeartbeatRequest()
	req.GroupID, req.MemberID, req.MemberEpoch = m.group, m.id, m.epoch
	if m.epoch == 0 {
		req.SubscribedTopicNames = []string{m.topic}
	}
	resp, err := req.RequestWith(ctx, m.cl)
	switch {
	case err != nil:
	case resp.ErrorCode == kerr.UnknownMemberID.Code || resp.ErrorCode == kerr.FencedMemberEpoch.Code:
		m.epoch = 0
	case resp.ErrorCode == 0:
		m.epoch = resp.MemberEpoch
	}
}

// round sends the pending acknowledgements with a ShareFetch to the leader, checks and
// records what it answers, and queues the acknowledgements of what it acquired.
func (m *shareMember) round(ctx context.Context) {
	t := m.t
	st, err := m.c.LeaderState(m.topic, 0)
	if err != nil {
		time.Sleep(100 * time.Millisecond)
		return
	}
	leader := st.Leader
	req := kmsg.NewPtrShareFetchRequest()
	req.GroupID, req.MemberID = &m.group, &m.id
	req.MaxWaitMillis, req.MaxBytes, req.MaxRecords = 500, 1<<20, 40
	epoch, open := m.sessions[leader]
	req.ShareSessionEpoch = epoch
	rt := kmsg.NewShareFetchRequestTopic()
	rt.TopicID = m.topicID
	rp := kmsg.NewShareFetchRequestTopicPartition()
	rp.AcknowledgementBatches = m.pending
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	sent := m.pendingOffs
	m.pending, m.pendingOffs = nil, map[int64]int8{}

	rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	resp, err := m.cl.Broker(int(leader)).Request(rctx, req)
	cancel()
	if err != nil {
		// No answer: the acknowledgements may or may not have been applied.
		for off, typ := range sent {
			m.uncertain[off] = typ
		}
		delete(m.sessions, leader)
		m.failovers++
		return
	}
	fr := resp.(*kmsg.ShareFetchResponse)
	if fr.ErrorCode != 0 {
		// Refused whole (a session the leader does not know after its restart):
		// nothing was applied.
		for off, typ := range sent {
			m.requeue(off, typ)
		}
		delete(m.sessions, leader)
		m.failovers++
		return
	}
	if !open {
		m.sessions[leader] = 1
	} else {
		m.sessions[leader] = epoch + 1
	}
	for _, ft := range fr.Topics {
		for _, fp := range ft.Partitions {
			if len(sent) > 0 {
				for off, typ := range sent {
					switch {
					case fp.AcknowledgeErrorCode != 0:
						// A partition's error names its first failing batch; the
						// others may have been applied (a new leader refuses the
						// records its predecessor handed out: INVALID_RECORD_STATE).
						m.uncertain[off] = typ
					case typ == 1 || typ == 3:
						m.done[off] = typ
					}
				}
				sent = nil
			}
			if fp.ErrorCode != 0 {
				delete(m.sessions, leader)
				m.failovers++
				continue
			}
			for _, ar := range fp.AcquiredRecords {
				for off := ar.FirstOffset; off <= ar.LastOffset; off++ {
					m.acquired(off, ar.DeliveryCount)
				}
			}
		}
	}
	if len(sent) > 0 && len(fr.Topics) == 0 {
		t.Fatalf("share fetch from node %d answered no partition for %d acknowledgements", leader, len(sent))
	}
}

// requeue queues an acknowledgement again (its request was refused before it was
// applied).
func (m *shareMember) requeue(off int64, typ int8) {
	m.pendingOffs[off] = typ
	b := kmsg.NewShareFetchRequestTopicPartitionAcknowledgementBatch()
	b.FirstOffset, b.LastOffset, b.AcknowledgeTypes = off, off, []int8{typ}
	m.pending = append(m.pending, b)
}

// acquired checks one delivery against the rules and queues its acknowledgement:
// REJECT offsets ending in 3, RELEASE offsets ending in 5 at their first delivery,
// ACCEPT the rest.
func (m *shareMember) acquired(off int64, delivery int16) {
	if typ, ok := m.done[off]; ok {
		m.violations = append(m.violations, fmt.Sprintf("offset %d delivered again (delivery %d) after its %s was answered", off, delivery, map[int8]string{1: "ACCEPT", 3: "REJECT"}[typ]))
	}
	if off < 0 || off >= m.n {
		m.violations = append(m.violations, fmt.Sprintf("offset %d acquired, beyond the %d records produced", off, m.n))
	}
	delete(m.uncertain, off) // delivered again: its unanswered acknowledgement was not applied
	m.deliveries[off] = max(m.deliveries[off], delivery)
	typ := int8(1)
	switch {
	case off%10 == 3:
		typ = 3
	case off%10 == 5 && delivery == 1:
		typ = 2
	}
	m.requeue(off, typ)
}

// TestVirtualShareGroupKills: a share group member consumes 300 records of a 3-replica
// partition, acknowledging each (REJECT, RELEASE then ACCEPT, ACCEPT), while the
// partition's leader is killed (kill -9, server.Node.Abort) and later the share
// coordinator (the leader of the group's __share_group_state partition, FindCoordinator
// key type 2), each restarted before the next. No offset whose ACCEPT or REJECT was
// answered is ever delivered again (internal/share doc.go: at least once, an answered
// acknowledgement is durable across failovers), every offset ends accepted or
// rejected, released offsets come back with a higher delivery count, and
// DescribeShareGroupOffsets ends with the start offset at the log end.
func TestVirtualShareGroupKills(t *testing.T) {
	inVirtualTime(t, func(t *testing.T) {
		c := startVirtual(t, 3)
		const topic, group, n = "share-kill", "share-kill-g", 300
		createTopic(t, c, topic, 1, 3)
		cl := c.Client(t, kgo.RecordPartitioner(kgo.ManualPartitioner()))
		ctx := context.Background()
		adm := kadm.NewClient(cl)
		tds, err := adm.ListTopics(ctx, topic)
		if err != nil || tds[topic].Err != nil {
			t.Fatalf("topic %s: %v %v", topic, err, tds[topic].Err)
		}
		// The group starts at offset 0 (as share.auto.offset.reset=earliest would),
		// set by an admin while the group is empty: AlterShareGroupOffsets.
		alt, err := adm.AlterShareGroupOffsets(ctx, group, kadm.Offsets{topic: {0: {Topic: topic, Partition: 0, At: 0}}})
		if err == nil {
			err = alt.Error()
		}
		if err != nil {
			t.Fatalf("start share group %s at %s-0 offset 0: %v", group, topic, err)
		}
		var recs []*kgo.Record
		for i := range n {
			recs = append(recs, &kgo.Record{Topic: topic, Partition: 0, Value: fmt.Appendf(nil, "%d", i)})
		}
		if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
			t.Fatalf("produce to %s-0: %v", topic, err)
		}
		m := &shareMember{t: t, c: c, cl: cl, group: group, id: "share-kill-member-00000000000000000", topic: topic,
			topicID: tds[topic].ID, n: n, sessions: map[int32]int32{}, pendingOffs: map[int64]int8{},
			uncertain: map[int64]int8{}, done: map[int64]int8{}, deliveries: map[int64]int16{}}

		// complete: every offset answered, or unanswered and past the start offset.
		complete := func() bool {
			for off := range int64(n) {
				if _, ok := m.done[off]; !ok {
					if _, ok := m.uncertain[off]; !ok {
						return false
					}
				}
			}
			// The lag is -1 when the coordinator answering does not lead the
			// partition (the start offset alone says everything is done).
			start, lag := shareStart(t, ctx, c, group, topic)
			return start == n && lag <= 0
		}
		began := time.Now()
		kill := func(what string, node int32) {
			t.Logf("%v (virtual): killing node %d (%s) with %d offsets answered, %d acknowledgements in flight", time.Since(began).Round(time.Millisecond), node, what, len(m.done), len(m.pending))
			c.Kill(int(node))
		}
		leaderKilled, coordKilled := int32(0), int32(0)
		deadline := time.Now().Add(10 * time.Minute) // virtual
		for !complete() {
			if time.Now().After(deadline) {
				t.Fatalf("not done after 10 min (virtual): %d of %d offsets answered, %d uncertain, violations %v", len(m.done), n, len(m.uncertain), m.violations)
			}
			m.heartbeat(ctx)
			m.round(ctx)
			switch {
			case leaderKilled == 0 && len(m.done) >= 80 && len(m.pending) > 0:
				// Mid-stream: acquired records held, their acknowledgements not sent.
				leaderKilled, _ = c.WaitLeader(t, topic, 0, waitTimeout)
				kill("the partition's leader", leaderKilled)
			case leaderKilled > 0 && coordKilled == 0 && len(m.done) >= 180 && len(m.pending) > 0:
				c.Restart(int(leaderKilled))
				c.WaitISR(t, topic, 0, 3, waitTimeout)
				coordKilled = shareCoordinator(t, ctx, cl, group, m.topicID)
				kill("the share coordinator", coordKilled)
			}
		}
		if leaderKilled == 0 || coordKilled == 0 {
			t.Fatalf("finished before both kills (leader %d, coordinator %d)", leaderKilled, coordKilled)
		}
		// The killed coordinator comes back and rejoins the ISR.
		c.Restart(int(coordKilled))
		c.WaitISR(t, topic, 0, 3, waitTimeout)
		for _, v := range m.violations {
			t.Error(v)
		}
		for off := range int64(n) {
			typ, answered := m.done[off]
			switch {
			case !answered:
				// Acknowledged in a request whose answer was lost; the start offset
				// passed it, so it was applied.
			case off%10 == 3 && typ != 3:
				t.Errorf("offset %d: %d, want REJECT", off, typ)
			case off%10 != 3 && typ != 1:
				t.Errorf("offset %d: %d, want ACCEPT", off, typ)
			}
			if off%10 == 5 && m.deliveries[off] < 2 {
				t.Errorf("offset %d released at its first delivery, last delivered with count %d, want >= 2", off, m.deliveries[off])
			}
		}
		t.Logf("done after %v (virtual): %d offsets answered, %d acknowledged without an answer, %d fetches lost or refused across the kills", time.Since(began).Round(time.Millisecond), len(m.done), len(m.uncertain), m.failovers)
	})
}

// shareStart is the share partition's start offset and lag (-1, -1 when unknown),
// asked through a new client, as each `runnel share describe` is. A long-lived
// franz-go client (v1.22.3) keeps a dead group coordinator cached for its sharded
// requests (DescribeShareGroupOffsets) and for ShareGroupHeartbeat: their dial errors
// do not drop the cached coordinator (only its single-coordinator, admin and pinned
// paths do), so it keeps dialing the dead node until its metadata refresh
// (metadata.max.age, 5 min) drops that broker. No answer of Runnel's is involved:
// the dead node answers nothing, and FindCoordinator names the new coordinator.
func shareStart(t *testing.T, ctx context.Context, c *clustertest.Cluster, group, topic string) (int64, int64) {
	t.Helper()
	cl, err := kgo.NewClient(c.ClientDefaults()...)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	offs, err := kadm.NewClient(cl).DescribeShareGroupOffsets(ctx, group)
	if err != nil || offs[group].Err != nil {
		return -1, -1
	}
	so, ok := offs[group].Offsets[topic][0]
	if !ok || so.Err != nil {
		return -1, -1
	}
	return so.StartOffset, so.Lag
}

// shareCoordinator is the node FindCoordinator key type 2 names for group's share
// partition 0 of the topic.
func shareCoordinator(t *testing.T, ctx context.Context, cl *kgo.Client, group string, topicID [16]byte) int32 {
	t.Helper()
	for {
		req := kmsg.NewPtrFindCoordinatorRequest()
		req.CoordinatorType = 2
		req.CoordinatorKeys = []string{group + ":" + base64.RawURLEncoding.EncodeToString(topicID[:]) + ":0"}
		resp, err := req.RequestWith(ctx, cl)
		if err == nil && len(resp.Coordinators) == 1 && resp.Coordinators[0].ErrorCode == 0 {
			return resp.Coordinators[0].NodeID
		}
		if ctx.Err() != nil {
			t.Fatalf("share coordinator of group %s: %v", group, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
