package group_test

// End-to-end tests of consumer groups against a real node, with real clients:
// franz-go (eager and cooperative-sticky balancers, static members), sarama and
// kafka-go. One node serves every test; each test uses its own topic and group.

import (
	"context"
	"fmt"
	"net"
	"os"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/runnel-io/runnel/internal/clustertest"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// shared is the one node every test of the binary uses (internal/clustertest's in-process
// mode on loopback, started by the first test that needs it): starting a node per
// test would cost more than most of these tests take.
var shared = clustertest.NewShared(clustertest.Options{Nodes: 1, InProcess: true, StartTimeout: 60 * time.Second, Sets: []string{
	"offsets.topic.num.partitions=5", "group.initial.rebalance.delay.ms=0", "group.min.session.timeout.ms=1000",
	// KIP-848 groups (e2e_consumer_test.go): members killed are fenced after 3 s.
	"group.consumer.session.timeout.ms=3000", "group.consumer.heartbeat.interval.ms=300",
}})

func TestMain(m *testing.M) { os.Exit(shared.Main(m)) }

// brokerAddr starts the shared node on first use and returns its Kafka address.
func brokerAddr(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("end-to-end test")
	}
	return shared.Get(t).Node(1).KafkaAddr
}

// seed are the options every franz-go client of these tests starts from.
func seed(t *testing.T) []kgo.Opt {
	return []kgo.Opt{kgo.SeedBrokers(brokerAddr(t))}
}

func newAdmin(t *testing.T) *kadm.Client {
	t.Helper()
	cl, err := kgo.NewClient(seed(t)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return kadm.NewClient(cl)
}

// createTopic creates a topic and produces n records ("0".."n-1") round robin.
func createTopic(t *testing.T, name string, partitions int32, n int) {
	t.Helper()
	adm := newAdmin(t)
	ctx := context.Background()
	if _, err := adm.CreateTopic(ctx, partitions, 1, nil, name); err != nil {
		t.Fatalf("create topic: %v", err)
	}
	if n == 0 {
		return
	}
	produce(t, name, 0, n)
}

func produce(t *testing.T, topic string, from, to int) {
	t.Helper()
	cl, err := kgo.NewClient(append(seed(t), kgo.RecordPartitioner(kgo.RoundRobinPartitioner()))...)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	var rs []*kgo.Record
	for i := from; i < to; i++ {
		rs = append(rs, &kgo.Record{Topic: topic, Value: []byte(fmt.Sprint(i))})
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := cl.ProduceSync(ctx, rs...).FirstErr(); err != nil {
		t.Fatalf("produce: %v", err)
	}
}

// eventually polls fn until it returns nil or d passes.
func eventually(t *testing.T, d time.Duration, what string, fn func() error) {
	t.Helper()
	deadline := time.Now().Add(d)
	var err error
	for time.Now().Before(deadline) {
		if err = fn(); err == nil {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("%s never happened: %v", what, err)
}

// member is one franz-go group member whose assignment is tracked.
type member struct {
	name string
	cl   *kgo.Client

	mu       sync.Mutex
	assigned map[int32]bool
	revokes  int
	assigns  int
	values   []string
}

func (m *member) partitions() []int32 {
	m.mu.Lock()
	defer m.mu.Unlock()
	var ps []int32
	for p := range m.assigned {
		ps = append(ps, p)
	}
	sort.Slice(ps, func(i, j int) bool { return ps[i] < ps[j] })
	return ps
}

// memberOpts configures newMember.
type memberOpts struct {
	balancer kgo.GroupBalancer
	instance string
	dialer   func(ctx context.Context, network, host string) (net.Conn, error)
	extra    []kgo.Opt
}

func newMember(t *testing.T, name, group, topic string, o memberOpts) *member {
	t.Helper()
	m := &member{name: name, assigned: map[int32]bool{}}
	opts := append(seed(t),
		kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic),
		kgo.ClientID(name), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.SessionTimeout(3*time.Second), kgo.HeartbeatInterval(300*time.Millisecond),
		kgo.RebalanceTimeout(10*time.Second), kgo.FetchMaxWait(200*time.Millisecond),
		kgo.OnPartitionsAssigned(func(_ context.Context, _ *kgo.Client, a map[string][]int32) {
			m.mu.Lock()
			defer m.mu.Unlock()
			m.assigns++
			for _, p := range a[topic] {
				m.assigned[p] = true
			}
		}),
		kgo.OnPartitionsRevoked(func(ctx context.Context, cl *kgo.Client, r map[string][]int32) {
			m.mu.Lock()
			m.revokes++
			for _, p := range r[topic] {
				delete(m.assigned, p)
			}
			m.mu.Unlock()
			cl.CommitUncommittedOffsets(ctx)
		}),
		kgo.OnPartitionsLost(func(_ context.Context, _ *kgo.Client, l map[string][]int32) {
			m.mu.Lock()
			defer m.mu.Unlock()
			for _, p := range l[topic] {
				delete(m.assigned, p)
			}
		}),
	)
	if o.balancer != nil {
		opts = append(opts, kgo.Balancers(o.balancer))
	}
	if o.instance != "" {
		opts = append(opts, kgo.InstanceID(o.instance))
	}
	if o.dialer != nil {
		opts = append(opts, kgo.Dialer(o.dialer))
	}
	opts = append(opts, o.extra...)
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		t.Fatal(err)
	}
	m.cl = cl
	return m
}

// poll consumes in the background until ctx ends, recording values.
func (m *member) poll(ctx context.Context, wg *sync.WaitGroup) {
	wg.Add(1)
	go func() {
		defer wg.Done()
		for ctx.Err() == nil {
			fs := m.cl.PollFetches(ctx)
			fs.EachRecord(func(r *kgo.Record) {
				m.mu.Lock()
				m.values = append(m.values, string(r.Value))
				m.mu.Unlock()
			})
		}
	}()
}

func (m *member) consumed() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]string(nil), m.values...)
}

