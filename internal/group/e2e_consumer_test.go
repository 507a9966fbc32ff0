package group_test

// End-to-end tests of KIP-848 consumer groups (ConsumerGroupHeartbeat) with franz-go's
// ServerSideBalancer against a real node: the shared node of e2e_test.go, with
// group.consumer.session.timeout.ms=3000.

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// ownership watches the members' assignment callbacks for a partition held by two
// members at once: with KIP-848 a partition reaches its new owner only after the old
// owner's revocation callback ran and its heartbeat reported the partition gone.
type ownership struct {
	mu         sync.Mutex
	owner      map[int32]string
	violations []string
}

func newOwnership() *ownership { return &ownership{owner: map[int32]string{}} }

// opts are the member's options: its callbacks track *m's assignment (as newMember's,
// which they replace) and the group's ownership.
func (o *ownership) opts(m **member, name, topic string) []kgo.Opt {
	track := func(ps []int32, add bool) {
		(*m).mu.Lock()
		defer (*m).mu.Unlock()
		for _, p := range ps {
			if add {
				(*m).assigned[p] = true
			} else {
				delete((*m).assigned, p)
			}
		}
	}
	return []kgo.Opt{
		kgo.ServerSideBalancer(),
		kgo.OnPartitionsAssigned(func(_ context.Context, _ *kgo.Client, a map[string][]int32) {
			track(a[topic], true)
			o.mu.Lock()
			defer o.mu.Unlock()
			for _, p := range a[topic] {
				if prev, ok := o.owner[p]; ok && prev != name {
					o.violations = append(o.violations, fmt.Sprintf("partition %d assigned to %s while %s holds it", p, name, prev))
				}
				o.owner[p] = name
			}
		}),
		kgo.OnPartitionsRevoked(func(ctx context.Context, cl *kgo.Client, r map[string][]int32) {
			track(r[topic], false)
			cl.CommitUncommittedOffsets(ctx)
			o.release(name, r[topic])
		}),
		kgo.OnPartitionsLost(func(_ context.Context, _ *kgo.Client, l map[string][]int32) {
			track(l[topic], false)
			o.release(name, l[topic])
		}),
	}
}

func (o *ownership) release(name string, ps []int32) {
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, p := range ps {
		if o.owner[p] == name {
			delete(o.owner, p)
		}
	}
}

func (o *ownership) check(t *testing.T) {
	t.Helper()
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, v := range o.violations {
		t.Error(v)
	}
}

// consumerMember is a franz-go member speaking the consumer protocol.
func consumerMember(t *testing.T, o *ownership, name, group, topic string, b kgo.GroupBalancer, extra ...kgo.Opt) *member {
	t.Helper()
	var m *member
	m = newMember(t, name, group, topic, memberOpts{balancer: b, extra: append(o.opts(&m, name, topic), extra...)})
	return m
}

func TestConsumerProtocolMembersShareJoinLeaveKill(t *testing.T) {
	for _, bal := range []struct {
		name string
		b    kgo.GroupBalancer
	}{{"uniform", kgo.CooperativeStickyBalancer()}, {"range", kgo.RangeBalancer()}} {
		t.Run(bal.name, func(t *testing.T) {
			topic, group := "kip848-"+bal.name, "g-kip848-"+bal.name
			createTopic(t, topic, 6, 60)
			ctx, cancel := context.WithCancel(context.Background())
			var wg sync.WaitGroup
			defer func() { cancel(); wg.Wait() }()
			own := newOwnership()
			defer own.check(t)

			a := consumerMember(t, own, "a", group, topic, bal.b)
			defer a.cl.Close()
			a.poll(ctx, &wg)
			waitAssignment(t, 6, a)

			b := consumerMember(t, own, "b", group, topic, bal.b)
			defer b.cl.Close()
			b.poll(ctx, &wg)
			waitAssignment(t, 6, a, b)
			waitConsumedAll(t, 60, a, b)
			checkConsumerGroup(t, group, topic, 2)

			// c joins, then leaves (epoch -1): a and b take its partitions back.
			c := consumerMember(t, own, "c", group, topic, bal.b)
			cctx, ccancel := context.WithCancel(ctx)
			var cwg sync.WaitGroup
			c.poll(cctx, &cwg)
			waitAssignment(t, 6, a, b, c)
			ccancel()
			cwg.Wait()
			c.cl.Close()
			waitAssignment(t, 6, a, b)

			// d is killed (its connections die, no leave): after the 3 s session timeout
			// its partitions go to a and b, which consume what is produced next.
			dd := newCrashableDialer()
			d := consumerMember(t, own, "d", group, topic, bal.b, kgo.Dialer(dd.dial))
			dctx, dcancel := context.WithCancel(ctx)
			var dwg sync.WaitGroup
			d.poll(dctx, &dwg)
			waitAssignment(t, 6, a, b, d)
			dd.crash()
			killed := time.Now()
			own.release("d", d.partitions()) // d is gone: its partitions may be reassigned
			waitAssignment(t, 6, a, b)
			if took := time.Since(killed); took < 2*time.Second {
				t.Errorf("d's partitions moved %v after it was killed, before its 3 s session could expire", took)
			}
			produce(t, topic, 60, 90)
			eventually(t, 30*time.Second, "a and b consuming the records produced after the kill", func() error {
				got := map[string]bool{}
				for _, m := range []*member{a, b} {
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
			dcancel()
			dwg.Wait()
			d.cl.Close()
		})
	}
}

// describeConsumerGroup is group's ConsumerGroupDescribe; its error is the request's
// or the group's.
func describeConsumerGroup(adm *kadm.Client, group string) (kadm.DescribedConsumerGroup, error) {
	ds, err := adm.DescribeConsumerGroups(context.Background(), group)
	if err != nil {
		return kadm.DescribedConsumerGroup{}, err
	}
	return ds[group], ds[group].Err
}

// checkConsumerGroup checks with ConsumerGroupDescribe and ListGroups v5 that group is
// a KIP-848 consumer group, stable with n members, each in the group's assignment epoch
// and holding its target, the members together holding every partition once.
func checkConsumerGroup(t *testing.T, group, topic string, n int) {
	t.Helper()
	adm := newAdmin(t)
	eventually(t, 30*time.Second, "a stable consumer group", func() error {
		d, err := describeConsumerGroup(adm, group)
		if err != nil {
			return err
		}
		if d.State != "Stable" || len(d.Members) != n {
			return fmt.Errorf("state %s with %d members", d.State, len(d.Members))
		}
		seen := map[int32]bool{}
		for _, m := range d.Members {
			if m.MemberEpoch != d.AssignmentEpoch {
				return fmt.Errorf("member %s at epoch %d, group assignment epoch %d", m.MemberID, m.MemberEpoch, d.AssignmentEpoch)
			}
			for p := range m.Assignment[topic] {
				if seen[p] {
					return fmt.Errorf("partition %d held twice", p)
				}
				seen[p] = true
			}
		}
		if len(seen) != 6 {
			return fmt.Errorf("%d partitions held", len(seen))
		}
		return nil
	})
	ls, err := adm.ListGroupsByType(context.Background(), []string{"consumer"})
	if err != nil {
		t.Fatal(err)
	}
	if l, ok := ls[group]; !ok || l.ProtocolType != "consumer" {
		t.Fatalf("ListGroups of type consumer: %+v", ls)
	}
}
