package link_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/runnel-io/runnel/internal/clustertest"
	"github.com/runnel-io/runnel/internal/testutil"
)

// kcat runs kcat (librdkafka) with args against boot and returns its stdout.
func kcat(t *testing.T, boot string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "kcat", append([]string{"-b", boot, "-q"}, args...)...)
	out, err := cmd.Output()
	if err != nil {
		msg := ""
		if ee, ok := err.(*exec.ExitError); ok {
			msg = string(ee.Stderr)
		}
		t.Fatalf("kcat %s: %v (%s); read so far: %s", strings.Join(args, " "), err, msg, out)
	}
	return string(out)
}

// groupOffsets returns group's committed offset of every partition of topic.
func groupOffsets(t *testing.T, adm *kadm.Client, group, topic string) map[int32]int64 {
	t.Helper()
	out, err := fetchGroupOffsets(adm, group, topic)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// fetchGroupOffsets is groupOffsets, returning the error (a partition's too).
func fetchGroupOffsets(adm *kadm.Client, group, topic string) (map[int32]int64, error) {
	r, err := adm.FetchOffsets(context.Background(), group)
	if err != nil {
		return nil, fmt.Errorf("fetch offsets of group %s: %w", group, err)
	}
	out := map[int32]int64{}
	r.Each(func(o kadm.OffsetResponse) {
		if o.Topic == topic && o.Err != nil && err == nil {
			err = fmt.Errorf("fetch offsets of group %s, %s-%d: %w", group, o.Topic, o.Partition, o.Err)
		}
		if o.Topic == topic && o.Err == nil && o.At >= 0 {
			out[o.Partition] = o.At
		}
	})
	return out, err
}

// consumedFrom checks that records, read by a consumer of a group whose committed
// offsets were from, start at from on every partition and go on one by one to end:
// nothing skipped, nothing read twice.
func consumedFrom(t *testing.T, who string, records map[int32][]int64, from, end map[int32]int64) {
	t.Helper()
	for p, start := range from {
		want := start
		for _, off := range records[p] {
			if off != want {
				t.Fatalf("%s: partition %d read offsets %v, want %d to %d one by one (committed at %d)", who, p, records[p], start, end[p]-1, start)
			}
			want++
		}
		if want != end[p] {
			t.Fatalf("%s: partition %d read up to %d, want %d (committed at %d)", who, p, want, end[p], start)
		}
	}
}

// TestLinkPromoteSourceKilledGroupsMove: a franz-go consumer group and a librdkafka
// (kcat -G) one read part of a topic on the source and commit; the link syncs their
// offsets (--groups); the source is killed (no shutdown) and the topic promoted. A
// default franz-go producer writes within seconds at writable_from, and both groups,
// pointed at the destination by bootstrap alone, resume at exactly the next record
// after their commits on every partition and read each record once.
func TestLinkPromoteSourceKilledGroupsMove(t *testing.T) {
	// Without kcat the librdkafka group is left out (its subtest says so); the
	// franz-go half runs.
	_, lookErr := exec.LookPath("kcat")
	haveKcat := lookErr == nil
	start := func() *clustertest.Cluster { // groups form at once: no initial rebalance delay
		return clustertest.Start(t, clustertest.Options{Nodes: 1, InProcess: true, StartTimeout: 30 * time.Second,
			Sets: []string{"num.partitions=1", "default.replication.factor=1", "transaction.state.log.replication.factor=1",
				"offsets.topic.replication.factor=1", "group.initial.rebalance.delay.ms=0"}})
	}
	src, dst := start(), start()
	const topic = "invoices"
	ctx := context.Background()
	sadm, dadm := src.Admin(t), dst.Admin(t)
	if _, err := sadm.CreateTopic(ctx, 2, 1, nil, topic); err != nil {
		t.Fatal(err)
	}
	// Small batches: a fetch answers at least a whole batch, and the groups below must
	// read part of each partition.
	p := src.Client(t, kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerBatchMaxBytes(1024))
	produceN(t, p, topic, 0, 0, 1000)
	produceN(t, p, topic, 1, 1000, 1000)

	// Each group reads part of the topic on the source and commits what it read.
	fg := src.Client(t, kgo.ConsumeTopics(topic), kgo.ConsumerGroup("fg"), kgo.DisableAutoCommit(),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	var read []*kgo.Record
	for perPart := map[int32]int{}; perPart[0] < 300 || perPart[1] < 300; {
		fs := fg.PollRecords(ctx, 100)
		if err := fs.Err0(); err != nil {
			t.Fatal(err)
		}
		for _, r := range fs.Records() {
			perPart[r.Partition]++
		}
		read = append(read, fs.Records()...)
	}
	if err := fg.CommitRecords(ctx, read...); err != nil {
		t.Fatal(err)
	}
	fg.Close()
	want := map[string]map[int32]int64{"fg": groupOffsets(t, sadm, "fg", topic)}
	if offs := want["fg"]; len(offs) != 2 || offs[0]+offs[1] != int64(len(read)) {
		t.Fatalf("group fg committed %v on the source after reading %d records", offs, len(read))
	}
	if haveKcat {
		// Small fetches, so that the 900 records come from both partitions.
		kcat(t, src.Bootstrap(), "-G", "rk", "-X", "auto.offset.reset=earliest", "-X", "max.partition.fetch.bytes=1024",
			"-c", "900", "-f", `%p %o\n`, topic)
		want["rk"] = groupOffsets(t, sadm, "rk", topic)
		if offs := want["rk"]; len(offs) != 2 || offs[0]+offs[1] != 900 {
			t.Fatalf("group rk committed %v on the source after reading 900 records", offs)
		}
	}

	runCLI(t, "link", "create", "dr", "--source", src.Bootstrap(), "--topics", topic, "--groups", "fg,rk",
		"--group-sync-interval", "200ms", "-b", dst.Bootstrap())
	awaitCaughtUp(t, sadm, dadm, topic)
	testutil.Eventually(t, 15*time.Second, func() error {
		for g, offs := range want {
			if got := groupOffsets(t, dadm, g, topic); fmt.Sprint(got) != fmt.Sprint(offs) {
				return fmt.Errorf("group %s on the destination: %v, on the source %v", g, got, offs)
			}
		}
		return nil
	})

	src.Kill(1)
	killed := time.Now()
	var res struct {
		Partitions []failbackRow `json:"partitions"`
	}
	if err := json.Unmarshal([]byte(runCLI(t, "link", "promote", "dr", "--all", "--json", "-b", dst.Bootstrap())), &res); err != nil {
		t.Fatal(err)
	}
	if len(res.Partitions) != 2 || res.Partitions[0].WritableFrom != 1000 || res.Partitions[1].WritableFrom != 1000 {
		t.Fatalf("promote: %+v, want both partitions writable from 1000", res.Partitions)
	}
	w := dst.Client(t, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	for part := range int32(2) {
		r, err := w.ProduceSync(ctx, &kgo.Record{Topic: topic, Partition: part, Value: fmt.Appendf(nil, "after-%d", part)}).First()
		if err != nil || r.Offset != 1000 {
			t.Fatalf("default producer after the promote, partition %d: offset %v, %v; want 1000", part, r, err)
		}
	}
	if took := time.Since(killed); took > 10*time.Second {
		t.Fatalf("writes accepted %v after the source was killed, want within seconds", took)
	}
	t.Logf("promoted and written %v after the source was killed", time.Since(killed))
	end := map[int32]int64{0: 1001, 1: 1001}

	// franz-go, default settings but the group and topic.
	c := dst.Client(t, kgo.ConsumeTopics(topic), kgo.ConsumerGroup("fg"))
	got := map[int32][]int64{}
	pctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	left := 2002 - len(read)
	for n := 0; n < left; {
		fs := c.PollFetches(pctx)
		if pctx.Err() != nil {
			t.Fatalf("franz-go group fg read %d of %d records on the destination", n, left)
		}
		fs.EachError(func(tp string, p int32, err error) { t.Fatalf("franz-go group fg: %s-%d: %v", tp, p, err) })
		fs.EachRecord(func(r *kgo.Record) {
			got[r.Partition] = append(got[r.Partition], r.Offset)
			n++
		})
	}
	consumedFrom(t, "franz-go group fg", got, want["fg"], end)

	// librdkafka: kcat's balanced consumer, auto.offset.reset=earliest so that a group
	// that found no commit would read from 0 (and fail the offsets check).
	t.Run("librdkafka", func(t *testing.T) {
		if !haveKcat {
			testutil.Missing(t, "kcat is not on PATH (scripts/install-deps.sh installs it): the librdkafka group was not run")
		}
		got := map[int32][]int64{}
		for _, line := range strings.Split(strings.TrimSpace(kcat(t, dst.Bootstrap(), "-G", "rk", "-X", "auto.offset.reset=earliest",
			"-c", strconv.Itoa(2002-900), "-f", `%p %o\n`, topic)), "\n") {
			var part int32
			var off int64
			if _, err := fmt.Sscanf(line, "%d %d", &part, &off); err != nil {
				t.Fatalf("kcat line %q: %v", line, err)
			}
			got[part] = append(got[part], off)
		}
		consumedFrom(t, "librdkafka group rk", got, want["rk"], end)
	})
}