// waitAssignment waits until the members' assignments are disjoint, cover every
// partition of an n-partition topic, and each member has one.
func waitAssignment(t *testing.T, n int32, members ...*member) {
	t.Helper()
	eventually(t, 30*time.Second, "a full, disjoint assignment", func() error {
		var hs []holding
		for _, m := range members {
			hs = append(hs, holding{m.name, m.partitions()})
		}
		return spreadError(n, hs)
	})
}

// holding is what one member of a group holds now.
type holding struct {
	name       string
	partitions []int32
}

// spreadError is nil when the holdings are disjoint, cover every partition of an
// n-partition topic, and each holds some; else it says which of these fails.
func spreadError(n int32, hs []holding) error {
	seen := map[int32]string{}
	for _, h := range hs {
		if len(h.partitions) == 0 {
			return fmt.Errorf("%s holds no partition", h.name)
		}
		for _, p := range h.partitions {
			if other, dup := seen[p]; dup {
				return fmt.Errorf("partition %d held by %s and %s", p, other, h.name)
			}
			seen[p] = h.name
		}
	}
	if int32(len(seen)) != n {
		return fmt.Errorf("%d of %d partitions held", len(seen), n)
	}
	return nil
}

// waitConsumedAll waits until the members together consumed every value 0..n-1.
func waitConsumedAll(t *testing.T, n int, members ...*member) {
	t.Helper()
	eventually(t, 30*time.Second, fmt.Sprintf("consuming all %d records", n), func() error {
		got := map[string]bool{}
		for _, m := range members {
			for _, v := range m.consumed() {
				got[v] = true
			}
		}
		for i := 0; i < n; i++ {
			if !got[fmt.Sprint(i)] {
				return fmt.Errorf("record %d not consumed (%d distinct so far)", i, len(got))
			}
		}
		return nil
	})
}

