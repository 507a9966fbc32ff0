package interop_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/runnel-io/runnel/internal/testutil"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestKcat drives one node (auto-creation on) with kcat, that is librdkafka: produce
// with keys and headers (plain, idempotent, compressed), consume from the beginning, an
// offset, the end and a timestamp with -f, query offsets by time, list metadata as JSON.
func TestKcat(t *testing.T) {
	if _, err := exec.LookPath("kcat"); err != nil {
		testutil.Missing(t, "kcat is not on PATH (scripts/install-deps.sh installs it)")
	}
	n := startNode(t)
	addr := bootstrap(n)
	t.Run("ProduceConsume", func(t *testing.T) { t.Parallel(); testKcatProduceConsume(t, addr) })
	t.Run("Idempotent", func(t *testing.T) { t.Parallel(); testKcatIdempotent(t, addr) })
	t.Run("Compression", func(t *testing.T) { t.Parallel(); testKcatCompression(t, addr) })
	t.Run("Timestamps", func(t *testing.T) { t.Parallel(); testKcatTimestamps(t, addr) })
	t.Run("Metadata", func(t *testing.T) { t.Parallel(); testKcatMetadata(t, addr) })
}

// kcat runs kcat with args against addr, stdin as its input, under a timeout, and
// returns its standard output; it fails the test if kcat fails.
func kcat(t *testing.T, addr, stdin string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "kcat", append([]string{"-b", addr, "-m", "10"}, args...)...)
	cmd.Stdin = strings.NewReader(stdin)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("kcat %s: %v (context: %v)\nstderr:\n%s", strings.Join(args, " "), err, ctx.Err(), stderr.String())
	}
	return stdout.String()
}

// kcatConsume reads topic from offset (kcat's -o syntax) to the current end, one line
// per record: topic, partition, offset, key, value, headers.
func kcatConsume(t *testing.T, addr, topic, offset string, extra ...string) []string {
	t.Helper()
	out := kcat(t, addr, "", append([]string{"-C", "-t", topic, "-o", offset, "-e", "-f", `%t %p %o %k %s %h\n`}, extra...)...)
	if out == "" {
		return nil
	}
	return strings.Split(strings.TrimSuffix(out, "\n"), "\n")
}

func testKcatProduceConsume(t *testing.T, addr string) {
	topic := topicName(t)
	createTopic(t, newAdmin(t, addr), topic, 2)
	var in strings.Builder
	for i := range 6 {
		fmt.Fprintf(&in, "key%d:value %d\n", i, i)
	}
	kcat(t, addr, in.String(), "-P", "-t", topic, "-p", "1", "-K", ":", "-H", "h1=one", "-H", "h2=two")
	var want []string
	for i := range 6 {
		want = append(want, fmt.Sprintf("%s 1 %d key%d value %d h1=one,h2=two", topic, i, i, i))
	}
	testutil.Equal(t, kcatConsume(t, addr, topic, "beginning", "-p", "1"), want, "kcat -o beginning")
	testutil.Equal(t, kcatConsume(t, addr, topic, "4", "-p", "1"), want[4:], "kcat -o 4")
	testutil.Equal(t, kcatConsume(t, addr, topic, "-2", "-p", "1"), want[4:], "kcat -o -2")
	testutil.Equal(t, kcatConsume(t, addr, topic, "end", "-p", "1"), []string(nil), "kcat -o end")
	testutil.Equal(t, kcatConsume(t, addr, topic, "beginning", "-p", "0"), []string(nil), "kcat -o beginning of the empty partition")

	// What kcat wrote, franz-go reads the same.
	got := consumePartitions(t, addr, topic, map[int32]int{1: 6})[1]
	for i, r := range got {
		testutil.Equal(t, fmt.Sprintf("%d %s %s %s=%s,%s=%s", r.Offset, r.Key, r.Value, r.Headers[0].Key, r.Headers[0].Value, r.Headers[1].Key, r.Headers[1].Value),
			fmt.Sprintf("%d key%d value %d h1=one,h2=two", i, i, i), "record %d as franz-go reads it", i)
	}
}

// testKcatIdempotent produces with librdkafka's idempotent producer (InitProducerId,
// acks=all, sequence numbers) to a topic kcat makes the node auto-create.
func testKcatIdempotent(t *testing.T, addr string) {
	topic := topicName(t)
	var in strings.Builder
	var want []string
	for i := range 50 {
		fmt.Fprintf(&in, "k%d:v%d\n", i%3, i)
		want = append(want, fmt.Sprintf("%s 0 %d k%d v%d ", topic, i, i%3, i))
	}
	kcat(t, addr, in.String(), "-P", "-t", topic, "-K", ":", "-X", "enable.idempotence=true", "-X", "acks=all")
	testutil.Equal(t, kcatConsume(t, addr, topic, "beginning"), want, "records of the auto-created topic")
	testutil.Equal(t, endOffsets(t, newAdmin(t, addr), topic), map[int32]int64{0: 50}, "end offsets (num.partitions=1)")
}

