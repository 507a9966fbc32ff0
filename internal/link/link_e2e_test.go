package link_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/runnel-io/runnel/internal/cli"
	"github.com/runnel-io/runnel/internal/clustertest"
	"github.com/runnel-io/runnel/internal/recordbatch"
	"github.com/runnel-io/runnel/internal/testutil"
)

// startNode starts a single-node Runnel cluster in this process.
func startNode(t *testing.T) *clustertest.Cluster {
	t.Helper()
	return clustertest.Start(t, clustertest.Options{Nodes: 1, InProcess: true, StartTimeout: 30 * time.Second,
		Sets: []string{"num.partitions=1", "default.replication.factor=1", "transaction.state.log.replication.factor=1",
			"offsets.topic.replication.factor=1", "transaction.state.log.min.isr=1"}})
}

// runCLI runs `runnel ARGS...` and returns its stdout; a non-zero exit fails the test.
func runCLI(t *testing.T, args ...string) string {
	t.Helper()
	var out, errb bytes.Buffer
	if code := cli.MainIO(args, strings.NewReader(""), &out, &errb); code != 0 {
		t.Fatalf("runnel %s: exit %d: %s%s", strings.Join(args, " "), code, errb.String(), out.String())
	}
	return out.String()
}

// produceMix writes n records of every kind the issue names to topic's partitions:
// keys, headers, null values, compressed batches (a plain producer, zstd, and an
// idempotent one, lz4), and a transactional producer whose transactions alternate
// between committed and aborted.
func produceMix(t *testing.T, seeds []kgo.Opt, topic string, n int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	rec := func(i int) *kgo.Record {
		r := &kgo.Record{Topic: topic, Key: fmt.Appendf(nil, "k%d", i%97), Value: fmt.Appendf(nil, "value-%d-%s", i, strings.Repeat("x", i%50))}
		if i%7 == 0 {
			r.Value = nil
		}
		if i%5 == 0 {
			r.Headers = []kgo.RecordHeader{{Key: "h", Value: fmt.Appendf(nil, "%d", i)}, {Key: "empty"}}
		}
		return r
	}
	producers := [][]kgo.Opt{
		{kgo.DisableIdempotentWrite(), kgo.ProducerBatchCompression(kgo.ZstdCompression())},
		{kgo.ProducerBatchCompression(kgo.Lz4Compression()), kgo.ProducerLinger(5 * time.Millisecond)},
	}
	per := n / 3
	for pi, opts := range producers {
		cl, err := kgo.NewClient(append(append([]kgo.Opt{}, seeds...), opts...)...)
		if err != nil {
			t.Fatal(err)
		}
		for i := range per {
			cl.Produce(ctx, rec(pi*per+i), func(_ *kgo.Record, err error) {
				if err != nil {
					t.Errorf("produce: %v", err)
				}
			})
		}
		if err := cl.Flush(ctx); err != nil {
			t.Fatal(err)
		}
		cl.Close()
	}
	txn, err := kgo.NewClient(append(append([]kgo.Opt{}, seeds...), kgo.TransactionalID("link-test-txn"),
		kgo.ProducerBatchCompression(kgo.SnappyCompression(), kgo.NoCompression()))...)
	if err != nil {
		t.Fatal(err)
	}
	defer txn.Close()
	for batch := 0; batch*500 < per; batch++ {
		if err := txn.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		for i := range 500 {
			txn.Produce(ctx, rec(2*per+batch*500+i), nil)
		}
		if err := txn.Flush(ctx); err != nil {
			t.Fatal(err)
		}
		commit := kgo.TryCommit
		if batch%3 == 1 {
			commit = kgo.TryAbort
		}
		if err := txn.EndTransaction(ctx, commit); err != nil {
			t.Fatalf("end transaction %d: %v", batch, err)
		}
	}
}

// batches reads every batch of topic-partition from the cluster cl talks to, with a
// raw consumer Fetch at read_uncommitted, as stored (offset order), from offset 0.
func batches(t *testing.T, cl *kgo.Client, topic string, partition int32) []recordbatch.Batch {
	t.Helper()
	return fetchBatches(t, cl, -1, topic, partition, func(context.Context) int64 { return 0 })
}