func TestFranzGoGroupMembersShareJoinLeaveCrash(t *testing.T) {
	for _, bal := range []struct {
		name string
		b    kgo.GroupBalancer
	}{{"eager-range", kgo.RangeBalancer()}, {"cooperative-sticky", kgo.CooperativeStickyBalancer()}} {
		t.Run(bal.name, func(t *testing.T) {
			topic, group := "share-"+bal.name, "g-share-"+bal.name
			createTopic(t, topic, 6, 60)
			ctx, cancel := context.WithCancel(context.Background())
			var wg sync.WaitGroup
			defer func() { cancel(); wg.Wait() }()

			a := newMember(t, "a", group, topic, memberOpts{balancer: bal.b})
			defer a.cl.Close()
			a.poll(ctx, &wg)
			waitAssignment(t, 6, a)

			// b joins: the partitions are shared.
			b := newMember(t, "b", group, topic, memberOpts{balancer: bal.b})
			b.poll(ctx, &wg)
			waitAssignment(t, 6, a, b)
			waitConsumedAll(t, 60, a, b)

			// c joins, then leaves cleanly: a and b take its partitions back.
			c := newMember(t, "c", group, topic, memberOpts{balancer: bal.b})
			cctx, ccancel := context.WithCancel(ctx)
			var cwg sync.WaitGroup
			c.poll(cctx, &cwg)
			waitAssignment(t, 6, a, b, c)
			ccancel()
			cwg.Wait()
			c.cl.Close() // LeaveGroup
			waitAssignment(t, 6, a, b)

			// b crashes (its connections die and no LeaveGroup is sent): once its session
			// expires a owns everything and consumes what is produced next.
			d := newCrashableDialer()
			b2 := newMember(t, "b2", group, topic, memberOpts{balancer: bal.b, dialer: d.dial})
			b2ctx, b2cancel := context.WithCancel(ctx)
			var b2wg sync.WaitGroup
			b2.poll(b2ctx, &b2wg)
			waitAssignment(t, 6, a, b, b2)
			b.cl.Close()
			waitAssignment(t, 6, a, b2)
			d.crash()
			waitAssignment(t, 6, a)
			produce(t, topic, 60, 90)
			eventually(t, 30*time.Second, "a consuming the records produced after the crash", func() error {
				got := map[string]bool{}
				for _, v := range a.consumed() {
					got[v] = true
				}
				for i := 60; i < 90; i++ {
					if !got[fmt.Sprint(i)] {
						return fmt.Errorf("record %d missing", i)
					}
				}
				return nil
			})
			b2cancel()
			b2wg.Wait()
			lctx, lcancel := context.WithTimeout(context.Background(), time.Second)
			b2.cl.LeaveGroupContext(lctx)
			lcancel()
			b2.cl.Close()
		})
	}
}

// crashableDialer dials normally until crash, which closes every connection it made
// and makes further dials fail, like a process that died.
type crashableDialer struct {
	mu      sync.Mutex
	crashed bool
	conns   []net.Conn
}

func newCrashableDialer() *crashableDialer { return &crashableDialer{} }

func (d *crashableDialer) dial(ctx context.Context, network, host string) (net.Conn, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.crashed {
		return nil, fmt.Errorf("crashed")
	}
	c, err := (&net.Dialer{}).DialContext(ctx, network, host)
	if err == nil {
		d.conns = append(d.conns, c)
	}
	return c, err
}

func (d *crashableDialer) crash() {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.crashed = true
	for _, c := range d.conns {
		c.Close()
	}
}

// TestFranzGoCommitAndResumeWithoutGap consumes part of a topic, commits exactly what
// was consumed, closes, and checks that the next member of the group resumes right
// after: every record exactly once across the two runs.
func TestFranzGoCommitAndResumeWithoutGap(t *testing.T) {
	topic, group := "resume", "g-resume"
	createTopic(t, topic, 3, 90)
	consume := func(name string, limit int) []string {
		m := newMember(t, name, group, topic, memberOpts{extra: []kgo.Opt{kgo.DisableAutoCommit()}})
		defer m.cl.Close()
		var got []string
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		for len(got) < limit && ctx.Err() == nil {
			fs := m.cl.PollRecords(ctx, limit-len(got))
			var recs []*kgo.Record
			fs.EachRecord(func(r *kgo.Record) {
				recs = append(recs, r)
				got = append(got, string(r.Value))
			})
			if len(recs) > 0 {
				if err := m.cl.CommitRecords(ctx, recs...); err != nil {
					t.Fatalf("commit: %v", err)
				}
			}
		}
		return got
	}
	first := consume("first", 40)
	second := consume("second", 50)
	seen := map[string]int{}
	for _, v := range append(first, second...) {
		seen[v]++
	}
	for i := 0; i < 90; i++ {
		if n := seen[fmt.Sprint(i)]; n != 1 {
			t.Fatalf("record %d consumed %d times (first run %d records, second %d)", i, n, len(first), len(second))
		}
	}
	adm := newAdmin(t)
	offs, err := adm.FetchOffsets(context.Background(), group)
	if err != nil {
		t.Fatal(err)
	}
	var total int64
	offs.Each(func(o kadm.OffsetResponse) { total += o.At })
	if total != 90 {
		t.Fatalf("committed offsets sum to %d, want 90", total)
	}
}

