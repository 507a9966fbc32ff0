package group_test

// The rolling upgrade of KIP-848's online migration against the shared node: six
// franz-go consumers of one group, replaced one at a time from the classic protocol
// (kgo's default cooperative-sticky group consumer) to the consumer protocol
// (kgo.ServerSideBalancer) and back, under a steady producer.

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// migrationConsumer is one consumer of the rolling upgrade, recording each record it
// consumes and the partitions it holds.
type migrationConsumer struct {
	name   string
	cl     *kgo.Client
	cancel context.CancelFunc
	done   chan struct{}

	mu       sync.Mutex
	assigned map[int32]bool
}

// consumption is one record consumed: which partition and offset, by whom, when.
type consumption struct {
	partition int32
	offset    int64
	by        string
	at        time.Time
}

// migrationLog collects what every consumer consumed, and what went wrong in their
// callbacks (a failed commit on revoke, a partition lost), which fails the test.
type migrationLog struct {
	mu       sync.Mutex
	recs     []consumption
	problems []string
}

func (l *migrationLog) problem(format string, args ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.problems = append(l.problems, fmt.Sprintf(format, args...))
}

// check fails t with every problem recorded; call it once every consumer stopped.
func (l *migrationLog) check(t *testing.T) {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, p := range l.problems {
		t.Error(p)
	}
}

func startMigrationConsumer(t *testing.T, log *migrationLog, name, group, topic string, consumerProtocol bool, classic kgo.GroupBalancer) *migrationConsumer {
	t.Helper()
	c := &migrationConsumer{name: name, assigned: map[int32]bool{}, done: make(chan struct{})}
	opts := append(seed(t),
		kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic), kgo.ClientID(name),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.SessionTimeout(3*time.Second), kgo.HeartbeatInterval(300*time.Millisecond),
		kgo.RebalanceTimeout(10*time.Second), kgo.FetchMaxWait(200*time.Millisecond),
		kgo.AutoCommitInterval(300*time.Millisecond),
		kgo.OnPartitionsAssigned(func(_ context.Context, _ *kgo.Client, a map[string][]int32) {
			c.mu.Lock()
			defer c.mu.Unlock()
			for _, p := range a[topic] {
				c.assigned[p] = true
			}
		}),
		kgo.OnPartitionsRevoked(func(ctx context.Context, cl *kgo.Client, r map[string][]int32) {
			if err := cl.CommitUncommittedOffsets(ctx); err != nil {
				log.problem("%s: commit on revoke of partitions %v of %s: %v", name, r[topic], topic, err)
			}
			c.mu.Lock()
			defer c.mu.Unlock()
			for _, p := range r[topic] {
				delete(c.assigned, p)
			}
		}),
		kgo.OnPartitionsLost(func(_ context.Context, _ *kgo.Client, l map[string][]int32) {
			log.problem("%s lost partitions %v of %s", name, l[topic], topic)
			c.mu.Lock()
			defer c.mu.Unlock()
			for _, p := range l[topic] {
				delete(c.assigned, p)
			}
		}),
	)
	if consumerProtocol {
		opts = append(opts, kgo.ServerSideBalancer())
	} else {
		opts = append(opts, kgo.Balancers(classic))
	}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		t.Fatal(err)
	}
	c.cl = cl
	ctx, cancel := context.WithCancel(context.Background())
	c.cancel = cancel
	go func() {
		defer close(c.done)
		for ctx.Err() == nil {
			fs := cl.PollFetches(ctx)
			now := time.Now()
			var got []consumption
			fs.EachRecord(func(r *kgo.Record) {
				got = append(got, consumption{r.Partition, r.Offset, name, now})
			})
			log.mu.Lock()
			log.recs = append(log.recs, got...)
			log.mu.Unlock()
		}
	}()
	return c
}

// stop ends the consumer as a rolling restart does: it stops polling, then closes
// (committing what it consumed and leaving the group).
func (c *migrationConsumer) stop() {
	c.cancel()
	<-c.done
	c.cl.Close()
}

func (c *migrationConsumer) partitions() []int32 {
	c.mu.Lock()
	defer c.mu.Unlock()
	var ps []int32
	for p := range c.assigned {
		ps = append(ps, p)
	}
	return ps
}

// waitSpread waits until the consumers hold every partition, each exactly once, and
// each consumer holds some.
func waitSpread(t *testing.T, what string, n int32, cs []*migrationConsumer) {
	t.Helper()
	eventually(t, 20*time.Second, what, func() error {
		var hs []holding
		for _, c := range cs {
			hs = append(hs, holding{c.name, c.partitions()})
		}
		return spreadError(n, hs)
	})
}

// commitWatch polls the group's committed offsets and records, per partition, every
// value seen with when it was seen; a commit that goes backwards is an error.
type commitWatch struct {
	mu        sync.Mutex
	seen      map[int32][]commitSeen
	backwards []string
	// samples counts the fetches that answered offsets of the topic; errs the fetches
	// (or partitions) that failed. A watch with errors or no samples proves nothing.
	samples int
	errs    []string
}

