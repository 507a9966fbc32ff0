package link_test

import (
	"context"
	"crypto/rand"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/runnel-io/runnel/internal/clustertest"
	"github.com/runnel-io/runnel/internal/link"
	"github.com/runnel-io/runnel/internal/testutil"
)

func produceN(t *testing.T, cl *kgo.Client, topic string, partition int32, from, n int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for i := from; i < from+n; i++ {
		cl.Produce(ctx, &kgo.Record{Topic: topic, Partition: partition, Value: fmt.Appendf(nil, "r%d", i)}, func(_ *kgo.Record, err error) {
			if err != nil {
				t.Errorf("produce to %s-%d: %v", topic, partition, err)
			}
		})
	}
	if err := cl.Flush(ctx); err != nil {
		t.Fatal(err)
	}
}

// commitAt commits group's offset of topic-0 to at, as an admin (the group has no
// member where it is committed).
func commitAt(t *testing.T, adm *kadm.Client, group, topic string, at int64) {
	t.Helper()
	var os kadm.Offsets
	os.Add(kadm.Offset{Topic: topic, Partition: 0, At: at, LeaderEpoch: -1})
	resp, err := adm.CommitOffsets(context.Background(), group, os)
	if err == nil {
		err = resp.Error()
	}
	if err != nil {
		t.Fatalf("commit %s %s-0 at %d: %v", group, topic, at, err)
	}
}

// committed returns group's committed offset of topic-0 (-1: none).
func committed(t *testing.T, adm *kadm.Client, group, topic string) int64 {
	t.Helper()
	at, err := fetchCommitted(adm, group, topic)
	if err != nil {
		t.Fatal(err)
	}
	return at
}

func fetchCommitted(adm *kadm.Client, group, topic string) (int64, error) {
	r, err := adm.FetchOffsets(context.Background(), group)
	if err != nil {
		return 0, fmt.Errorf("fetch offsets of group %s: %w", group, err)
	}
	if o, ok := r.Lookup(topic, 0); ok && o.Err == nil {
		return o.At, nil
	}
	return -1, nil
}

// awaitCommitted waits until group's committed offset of topic-0 is want (the link's
// group sync copies it). An error fails at once: kadm does not look a coordinator up
// again, so a COORDINATOR_NOT_AVAILABLE here (a lookup that lost the race to create
// __consumer_offsets with the link's own sync) is what a user's kadm would meet
// (TestVirtualFirstCoordinatorLookups).
func awaitCommitted(t *testing.T, adm *kadm.Client, group, topic string, want int64) {
	t.Helper()
	testutil.Eventually(t, 15*time.Second, func() error {
		got, err := fetchCommitted(adm, group, topic)
		switch {
		case err != nil:
			t.Fatal(err)
		case got != want:
			return fmt.Errorf("group %s on the destination: %s-0 committed at %d, want %d", group, topic, got, want)
		}
		return nil
	})
}