// TestFranzGoStaticMemberRestartWithoutRebalance restarts each static member in turn
// (so the leader too) within its session timeout: it gets its partitions back in the
// same generation and the other member sees no rebalance.
func TestFranzGoStaticMemberRestartWithoutRebalance(t *testing.T) {
	topic, group := "static", "g-static"
	createTopic(t, topic, 4, 0)
	type running struct {
		m      *member
		cancel context.CancelFunc
		wg     sync.WaitGroup
	}
	start := func(name string) *running {
		r := &running{m: newMember(t, name, group, topic, memberOpts{balancer: kgo.RangeBalancer(), instance: "inst-" + name})}
		ctx, cancel := context.WithCancel(context.Background())
		r.cancel = cancel
		r.m.poll(ctx, &r.wg)
		return r
	}
	stop := func(r *running) { // a static member sends no LeaveGroup on close
		r.cancel()
		r.wg.Wait()
		r.m.cl.Close()
	}
	rs := []*running{start("a"), start("b")}
	defer func() {
		for _, r := range rs {
			stop(r)
		}
	}()
	waitAssignment(t, 4, rs[0].m, rs[1].m)
	_, gen := rs[0].m.cl.GroupMetadata()
	for i := range rs {
		other := rs[1-i].m
		other.mu.Lock()
		assigns, revokes := other.assigns, other.revokes
		other.mu.Unlock()
		parts := rs[i].m.partitions()
		stop(rs[i])
		rs[i] = start(rs[i].m.name)
		eventually(t, 20*time.Second, "the restarted static member getting its partitions", func() error {
			if got := rs[i].m.partitions(); fmt.Sprint(got) != fmt.Sprint(parts) {
				return fmt.Errorf("%s has %v after its restart, had %v", rs[i].m.name, got, parts)
			}
			return nil
		})
		time.Sleep(time.Second) // give a rebalance, if any, the time to show
		for _, r := range rs {
			if _, g := r.m.cl.GroupMetadata(); g != gen {
				t.Fatalf("%s is in generation %d, want %d: the restart rebalanced", r.m.name, g, gen)
			}
		}
		other.mu.Lock()
		if other.assigns != assigns || other.revokes != revokes {
			t.Errorf("%s saw assigns %d->%d revokes %d->%d: the restart rebalanced", other.name, assigns, other.assigns, revokes, other.revokes)
		}
		other.mu.Unlock()
	}
}