func testKcatCompression(t *testing.T, addr string) {
	for _, codec := range []string{"gzip", "snappy", "lz4", "zstd"} {
		t.Run(codec, func(t *testing.T) {
			topic := topicName(t)
			createTopic(t, newAdmin(t, addr), topic, 1)
			var in strings.Builder
			var want []string
			for i := range 30 {
				v := fmt.Sprintf("%s-%s", codec, strings.Repeat(fmt.Sprint(i), 20))
				fmt.Fprintln(&in, v)
				want = append(want, fmt.Sprintf("%s 0 %d  %s ", topic, i, v))
			}
			kcat(t, addr, in.String(), "-P", "-t", topic, "-z", codec, "-X", "linger.ms=50")
			testutil.Equal(t, kcatConsume(t, addr, topic, "beginning"), want, "records compressed with %s", codec)
			got := consumePartitions(t, addr, topic, map[int32]int{0: 30})[0]
			codes := map[string]uint8{"gzip": 1, "snappy": 2, "lz4": 3, "zstd": 4}
			// librdkafka compresses only if the node advertises what it looks for.
			testutil.Equal(t, got[0].Attrs.CompressionType(), codes[codec], "codec of the first batch")
		})
	}
}

// testKcatTimestamps writes records with known timestamps through franz-go and has
// kcat find offsets by time (-Q) and consume from a time (-o s@).
func testKcatTimestamps(t *testing.T, addr string) {
	topic := topicName(t)
	createTopic(t, newAdmin(t, addr), topic, 1)
	cl := newClient(t, addr, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	base := time.Now().Add(-time.Hour).Truncate(time.Second)
	for i := range 5 {
		r := &kgo.Record{Topic: topic, Value: fmt.Appendf(nil, "t%d", i), Timestamp: base.Add(time.Duration(i) * time.Minute)}
		testutil.NoError(t, cl.ProduceSync(ctxT(t), r).FirstErr(), "producing record %d", i)
	}
	at := base.Add(150 * time.Second).UnixMilli() // between records 2 and 3
	out := kcat(t, addr, "", "-Q", "-t", fmt.Sprintf("%s:0:%d", topic, at))
	testutil.True(t, strings.Contains(out, "offset 3"), "kcat -Q at record 2.5's time printed %q, want offset 3", out)
	got := kcatConsume(t, addr, topic, fmt.Sprintf("s@%d", at))
	testutil.Equal(t, got, []string{topic + " 0 3  t3 ", topic + " 0 4  t4 "}, "kcat -o s@<time of record 2.5>")
}

// kcatMetadata is the part of `kcat -L -J` this test reads.
type kcatMetadata struct {
	ControllerID int32 `json:"controllerid"`
	Brokers      []struct {
		ID   int32  `json:"id"`
		Name string `json:"name"`
	} `json:"brokers"`
	Topics []struct {
		Topic      string `json:"topic"`
		Partitions []struct {
			Partition int32              `json:"partition"`
			Leader    int32              `json:"leader"`
			Replicas  []struct{ ID int } `json:"replicas"`
			ISRs      []struct{ ID int } `json:"isrs"`
		} `json:"partitions"`
	} `json:"topics"`
}

func testKcatMetadata(t *testing.T, addr string) {
	topic := topicName(t)
	createTopic(t, newAdmin(t, addr), topic, 3)
	var md kcatMetadata
	out := kcat(t, addr, "", "-L", "-J", "-t", topic)
	testutil.NoError(t, json.Unmarshal([]byte(out), &md), "parsing kcat -L -J output %q", out)
	testutil.Equal(t, md.ControllerID, int32(1), "controller id")
	testutil.Equal(t, len(md.Brokers), 1, "brokers")
	testutil.Equal(t, fmt.Sprintf("%d %s", md.Brokers[0].ID, md.Brokers[0].Name), "1 "+addr, "broker")
	testutil.Equal(t, len(md.Topics), 1, "topics listed for -t %s", topic)
	testutil.Equal(t, md.Topics[0].Topic, topic, "topic name")
	testutil.Equal(t, len(md.Topics[0].Partitions), 3, "partitions")
	for i, p := range md.Topics[0].Partitions {
		testutil.Equal(t, [4]int{int(p.Partition), int(p.Leader), len(p.Replicas), len(p.ISRs)}, [4]int{i, 1, 1, 1},
			"partition, leader, replicas, ISR of partition %d", i)
	}
}
