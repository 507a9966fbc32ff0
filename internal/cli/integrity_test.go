package cli

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/runnel-io/runnel/internal/clustertest"
)

// The reproduction (issue 29), through the CLI against a real node: one node,
// 12,000 records of 1 KiB produced with `runnel produce`, a clean stop, two bytes
// changed in the segment (at byte 5000 of its second batch), a restart. Before, the restart truncated the
// log at the damage (12,034 acknowledged records gone, no copy kept). Now the node
// starts, logs the damage, keeps a quarantined copy; the records before the damage
// are served, a fetch at the damage answers KAFKA_STORAGE_ERROR; `topic describe`
// names the damage; `topic repair` refuses without --accept-loss and with it drops
// only the damaged batch, after which every other record is readable, the log end
// unchanged, and the quarantined copy still there. `cluster scrub` then finds
// nothing.
func TestSingleCopyCorruption(t *testing.T) {
	c := clustertest.Start(t, clustertest.Options{Nodes: 1, InProcess: true, StartTimeout: 30 * time.Second})
	b := c.Node(1).KafkaAddr
	const topic, records = "events", 12000
	mustRun(t, "", "topic", "create", topic, "-b", b, "-p", "1", "-r", "1")
	line := strings.Repeat("y", 1024) + "\n"
	mustRun(t, strings.Repeat(line, records), "produce", topic, "-b", b)
	if err := c.Stop(1); err != nil {
		t.Fatal(err)
	}
	seg := filepath.Join(c.Node(1).PartitionDir(topic, 0), "00000000000000000000.log")
	f, err := os.OpenFile(seg, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	// runnel produce sends batches of up to 1 MiB: byte 5000 of the file is in the
	// first batch, which would leave nothing before the damage to read. Byte 5000 of
	// the second batch is.
	var head [12]byte
	if _, err := f.ReadAt(head[:], 0); err != nil {
		t.Fatal(err)
	}
	pos := 12 + int64(binary.BigEndian.Uint32(head[8:])) + 5000
	if _, err := f.WriteAt([]byte("XX"), pos); err != nil {
		t.Fatal(err)
	}
	f.Close()
	c.Restart(1)
	b = c.Node(1).KafkaAddr
	if logs := c.Logs(1); !strings.Contains(logs, "corrupt data in segment") {
		t.Fatalf("the restarted node never logged the damage")
	}
	qdir := filepath.Join(c.Node(1).DataDir, "quarantine", topic+"-0")
	if q, err := os.ReadDir(qdir); err != nil || len(q) == 0 {
		t.Fatalf("no quarantined copy in %s: %v", qdir, err)
	}

	// topic describe names the damage: node, offsets, file, quarantined copy.
	var desc topicDescription
	if err := json.Unmarshal([]byte(mustRun(t, "", "topic", "describe", topic, "-b", b, "--json").stdout), &desc); err != nil {
		t.Fatal(err)
	}
	if len(desc.Partitions) != 1 || len(desc.Partitions[0].Damaged) != 1 {
		t.Fatalf("topic describe shows no damage: %+v", desc.Partitions)
	}
	dmg := desc.Partitions[0].Damaged[0]
	if dmg.Node != 1 || dmg.FirstOffset <= 0 || dmg.LastOffset < dmg.FirstOffset || dmg.File != seg ||
		!strings.HasPrefix(dmg.Quarantine, qdir) {
		t.Fatalf("topic describe's damage %+v: want node 1, offsets after 0, file %s, quarantined under %s", dmg, seg, qdir)
	}
	if end := desc.Partitions[0].LogEndOffset; end != records {
		t.Fatalf("log end offset %d after the restart, want %d: the damage cut the log", end, records)
	}
	text := mustRun(t, "", "topic", "describe", topic, "-b", b).stdout
	if !strings.Contains(text, "Damaged: partition 0 on node 1") || !strings.Contains(text, dmg.Quarantine) {
		t.Fatalf("topic describe's text does not name the damage:\n%s", text)
	}

	// The console's API names it too, on the node's entry (the metadata's record of
	// what the node reported in its heartbeats).
	if !consoleShowsDamage(t, c.Node(1).HTTPAddr, topic) {
		t.Fatalf("GET /api/v1/nodes does not list node 1's damaged replica of %s-0", topic)
	}

	// The records before the damage are served; a fetch at it answers
	// KAFKA_STORAGE_ERROR.
	before := consumeFrom(t, b, topic, 0, int(dmg.FirstOffset))
	if len(before) != int(dmg.FirstOffset) {
		t.Fatalf("read %d records before the damage at %d", len(before), dmg.FirstOffset)
	}
	if code := fetchCode(t, b, topic, dmg.FirstOffset); code != kerr.KafkaStorageError.Code {
		t.Fatalf("fetch at the damaged offset %d: error %v, want KAFKA_STORAGE_ERROR", dmg.FirstOffset, kerr.ErrorForCode(code))
	}
	if code := fetchCode(t, b, topic, dmg.LastOffset+1); code != kerr.KafkaStorageError.Code {
		t.Fatalf("fetch past the damage at %d: error %v, want KAFKA_STORAGE_ERROR until repair", dmg.LastOffset+1, kerr.ErrorForCode(code))
	}

	// franz-go retries KAFKA_STORAGE_ERROR (retriable in Kafka's protocol) without
	// reporting it: its consumer waits at the damage, never skips it.
	if err := consumeError(t, b, topic, dmg.FirstOffset); err != nil && !errors.Is(err, kerr.KafkaStorageError) {
		t.Fatalf("franz-go consuming at the damaged offset %d: error %v, want none or KAFKA_STORAGE_ERROR", dmg.FirstOffset, err)
	}

	// Without --accept-loss: refused, explained, nothing changed.
	r := run(t, "", "topic", "repair", topic, "-b", b, "--partition", "0")
	if r.code != exitUsage || !strings.Contains(r.stderr, "--accept-loss") || !strings.Contains(r.stderr, dmg.File) {
		t.Fatalf("repair without --accept-loss: exit %d, stderr %q", r.code, r.stderr)
	}
	if code := fetchCode(t, b, topic, dmg.FirstOffset); code != kerr.KafkaStorageError.Code {
		t.Fatalf("a refused repair changed the partition: fetch at %d answers %v", dmg.FirstOffset, kerr.ErrorForCode(code))
	}

	// The metrics of INTERFACE.md: the damage found at start-up, and the partition it
	// leads with no intact copy to repair from.
	httpAddr := c.Node(1).HTTPAddr
	if v := metricValue(t, httpAddr, "runnel_corrupt_batches_total"); v < 1 {
		t.Errorf("runnel_corrupt_batches_total = %v after a restart that found the damage", v)
	}
	if v := metricValue(t, httpAddr, "runnel_unrepairable_partitions"); v != 1 {
		t.Errorf("runnel_unrepairable_partitions = %v with the only copy of %s-0 damaged, want 1", v, topic)
	}

	out := mustRun(t, "", "topic", "repair", topic, "-b", b, "--partition", "0", "--accept-loss").stdout
	if v := metricValue(t, httpAddr, "runnel_repaired_batches_total"); v < 1 {
		t.Errorf("runnel_repaired_batches_total = %v after the accept-loss repair", v)
	}
	if v := metricValue(t, httpAddr, "runnel_unrepairable_partitions"); v != 0 {
		t.Errorf("runnel_unrepairable_partitions = %v after the accept-loss repair, want 0", v)
	}
	lost := dmg.LastOffset - dmg.FirstOffset + 1
	for _, want := range []string{"dropped " + itoa(lost) + " offsets", "lost offsets " + itoa(dmg.FirstOffset) + "-" + itoa(dmg.LastOffset), dmg.Quarantine} {
		if !strings.Contains(out, want) {
			t.Fatalf("topic repair's output lacks %q:\n%s", want, out)
		}
	}
	// runnel produce sends batches of up to 1 MiB: 1,024 records of 1 KiB at most.
	if lost > 1024 {
		t.Fatalf("%d offsets dropped for two bytes: more than the damaged batch", lost)
	}
	all := consumeFrom(t, b, topic, 0, records-int(lost))
	next := int64(0)
	for _, rec := range all {
		if next == dmg.FirstOffset {
			next = dmg.LastOffset + 1
		}
		if rec.Offset != next || string(rec.Value) != strings.TrimSuffix(line, "\n") {
			t.Fatalf("after the repair: record at offset %d (%d bytes), want offset %d", rec.Offset, len(rec.Value), next)
		}
		next++
	}
	if next != records {
		t.Fatalf("after the repair the records end at %d, want %d", next, records)
	}
	if q, err := os.ReadDir(qdir); err != nil || len(q) == 0 {
		t.Fatalf("the quarantined copy is gone after the repair: %v", err)
	}
	var rep scrubReport
	if err := json.Unmarshal([]byte(mustRun(t, "", "cluster", "scrub", "-b", b, "--json").stdout), &rep); err != nil {
		t.Fatal(err)
	}
	if len(rep.Nodes) != 1 || rep.Nodes[0].Corrupt != 0 || rep.Nodes[0].Unrepairable != 0 {
		t.Fatalf("cluster scrub after the repair: %+v", rep)
	}
	if d := mustRun(t, "", "topic", "describe", topic, "-b", b).stdout; strings.Contains(d, "Damaged:") {
		t.Fatalf("topic describe still shows damage after the repair:\n%s", d)
	}
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// consumeFrom reads n records of partition 0 from offset with franz-go.
func consumeFrom(t *testing.T, addr, topic string, offset int64, n int) []*kgo.Record {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{
		topic: {0: kgo.NewOffset().At(offset)}}))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var out []*kgo.Record
	for len(out) < n {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("read %d of %d records from offset %d: %v", len(out), n, offset, ctx.Err())
		}
		fs.EachError(func(_ string, _ int32, err error) {
			if !errors.Is(err, kerr.KafkaStorageError) {
				t.Fatalf("consuming: %v", err)
			}
		})
		out = append(out, fs.Records()...)
	}
	return out
}