// sameBatches checks that dst holds src's batches: the same offsets, CRCs and bytes,
// except the partition leader epoch field (bytes 12-15, outside the CRC), which the
// destination stamps with its own epoch (INTERFACE.md).
func sameBatches(t *testing.T, what string, src, dst []recordbatch.Batch) {
	t.Helper()
	if len(src) != len(dst) {
		t.Fatalf("%s: %d batches on the source, %d on the destination", what, len(src), len(dst))
	}
	for i := range src {
		a, b := recordbatch.Batch(bytes.Clone(src[i])), recordbatch.Batch(bytes.Clone(dst[i]))
		a.SetPartitionLeaderEpoch(0)
		b.SetPartitionLeaderEpoch(0)
		if src[i].BaseOffset() != dst[i].BaseOffset() || src[i].CRC() != dst[i].CRC() || !bytes.Equal(a, b) {
			t.Fatalf("%s: batch %d differs: source offset %d crc %08x (%d bytes), destination offset %d crc %08x (%d bytes)",
				what, i, src[i].BaseOffset(), src[i].CRC(), len(src[i]), dst[i].BaseOffset(), dst[i].CRC(), len(dst[i]))
		}
	}
}

// offsets returns ListOffsets earliest and latest of every partition of topic; an
// error, or a partition's, fails the test.
func offsets(t *testing.T, adm *kadm.Client, topic string) (start, end map[int32]int64) {
	t.Helper()
	start, end, err := listOffsets(adm, topic)
	if err != nil {
		t.Fatal(err)
	}
	return start, end
}

// listOffsets is offsets, returning the first error (the request's or a
// partition's) instead of an offset that means nothing.
func listOffsets(adm *kadm.Client, topic string) (start, end map[int32]int64, err error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s, err := adm.ListStartOffsets(ctx, topic)
	if err != nil {
		return nil, nil, fmt.Errorf("ListOffsets earliest of %s: %w", topic, err)
	}
	e, err := adm.ListEndOffsets(ctx, topic)
	if err != nil {
		return nil, nil, fmt.Errorf("ListOffsets latest of %s: %w", topic, err)
	}
	start, end = map[int32]int64{}, map[int32]int64{}
	for _, l := range []struct {
		name string
		in   kadm.ListedOffsets
		out  map[int32]int64
	}{{"earliest", s, start}, {"latest", e, end}} {
		l.in.Each(func(o kadm.ListedOffset) {
			if o.Err != nil && err == nil {
				err = fmt.Errorf("ListOffsets %s of %s-%d: %w", l.name, o.Topic, o.Partition, o.Err)
			}
			l.out[o.Partition] = o.Offset
		})
	}
	return start, end, err
}

// committedValues reads topic at read_committed until every partition was read to its
// last stable offset (everything was written before: no transaction is open, so that
// is its end) and returns every record's partition, offset, key and value, sorted.
// The consumer keeps control records, so that a partition ending in a transaction
// marker or aborted data shows that it reached its end; they are not returned.
func committedValues(t *testing.T, opts []kgo.Opt, topic string) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	adm := kadm.NewClient(testClient(t, opts))
	lsos, err := adm.ListCommittedOffsets(ctx, topic)
	if err != nil {
		t.Fatalf("last stable offsets of %s: %v", topic, err)
	}
	want := map[int32]int64{}
	lsos.Each(func(o kadm.ListedOffset) {
		if o.Err != nil {
			t.Fatalf("last stable offset of %s-%d: %v", topic, o.Partition, o.Err)
		}
		if o.Offset > 0 {
			want[o.Partition] = o.Offset
		}
	})
	if len(lsos) == 0 {
		t.Fatalf("last stable offsets of %s: no partition", topic)
	}
	cl := testClient(t, append(append([]kgo.Opt{}, opts...), kgo.ConsumeTopics(topic), kgo.KeepControlRecords(),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart())))
	var out []string
	next := map[int32]int64{}
	reached := func() bool {
		for p, e := range want {
			if next[p] < e {
				return false
			}
		}
		return true
	}
	for !reached() {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("read_committed consume of %s: read to %v, last stable offsets %v: %v", topic, next, want, ctx.Err())
		}
		fs.EachError(func(tp string, p int32, err error) {
			t.Fatalf("read_committed consume of %s-%d: %v", tp, p, err)
		})
		fs.EachRecord(func(r *kgo.Record) {
			next[r.Partition] = max(next[r.Partition], r.Offset+1)
			if !r.Attrs.IsControl() {
				out = append(out, fmt.Sprintf("%d/%d/%s/%q", r.Partition, r.Offset, r.Key, r.Value))
			}
		})
	}
	slices.Sort(out) // partitions interleave in any order
	return out
}

