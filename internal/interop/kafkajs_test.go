package interop_test

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/runnel-io/runnel/internal/clustertest"
	"github.com/runnel-io/runnel/internal/testutil"
)

// kafkajsTimeout bounds one KafkaJS scenario; each script also stops itself after 45 s
// and says which step it was on.
const kafkajsTimeout = 50 * time.Second

// kafkajsSets are the node properties of the single-node KafkaJS tests: groups
// rebalance at once (the first join of an empty group otherwise waits out
// group.initial.rebalance.delay.ms, 3 s), and no topic is created by accident, so a
// script that names a missing topic fails. The cluster keeps the default delay.
var kafkajsSets = []string{"group.initial.rebalance.delay.ms=0", "auto.create.topics.enable=false"}

// TestKafkaJS runs the KafkaJS (Node.js) scenarios of internal/interop/js against one
// node, and the produce and consumer-group scenario against a 3-node cluster with
// every partition on 3 replicas. Each script checks exact results itself and exits 1
// naming the first mismatch.
func TestKafkaJS(t *testing.T) {
	dir := kafkajsDir(t)
	n := startNode(t, kafkajsSets...)
	addr := bootstrap(n)
	for _, script := range []string{"admin", "groups", "rebalance", "seek", "idempotent"} {
		t.Run(script, func(t *testing.T) {
			t.Parallel()
			topic := topicName(t)
			runKafkaJS(t, dir, script, addr, topic)
			if script == "groups" {
				checkCodecs(t, addr, topic)
			}
		})
	}
	t.Run("Cluster3", func(t *testing.T) {
		t.Parallel()
		c := clustertest.Start(t, clustertest.Options{Nodes: 3, BinPath: runnelBin, Sets: []string{"auto.create.topics.enable=false"}})
		runKafkaJS(t, dir, "groups", c.Bootstrap(), topicName(t))
	})
}

// kafkajsDir returns the absolute path of internal/interop/js, and skips the test
// unless node is on PATH and KafkaJS is installed there.
func kafkajsDir(t *testing.T) string {
	t.Helper()
	if _, err := exec.LookPath("node"); err != nil {
		testutil.Missing(t, "node is not on PATH: install Node.js, then run scripts/install-deps.sh to install KafkaJS")
	}
	dir, err := filepath.Abs("js")
	testutil.NoError(t, err, "locating internal/interop/js")
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "kafkajs", "package.json")); err != nil {
		testutil.Missing(t, "KafkaJS is not installed in %s: run scripts/install-deps.sh (npm ci --prefix internal/interop/js)", dir)
	}
	return dir
}

// runKafkaJS runs `node <dir>/<script>.js <bootstrap> <topic>` with runScript.
func runKafkaJS(t *testing.T, dir, script, bootstrap, topic string) {
	t.Helper()
	// KafkaJS warns once per process about its v2 partitioner change; the scripts
	// choose the partitioner explicitly.
	runScript(t, kafkajsTimeout, dir, []string{"KAFKAJS_NO_PARTITIONER_WARNING=1"},
		"node", filepath.Join(dir, script+".js"), bootstrap, topic)
}

// runScript runs a client scenario (a script that checks its own results) in dir under
// timeout, with env added to the environment, and fails the test with the script's
// output unless it exits 0. The output is logged either way (seen with -v).
func runScript(t *testing.T, timeout time.Duration, dir string, env []string, name string, args ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	start := time.Now()
	err := cmd.Run()
	elapsed := time.Since(start).Round(time.Millisecond)
	line := name + " " + strings.Join(args, " ")
	if err != nil {
		t.Fatalf("%s: %v after %v (context: %v)\noutput:\n%s", line, err, elapsed, ctx.Err(),
			strings.TrimRight(out.String(), "\n"))
	}
	t.Logf("%s passed in %v; output:\n%s", line, elapsed, strings.TrimRight(out.String(), "\n"))
}

// checkCodecs reads what groups.js wrote with franz-go: the same records, some in
// uncompressed batches and some in gzip batches, as KafkaJS sent them.
func checkCodecs(t *testing.T, addr, topic string) {
	t.Helper()
	want := map[int32]int{}
	for p, end := range endOffsets(t, newAdmin(t, addr), topic) {
		want[p] = int(end)
	}
	codecs := map[uint8]int{}
	for _, rs := range consumePartitions(t, addr, topic, want) {
		for _, r := range rs {
			codecs[r.Attrs.CompressionType()]++
		}
	}
	testutil.True(t, codecs[0] > 0 && codecs[1] > 0 && len(codecs) == 2,
		"records by codec of the batches KafkaJS wrote: %v, want uncompressed (0) and gzip (1) only", codecs)
}
