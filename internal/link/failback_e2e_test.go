package link_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/runnel-io/runnel/internal/cli"
	"github.com/runnel-io/runnel/internal/clustertest"
	"github.com/runnel-io/runnel/internal/link"
	"github.com/runnel-io/runnel/internal/testutil"
)

// failbackRow is one partition of `link promote|failback --json` (INTERFACE.md).
type failbackRow struct {
	Topic              string `json:"topic"`
	Partition          int32  `json:"partition"`
	WritableFrom       int64  `json:"writable_from"`
	TruncatedTo        int64  `json:"truncated_to"`
	QuarantinedRecords int64  `json:"quarantined_records"`
	Quarantine         string `json:"quarantine"`
}

func rowsOf(t *testing.T, out string) []failbackRow {
	t.Helper()
	var res struct {
		Partitions []failbackRow `json:"partitions"`
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	return res.Partitions
}

// produceTo writes n records "prefix-i" to topic-partition and returns their offsets.
func produceTo(t *testing.T, c *clustertest.Cluster, topic string, partition int32, prefix string, n int) []int64 {
	t.Helper()
	cl := c.Client(t, kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerBatchCompression(kgo.NoCompression()))
	var rs []*kgo.Record
	for i := range n {
		rs = append(rs, &kgo.Record{Topic: topic, Partition: partition, Key: fmt.Appendf(nil, "k%d", i), Value: fmt.Appendf(nil, "%s-%d", prefix, i)})
	}
	res := cl.ProduceSync(context.Background(), rs...)
	if err := res.FirstErr(); err != nil {
		t.Fatalf("produce %s to %s-%d: %v", prefix, topic, partition, err)
	}
	var offs []int64
	for _, r := range res {
		offs = append(offs, r.Record.Offset)
	}
	return offs
}

// readAll reads every record of topic on c from the start, until it has n.
func readAll(t *testing.T, c *clustertest.Cluster, topic string, n int) []*kgo.Record {
	t.Helper()
	cl := c.Client(t, kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	var out []*kgo.Record
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	for len(out) < n {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("read %d of %d records of %s", len(out), n, topic)
		}
		fs.EachError(func(tp string, p int32, err error) { t.Fatalf("consume %s-%d: %v", tp, p, err) })
		out = append(out, fs.Records()...)
	}
	return out
}

func header(r *kgo.Record, key string) string {
	for _, h := range r.Headers {
		if h.Key == key {
			return string(h.Value)
		}
	}
	return ""
}

// sameLogs checks that every partition of topic holds the same batches on a and b.
func sameLogs(t *testing.T, a, b *clustertest.Cluster, topic string, partitions int32) {
	t.Helper()
	aadm, badm := a.Admin(t), b.Admin(t)
	awaitCaughtUp(t, aadm, badm, topic)
	acl, bcl := a.Client(t), b.Client(t)
	for p := range partitions {
		sameBatches(t, fmt.Sprintf("%s-%d", topic, p), batches(t, acl, topic, p), batches(t, bcl, topic, p))
	}
}

// mirrorThenPause creates link dr on b mirroring topic from a, waits until b holds
// a's records, pauses the link and waits until each of the topic's partitions (there
// must be that many in the status) is paused: what a then writes is a tail the link
// never mirrored.
func mirrorThenPause(t *testing.T, a, b *clustertest.Cluster, topic string, partitions int) {
	t.Helper()
	runCLI(t, "link", "create", "dr", "--source", a.Bootstrap(), "--topics", topic, "-b", b.Bootstrap())
	awaitCaughtUp(t, a.Admin(t), b.Admin(t), topic)
	runCLI(t, "link", "pause", "dr", "-b", b.Bootstrap())
	testutil.Eventually(t, 5*time.Second, func() error {
		ps := status(t, b.Bootstrap(), "dr").Partitions
		if len(ps) != partitions {
			return fmt.Errorf("%d partitions in the status, want %d: %+v", len(ps), partitions, ps)
		}
		for _, p := range ps {
			if p.State != "paused" {
				return fmt.Errorf("not paused: %+v", p)
			}
		}
		return nil
	})
}

// TestLinkFailbackQuarantinesTail: the old source wrote a tail the link never
// mirrored (paused) before the promote on the destination; the failback on the old
// source sets that tail aside in a quarantine topic (counted, readable, each record's
// original offset in a header), cuts, and then holds exactly the new primary's
// batches at the same offsets; run again (after a crash between the fence and the
// cut, with part of the tail copied), nothing is quarantined twice and the answer is
// the same; and the old source, promoted again, takes writes after the new
// primary's records.
func TestLinkFailbackQuarantinesTail(t *testing.T) {
	a, b := startNode(t), startNode(t)
	const topic = "orders"
	ctx := context.Background()
	if _, err := a.Admin(t).CreateTopic(ctx, 2, 1, nil, topic); err != nil {
		t.Fatal(err)
	}
	for p := range int32(2) {
		produceTo(t, a, topic, p, "first", 50+int(p)*10)
	}
	mirrorThenPause(t, a, b, topic, 2)
	// The tail: written on the old source, never mirrored.
	tails := map[int32][]int64{0: produceTo(t, a, topic, 0, "tail0", 7), 1: produceTo(t, a, topic, 1, "tail1", 5)}

	promoted := rowsOf(t, runCLI(t, "link", "promote", "dr", "--all", "--json", "-b", b.Bootstrap()))
	if len(promoted) != 2 || promoted[0].WritableFrom != 50 || promoted[1].WritableFrom != 60 {
		t.Fatalf("promote: %+v, want partitions writable from 50 and 60", promoted)
	}
	// What the promote recorded: the end of what was mirrored and the source's
	// leader epoch of the last mirrored batch (the old source's, not this cluster's).
	aepochs := leaderEpochs(t, a, topic)
	testutil.Eventually(t, 10*time.Second, func() error {
		resp, err := link.Send(ctx, b.Client(t), link.Request{Op: link.OpFailback, Link: "dr", All: true,
			Failback: &link.FailbackArgs{Phase: link.PhaseInfo}})
		if err != nil || resp.Error != "" || resp.Failback == nil || len(resp.Failback.Topics) != 1 {
			return fmt.Errorf("info: %+v %v", resp, err)
		}
		for _, p := range resp.Failback.Topics[0].Partitions {
			if p.MirroredEnd != promoted[p.Partition].WritableFrom || p.SourceEpoch != aepochs[p.Partition] {
				return fmt.Errorf("partition %d recorded mirrored end %d source epoch %d, want %d and %d",
					p.Partition, p.MirroredEnd, p.SourceEpoch, promoted[p.Partition].WritableFrom, aepochs[p.Partition])
			}
		}
		return nil
	})
	for p := range int32(2) {
		produceTo(t, b, topic, p, "new", 20)
	}

	// A crash mid-failback: fenced, and 3 of partition 0's 7 tail records copied.
	fence, err := link.Send(ctx, a.Client(t), link.Request{Op: link.OpFailback, Link: "dr", Source: b.Bootstrap(),
		Failback: &link.FailbackArgs{Phase: link.PhaseFence, Topics: []link.FailbackTopic{{Topic: topic}}}})
	if err != nil || fence.Error != "" {
		t.Fatalf("fence: %+v %v", fence, err)
	}
	quarantine := fence.Failback.Topics[0].Quarantine
	if !regexp.MustCompile(`^orders\.quarantine\.[0-9]+$`).MatchString(quarantine) {
		t.Fatalf("quarantine topic %q", quarantine)
	}
	refusedAtOnce(t, a.Client(t), topic)
	if _, err := a.Admin(t).CreateTopic(ctx, 2, 1, map[string]*string{"retention.ms": strp("-1")}, quarantine); err != nil {
		t.Fatal(err)
	}
	qw := a.Client(t, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	for i := range 3 {
		r := &kgo.Record{Topic: quarantine, Partition: 0, Key: fmt.Appendf(nil, "k%d", i), Value: fmt.Appendf(nil, "tail0-%d", i),
			Headers: []kgo.RecordHeader{{Key: link.HeaderQuarantineTopic, Value: []byte(topic)}, {Key: link.HeaderQuarantinePartition, Value: []byte("0")},
				{Key: link.HeaderQuarantineOffset, Value: []byte(strconv.FormatInt(tails[0][i], 10))}}}
		if err := qw.ProduceSync(ctx, r).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}

	first := rowsOf(t, runCLI(t, "link", "failback", "dr", "--source", b.Bootstrap(), "--all", "--json", "-b", a.Bootstrap()))
	want := []failbackRow{
		{Topic: topic, Partition: 0, WritableFrom: -1, TruncatedTo: 50, QuarantinedRecords: 7, Quarantine: quarantine},
		{Topic: topic, Partition: 1, WritableFrom: -1, TruncatedTo: 60, QuarantinedRecords: 5, Quarantine: quarantine},
	}
	if fmt.Sprint(first) != fmt.Sprint(want) {
		t.Fatalf("failback: %+v, want %+v", first, want)
	}
	// The quarantine holds each tail once, in order, with where each record was:
	// its topic, partition and offset.
	qs := readAll(t, a, quarantine, 12)
	got := map[int32][]string{}
	for _, r := range qs {
		got[r.Partition] = append(got[r.Partition], fmt.Sprintf("%s@%s/%s/%s", r.Value, header(r, link.HeaderQuarantineTopic),
			header(r, link.HeaderQuarantinePartition), header(r, link.HeaderQuarantineOffset)))
	}
	for p, offs := range tails {
		var w []string
		for i, o := range offs {
			w = append(w, fmt.Sprintf("tail%d-%d@%s/%d/%d", p, i, topic, p, o))
		}
		if fmt.Sprint(got[p]) != fmt.Sprint(w) {
			t.Fatalf("quarantine partition %d: %v, want %v", p, got[p], w)
		}
	}
	// The old source now holds exactly the new primary's batches.
	sameLogs(t, b, a, topic, 2)

	// Run again: the same answer, nothing quarantined twice.
	again := rowsOf(t, runCLI(t, "link", "failback", "dr", "--source", b.Bootstrap(), "--all", "--json", "-b", a.Bootstrap()))
	if fmt.Sprint(again) != fmt.Sprint(want) {
		t.Fatalf("failback run again: %+v, want %+v", again, want)
	}
	_, qe := offsets(t, a.Admin(t), quarantine)
	if qe[0] != 7 || qe[1] != 5 {
		t.Fatalf("quarantine ends after a second run: %v, want 7 and 5", qe)
	}

	// The second promote back: the old source, mirroring the new primary, becomes
	// the primary again, writable after the new primary's records.
	for p := range int32(2) {
		produceTo(t, b, topic, p, "more", 10)
	}
	sameLogs(t, b, a, topic, 2)
	_, bends := offsets(t, b.Admin(t), topic)
	back := rowsOf(t, runCLI(t, "link", "promote", "dr", "--all", "--json", "-b", a.Bootstrap()))
	for _, r := range back {
		if r.WritableFrom != bends[r.Partition] {
			t.Fatalf("promote back: %+v, want writable from the new primary's end %v", back, bends)
		}
	}
	if offs := produceTo(t, a, topic, 1, "back", 1); offs[0] != bends[1] {
		t.Fatalf("first write after the promote back at %d, want %d", offs[0], bends[1])
	}

	// The full circle: B, still writable after A's promote, wrote a tail of its own;
	// B fails back to follow A, setting that tail aside.
	produceTo(t, b, topic, 0, "btail", 2)
	circle := rowsOf(t, runCLI(t, "link", "failback", "dr", "--source", a.Bootstrap(), "--all", "--json", "-b", b.Bootstrap()))
	if len(circle) != 2 || circle[0].TruncatedTo != bends[0] || circle[0].QuarantinedRecords != 2 ||
		circle[1].TruncatedTo != bends[1] || circle[1].QuarantinedRecords != 0 || circle[1].Quarantine != "" {
		t.Fatalf("failback of B: %+v, want cuts at %v, B's 2 records of partition 0 quarantined", circle, bends)
	}
	sameLogs(t, a, b, topic, 2)
}

func strp(s string) *string { return &s }

// leaderEpochs returns the leader epoch of each partition of topic on c.
func leaderEpochs(t *testing.T, c *clustertest.Cluster, topic string) map[int32]int32 {
	t.Helper()
	md, err := c.Admin(t).Metadata(context.Background(), topic)
	if err != nil {
		t.Fatal(err)
	}
	out := map[int32]int32{}
	for _, p := range md.Topics[topic].Partitions {
		out[p.Partition] = p.LeaderEpoch
	}
	return out
}

// TestLinkSwitchover: with the producers stopped and the link behind (paused), a
// switchover moves the link's topic to the destination with no write lost (every record the source held is on
// the destination, at its offsets, a committed transaction included), nothing
// quarantined, and the source then mirrors the destination's new writes.
func TestLinkSwitchover(t *testing.T) {
	a, b := startNode(t), startNode(t)
	const topic = "events"
	ctx := context.Background()
	if _, err := a.Admin(t).CreateTopic(ctx, 2, 1, nil, topic); err != nil {
		t.Fatal(err)
	}
	runCLI(t, "link", "create", "dr", "--source", a.Bootstrap(), "-b", b.Bootstrap())
	// The link is paused while the producers write, then they stop (the operator
	// paused them): the switchover resumes the link and must wait for it to catch up.
	runCLI(t, "link", "pause", "dr", "-b", b.Bootstrap())
	for p := range int32(2) {
		produceTo(t, a, topic, p, "before", 300)
	}
	txn := a.Client(t, kgo.TransactionalID("switch-txn"))
	if err := txn.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := txn.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: []byte("in-txn")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	if err := txn.EndTransaction(ctx, kgo.TryCommit); err != nil {
		t.Fatal(err)
	}
	_, aends := offsets(t, a.Admin(t), topic)

	var res struct {
		Promoted   []failbackRow `json:"promoted"`
		FailedBack []failbackRow `json:"failed_back"`
	}
	if err := json.Unmarshal([]byte(runCLI(t, "link", "switchover", "dr", "--all", "--json", "-b", b.Bootstrap())), &res); err != nil {
		t.Fatal(err)
	}
	if len(res.Promoted) != 2 || len(res.FailedBack) != 2 {
		t.Fatalf("switchover: %+v", res)
	}
	for i := range 2 {
		p, f := res.Promoted[i], res.FailedBack[i]
		if p.WritableFrom != aends[p.Partition] || f.TruncatedTo != aends[f.Partition] || f.QuarantinedRecords != 0 || f.Quarantine != "" {
			t.Fatalf("switchover partition %d: promoted %+v, failed back %+v, want both at the source's end %d and nothing quarantined",
				i, p, f, aends[p.Partition])
		}
	}
	// No write lost: the destination holds the source's batches, and read_committed
	// readers see the same records on both.
	sameLogs(t, a, b, topic, 2)
	// The destination takes writes; the old source follows it.
	w, err := b.Client(t).ProduceSync(ctx, &kgo.Record{Topic: topic, Value: []byte("after")}).First()
	if err != nil {
		t.Fatalf("produce on the destination after the switchover: %v", err)
	}
	if w.Offset != aends[w.Partition] {
		t.Fatalf("first write after the switchover at %d, want %d", w.Offset, aends[w.Partition])
	}
	sameLogs(t, b, a, topic, 2)
	sv, bv := committedValues(t, a.ClientDefaults(), topic), committedValues(t, b.ClientDefaults(), topic)
	if len(sv) != 602 || fmt.Sprint(sv) != fmt.Sprint(bv) {
		t.Fatalf("read_committed: %d records on the old source, %d on the destination (or they differ), want 602", len(sv), len(bv))
	}
}

// TestLinkFailbackEveryReplicaCuts: on an old primary of three nodes (replication
// factor 3), the failback's cut reaches every replica, not only the leader: a
// follower in sync at the cut truncates through OffsetForLeaderEpoch, and one that
// was down during the whole failback (killed, holding the tail) truncates when it
// comes back; each one's log then holds exactly the new primary's records at their
// offsets, and no record of the tail.
func TestLinkFailbackEveryReplicaCuts(t *testing.T) {
	a := clustertest.Start(t, clustertest.Options{Nodes: 3, InProcess: true, StartTimeout: 30 * time.Second,
		Sets: []string{"num.partitions=1", "default.replication.factor=3", "offsets.topic.replication.factor=3",
			"replica.lag.time.max.ms=1500"}})
	b := startNode(t)
	const topic = "ledger"
	ctx := context.Background()
	if _, err := a.Admin(t).CreateTopic(ctx, 1, 3, nil, topic); err != nil {
		t.Fatal(err)
	}
	produceTo(t, a, topic, 0, "first", 40)
	mirrorThenPause(t, a, b, topic, 1)
	produceTo(t, a, topic, 0, "tail", 6) // acks=all: on every replica
	runCLI(t, "link", "promote", "dr", "--all", "-b", b.Bootstrap())
	produceTo(t, b, topic, 0, "new", 10)

	// A follower dies; the quarantine is created with the brokers alive (one replica
	// each when the cluster has fewer than its default replication factor).
	md, err := a.Admin(t).Metadata(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	leader := md.Topics[topic].Partitions[0].Leader
	down := 1
	for down == int(leader) {
		down++
	}
	a.Kill(down)

	rows := rowsOf(t, runCLI(t, "link", "failback", "dr", "--source", b.Bootstrap(), "--topic", topic, "--json", "-b", a.Bootstrap()))
	if len(rows) != 1 || rows[0].TruncatedTo != 40 || rows[0].QuarantinedRecords != 6 {
		t.Fatalf("failback: %+v, want cut at 40 with 6 records quarantined", rows)
	}
	awaitCaughtUp(t, b.Admin(t), a.Admin(t), topic)
	a.Restart(down)
	want := map[int64]string{}
	for _, r := range readAll(t, b, topic, 50) {
		want[r.Offset] = string(r.Value)
	}
	for node := 1; node <= a.Size(); node++ {
		testutil.Eventually(t, 15*time.Second, func() error {
			rl := a.ReadReplica(t, node, topic, 0)
			if rl.End != 50 || fmt.Sprint(rl.Values) != fmt.Sprint(want) {
				return fmt.Errorf("node %d's replica (node %d was down): end %d, values %v; want end 50, values %v", rl.Node, down, rl.End, rl.Values, want)
			}
			return nil
		})
	}
}

// TestLinkFailbackWaitsForOpenTransaction: a transaction left open on the old
// primary would have its marker written into the mirror later: the failback stops
// before any cut and says so, the topic stays fenced, the producer can still end the
// transaction, and the failback run again then sets its records aside (aborted
// records are records of the tail too) and cuts.
func TestLinkFailbackWaitsForOpenTransaction(t *testing.T) {
	a, b := startNode(t), startNode(t)
	const topic = "payments"
	ctx := context.Background()
	if _, err := a.Admin(t).CreateTopic(ctx, 1, 1, nil, topic); err != nil {
		t.Fatal(err)
	}
	produceTo(t, a, topic, 0, "first", 10)
	mirrorThenPause(t, a, b, topic, 1)
	txn := a.Client(t, kgo.TransactionalID("open-at-failback"))
	if err := txn.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := txn.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: []byte("open-1")}, &kgo.Record{Topic: topic, Value: []byte("open-2")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	runCLI(t, "link", "promote", "dr", "--all", "-b", b.Bootstrap())

	var out, errb bytes.Buffer
	args := []string{"link", "failback", "dr", "--source", b.Bootstrap(), "--all", "--json", "-b", a.Bootstrap()}
	if code := cli.MainIO(args, strings.NewReader(""), &out, &errb); code == 0 || !strings.Contains(errb.String(), "a transaction is open on payments-0") {
		t.Fatalf("failback with an open transaction: exit %d: %s%s", code, errb.String(), out.String())
	}
	if err := txn.EndTransaction(ctx, kgo.TryAbort); err != nil {
		t.Fatalf("aborting the transaction on the fenced topic: %v", err)
	}
	rows := rowsOf(t, runCLI(t, args...))
	if len(rows) != 1 || rows[0].TruncatedTo != 10 || rows[0].QuarantinedRecords != 2 || rows[0].Quarantine == "" {
		t.Fatalf("failback after the abort: %+v, want cut at 10, the 2 aborted records quarantined", rows)
	}
	produceTo(t, b, topic, 0, "new", 3)
	sameLogs(t, b, a, topic, 1)
}

// TestLinkSwitchoverRefusesNonRunnelSource: the reverse step needs a link on the
// source; a source that cannot host one (kfake here, as Apache Kafka) is refused
// before anything changes: the topic is still mirroring, not promoted.
func TestLinkSwitchoverRefusesNonRunnelSource(t *testing.T) {
	src, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "events"))
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	dst := startNode(t)
	runCLI(t, "link", "create", "k", "--source", strings.Join(src.ListenAddrs(), ","), "-b", dst.Bootstrap())
	var out, errb bytes.Buffer
	code := cli.MainIO([]string{"link", "switchover", "k", "--all", "-b", dst.Bootstrap()}, strings.NewReader(""), &out, &errb)
	if code == 0 || !strings.Contains(errb.String(), "switchover needs a Runnel source") {
		t.Fatalf("switchover from kfake: exit %d: %s%s", code, errb.String(), out.String())
	}
	if p := status(t, dst.Bootstrap(), "k").Partitions; len(p) != 1 || p[0].State != "mirroring" {
		t.Fatalf("after the refused switchover: %+v, want still mirroring", p)
	}
}