type commitSeen struct {
	offset int64
	at     time.Time
}

func (w *commitWatch) run(ctx context.Context, adm *kadm.Client, group, topic string, done chan<- struct{}) {
	defer close(done)
	for ctx.Err() == nil {
		os, err := adm.FetchOffsets(ctx, group)
		now := time.Now()
		switch {
		case err != nil && ctx.Err() != nil:
			// The watch was stopped while fetching.
		case err != nil:
			w.mu.Lock()
			w.errs = append(w.errs, fmt.Sprintf("fetching the offsets of group %s: %v", group, err))
			w.mu.Unlock()
		default:
			w.mu.Lock()
			sampled := false
			os.Each(func(o kadm.OffsetResponse) {
				if o.Topic != topic {
					return
				}
				if o.Err != nil {
					w.errs = append(w.errs, fmt.Sprintf("fetching the offset of group %s, %s partition %d: %v", group, topic, o.Partition, o.Err))
					return
				}
				sampled = true
				h := w.seen[o.Partition]
				if n := len(h); n > 0 && o.At < h[n-1].offset {
					w.backwards = append(w.backwards, fmt.Sprintf("partition %d commit went from %d to %d", o.Partition, h[n-1].offset, o.At))
				}
				if n := len(h); n == 0 || h[n-1].offset != o.At {
					w.seen[o.Partition] = append(h, commitSeen{o.At, now})
				}
			})
			if sampled {
				w.samples++
			}
			w.mu.Unlock()
		}
		select {
		case <-ctx.Done():
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// committedBefore is the highest commit of partition p seen before t.
func (w *commitWatch) committedBefore(p int32, t time.Time) int64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	c := int64(-1)
	for _, s := range w.seen[p] {
		if s.at.Before(t) {
			c = max(c, s.offset)
		}
	}
	return c
}

// waitProgress waits until the log holds n more consumptions than it did at from.
func (l *migrationLog) waitProgress(t *testing.T, what string, from, n int) {
	t.Helper()
	eventually(t, 20*time.Second, what, func() error {
		l.mu.Lock()
		defer l.mu.Unlock()
		if got := len(l.recs) - from; got < n {
			return fmt.Errorf("%d records consumed", got)
		}
		return nil
	})
}

func (l *migrationLog) len() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.recs)
}