// testClient is a client of opts, closed at the test's end.
func testClient(t *testing.T, opts []kgo.Opt) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

// awaitCaughtUp waits until the destination's end of every partition of topic is the
// source's.
func awaitCaughtUp(t *testing.T, src, dst *kadm.Client, topic string) {
	t.Helper()
	testutil.Eventually(t, 20*time.Second, func() error {
		_, se, err := listOffsets(src, topic)
		if err != nil {
			return fmt.Errorf("the source: %w", err)
		}
		_, de, err := listOffsets(dst, topic)
		if err != nil {
			return fmt.Errorf("the destination: %w", err)
		}
		if len(se) == 0 {
			return fmt.Errorf("the source lists no partition of %s", topic)
		}
		for p, e := range se {
			if d, ok := de[p]; !ok || d != e {
				return fmt.Errorf("%s-%d: destination end %d (listed: %v), source end %d", topic, p, d, ok, e)
			}
		}
		return nil
	})
}

// refusedAtOnce checks that a default producer's write to topic, a mirror topic not
// promoted, fails with INVALID_REQUEST (not retriable) at once: within about a
// second, not after its delivery timeout.
func refusedAtOnce(t *testing.T, cl *kgo.Client, topic string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	start := time.Now()
	err := cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: []byte("no")}).FirstErr()
	took := time.Since(start)
	if !errors.Is(err, kerr.InvalidRequest) {
		t.Fatalf("default producer's write to mirror topic %s: %v after %v, want INVALID_REQUEST", topic, err, took)
	}
	if took > 1500*time.Millisecond {
		t.Fatalf("default producer's write to mirror topic %s failed after %v, want at once (INVALID_REQUEST is not retriable)", topic, took)
	}
	t.Logf("a default producer's write to mirror topic %s refused after %v", topic, took)
}

// linkBytes reads runnel_link_bytes_total{link} from node's /metrics.
func linkBytes(t *testing.T, c *clustertest.Cluster, node int, link string) (float64, bool) {
	t.Helper()
	want := `runnel_link_bytes_total{link="` + link + `"} `
	for _, line := range strings.Split(metricsText(t, c, node), "\n") {
		if v, ok := strings.CutPrefix(line, want); ok {
			f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			if err != nil {
				t.Fatalf("metric line %q: %v", line, err)
			}
			return f, true
		}
	}
	return 0, false
}

