package link_test

import (
	"context"
	"crypto/rand"
	"fmt"
	"os"
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

	"github.com/runnel-io/runnel/internal/clustertest"
	"github.com/runnel-io/runnel/internal/recordbatch"
	"github.com/runnel-io/runnel/internal/testutil"
)

// batchesFrom is batches from the partition's log start (a DeleteRecords'd partition
// answers OFFSET_OUT_OF_RANGE at 0): every batch as stored, in offset order.
func batchesFrom(t *testing.T, cl *kgo.Client, topic string, partition int32) []recordbatch.Batch {
	t.Helper()
	return batchesAt(t, cl, -1, topic, partition)
}

// batchesAt is batchesFrom asking broker node only (-1: any broker, as kgo sends a
// Fetch). A follower serves a consumer's Fetch up to its own high watermark (KIP-392),
// which may lag the leader's for a moment: a check of the whole log asks the leader.
func batchesAt(t *testing.T, cl *kgo.Client, node int32, topic string, partition int32) []recordbatch.Batch {
	t.Helper()
	return fetchBatches(t, cl, node, topic, partition, func(ctx context.Context) int64 {
		starts, err := kadm.NewClient(cl).ListStartOffsets(ctx, topic)
		if err != nil {
			t.Fatal(err)
		}
		lo, ok := starts.Lookup(topic, partition)
		if !ok || lo.Err != nil {
			t.Fatalf("log start of %s-%d: %v", topic, partition, lo.Err)
		}
		return lo.Offset
	})
}

// fetchBatches reads every batch of topic-partition from the offset from gives up to
// the high watermark, with raw consumer Fetches at read_uncommitted (node -1: any
// broker, as kgo sends a Fetch), each batch as stored, in offset order. A Fetch that
// returns no whole batch below the high watermark fails the test.
func fetchBatches(t *testing.T, cl *kgo.Client, node int32, topic string, partition int32, from func(context.Context) int64) []recordbatch.Batch {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	start := from(ctx)
	meta, err := kmsg.NewPtrMetadataRequest().RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	var id [16]byte
	for _, mt := range meta.Topics {
		if mt.Topic != nil && *mt.Topic == topic {
			id = mt.TopicID
		}
	}
	var out []recordbatch.Batch
	for off := start; ; {
		req := kmsg.NewPtrFetchRequest()
		req.ReplicaID, req.MaxWaitMillis, req.MaxBytes, req.SessionEpoch = -1, 10, 8<<20, -1
		ft := kmsg.NewFetchRequestTopic()
		ft.Topic, ft.TopicID = topic, id
		fp := kmsg.NewFetchRequestTopicPartition()
		fp.Partition, fp.FetchOffset, fp.PartitionMaxBytes, fp.CurrentLeaderEpoch, fp.LogStartOffset = partition, off, 4<<20, -1, -1
		ft.Partitions = append(ft.Partitions, fp)
		req.Topics = append(req.Topics, ft)
		var resp *kmsg.FetchResponse
		if node < 0 {
			resp, err = req.RequestWith(ctx, cl)
		} else {
			var r kmsg.Response
			if r, err = cl.Broker(int(node)).RetriableRequest(ctx, req); err == nil {
				resp = r.(*kmsg.FetchResponse)
			}
		}
		if err != nil {
			t.Fatalf("fetch %s-%d at %d from node %d: %v", topic, partition, off, node, err)
		}
		rp := resp.Topics[0].Partitions[0]
		if err := kerr.ErrorForCode(rp.ErrorCode); err != nil {
			t.Fatalf("fetch %s-%d at %d: %v", topic, partition, off, err)
		}
		buf, got := rp.RecordBatches, 0
		for len(buf) >= recordbatch.HeaderSize {
			size := recordbatch.LengthPrefixSize + int(recordbatch.Batch(buf).BatchLength())
			if size > len(buf) {
				break
			}
			b := recordbatch.Batch(append([]byte(nil), buf[:size]...))
			buf = buf[size:]
			if b.NextOffset() <= off {
				continue
			}
			out = append(out, b)
			off = b.NextOffset()
			got++
		}
		if off >= rp.HighWatermark {
			return out
		}
		if got == 0 {
			t.Fatalf("fetch %s-%d at %d: no batch below the high watermark %d", topic, partition, off, rp.HighWatermark)
		}
	}
}