// groupType is the group's type in ListGroups v5.
func groupType(t *testing.T, adm *kadm.Client, group string) string {
	t.Helper()
	ls, err := adm.ListGroups(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return ls[group].GroupType
}

func TestRollingMigrationClassicToConsumerAndBack(t *testing.T) {
	for _, c := range []struct {
		name string
		b    kgo.GroupBalancer
	}{{"cooperative", kgo.CooperativeStickyBalancer()}, {"eager", kgo.RangeBalancer()}} {
		t.Run(c.name, func(t *testing.T) { rollingMigration(t, "migrate-"+c.name, c.b) })
	}
}

// rollingMigration runs the rolling upgrade and downgrade with classic consumers
// using balancer classic (cooperative: they revoke only what moves; eager: they revoke
// everything at each rejoin).
func rollingMigration(t *testing.T, topic string, classic kgo.GroupBalancer) {
	const parts, fleet = 12, 6
	group := "g-" + topic
	createTopic(t, topic, parts, 0)
	adm := newAdmin(t)
	start := time.Now()

	// The steady producer: one record every 2 ms, round robin over the partitions.
	type produced struct {
		partition int32
		offset    int64
	}
	var pmu sync.Mutex
	var sent []produced
	var produceErrs []error // other than the producer being stopped
	pcl, err := kgo.NewClient(append(seed(t), kgo.RecordPartitioner(kgo.RoundRobinPartitioner()), kgo.ProducerLinger(0))...)
	if err != nil {
		t.Fatal(err)
	}
	defer pcl.Close()
	pctx, pstop := context.WithCancel(context.Background())
	pdone := make(chan struct{})
	go func() {
		defer close(pdone)
		for i := 0; pctx.Err() == nil; i++ {
			r, err := pcl.ProduceSync(pctx, &kgo.Record{Topic: topic, Value: []byte(fmt.Sprint(i))}).First()
			pmu.Lock()
			switch {
			case err == nil:
				sent = append(sent, produced{r.Partition, r.Offset})
			case pctx.Err() == nil || !errors.Is(err, context.Canceled):
				produceErrs = append(produceErrs, err)
			}
			pmu.Unlock()
			time.Sleep(2 * time.Millisecond)
		}
	}()
	defer func() { pstop(); <-pdone }()

	watch := &commitWatch{seen: map[int32][]commitSeen{}}
	wctx, wstop := context.WithCancel(context.Background())
	wdone := make(chan struct{})
	go watch.run(wctx, adm, group, topic, wdone)
	defer func() { wstop(); <-wdone }()

	log := &migrationLog{}
	defer log.check(t) // runs after the consumers below stopped (their last revoke)
	cs := make([]*migrationConsumer, fleet)
	defer func() {
		for _, c := range cs {
			if c != nil {
				c.stop()
			}
		}
	}()
	for i := range cs {
		cs[i] = startMigrationConsumer(t, log, fmt.Sprintf("classic-%d", i), group, topic, false, classic)
	}
	waitSpread(t, "six classic consumers sharing the partitions", parts, cs)
	if typ := groupType(t, adm, group); typ != "classic" {
		t.Fatalf("group type %q before the upgrade, want classic", typ)
	}

	// replace restarts consumer i as name, of the consumer protocol or classic, as a
	// rolling restart does, and waits until the group spread the partitions again and
	// consumes.
	replace := func(step string, i int, name string, consumerProtocol bool) {
		t.Helper()
		cs[i].stop()
		cs[i] = startMigrationConsumer(t, log, name, group, topic, consumerProtocol, classic)
		before := log.len()
		waitSpread(t, fmt.Sprintf("%s step %d", step, i), parts, cs)
		log.waitProgress(t, fmt.Sprintf("consumption after %s step %d", step, i), before, 100)
	}
	// Classic to consumer, one at a time: the first ConsumerGroupHeartbeat converts the
	// group; the classic members left keep consuming as classic members of it.
	for i := range cs {
		replace("upgrade", i, fmt.Sprintf("consumer-%d", i), true)
		if typ := groupType(t, adm, group); typ != "consumer" {
			t.Fatalf("upgrade step %d: group type %q, want consumer", i, typ)
		}
		if i == fleet/2 {
			checkMemberTypes(t, adm, group, fleet/2+1, fleet/2-1)
		}
	}
	// And back: the last consumer-protocol member to leave converts the group to a
	// classic group again.
	for i := range cs {
		replace("downgrade", i, fmt.Sprintf("classic-again-%d", i), false)
		if i == fleet/2 {
			checkMemberTypes(t, adm, group, fleet/2-1, fleet/2+1)
		}
	}
	if typ := groupType(t, adm, group); typ != "classic" {
		t.Fatalf("group type %q after the downgrade, want classic", typ)
	}

	pstop()
	<-pdone
	pmu.Lock()
	want := append([]produced(nil), sent...)
	for i, err := range produceErrs {
		if i == 10 {
			t.Errorf("and %d more produce errors", len(produceErrs)-i)
			break
		}
		t.Errorf("producing to %s: %v", topic, err)
	}
	pmu.Unlock()
	eventually(t, 20*time.Second, "every produced record consumed", func() error {
		got := map[produced]bool{}
		log.mu.Lock()
		for _, c := range log.recs {
			got[produced{c.partition, c.offset}] = true
		}
		log.mu.Unlock()
		for _, p := range want {
			if !got[p] {
				return fmt.Errorf("partition %d offset %d never consumed (of %d produced)", p.partition, p.offset, len(want))
			}
		}
		return nil
	})

	// At least once, no more: a record consumed again was past its partition's commit
	// (as far as the watch saw it before the second consumption).
	log.mu.Lock()
	recs := append([]consumption(nil), log.recs...)
	log.mu.Unlock()
	first := map[produced]consumption{}
	dups := 0
	for _, c := range recs {
		k := produced{c.partition, c.offset}
		f, ok := first[k]
		if !ok {
			first[k] = c
			continue
		}
		dups++
		if committed := watch.committedBefore(c.partition, c.at); committed > c.offset {
			t.Errorf("partition %d offset %d consumed by %s and again by %s although the commit had reached %d", c.partition, c.offset, f.by, c.by, committed)
		}
	}
	watch.mu.Lock()
	for _, b := range watch.backwards {
		t.Error(b)
	}
	for _, e := range watch.errs {
		t.Error(e)
	}
	if watch.samples == 0 {
		t.Errorf("the commit watch never read an offset of %s: commits going backwards were not checked", topic)
	}
	samples := watch.samples
	watch.mu.Unlock()
	t.Logf("%d records produced, %d consumptions, %d consumed twice, %d commit samples; took %v", len(want), len(recs), dups, samples, time.Since(start))
}

// checkMemberTypes checks with ConsumerGroupDescribe v1 that the group has the
// given numbers of consumer-protocol (MemberType 1) and classic (0) members.
func checkMemberTypes(t *testing.T, adm *kadm.Client, group string, consumers, classics int) {
	t.Helper()
	eventually(t, 10*time.Second, "the members' types", func() error {
		d, err := describeConsumerGroup(adm, group)
		if err != nil {
			return err
		}
		n := map[int8]int{}
		for _, m := range d.Members {
			n[m.MemberType]++
		}
		if n[1] != consumers || n[0] != classics {
			return fmt.Errorf("member types %v, want %d consumer and %d classic", n, consumers, classics)
		}
		return nil
	})
}
