package group_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/runnel-io/runnel/internal/clustertest"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestConsumerProtocolCoordinatorFailover: on a 3-node cluster (RF 3), kill -9 the
// node coordinating a KIP-848 group: the new coordinator (the new leader of the
// group's __consumer_offsets partition) replays the group's records, so the members
// keep their epochs and assignments (nothing moves, no new group epoch), and they go
// on consuming what is produced next, each partition by one member.
func TestConsumerProtocolCoordinatorFailover(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a 3-node cluster")
	}
	c := clustertest.Start(t, clustertest.Options{Nodes: 3, InProcess: true, StartTimeout: 60 * time.Second,
		Sets: append(slices.Clone(clustertest.FastFailureDetection),
			"offsets.topic.num.partitions=3", "group.consumer.heartbeat.interval.ms=300")})
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	adm := c.Admin(t)
	const topic, group = "kip848-failover", "g-kip848-failover"
	if _, err := adm.CreateTopic(ctx, 6, 3, map[string]*string{"min.insync.replicas": kadm.StringPtr("2")}, topic); err != nil {
		t.Fatal(err)
	}
	seeds := kgo.SeedBrokers(strings.Split(c.Bootstrap(), ",")...)
	produceTo := func(from, to int) {
		t.Helper()
		cl := c.Client(t, kgo.RecordPartitioner(kgo.RoundRobinPartitioner()))
		defer cl.Close()
		for i := from; i < to; i++ {
			if err := cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: []byte(fmt.Sprint(i))}).FirstErr(); err != nil {
				t.Fatalf("produce %d: %v", i, err)
			}
		}
	}
	produceTo(0, 60)

	var wg sync.WaitGroup
	pctx, pcancel := context.WithCancel(ctx)
	defer func() { pcancel(); wg.Wait() }()
	own := newOwnership()
	defer own.check(t)
	var members []*member
	for _, name := range []string{"a", "b"} {
		var m *member
		m = &member{name: name, assigned: map[int32]bool{}}
		opts := append(own.opts(&m, name, topic), seeds, kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic),
			kgo.ClientID(name), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
			kgo.Balancers(kgo.CooperativeStickyBalancer()), kgo.FetchMaxWait(200*time.Millisecond))
		cl, err := kgo.NewClient(opts...)
		if err != nil {
			t.Fatal(err)
		}
		m.cl = cl
		defer cl.Close()
		m.poll(pctx, &wg)
		members = append(members, m)
	}
	waitAssignment(t, 6, members...)
	waitConsumedAll(t, 60, members...)

	describe := func(a *kadm.Client) (kadm.DescribedConsumerGroup, error) {
		ds, err := a.DescribeConsumerGroups(ctx, group)
		if err != nil {
			return kadm.DescribedConsumerGroup{}, err
		}
		d := ds[group]
		if d.Err == nil && d.State != "Stable" {
			return d, fmt.Errorf("group %s", d.State)
		}
		return d, d.Err
	}
	var before kadm.DescribedConsumerGroup
	eventually(t, 30*time.Second, "a stable consumer group", func() (err error) {
		before, err = describe(adm)
		return err
	})
	coord := adm.FindGroupCoordinators(ctx, group)[group]
	if coord.Err != nil {
		t.Fatal(coord.Err)
	}
	t.Logf("killing coordinator node %d (group epoch %d)", coord.NodeID, before.Epoch)
	c.Kill(int(coord.NodeID))

	eventually(t, 40*time.Second, "the group on the new coordinator as it was", func() error {
		a := kadm.NewClient(c.Client(t))
		defer a.Close()
		after, err := describe(a)
		if err != nil {
			return err
		}
		if after.Epoch != before.Epoch || len(after.Members) != len(before.Members) {
			return fmt.Errorf("group epoch %d with %d members, before %d with %d", after.Epoch, len(after.Members), before.Epoch, len(before.Members))
		}
		for i, m := range after.Members {
			b := before.Members[i]
			if m.MemberID != b.MemberID || m.MemberEpoch != b.MemberEpoch || fmt.Sprint(m.Assignment.Sorted()) != fmt.Sprint(b.Assignment.Sorted()) {
				return fmt.Errorf("member %s epoch %d %v, before %s epoch %d %v", m.MemberID, m.MemberEpoch, m.Assignment.Sorted(), b.MemberID, b.MemberEpoch, b.Assignment.Sorted())
			}
		}
		return nil
	})
	produceTo(60, 90)
	eventually(t, 30*time.Second, "the records produced after the failover consumed", func() error {
		got := map[string]bool{}
		for _, m := range members {
			for _, v := range m.consumed() {
				got[v] = true
			}
		}
		for i := 60; i < 90; i++ {
			if !got[fmt.Sprint(i)] {
				return fmt.Errorf("record %d missing", i)
			}
		}
		return nil
	})
}