// compactedAway is how many offsets of [from, to) of the partition hold no record any
// more (the cleaner removed them): the span less the records its batches hold.
func compactedAway(bs []recordbatch.Batch, from, to int64) int64 {
	held := int64(0)
	for _, b := range bs {
		if b.BaseOffset() >= from && b.NextOffset() <= to && !b.IsControl() {
			held += int64(b.RecordCount())
		}
	}
	return to - from - held
}

// produceKeyed writes n records with keys prefix-(i%keys) (every 10th a tombstone:
// a null value), then keys+fill records whose keys occur once, gzip-compressed, to
// partition p of topic, and returns the end offset. The unique-key fill rolls the
// repeated keys out of the active segment, so that the cleaner can compact all of
// them, and later keys never meet them in the cleaner's map.
func produceKeyed(t *testing.T, seeds []kgo.Opt, topic string, p int32, prefix string, n, keys, fill int) int64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cl, err := kgo.NewClient(append(append([]kgo.Opt{}, seeds...), kgo.DisableIdempotentWrite(),
		kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerBatchCompression(kgo.GzipCompression()),
		kgo.ProducerLinger(2*time.Millisecond), kgo.ProducerBatchMaxBytes(4096))...) // many batches: a segment rolls between appends
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	var last int64
	record := func(key string, value []byte) {
		cl.Produce(ctx, &kgo.Record{Topic: topic, Partition: p, Key: []byte(key), Value: value}, func(r *kgo.Record, err error) {
			if err != nil {
				t.Errorf("produce to %s-%d: %v", topic, p, err)
			}
			last = max(last, r.Offset)
		})
	}
	for i := range n {
		v := fmt.Appendf(nil, "%s-%d-%s", prefix, i, strings.Repeat("v", i%40))
		if i%10 == 9 {
			v = nil
		}
		record(fmt.Sprintf("%s-%d", prefix, i%keys), v)
	}
	for i := range fill {
		v := make([]byte, 64) // random: the fill must outgrow a segment compressed too
		rand.Read(v)
		record(fmt.Sprintf("%s-fill-%d", prefix, i), v)
	}
	if err := cl.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	return last + 1
}

// awaitCompacted waits until the source's cleaner removed records of [from, to) of
// every partition in spans (partition → [from, to)) and finished a pass up to the
// active segment's base (the node logs it): it has nothing left to clean, so the
// batches the link copies from now on are the ones the source keeps.
func awaitCompacted(t *testing.T, c *clustertest.Cluster, topic string, spans map[int32][2]int64) {
	t.Helper()
	cl := c.Client(t)
	testutil.Eventually(t, 20*time.Second, func() error {
		for p, s := range spans {
			if gone := compactedAway(batchesFrom(t, cl, topic, p), s[0], s[1]); gone < (s[1]-s[0])/4 {
				return fmt.Errorf("%s-%d: %d of the offsets [%d, %d) compacted away so far", topic, p, gone, s[0], s[1])
			}
			dir := c.Node(1).PartitionDir(topic, p)
			ents, err := os.ReadDir(dir)
			if err != nil {
				return err
			}
			active := int64(-1)
			for _, e := range ents {
				if base, ok := strings.CutSuffix(e.Name(), ".log"); ok {
					if n, err := strconv.ParseInt(base, 10, 64); err == nil {
						active = max(active, n)
					}
				}
			}
			// A pass writes its checkpoint before it swaps its segments in: the node's
			// log line after the pass is what says it is done.
			done := fmt.Sprintf("topic=%s partition=%d ", topic, p)
			end := fmt.Sprintf(" end=%d ", active)
			if !slices.ContainsFunc(strings.Split(c.Logs(1), "\n"), func(l string) bool {
				return strings.Contains(l, `msg="cleaned log"`) && strings.Contains(l, done) && strings.Contains(l, end)
			}) {
				return fmt.Errorf("%s-%d: no cleaning pass up to the active segment's base %d logged yet", topic, p, active)
			}
		}
		return nil
	})
}