// fetchCode sends one Fetch of partition 0 at offset and returns its error code.
func fetchCode(t *testing.T, addr, topic string, offset int64) int16 {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	tds, err := kadm.NewClient(cl).ListTopics(context.Background(), topic)
	if err != nil {
		t.Fatal(err)
	}
	req := kmsg.NewPtrFetchRequest()
	req.ReplicaID, req.MaxWaitMillis, req.MaxBytes = -1, 100, 1<<20
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic, rt.TopicID = topic, tds[topic].ID
	rp := kmsg.NewFetchRequestTopicPartition()
	rp.Partition, rp.FetchOffset, rp.PartitionMaxBytes, rp.CurrentLeaderEpoch = 0, offset, 1<<20, -1
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(context.Background(), cl)
	if err != nil {
		t.Fatal(err)
	}
	return resp.Topics[0].Partitions[0].ErrorCode
}

// consumeError consumes partition 0 from offset with franz-go for 3 s, failing the
// test if it reads a record, and returns the first error it reports (nil if none).
func consumeError(t *testing.T, addr, topic string, offset int64) error {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{
		topic: {0: kgo.NewOffset().At(offset)}}))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	for ctx.Err() == nil {
		fs := cl.PollFetches(ctx)
		if len(fs.Records()) > 0 {
			t.Fatalf("franz-go read %d records at the damaged offset %d", len(fs.Records()), offset)
		}
		var first error
		fs.EachError(func(_ string, _ int32, err error) {
			if first == nil && !errors.Is(err, context.DeadlineExceeded) {
				first = err
			}
		})
		if first != nil {
			t.Logf("franz-go consuming at offset %d: %v", offset, first)
			return first
		}
	}
	return nil
}

