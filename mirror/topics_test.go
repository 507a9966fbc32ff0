package mirror_test

import (
	"context"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/runnel-io/runnel/client"
	"github.com/runnel-io/runnel/internal/testutil"
	"github.com/runnel-io/runnel/mirror"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestMirrorSourceTopicRecreated deletes and re-creates a source topic while the
// mirror is behind on it: the partition stops with an error naming the topic,
// partition and the old topic's offsets that were never mirrored; restarted with
// OnDataLossSkip it counts exactly those offsets and mirrors the new topic's records
// after the old ones.
func TestMirrorSourceTopicRecreated(t *testing.T) {
	t.Parallel()
	src, tgt := startRunnel(t), startRunnel(t)
	createTopic(t, src, "orders", 1, nil)
	pcl := newClient(t, src, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	produceN(t, pcl, "orders", 1, 0, 50)
	cfg := mirror.Config{Name: "dr", Source: []string{src}, Target: []string{tgt}, SourceAlias: "east", TopicRefresh: 300 * time.Millisecond}
	m, stop := runMirror(t, cfg)
	waitCaughtUp(t, m)
	stop()

	// 200 records the mirror will be slow to copy: one batch each, fetched one batch
	// at a time, written at most 40 a second.
	for i := 50; i < 250; i++ {
		produceN(t, pcl, "orders", 1, i, 1)
	}
	slow := cfg
	slow.Producer = []client.Option{client.WithRate(40)}
	slow.SourceOptions = []kgo.Opt{kgo.FetchMaxBytes(1), kgo.FetchMaxPartitionBytes(1)}
	m, stop = runMirror(t, slow)
	testutil.Eventually(t, 30*time.Second, func() error {
		for _, s := range m.Status(time.Now()) {
			if s.Next > 50 && s.Next < 200 {
				return nil
			}
		}
		return fmt.Errorf("the mirror has not started on the 200 new records yet: %+v", m.Status(time.Now()))
	})
	adm := kadm.NewClient(newClient(t, src))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, err := adm.DeleteTopics(ctx, "orders")
	testutil.NoError(t, err, "delete the source topic")
	testutil.Eventually(t, 20*time.Second, func() error {
		_, err := adm.CreateTopic(ctx, 1, -1, nil, "orders")
		return err
	})
	produceN(t, pcl, "orders", 1, 1000, 10)

	var st mirror.PartitionState
	testutil.Eventually(t, 30*time.Second, func() error {
		for _, s := range m.Status(time.Now()) {
			if s.State == "error" && strings.Contains(s.Error, "re-created") {
				st = s
				return nil
			}
		}
		return fmt.Errorf("no partition stopped on the re-created topic: %+v", m.Status(time.Now()))
	})
	stop()
	want := fmt.Sprintf("source orders/0: the topic was re-created (topic id ")
	lost := regexp.MustCompile(`offsets (\d+) to 249 of the old topic were not mirrored and are lost`).FindStringSubmatch(st.Error)
	if !strings.HasPrefix(strings.TrimPrefix(st.Error, "source data loss: "), want) || lost == nil {
		t.Fatalf("error %q: want it to start %q and name the lost offsets N to 249", st.Error, want)
	}
	from, _ := strconv.ParseInt(lost[1], 10, 64)
	testutil.Equal(t, from, st.Next, "first lost offset = the partition's next offset")
	if from <= 50 || from >= 250 {
		t.Fatalf("lost range starts at %d: want within the 200 slow records", from)
	}

	skip := cfg
	skip.OnDataLoss = mirror.OnDataLossSkip
	m, _ = runMirror(t, skip)
	got := readAll(t, tgt, "east.orders", int(from)+10, 30*time.Second)[0]
	for i, r := range got {
		wantV := fmt.Sprintf("v%d", i)
		if i >= int(from) {
			wantV = fmt.Sprintf("v%d", 1000+i-int(from))
		}
		if string(r.Value) != wantV && r.Value != nil {
			t.Fatalf("target record %d: value %q, want %q", i, r.Value, wantV)
		}
	}
	waitCaughtUp(t, m)
	s := m.Status(time.Now())[0]
	testutil.Equal(t, s.Skipped, 250-from, "skipped offsets")
	testutil.Equal(t, s.Records, from+10, "records mirrored")
}

// TestMirrorActiveActivePrefix runs two mirrors in opposite directions with prefix
// naming and every topic selected: each cluster ends with its own records and the
// other's under the other's alias, once each, and nothing comes back (no
// b.a.events holding records, no growing chain of prefixed topics).
func TestMirrorActiveActivePrefix(t *testing.T) {
	t.Parallel()
	a, b := startRunnel(t), startRunnel(t)
	createTopic(t, a, "events", 2, nil)
	createTopic(t, b, "events", 2, nil)
	pa := newClient(t, a, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	pb := newClient(t, b, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	produceN(t, pa, "events", 2, 0, 200)
	produceN(t, pb, "events", 2, 1000, 200)
	cfg := func(name, src, tgt, alias string) mirror.Config {
		return mirror.Config{Name: name, Source: []string{src}, Target: []string{tgt}, SourceAlias: alias, TopicRefresh: 300 * time.Millisecond}
	}
	ab, _ := runMirror(t, cfg("a-to-b", a, b, "a"))
	ba, _ := runMirror(t, cfg("b-to-a", b, a, "b"))
	produceN(t, pa, "events", 2, 200, 100)
	produceN(t, pb, "events", 2, 1200, 100)
	waitCaughtUp(t, ab, ba)
	// Several topic refreshes later, nothing has grown.
	settled := func() map[string]string {
		out := map[string]string{}
		for _, c := range []struct{ name, addr string }{{"a", a}, {"b", b}} {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			ends, err := kadm.NewClient(newClient(t, c.addr)).ListEndOffsets(ctx)
			cancel()
			testutil.NoError(t, err, "end offsets on "+c.name)
			ends.Each(func(o kadm.ListedOffset) {
				if !strings.HasPrefix(o.Topic, "__") {
					out[fmt.Sprintf("%s:%s/%d", c.name, o.Topic, o.Partition)] = fmt.Sprint(o.Offset)
				}
			})
		}
		return out
	}
	first := settled()
	waitCaughtUp(t, ab, ba)
	time.Sleep(time.Second) // three topic refreshes: a loop would create or fill a topic in that time
	waitCaughtUp(t, ab, ba)
	testutil.Equal(t, settled(), first, "topics and end offsets on both clusters after three more refreshes")
	for _, c := range []struct {
		addr, own, copy   string
		ownFrom, copyFrom int
	}{{a, "events", "b.events", 0, 1000}, {b, "events", "a.events", 1000, 0}} {
		for topic, from := range map[string]int{c.own: c.ownFrom, c.copy: c.copyFrom} {
			got := readAll(t, c.addr, topic, 300, 20*time.Second)
			seen := map[string]int{}
			for _, rs := range got {
				for _, r := range rs {
					seen[string(r.Key)]++
				}
			}
			for i := from; i < from+300; i++ {
				if n := seen[fmt.Sprintf("k%d", i)]; n != 1 {
					t.Fatalf("%s on %s holds record k%d %d times", topic, c.addr, i, n)
				}
			}
			testutil.Equal(t, len(seen), 300, "distinct records in "+topic+" on "+c.addr)
		}
	}
	for k, v := range first {
		if strings.Count(k, ".") > 1 && v != "0" { // b.a.events, a.b.events, ...
			t.Fatalf("%s holds records (end offset %s): a loop", k, v)
		}
	}
}

// TestMirrorFollowsSourceTopics changes a mirrored source topic (a config and a
// partition increase) and creates a new matching topic: the target follows each
// within seconds, and records of the new partitions and topic arrive.
func TestMirrorFollowsSourceTopics(t *testing.T) {
	t.Parallel()
	src, tgt := startRunnel(t), startRunnel(t)
	retention := "3600000"
	createTopic(t, src, "orders", 2, map[string]*string{"retention.ms": &retention})
	pcl := newClient(t, src, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	produceN(t, pcl, "orders", 2, 0, 20)
	m, _ := runMirror(t, mirror.Config{Name: "dr", Source: []string{src}, Target: []string{tgt}, SourceAlias: "east",
		Topics: []string{"orders", "new-.*"}, TopicRefresh: 500 * time.Millisecond})
	waitCaughtUp(t, m)
	sadm, tadm := kadm.NewClient(newClient(t, src)), kadm.NewClient(newClient(t, tgt))
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	testutil.Equal(t, topicConfig(t, tadm, "east.orders", "retention.ms"), "3600000", "retention.ms copied at creation")

	retention = "7200000"
	_, err := sadm.AlterTopicConfigs(ctx, []kadm.AlterConfig{{Op: kadm.SetConfig, Name: "retention.ms", Value: &retention}}, "orders")
	testutil.NoError(t, err, "alter the source config")
	_, err = sadm.UpdatePartitions(ctx, 4, "orders")
	testutil.NoError(t, err, "add source partitions")
	createTopic(t, src, "new-topic", 1, nil)
	changed := time.Now()
	produceN(t, pcl, "new-topic", 1, 0, 10)
	testutil.Eventually(t, 20*time.Second, func() error {
		if v := topicConfig(t, tadm, "east.orders", "retention.ms"); v != "7200000" {
			return fmt.Errorf("target east.orders retention.ms %s, want 7200000", v)
		}
		td, err := tadm.ListTopics(ctx, "east.orders", "east.new-topic")
		if err != nil {
			return err
		}
		if n := len(td["east.orders"].Partitions); n != 4 {
			return fmt.Errorf("target east.orders has %d partitions, want 4", n)
		}
		if _, ok := td["east.new-topic"]; !ok {
			return fmt.Errorf("target east.new-topic not created yet")
		}
		return nil
	})
	t.Logf("config, partitions and new topic followed %v after the change", time.Since(changed).Round(10*time.Millisecond))
	want := produceN(t, pcl, "orders", 4, 100, 40) // 10 to each of the four partitions
	got := readAll(t, tgt, "east.orders", 60, 30*time.Second)
	for _, r := range want {
		if r.Partition < 2 {
			continue
		}
		found := false
		for _, g := range got[r.Partition] {
			found = found || string(g.Key) == string(r.Key)
		}
		if !found {
			t.Fatalf("record %s of new partition %d not on the target", r.Key, r.Partition)
		}
	}
	testutil.Equal(t, len(readAll(t, tgt, "east.new-topic", 10, 20*time.Second)[0]), 10, "records of the new topic")
}

func topicConfig(t *testing.T, adm *kadm.Client, topic, key string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	rcs, err := adm.DescribeTopicConfigs(ctx, topic)
	testutil.NoError(t, err, "describe configs of "+topic)
	rc, err := rcs.On(topic, nil)
	testutil.NoError(t, err, "configs of "+topic)
	for _, c := range rc.Configs {
		if c.Key == key && c.Value != nil {
			return *c.Value
		}
	}
	return ""
}

// TestMirrorAtLeastOnce mirrors without transactions, then finds on restart records
// on the target past the last committed progress (what a mirror killed between its
// records and its progress leaves; here one record written there directly): it counts
// them as possibly duplicated and goes on.
func TestMirrorAtLeastOnce(t *testing.T) {
	t.Parallel()
	src, tgt := startRunnel(t), startRunnel(t)
	createTopic(t, src, "orders", 1, nil)
	pcl := newClient(t, src, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	want := produceN(t, pcl, "orders", 1, 0, 100)
	cfg := mirror.Config{Name: "dr", Source: []string{src}, Target: []string{tgt}, SourceAlias: "east", Delivery: mirror.AtLeastOnce,
		TopicRefresh: 300 * time.Millisecond}
	m, stop := runMirror(t, cfg)
	waitCaughtUp(t, m)
	checkSame(t, want, readAll(t, tgt, "east.orders", 100, 20*time.Second))
	// No transaction: no markers, so target offsets are dense.
	s := m.Status(time.Now())[0]
	testutil.Equal(t, s.TargetEnd, int64(100), "target end without markers")
	testutil.Equal(t, s.MaybeDuplicated, int64(0), "possible duplicates before any crash")
	stop()
	tcl := newClient(t, tgt, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	testutil.NoError(t, tcl.ProduceSync(ctx, &kgo.Record{Topic: "east.orders", Partition: 0, Value: []byte("after progress")}).FirstErr(), "write past the progress")
	produceN(t, pcl, "orders", 1, 100, 10)
	m, _ = runMirror(t, cfg)
	waitCaughtUp(t, m)
	s = m.Status(time.Now())[0]
	testutil.Equal(t, s.MaybeDuplicated, int64(1), "possible duplicates counted on restart")
	testutil.Equal(t, s.Records, int64(110), "records mirrored")
}