func TestLinkByteEqualityFromRunnel(t *testing.T) {
	src, dst := startNode(t), startNode(t)
	const topic = "orders"
	ctx := context.Background()
	sadm, dadm := src.Admin(t), dst.Admin(t)
	if _, err := sadm.CreateTopic(ctx, 3, 1, map[string]*string{"retention.ms": kmsg.StringPtr("86400000")}, topic); err != nil {
		t.Fatal(err)
	}
	produceMix(t, src.ClientDefaults(), topic, 21_000)

	if b, ok := linkBytes(t, dst, 1, "dr"); ok && b != 0 {
		t.Fatalf("runnel_link_bytes_total{link=\"dr\"} is %v before the link exists", b)
	}
	out := runCLI(t, "link", "create", "dr", "--source", src.Bootstrap(), "--topics", "ord.*", "-b", dst.Bootstrap())
	if !strings.Contains(out, "1 mirror topics: orders") {
		t.Fatalf("link create: %s", out)
	}
	awaitCaughtUp(t, sadm, dadm, topic)

	scl, dcl := src.Client(t), dst.Client(t)
	copied := 0
	for p := int32(0); p < 3; p++ {
		sb := batches(t, scl, topic, p)
		sameBatches(t, fmt.Sprintf("%s-%d", topic, p), sb, batches(t, dcl, topic, p))
		for _, b := range sb {
			copied += len(b)
		}
	}
	// Every batch the destination holds was copied by node 1: the counter holds at
	// least their bytes.
	b, ok := linkBytes(t, dst, 1, "dr")
	if !ok || b < float64(copied) {
		t.Fatalf("runnel_link_bytes_total{link=\"dr\"} = %v (exported: %v), want at least the %d bytes of the batches copied", b, ok, copied)
	}
	t.Logf("runnel_link_bytes_total{link=\"dr\"} = %v, the batches copied hold %d bytes", b, copied)
	ss, se := offsets(t, sadm, topic)
	ds, de := offsets(t, dadm, topic)
	if fmt.Sprint(ss, se) != fmt.Sprint(ds, de) {
		t.Fatalf("ListOffsets: source start %v end %v, destination start %v end %v", ss, se, ds, de)
	}
	sv, dv := committedValues(t, src.ClientDefaults(), topic), committedValues(t, dst.ClientDefaults(), topic)
	if len(sv) < 14_000 || strings.Join(sv, "\n") != strings.Join(dv, "\n") {
		t.Fatalf("read_committed: %d records on the source, %d on the destination (or they differ)", len(sv), len(dv))
	}
	dc, err := dadm.DescribeTopicConfigs(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	if v, err := dc.On(topic, nil); err != nil || !slices.ContainsFunc(v.Configs, func(c kadm.Config) bool {
		return c.Key == "retention.ms" && c.Value != nil && *c.Value == "86400000"
	}) {
		t.Errorf("the source's retention.ms=86400000 was not copied: %+v %v", v.Configs, err)
	}

	// The mirror topic is read-only, with a message naming the link.
	refusedAtOnce(t, dst.Client(t), topic)
	// The message (kgo does not show it: a raw Produce) names the link.
	bld := recordbatch.NewBuilder(64)
	bld.Add(nil, []byte("no"), nil, time.Now().UnixMilli())
	preq := kmsg.NewPtrProduceRequest()
	preq.Acks, preq.TimeoutMillis = -1, 5000
	pt := kmsg.NewProduceRequestTopic()
	pt.Topic = topic
	pp := kmsg.NewProduceRequestTopicPartition()
	pp.Records = bld.Build()
	pt.Partitions = append(pt.Partitions, pp)
	preq.Topics = append(preq.Topics, pt)
	presp, err := preq.RequestWith(ctx, dcl)
	if err != nil {
		t.Fatal(err)
	}
	if rp := presp.Topics[0].Partitions[0]; rp.ErrorCode != kerr.InvalidRequest.Code || rp.ErrorMessage == nil ||
		!strings.Contains(*rp.ErrorMessage, "mirror topic of link dr; promote it first") {
		t.Fatalf("raw produce to a mirror topic: code %d message %v", rp.ErrorCode, rp.ErrorMessage)
	}

	var st struct {
		Link       string `json:"link"`
		Partitions []struct {
			Topic      string `json:"topic"`
			SourceEnd  int64  `json:"source_end"`
			End        int64  `json:"end"`
			LagRecords int64  `json:"lag_records"`
			State      string `json:"state"`
		} `json:"partitions"`
	}
	testutil.Eventually(t, 10*time.Second, func() error {
		if err := json.Unmarshal([]byte(runCLI(t, "link", "status", "dr", "--json", "-b", dst.Bootstrap())), &st); err != nil {
			return err
		}
		if len(st.Partitions) != 3 {
			return fmt.Errorf("status has %d partitions", len(st.Partitions))
		}
		for _, p := range st.Partitions {
			if p.State != "mirroring" || p.LagRecords != 0 || p.SourceEnd != p.End {
				return fmt.Errorf("status: %+v", p)
			}
		}
		return nil
	})
}

// linkStatus is `link status --json`, with its groups.
type linkStatus struct {
	Link       string `json:"link"`
	Partitions []struct {
		Topic      string  `json:"topic"`
		Partition  int32   `json:"partition"`
		SourceEnd  int64   `json:"source_end"`
		End        int64   `json:"end"`
		LagRecords int64   `json:"lag_records"`
		LagSeconds float64 `json:"lag_seconds"`
		State      string  `json:"state"`
		Error      string  `json:"error"`
	} `json:"partitions"`
	Groups []struct {
		Group      string `json:"group"`
		Topic      string `json:"topic"`
		Partition  int32  `json:"partition"`
		Offset     int64  `json:"offset"`
		SyncedAtMs int64  `json:"synced_at_ms"`
	} `json:"groups"`
}

func status(t *testing.T, boot, link string) linkStatus {
	t.Helper()
	var st linkStatus
	if err := json.Unmarshal([]byte(runCLI(t, "link", "status", link, "--json", "-b", boot)), &st); err != nil {
		t.Fatal(err)
	}
	return st
}

// TestLinkPauseLag: a paused link copies nothing but its lag shows, growing, in
// status and on /metrics; resumed, it catches up and the lag is 0 in both; with the source down, lag_seconds grows from the last successful fetch and
// the error names the failure, source_end staying the last known.
func TestLinkPauseLag(t *testing.T) {
	src, dst := startNode(t), startNode(t)
	ctx := context.Background()
	if _, err := src.Admin(t).CreateTopic(ctx, 1, 1, nil, "lagging"); err != nil {
		t.Fatal(err)
	}
	p := src.Client(t)
	if err := p.ProduceSync(ctx, &kgo.Record{Topic: "lagging", Value: []byte("first")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	runCLI(t, "link", "create", "slow", "--source", src.Bootstrap(), "-b", dst.Bootstrap())
	testutil.Eventually(t, 10*time.Second, func() error {
		if st := status(t, dst.Bootstrap(), "slow"); len(st.Partitions) != 1 || st.Partitions[0].End != 1 || st.Partitions[0].SourceEnd != 1 {
			return fmt.Errorf("not caught up: %+v", st.Partitions)
		}
		return nil
	})
	// A paused partition copies nothing, but its source end is still followed: the
	// lag shows, in records and growing seconds, in status and on /metrics.
	runCLI(t, "link", "pause", "slow", "-b", dst.Bootstrap())
	for i := range 10 {
		if err := p.ProduceSync(ctx, &kgo.Record{Topic: "lagging", Value: fmt.Appendf(nil, "r%d", i)}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	var first float64
	testutil.Eventually(t, 15*time.Second, func() error {
		q := status(t, dst.Bootstrap(), "slow").Partitions[0]
		r, s, ok := linkMetrics(t, dst, 1, "slow", "lagging", 0)
		if q.State != "paused" || q.End != 1 || q.SourceEnd != 11 || q.LagRecords != 10 || q.LagSeconds <= 0 || !ok || r != 10 || s <= 0 {
			return fmt.Errorf("paused link: status %+v, metrics %v records %v s (exported: %v), want 10 records behind", q, r, s, ok)
		}
		first = q.LagSeconds
		return nil
	})
	testutil.Eventually(t, 10*time.Second, func() error {
		q := status(t, dst.Bootstrap(), "slow").Partitions[0]
		_, s, _ := linkMetrics(t, dst, 1, "slow", "lagging", 0)
		if q.End != 1 || q.LagSeconds < first+1 || s < first+1 {
			return fmt.Errorf("paused link: lag_seconds %v, metric %v, want both past %v, end %d still 1", q.LagSeconds, s, first+1, q.End)
		}
		return nil
	})
	runCLI(t, "link", "resume", "slow", "-b", dst.Bootstrap())
	testutil.Eventually(t, 10*time.Second, func() error {
		st := status(t, dst.Bootstrap(), "slow")
		r, s, ok := linkMetrics(t, dst, 1, "slow", "lagging", 0)
		if q := st.Partitions[0]; q.State != "mirroring" || q.End != 11 || q.LagRecords != 0 || q.LagSeconds != 0 || !ok || r != 0 || s != 0 {
			return fmt.Errorf("resumed link: status %+v, metrics %v records %v s (exported: %v)", st.Partitions, r, s, ok)
		}
		return nil
	})
	// The source goes away: lag_seconds is at least the time since the last
	// successful fetch, and the error says why.
	if err := src.Stop(1); err != nil {
		t.Logf("stopping the source: %v", err)
	}
	testutil.Eventually(t, 15*time.Second, func() error {
		st := status(t, dst.Bootstrap(), "slow")
		if q := st.Partitions[0]; q.LagSeconds < 1 || q.Error == "" || q.SourceEnd != 11 {
			return fmt.Errorf("source down: %+v", st.Partitions)
		}
		return nil
	})
}

func TestLinkFromKfakeSource(t *testing.T) {
	src, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(2, "events"))
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	seeds := []kgo.Opt{kgo.SeedBrokers(src.ListenAddrs()...)}
	produceMix(t, seeds, "events", 6_000)
	dst := startNode(t)
	runCLI(t, "link", "create", "k", "--source", strings.Join(src.ListenAddrs(), ","), "-b", dst.Bootstrap())
	scl, err := kgo.NewClient(seeds...)
	if err != nil {
		t.Fatal(err)
	}
	defer scl.Close()
	sadm, dadm := kadm.NewClient(scl), dst.Admin(t)
	awaitCaughtUp(t, sadm, dadm, "events")
	dcl := dst.Client(t)
	for p := int32(0); p < 2; p++ {
		sameBatches(t, fmt.Sprintf("events-%d", p), batches(t, scl, "events", p), batches(t, dcl, "events", p))
	}
	sv, dv := committedValues(t, seeds, "events"), committedValues(t, dst.ClientDefaults(), "events")
	if len(sv) == 0 || strings.Join(sv, "\n") != strings.Join(dv, "\n") {
		t.Fatalf("read_committed: %d records on the source, %d on the destination (or they differ)", len(sv), len(dv))
	}
}

func TestLinkPromoteWithSourceDown(t *testing.T) {
	src, dst := startNode(t), startNode(t)
	const topic, group = "payments", "billing"
	ctx := context.Background()
	sadm, dadm := src.Admin(t), dst.Admin(t)
	if _, err := sadm.CreateTopic(ctx, 1, 1, nil, topic); err != nil {
		t.Fatal(err)
	}
	p := src.Client(t)
	for i := range 1000 {
		p.Produce(ctx, &kgo.Record{Topic: topic, Value: fmt.Appendf(nil, "r%d", i)}, nil)
	}
	if err := p.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	// A consumer group reads 600 records on the source and commits.
	c := src.Client(t, kgo.ConsumeTopics(topic), kgo.ConsumerGroup(group), kgo.DisableAutoCommit(),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	var read []*kgo.Record
	for len(read) < 600 {
		fs := c.PollRecords(ctx, 600-len(read))
		if err := fs.Err0(); err != nil {
			t.Fatal(err)
		}
		read = append(read, fs.Records()...)
	}
	if err := c.CommitRecords(ctx, read...); err != nil {
		t.Fatal(err)
	}
	c.Close()
	// A transaction left open on the source at the failover: its records are copied
	// (read_uncommitted) and must not survive the promote.
	txn := src.Client(t, kgo.TransactionalID("open-at-failover"))
	if err := txn.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := txn.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: []byte("half")}, &kgo.Record{Topic: topic, Value: []byte("txn")}).FirstErr(); err != nil {
		t.Fatal(err)
	}

	runCLI(t, "link", "create", "dr", "--source", src.Bootstrap(), "--topics", topic, "-b", dst.Bootstrap())
	awaitCaughtUp(t, sadm, dadm, topic)
	// Group offsets are not synced yet (a later step): commit the group's position on
	// the destination by hand, as the sync will.
	committed, err := sadm.FetchOffsets(ctx, group)
	if err != nil {
		t.Fatal(err)
	}
	if err := dadm.CommitAllOffsets(ctx, group, committed.Offsets()); err != nil {
		t.Fatal(err)
	}

	if err := src.Stop(1); err != nil {
		t.Logf("stopping the source: %v", err)
	}
	start := time.Now()
	var res struct {
		Partitions []struct {
			Topic        string `json:"topic"`
			Partition    int32  `json:"partition"`
			WritableFrom int64  `json:"writable_from"`
			TruncatedTo  int64  `json:"truncated_to"`
		} `json:"partitions"`
	}
	if err := json.Unmarshal([]byte(runCLI(t, "link", "promote", "dr", "--all", "--json", "-b", dst.Bootstrap())), &res); err != nil {
		t.Fatal(err)
	}
	if len(res.Partitions) != 1 || res.Partitions[0].WritableFrom != 1000 {
		t.Fatalf("promote: %+v, want partition 0 writable from 1000 (the open transaction cut)", res.Partitions)
	}
	w := dst.Client(t)
	r, err := w.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: []byte("after")}).First()
	if err != nil {
		t.Fatalf("produce after promote: %v", err)
	}
	if r.Offset != 1000 {
		t.Fatalf("first write after promote at offset %d, want 1000", r.Offset)
	}
	t.Logf("writable %v after the promote started", time.Since(start))

	c2 := dst.Client(t, kgo.ConsumeTopics(topic), kgo.ConsumerGroup(group), kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	fs := c2.PollRecords(ctx, 1)
	if err := fs.Err0(); err != nil {
		t.Fatal(err)
	}
	got := fs.Records()[0]
	if got.Offset != 600 || string(got.Value) != "r600" {
		t.Fatalf("the group resumed at offset %d (%q), want 600 (r600)", got.Offset, got.Value)
	}
}