// consoleShowsDamage reports whether the console's /api/v1/nodes lists a damaged
// replica of topic-0 on node 1, waiting a few seconds for the heartbeat that reports
// it to reach the metadata.
func consoleShowsDamage(t *testing.T, httpAddr, topic string) bool {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		resp, err := http.Get("http://" + httpAddr + "/api/v1/nodes")
		if err == nil {
			var nodes struct {
				Nodes []struct {
					ID      int32 `json:"id"`
					Damaged []struct {
						Topic     string `json:"topic"`
						Partition int32  `json:"partition"`
					} `json:"damaged"`
				} `json:"nodes"`
			}
			err = json.NewDecoder(resp.Body).Decode(&nodes)
			resp.Body.Close()
			for _, n := range nodes.Nodes {
				for _, d := range n.Damaged {
					if err == nil && n.ID == 1 && d.Topic == topic && d.Partition == 0 {
						return true
					}
				}
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	return false
}

// metricValue scrapes name (a series without labels) from the node's /metrics.
func metricValue(t *testing.T, httpAddr, name string) float64 {
	t.Helper()
	resp, err := http.Get("http://" + httpAddr + "/metrics")
	if err != nil {
		t.Fatalf("GET /metrics: %v", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.Lines(string(body)) {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), name+" "); ok {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				t.Fatalf("%s: %v", line, err)
			}
			return f
		}
	}
	t.Fatalf("/metrics has no %s", name)
	return 0
}