// TestLinkGroupOffsetSync: the committed offsets of the groups --groups names are
// copied unchanged to the destination; never past what was copied, never for a group
// with a member on the destination, never for a promoted topic (a commit made there
// after the failover stays); a default consumer resumes at the exact next record
// after the promote; link status shows the synced offsets.
func TestLinkGroupOffsetSync(t *testing.T) {
	src, dst := startNode(t), startNode(t)
	ctx := context.Background()
	sadm, dadm := src.Admin(t), dst.Admin(t)
	for _, topic := range []string{"payments", "ledger"} {
		if _, err := sadm.CreateTopic(ctx, 1, 1, nil, topic); err != nil {
			t.Fatal(err)
		}
	}
	p := src.Client(t, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	produceN(t, p, "payments", 0, 0, 1000)
	produceN(t, p, "ledger", 0, 0, 1000)
	commitAt(t, sadm, "billing", "payments", 600)
	commitAt(t, sadm, "busy", "ledger", 500)
	commitAt(t, sadm, "ignored", "ledger", 400)

	runCLI(t, "link", "create", "dr", "--source", src.Bootstrap(), "--topics", "payments,ledger",
		"--groups", "bill.*,busy", "--group-sync-interval", "200ms", "-b", dst.Bootstrap())
	awaitCommitted(t, dadm, "billing", "payments", 600)
	awaitCommitted(t, dadm, "busy", "ledger", 500)
	testutil.Eventually(t, 5*time.Second, func() error {
		st := status(t, dst.Bootstrap(), "dr")
		if len(st.Groups) != 2 || st.Groups[0].Group != "billing" || st.Groups[0].Offset != 600 || st.Groups[0].SyncedAtMs == 0 ||
			st.Groups[1].Group != "busy" || st.Groups[1].Topic != "ledger" || st.Groups[1].Offset != 500 {
			return fmt.Errorf("status groups: %+v", st.Groups)
		}
		return nil
	})
	if got := committed(t, dadm, "ignored", "ledger"); got != -1 {
		t.Fatalf("group ignored (not matched by --groups) was synced at %d", got)
	}

	// A group with a member on the destination (reading the mirror topic) is its own.
	member := dst.Client(t, kgo.ConsumeTopics("ledger"), kgo.ConsumerGroup("busy"), kgo.DisableAutoCommit())
	fs := member.PollRecords(ctx, 1)
	if err := fs.Err0(); err != nil || fs.NumRecords() == 0 || fs.Records()[0].Offset != 500 {
		t.Fatalf("member of busy on the destination: %v %v, want it to start at the synced 500", err, fs.Records())
	}
	commitAt(t, sadm, "busy", "ledger", 800)
	commitAt(t, sadm, "billing", "payments", 700) // after busy's: a round that sees it saw busy's too
	awaitCommitted(t, dadm, "billing", "payments", 700)
	if got := committed(t, dadm, "busy", "ledger"); got != 500 {
		t.Fatalf("busy has a member on the destination, yet its offset moved to %d", got)
	}
	member.Close() // leaves the group
	awaitCommitted(t, dadm, "busy", "ledger", 800)

	// Never past what the destination holds: a consumer that fails over must not skip
	// records not copied yet.
	runCLI(t, "link", "pause", "dr", "-b", dst.Bootstrap())
	produceN(t, p, "payments", 0, 1000, 100)
	commitAt(t, sadm, "billing", "payments", 1050)
	awaitCommitted(t, dadm, "billing", "payments", 1000)
	runCLI(t, "link", "resume", "dr", "-b", dst.Bootstrap())
	awaitCommitted(t, dadm, "billing", "payments", 1050)

	// Failover: a default consumer of the group resumes at the exact next record.
	runCLI(t, "link", "promote", "dr", "--topic", "payments", "-b", dst.Bootstrap())
	c := dst.Client(t, kgo.ConsumeTopics("payments"), kgo.ConsumerGroup("billing"), kgo.DisableAutoCommit())
	fs = c.PollRecords(ctx, 1)
	if err := fs.Err0(); err != nil || fs.NumRecords() == 0 {
		t.Fatalf("consumer of billing after the promote: %v", err)
	}
	if r := fs.Records()[0]; r.Offset != 1050 || string(r.Value) != "r1050" {
		t.Fatalf("billing resumed at offset %d (%q), want 1050 (r1050)", r.Offset, r.Value)
	}
	c.Close()
	// A commit made on the destination after the failover is never overwritten by
	// the old source's, even a higher one within the destination's end.
	commitAt(t, dadm, "billing", "payments", 1052)
	commitAt(t, sadm, "billing", "payments", 1080)
	commitAt(t, sadm, "busy", "ledger", 900) // a round that syncs it saw billing's 1080
	awaitCommitted(t, dadm, "busy", "ledger", 900)
	if got := committed(t, dadm, "billing", "payments"); got != 1052 {
		t.Fatalf("billing on the promoted topic: %d, want the destination's own 1052", got)
	}
}

// TestLinkFollowsSource: a matching source topic created after the link becomes a
// mirror topic within seconds, a partition increase follows, config changes follow
// (--sync-configs), and a source topic deleted (while its mirror is paused) or
// re-created stops its mirror topic in state failed with an error naming it.
func TestLinkFollowsSource(t *testing.T) {
	link.SetFollowInterval(t, 500*time.Millisecond)
	src, dst := startNode(t), startNode(t)
	ctx := context.Background()
	sadm, dadm := src.Admin(t), dst.Admin(t)
	if _, err := sadm.CreateTopic(ctx, 1, 1, nil, "f1"); err != nil {
		t.Fatal(err)
	}
	p := src.Client(t, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	produceN(t, p, "f1", 0, 0, 10)
	runCLI(t, "link", "create", "fl", "--source", src.Bootstrap(), "--topics", "f.*", "--sync-configs", "-b", dst.Bootstrap())
	awaitCaughtUp(t, sadm, dadm, "f1")

	// A new topic.
	if _, err := sadm.CreateTopic(ctx, 2, 1, map[string]*string{"retention.ms": kmsg.StringPtr("7200000")}, "f2"); err != nil {
		t.Fatal(err)
	}
	produceN(t, p, "f2", 1, 0, 7)
	awaitPartitions(t, dadm, "f2", 2)
	awaitCaughtUp(t, sadm, dadm, "f2")
	awaitConfig(t, dadm, "f2", "retention.ms", "7200000")

	// More partitions.
	if _, err := sadm.UpdatePartitions(ctx, 3, "f1"); err != nil {
		t.Fatal(err)
	}
	produceN(t, src.Client(t, kgo.RecordPartitioner(kgo.ManualPartitioner())), "f1", 2, 0, 5)
	awaitPartitions(t, dadm, "f1", 3)
	awaitCaughtUp(t, sadm, dadm, "f1")

	// A config change, and a config the source drops.
	if _, err := sadm.AlterTopicConfigs(ctx, []kadm.AlterConfig{{Name: "retention.ms", Value: kmsg.StringPtr("3600000")}}, "f1"); err != nil {
		t.Fatal(err)
	}
	awaitConfig(t, dadm, "f1", "retention.ms", "3600000")
	if _, err := sadm.AlterTopicConfigs(ctx, []kadm.AlterConfig{{Op: kadm.DeleteConfig, Name: "retention.ms"}}, "f2"); err != nil {
		t.Fatal(err)
	}
	awaitConfig(t, dadm, "f2", "retention.ms", "")

	// A mirror topic deleted here is not created again: a topic created at the source
	// after the deletion is mirrored, the deleted one stays gone.
	if _, err := sadm.CreateTopic(ctx, 1, 1, nil, "f3"); err != nil {
		t.Fatal(err)
	}
	awaitPartitions(t, dadm, "f3", 1)
	if r, err := dadm.DeleteTopics(ctx, "f3"); err != nil || r.Error() != nil {
		t.Fatalf("deleting mirror topic f3 here: %v %v", err, r.Error())
	}
	if _, err := sadm.CreateTopic(ctx, 1, 1, nil, "f4"); err != nil {
		t.Fatal(err)
	}
	awaitPartitions(t, dadm, "f4", 1)
	if td, err := dadm.ListTopics(ctx, "f3"); err != nil || td.Has("f3") && td["f3"].Err == nil {
		t.Fatalf("mirror topic f3, deleted here, was created again: %+v %v", td, err)
	}

	// Deleted at the source while paused here: nothing fetches it, yet it fails.
	runCLI(t, "link", "pause", "fl", "--topic", "f2", "-b", dst.Bootstrap())
	if _, err := sadm.DeleteTopics(ctx, "f2"); err != nil {
		t.Fatal(err)
	}
	awaitFailed(t, dst.Bootstrap(), "fl", "f2", `source topic "f2" of link fl no longer exists`)

	// Re-created at the source: a new topic id.
	if _, err := sadm.DeleteTopics(ctx, "f1"); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, 10*time.Second, func() error {
		_, err := sadm.CreateTopic(ctx, 3, 1, nil, "f1")
		return err
	})
	// Either is seen first, as the deletion and the creation reach the link.
	awaitFailed(t, dst.Bootstrap(), "fl", "f1", `source topic "f1" of link fl `)
}

func awaitPartitions(t *testing.T, adm *kadm.Client, topic string, n int) {
	t.Helper()
	testutil.Eventually(t, 15*time.Second, func() error {
		td, err := adm.ListTopics(context.Background(), topic)
		if err != nil {
			return err
		}
		d, ok := td[topic]
		if !ok || d.Err != nil || len(d.Partitions) != n {
			return fmt.Errorf("destination topic %s: %+v, want %d partitions", topic, d, n)
		}
		return nil
	})
}

// awaitConfig waits until topic's config key is value on the cluster adm talks to
// ("": not set on the topic).
func awaitConfig(t *testing.T, adm *kadm.Client, topic, key, value string) {
	t.Helper()
	testutil.Eventually(t, 15*time.Second, func() error {
		rc, err := adm.DescribeTopicConfigs(context.Background(), topic)
		if err != nil {
			return err
		}
		c, err := rc.On(topic, nil)
		if err != nil {
			return err
		}
		got := ""
		for _, e := range c.Configs {
			if e.Key == key && e.Source == kmsg.ConfigSourceDynamicTopicConfig && e.Value != nil {
				got = *e.Value
			}
		}
		if got != value {
			return fmt.Errorf("topic %s: %s=%q set on the topic, want %q", topic, key, got, value)
		}
		return nil
	})
}

func awaitFailed(t *testing.T, boot, link, topic, msg string) {
	t.Helper()
	testutil.Eventually(t, 20*time.Second, func() error {
		st := status(t, boot, link)
		n := 0
		for _, p := range st.Partitions {
			if p.Topic != topic {
				continue
			}
			n++
			if p.State != "failed" || !strings.Contains(p.Error, msg) {
				return fmt.Errorf("%s-%d: state %s error %q, want failed with %q", topic, p.Partition, p.State, p.Error, msg)
			}
		}
		if n == 0 {
			return fmt.Errorf("no partition of %s in the status", topic)
		}
		return nil
	})
}

// TestLinkSyncACLs: --sync-acls copies the source's LITERAL topic ACLs of the mirror
// topics, and removes those the source removed.
func TestLinkSyncACLs(t *testing.T) {
	src, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "secured", "other"))
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	scl, err := kgo.NewClient(kgo.SeedBrokers(src.ListenAddrs()...))
	if err != nil {
		t.Fatal(err)
	}
	defer scl.Close()
	sadm := kadm.NewClient(scl)
	read := kadm.NewACLs().Allow("User:alice").AllowHosts().Topics("secured").Operations(kadm.OpRead).ResourcePatternType(kadm.ACLPatternLiteral)
	write := kadm.NewACLs().Deny("User:bob").DenyHosts().Topics("secured").Operations(kadm.OpWrite).ResourcePatternType(kadm.ACLPatternLiteral)
	notMirrored := kadm.NewACLs().Allow("User:carol").AllowHosts().Topics("other").Operations(kadm.OpRead).ResourcePatternType(kadm.ACLPatternLiteral)
	for _, b := range []*kadm.ACLBuilder{read, write, notMirrored} {
		if _, err := sadm.CreateACLs(context.Background(), b); err != nil {
			t.Fatal(err)
		}
	}
	dst := clustertest.Start(t, clustertest.Options{Nodes: 1, InProcess: true, StartTimeout: 30 * time.Second,
		Sets: []string{"num.partitions=1", "default.replication.factor=1", "offsets.topic.replication.factor=1",
			"transaction.state.log.replication.factor=1", "transaction.state.log.min.isr=1",
			"authorizer.class.name=on", "super.users=User:ANONYMOUS"}})
	runCLI(t, "link", "create", "acl", "--source", strings.Join(src.ListenAddrs(), ","), "--topics", "secured",
		"--sync-acls", "-b", dst.Bootstrap())
	dadm := dst.Admin(t)
	aclsOn := func() ([]string, error) {
		res, err := dadm.DescribeACLs(context.Background(), kadm.NewACLs().AnyResource().ResourcePatternType(kadm.ACLPatternAny).
			Operations(kadm.OpAny).Allow().Deny().AllowHosts().DenyHosts())
		if err != nil {
			return nil, err
		}
		var out []string
		for _, r := range res {
			if r.Err != nil {
				return nil, r.Err
			}
			for _, d := range r.Described {
				out = append(out, fmt.Sprintf("%s %s %s %s %s", d.Name, d.Principal, d.Host, d.Operation, d.Permission))
			}
		}
		slices.Sort(out)
		return out, nil
	}
	want := []string{"secured User:alice * READ ALLOW", "secured User:bob * WRITE DENY"}
	testutil.Eventually(t, 15*time.Second, func() error {
		got, err := aclsOn()
		if err != nil || !slices.Equal(got, want) {
			return fmt.Errorf("destination ACLs %q (%v), want %q", got, err, want)
		}
		return nil
	})
	if _, err := sadm.DeleteACLs(context.Background(), write); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, 15*time.Second, func() error {
		got, err := aclsOn()
		if err != nil || !slices.Equal(got, want[:1]) {
			return fmt.Errorf("destination ACLs %q (%v), want %q", got, err, want[:1])
		}
		return nil
	})
}