// TestGroupAdmin drives ListGroups, DescribeGroups, OffsetDelete and DeleteGroups
// through kadm.
func TestGroupAdmin(t *testing.T) {
	topic, group := "admin", "g-admin"
	createTopic(t, topic, 2, 10)
	adm := newAdmin(t)
	bg := context.Background()
	ctx, cancel := context.WithCancel(bg)
	var wg sync.WaitGroup
	m := newMember(t, "admin-member", group, topic, memberOpts{})
	m.poll(ctx, &wg)
	waitAssignment(t, 2, m)
	waitConsumedAll(t, 10, m)
	if err := m.cl.CommitUncommittedOffsets(bg); err != nil {
		t.Fatal(err)
	}
	listed, err := adm.ListGroups(bg, "Stable")
	if err != nil || !contains(listed.Groups(), group) {
		t.Fatalf("stable groups %v: %v", listed.Groups(), err)
	}
	if listed, _ := adm.ListGroups(bg, "Empty"); contains(listed.Groups(), group) {
		t.Fatal("an active group listed as Empty")
	}
	desc, err := adm.DescribeGroups(bg, group)
	if err != nil {
		t.Fatal(err)
	}
	d := desc[group]
	if d.State != "Stable" || len(d.Members) != 1 || d.Protocol != "cooperative-sticky" || d.Members[0].ClientID != "admin-member" {
		t.Fatalf("describe: %+v", d)
	}
	if a, ok := d.Members[0].Assigned.AsConsumer(); !ok || len(a.Topics) != 1 || len(a.Topics[0].Partitions) != 2 {
		t.Fatalf("assignment in describe: %+v", d.Members[0].Assigned)
	}
	del, err := adm.DeleteGroups(bg, group)
	if err != nil || del[group].Err == nil || !strings.Contains(del[group].Err.Error(), "NON_EMPTY_GROUP") {
		t.Fatalf("delete of an active group: %+v %v", del, err)
	}
	os := make(kadm.TopicsSet)
	os.Add(topic, 0)
	odel, err := adm.DeleteOffsets(bg, group, os)
	if err != nil || odel.Error() == nil || !strings.Contains(odel.Error().Error(), "GROUP_SUBSCRIBED_TO_TOPIC") {
		t.Fatalf("offset delete of a subscribed topic: %v %v", odel, err)
	}
	cancel()
	wg.Wait()
	m.cl.Close()
	eventually(t, 10*time.Second, "the group becoming Empty", func() error {
		desc, err := adm.DescribeGroups(bg, group)
		if err != nil {
			return err
		}
		if s := desc[group].State; s != "Empty" {
			return fmt.Errorf("state %s", s)
		}
		return nil
	})
	if odel, err := adm.DeleteOffsets(bg, group, os); err != nil || odel.Error() != nil {
		t.Fatalf("offset delete of an empty group: %v %v", odel, err)
	}
	offs, _ := adm.FetchOffsets(bg, group)
	if _, ok := offs.Lookup(topic, 0); ok {
		t.Fatal("partition 0's offset survived OffsetDelete")
	}
	if _, ok := offs.Lookup(topic, 1); !ok {
		t.Fatal("partition 1's offset was deleted too")
	}
	if del, err := adm.DeleteGroups(bg, group); err != nil || del[group].Err != nil {
		t.Fatalf("delete: %+v %v", del, err)
	}
	listed, _ = adm.ListGroups(bg)
	if contains(listed.Groups(), group) {
		t.Fatal("deleted group still listed")
	}
	offs, _ = adm.FetchOffsets(bg, group)
	if _, ok := offs.Lookup(topic, 1); ok {
		t.Fatal("a deleted group's offsets survived")
	}
}

func contains(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}

// TestOffsetsSurviveNodeRestart commits offsets and group metadata, restarts the node
// on the same data directory, and reads them back: the coordinator replays
// __consumer_offsets when it leads its partitions again.
func TestOffsetsSurviveNodeRestart(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end test")
	}
	// A cluster of its own: the test restarts its node.
	c := clustertest.Start(t, clustertest.Options{Nodes: 1, InProcess: true, Sets: []string{
		"offsets.topic.num.partitions=3", "group.initial.rebalance.delay.ms=0"}})
	client := func() *kadm.Client { return kadm.NewClient(c.Client(t)) }
	adm := client()
	ctx := context.Background()
	if _, err := adm.CreateTopic(ctx, 2, 1, nil, "durable"); err != nil {
		t.Fatal(err)
	}
	offsets := kadm.Offsets{}
	offsets.Add(kadm.Offset{Topic: "durable", Partition: 0, At: 11, LeaderEpoch: -1, Metadata: "m0"})
	offsets.Add(kadm.Offset{Topic: "durable", Partition: 1, At: 22, LeaderEpoch: -1})
	for _, g := range []string{"g-durable-1", "g-durable-2"} {
		resp, err := adm.CommitOffsets(ctx, g, offsets)
		if err != nil || resp.Error() != nil {
			t.Fatalf("commit %s: %v %v", g, err, resp.Error())
		}
	}
	if _, err := adm.DeleteGroups(ctx, "g-durable-2"); err != nil {
		t.Fatal(err)
	}
	if err := c.Stop(1); err != nil {
		t.Fatalf("stop: %v", err)
	}

	c.Restart(1)
	adm = client()
	var got kadm.OffsetResponses
	eventually(t, 30*time.Second, "the offsets read back after the restart", func() error {
		var err error
		got, err = adm.FetchOffsets(ctx, "g-durable-1")
		if err == nil {
			err = got.Error()
		}
		return err
	})
	o0, _ := got.Lookup("durable", 0)
	o1, _ := got.Lookup("durable", 1)
	if o0.At != 11 || o0.Metadata != "m0" || o1.At != 22 {
		t.Fatalf("after restart: %+v %+v", o0, o1)
	}
	deleted, err := adm.FetchOffsets(ctx, "g-durable-2")
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := deleted.Lookup("durable", 0); ok {
		t.Fatal("a deleted group's offsets came back after the restart")
	}
}