// TestLinkByteEqualityAtScale: a link copies 100k+ records (TestLinkByteEqualityFromRunnel's
// mix: keys, headers, null values, zstd, lz4, snappy and uncompressed batches, a plain, an
// idempotent and a transactional producer with committed and aborted transactions) of a
// topic one partition of which was DeleteRecords'd before the link, and a compacted topic
// (gzip, tombstones) compacted at the source before the link and again while the link was
// paused mid-copy. Every batch on the destination is the source's (offset, CRC, bytes but
// the partition leader epoch), ListOffsets earliest, latest, max-timestamp and by time agree,
// and read_committed consumers read the same records on both sides. The destination's own
// cleaner is off: its compaction would rewrite the copies, as the source's does.
func TestLinkByteEqualityAtScale(t *testing.T) {
	start := func(sets ...string) *clustertest.Cluster {
		return clustertest.Start(t, clustertest.Options{Nodes: 1, InProcess: true, StartTimeout: 30 * time.Second,
			Sets: append([]string{"num.partitions=1", "default.replication.factor=1", "transaction.state.log.replication.factor=1",
				"offsets.topic.replication.factor=1", "transaction.state.log.min.isr=1"}, sets...)})
	}
	src := start("log.cleaner.backoff.ms=100")
	dst := start("log.cleaner.enable=false")
	const orders, accounts = "orders", "accounts"
	ctx := context.Background()
	sadm, dadm := src.Admin(t), dst.Admin(t)
	scl, dcl := src.Client(t), dst.Client(t)
	if _, err := sadm.CreateTopic(ctx, 3, 1, nil, orders); err != nil {
		t.Fatal(err)
	}
	if _, err := sadm.CreateTopic(ctx, 2, 1, map[string]*string{"cleanup.policy": kmsg.StringPtr("compact"),
		"segment.bytes": kmsg.StringPtr("32768"), "min.cleanable.dirty.ratio": kmsg.StringPtr("0.01"),
		"flush.messages": kmsg.StringPtr("1")}, accounts); err != nil {
		t.Fatal(err)
	}
	began := time.Now()
	produceMix(t, src.ClientDefaults(), orders, 102_000)
	// The log of orders-1 starts at 1000: the mirror must start there too.
	var del kadm.Offsets
	del.Add(kadm.Offset{Topic: orders, Partition: 1, At: 1000})
	if res, err := sadm.DeleteRecords(ctx, del); err != nil || res.Error() != nil {
		t.Fatalf("DeleteRecords orders-1 to 1000: %v %v", err, res.Error())
	}
	phase1 := map[int32][2]int64{}
	for p := range int32(2) {
		phase1[p] = [2]int64{0, produceKeyed(t, src.ClientDefaults(), accounts, p, fmt.Sprintf("a%d", p), 8000, 300, 800)}
	}
	awaitCompacted(t, src, accounts, phase1)
	t.Logf("produced and compacted in %v", time.Since(began))

	runCLI(t, "link", "create", "dr", "--source", src.Bootstrap(), "--topics", "orders,accounts", "-b", dst.Bootstrap())
	awaitCaughtUp(t, sadm, dadm, accounts)
	// Mid-copy, the source compacts records the link has not fetched yet.
	runCLI(t, "link", "pause", "dr", "-b", dst.Bootstrap())
	testutil.Eventually(t, 10*time.Second, func() error { // every fetcher stopped
		for _, q := range status(t, dst.Bootstrap(), "dr").Partitions {
			if q.State != "paused" {
				return fmt.Errorf("not paused: %+v", q)
			}
		}
		return nil
	})
	phase2 := map[int32][2]int64{}
	for p := range int32(2) {
		phase2[p] = [2]int64{phase1[p][1], produceKeyed(t, src.ClientDefaults(), accounts, p, fmt.Sprintf("b%d", p), 8000, 300, 800)}
	}
	awaitCompacted(t, src, accounts, phase2)
	if _, de := offsets(t, dadm, accounts); de[0] != phase1[0][1] || de[1] != phase1[1][1] {
		t.Fatalf("the paused link copied on: %s ends at %v on the destination, at %d and %d before the pause", accounts, de, phase1[0][1], phase1[1][1])
	}
	runCLI(t, "link", "resume", "dr", "-b", dst.Bootstrap())
	awaitCaughtUp(t, sadm, dadm, orders)
	awaitCaughtUp(t, sadm, dadm, accounts)
	t.Logf("copied in %v", time.Since(began))

	total := 0
	for _, tp := range []struct {
		topic string
		parts int32
	}{{orders, 3}, {accounts, 2}} {
		for p := range tp.parts {
			sb, db := batchesFrom(t, scl, tp.topic, p), batchesFrom(t, dcl, tp.topic, p)
			if len(sb) != len(db) {
				t.Fatalf("%s-%d: %d batches on the source, %d on the destination; first difference:\n%s", tp.topic, p, len(sb), len(db), firstDifference(sb, db))
			}
			sameBatches(t, fmt.Sprintf("%s-%d", tp.topic, p), sb, db)
			for _, b := range sb {
				total += int(b.RecordCount())
			}
		}
		ss, se := offsets(t, sadm, tp.topic)
		ds, de := offsets(t, dadm, tp.topic)
		if fmt.Sprint(ss, se) != fmt.Sprint(ds, de) {
			t.Fatalf("%s ListOffsets: source start %v end %v, destination start %v end %v", tp.topic, ss, se, ds, de)
		}
		sameListed(t, tp.topic+" max timestamp", sadm.ListMaxTimestampOffsets, dadm.ListMaxTimestampOffsets, tp.topic)
	}
	if total < 100_000 {
		t.Fatalf("the copy holds %d records, want 100k or more", total)
	}
	if _, se := offsets(t, sadm, orders); se[1] < 1000 {
		t.Fatalf("orders-1 ends at %d, below its DeleteRecords'd start 1000", se[1])
	}
	if ds, _ := offsets(t, dadm, orders); ds[1] != 1000 {
		t.Fatalf("orders-1 on the destination starts at %d, want the source's 1000", ds[1])
	}

	// ListOffsets by time: from before the first record to after the last, through
	// the first timestamp of every 40th batch.
	stamps := []int64{0, began.Add(-time.Minute).UnixMilli(), time.Now().Add(time.Hour).UnixMilli()}
	for i, b := range batchesFrom(t, scl, orders, 0) {
		if i%40 == 0 {
			stamps = append(stamps, b.BaseTimestamp(), b.BaseTimestamp()+1)
		}
	}
	for _, ms := range stamps {
		for _, topic := range []string{orders, accounts} {
			at := func(ctx context.Context, topics ...string) (kadm.ListedOffsets, error) {
				return sadm.ListOffsetsAfterMilli(ctx, ms, topics...)
			}
			dat := func(ctx context.Context, topics ...string) (kadm.ListedOffsets, error) {
				return dadm.ListOffsetsAfterMilli(ctx, ms, topics...)
			}
			sameListed(t, fmt.Sprintf("%s after %d ms", topic, ms), at, dat, topic)
		}
	}

	for _, topic := range []string{orders, accounts} {
		sv, dv := committedValues(t, src.ClientDefaults(), topic), committedValues(t, dst.ClientDefaults(), topic)
		if len(sv) == 0 || strings.Join(sv, "\n") != strings.Join(dv, "\n") {
			t.Fatalf("read_committed %s: %d records on the source, %d on the destination (or they differ)", topic, len(sv), len(dv))
		}
	}
	t.Logf("%d records in the copy, checked in %v", total, time.Since(began))
}