// TestLinkThrottle: a link created with --throttle copies no faster than the rate:
// 2 MiB at 512 KiB/s takes at least 2 s (one second's burst, then the rate).
func TestLinkThrottle(t *testing.T) {
	src, dst := startNode(t), startNode(t)
	ctx := context.Background()
	sadm, dadm := src.Admin(t), dst.Admin(t)
	if _, err := sadm.CreateTopic(ctx, 2, 1, nil, "bulk"); err != nil {
		t.Fatal(err)
	}
	p := src.Client(t, kgo.ProducerBatchCompression(kgo.NoCompression()), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	for i := range 2048 {
		v := make([]byte, 1024)
		rand.Read(v)
		p.Produce(ctx, &kgo.Record{Topic: "bulk", Partition: int32(i % 2), Value: v}, nil)
	}
	if err := p.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	runCLI(t, "link", "create", "slow", "--source", src.Bootstrap(), "--throttle", "524288", "-b", dst.Bootstrap())
	awaitCaughtUp(t, sadm, dadm, "bulk")
	if took := time.Since(start); took < 2*time.Second {
		t.Fatalf("2 MiB copied in %v at --throttle 524288 (512 KiB/s): want at least 2s", took)
	} else {
		t.Logf("2 MiB copied in %v at 512 KiB/s", took)
	}
}
