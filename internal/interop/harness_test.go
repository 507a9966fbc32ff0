package interop_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/runnel-io/runnel/internal/clustertest"
	"github.com/runnel-io/runnel/internal/invariants"
	"github.com/runnel-io/runnel/internal/server"
	"github.com/runnel-io/runnel/internal/testutil"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// runnelBin is the `runnel` binary TestMain builds for the process tests.
var runnelBin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "runnel-interop-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "interop:", err)
		os.Exit(1)
	}
	runnelBin = filepath.Join(dir, "runnel")
	args := []string{"build", "-o", runnelBin}
	if invariants.Enabled {
		args = append(args, "-tags", "invariants") // the node checks what the tests check
	}
	build := exec.Command("go", append(args, "github.com/runnel-io/runnel/cmd/runnel")...)
	if out, err := build.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "interop: go build ./cmd/runnel: %v\n%s", err, out)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// testTimeout bounds every client call a test makes.
const testTimeout = 30 * time.Second

// lockedBuffer collects a node's log; it is printed only when the test fails, so that
// passing tests stay quiet and late log lines never touch a finished test.
type lockedBuffer struct {
	mu  sync.Mutex // guards buf
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// startNode starts one in-process node on loopback ports (internal/clustertest's
// Options.InProcess) with the extra properties sets, and stops it with a controlled
// shutdown when the test ends, failing the test if that fails; a failed test prints
// the tail of the node's log.
func startNode(t *testing.T, sets ...string) *server.Node {
	t.Helper()
	c := clustertest.Start(t, clustertest.Options{Nodes: 1, InProcess: true, Sets: sets, StartTimeout: 60 * time.Second})
	t.Cleanup(func() {
		if err := c.Stop(1); err != nil {
			t.Errorf("closing the node: %v", err)
		}
	})
	return c.Server(1)
}

// bootstrap is the node's Kafka address as a client's seed broker.
func bootstrap(n *server.Node) string { return n.KafkaAddr().String() }

// newClient returns a franz-go client of n, closed when the test ends.
func newClient(t *testing.T, addr string, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	all := append([]kgo.Opt{kgo.SeedBrokers(addr), kgo.RetryTimeout(10 * time.Second),
		kgo.MetadataMinAge(50 * time.Millisecond)}, opts...)
	cl, err := kgo.NewClient(all...)
	testutil.NoError(t, err, "kgo.NewClient")
	t.Cleanup(cl.Close)
	return cl
}

// newAdmin returns a kadm client of n, closed when the test ends.
func newAdmin(t *testing.T, addr string) *kadm.Client {
	t.Helper()
	return kadm.NewClient(newClient(t, addr))
}

var topicSeq atomic.Int64

// topicName gives a topic name unique in this test binary, derived from the test's
// name so that a failing test's topics are easy to find in the node log.
func topicName(t *testing.T) string {
	name := strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-', r == '_', r == '.':
			return r
		}
		return '-'
	}, t.Name())
	if len(name) > 180 {
		name = name[len(name)-180:]
	}
	return fmt.Sprintf("%s-%d", name, topicSeq.Add(1))
}

// ctxT is a context bounded by testTimeout and cancelled when the test ends.
func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	t.Cleanup(cancel)
	return ctx
}

// createTopic creates topic with the given partitions and configs (KEY, VALUE pairs)
// and fails the test unless the node accepted it.
func createTopic(t *testing.T, adm *kadm.Client, topic string, partitions int32, kv ...string) {
	t.Helper()
	configs := map[string]*string{}
	for i := 0; i+1 < len(kv); i += 2 {
		configs[kv[i]] = &kv[i+1]
	}
	resp, err := adm.CreateTopic(ctxT(t), partitions, 1, configs, topic)
	testutil.NoError(t, err, "CreateTopic %s", topic)
	testutil.NoError(t, resp.Err, "CreateTopic %s: %s", topic, resp.ErrMessage)
	testutil.Equal(t, resp.NumPartitions, partitions, "CreateTopic %s partitions", topic)
}

// consumePartitions reads every record of topic from the start of each partition until
// the per-partition counts in want have arrived, and returns the records by partition in
// the order they came. It fails the test if the records do not arrive within
// testTimeout, or if more come than wanted.
func consumePartitions(t *testing.T, addr, topic string, want map[int32]int, opts ...kgo.Opt) map[int32][]*kgo.Record {
	t.Helper()
	offsets := map[int32]kgo.Offset{}
	total := 0
	for p, n := range want {
		offsets[p] = kgo.NewOffset().AtStart()
		total += n
	}
	all := append([]kgo.Opt{kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: offsets})}, opts...)
	cl := newClient(t, addr, all...)
	got := map[int32][]*kgo.Record{}
	ctx := ctxT(t)
	for n := 0; n < total; {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("consuming %s: got %d of %d records before the timeout (%v)", topic, n, total, counts(got))
		}
		fs.EachError(func(tp string, p int32, err error) { t.Fatalf("consuming %s[%d]: %v", tp, p, err) })
		fs.EachRecord(func(r *kgo.Record) {
			got[r.Partition] = append(got[r.Partition], r)
			n++
		})
	}
	for p, rs := range got {
		testutil.True(t, len(rs) == want[p], "partition %d: consumed %d records, want %d", p, len(rs), want[p])
	}
	return got
}

func counts(m map[int32][]*kgo.Record) map[int32]int {
	c := map[int32]int{}
	for p, rs := range m {
		c[p] = len(rs)
	}
	return c
}

// checkContiguous fails unless the records of each partition have offsets first,
// first+1, ... in the order given.
func checkContiguous(t *testing.T, byPartition map[int32][]*kgo.Record, first int64) {
	t.Helper()
	for p, rs := range byPartition {
		for i, r := range rs {
			if r.Offset != first+int64(i) {
				t.Fatalf("partition %d: record %d has offset %d, want %d", p, i, r.Offset, first+int64(i))
			}
		}
	}
}

// endOffsets lists the end offset of every partition of topic.
func endOffsets(t *testing.T, adm *kadm.Client, topic string) map[int32]int64 {
	t.Helper()
	lo, err := adm.ListEndOffsets(ctxT(t), topic)
	testutil.NoError(t, err, "ListEndOffsets %s", topic)
	return offsetsOf(t, lo, topic)
}

// startOffsets lists the log start offset of every partition of topic.
func startOffsets(t *testing.T, adm *kadm.Client, topic string) map[int32]int64 {
	t.Helper()
	lo, err := adm.ListStartOffsets(ctxT(t), topic)
	testutil.NoError(t, err, "ListStartOffsets %s", topic)
	return offsetsOf(t, lo, topic)
}

func offsetsOf(t *testing.T, lo kadm.ListedOffsets, topic string) map[int32]int64 {
	t.Helper()
	out := map[int32]int64{}
	lo.Each(func(o kadm.ListedOffset) {
		testutil.NoError(t, o.Err, "listing offsets of %s[%d]", o.Topic, o.Partition)
		if o.Topic == topic {
			out[o.Partition] = o.Offset
		}
	})
	return out
}