// sameListed checks that a ListOffsets of topic answers the same offsets and
// timestamps on both clusters.
func sameListed(t *testing.T, what string, src, dst func(context.Context, ...string) (kadm.ListedOffsets, error), topic string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	show := func(f func(context.Context, ...string) (kadm.ListedOffsets, error)) string {
		l, err := f(ctx, topic)
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		var parts []string
		l.Each(func(o kadm.ListedOffset) {
			parts = append(parts, fmt.Sprintf("%d:%d@%d/%v", o.Partition, o.Offset, o.Timestamp, o.Err))
		})
		slices.Sort(parts)
		return strings.Join(parts, " ")
	}
	if s, d := show(src), show(dst); s != d {
		t.Fatalf("ListOffsets %s: source %s, destination %s", what, s, d)
	}
}

// TestLinkKfakeSourceLogStartInsideBatch: the subset of TestLinkByteEqualityAtScale a
// kfake source (a non-Runnel broker) can show: the mix of records, one partition
// DeleteRecords'd inside a batch before the link; batches, ListOffsets earliest,
// latest and by time, and read_committed records equal on both sides.
func TestLinkKfakeSourceLogStartInsideBatch(t *testing.T) {
	src, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(2, "events"))
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	seeds := []kgo.Opt{kgo.SeedBrokers(src.ListenAddrs()...)}
	produceMix(t, seeds, "events", 9_000)
	scl, err := kgo.NewClient(seeds...)
	if err != nil {
		t.Fatal(err)
	}
	defer scl.Close()
	sadm := kadm.NewClient(scl)
	// A log start inside a batch of more than one record.
	var at int64 = -1
	for _, b := range batchesFrom(t, scl, "events", 1) {
		if b.RecordCount() > 1 && b.BaseOffset() > 100 {
			at = b.BaseOffset() + 1
			break
		}
	}
	var del kadm.Offsets
	del.Add(kadm.Offset{Topic: "events", Partition: 1, At: at})
	if res, err := sadm.DeleteRecords(context.Background(), del); err != nil || res.Error() != nil {
		t.Fatalf("DeleteRecords events-1 to %d: %v %v", at, err, res.Error())
	}

	dst := startNode(t)
	dadm := dst.Admin(t)
	runCLI(t, "link", "create", "k", "--source", strings.Join(src.ListenAddrs(), ","), "-b", dst.Bootstrap())
	awaitCaughtUp(t, sadm, dadm, "events")
	dcl := dst.Client(t)
	for p := range int32(2) {
		sameBatches(t, fmt.Sprintf("events-%d", p), batchesFrom(t, scl, "events", p), batchesFrom(t, dcl, "events", p))
	}
	ss, se := offsets(t, sadm, "events")
	ds, de := offsets(t, dadm, "events")
	if fmt.Sprint(ss, se) != fmt.Sprint(ds, de) || ds[1] != at {
		t.Fatalf("ListOffsets: source start %v end %v, destination start %v end %v (events-1 DeleteRecords'd to %d)", ss, se, ds, de, at)
	}
	// By time, the offsets: at a batch's first timestamp both sides find its first
	// record.
	for i, b := range batchesFrom(t, scl, "events", 0) {
		if i%25 != 0 {
			continue
		}
		ms := b.BaseTimestamp()
		offsetsAfter := func(adm *kadm.Client) string {
			l, err := adm.ListOffsetsAfterMilli(context.Background(), ms, "events")
			if err != nil {
				t.Fatalf("ListOffsets after %d ms: %v", ms, err)
			}
			var parts []string
			l.Each(func(o kadm.ListedOffset) {
				parts = append(parts, fmt.Sprintf("%d:%d/%v", o.Partition, o.Offset, o.Err))
			})
			slices.Sort(parts)
			return strings.Join(parts, " ")
		}
		if s, d := offsetsAfter(sadm), offsetsAfter(dadm); s != d {
			t.Fatalf("ListOffsets after %d ms: source %s, destination %s", ms, s, d)
		}
	}
	sv, dv := committedValues(t, seeds, "events"), committedValues(t, dst.ClientDefaults(), "events")
	if len(sv) == 0 || strings.Join(sv, "\n") != strings.Join(dv, "\n") {
		t.Fatalf("read_committed: %d records on the source, %d on the destination (or they differ)", len(sv), len(dv))
	}
}
