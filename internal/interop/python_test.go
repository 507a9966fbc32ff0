package interop_test

import (
	"context"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/runnel-io/runnel/internal/clustertest"
	"github.com/runnel-io/runnel/internal/testutil"
)

// pythonTimeout bounds one Python scenario; each script also stops itself after 45 s
// and says which step it was on.
const pythonTimeout = 50 * time.Second

// pythonScripts are the scenarios of internal/interop/py: kafka-python (pure Python)
// and confluent-kafka (librdkafka underneath).
var pythonScripts = []string{"kafka_python", "confluent"}

// TestPython runs the Python client scenarios of internal/interop/py against one node,
// and again against a 3-node cluster with every partition of the scenarios' topics on
// 3 replicas. Each script checks exact results itself and exits 1 naming the step and
// the first mismatch.
func TestPython(t *testing.T) {
	python := pythonInterpreter(t)
	dir, err := filepath.Abs("py")
	testutil.NoError(t, err, "locating internal/interop/py")
	// The same properties as the KafkaJS node: groups rebalance at once and no topic is
	// created by accident; the cluster keeps the default rebalance delay.
	addr := bootstrap(startNode(t, kafkajsSets...))
	for _, script := range pythonScripts {
		t.Run(script, func(t *testing.T) {
			t.Parallel()
			runPython(t, python, dir, script, addr, topicName(t), 1)
		})
	}
	t.Run("Cluster3", func(t *testing.T) {
		t.Parallel()
		c := clustertest.Start(t, clustertest.Options{Nodes: 3, BinPath: runnelBin, Sets: []string{"auto.create.topics.enable=false"}})
		for _, script := range pythonScripts {
			t.Run(script, func(t *testing.T) {
				t.Parallel()
				runPython(t, python, dir, script, c.Bootstrap(), topicName(t), 3)
			})
		}
	})
}

// pythonInterpreter returns the first of /usr/bin/python3 and the python3 on PATH that
// can import both clients, and skips the test if neither can. /usr/bin/python3 comes
// first: Debian's python3-kafka and python3-confluent-kafka install there, while a
// python3 first on PATH (pyenv, a virtualenv) often lacks them.
func pythonInterpreter(t *testing.T) string {
	t.Helper()
	candidates := []string{"/usr/bin/python3"}
	if p, err := exec.LookPath("python3"); err == nil {
		candidates = append(candidates, p)
	}
	var tried []string
	for _, py := range candidates {
		ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
		out, err := exec.CommandContext(ctx, py, "-c", "import kafka, confluent_kafka").CombinedOutput()
		cancel()
		if err == nil {
			return py
		}
		tried = append(tried, py+": "+strings.TrimSpace(lastLine(string(out), err)))
	}
	testutil.Missing(t, "no python3 can import kafka (kafka-python) and confluent_kafka: run scripts/install-deps.sh (apt: python3-kafka, python3-confluent-kafka); tried %s",
		strings.Join(tried, "; "))
	return ""
}

// lastLine is the last line of a failed command's output (a Python traceback ends with
// the error), or err when there was no output.
func lastLine(out string, err error) string {
	out = strings.TrimSpace(out)
	if out == "" {
		return err.Error()
	}
	return out[strings.LastIndex(out, "\n")+1:]
}

// runPython runs `python <dir>/<script>.py <bootstrap> <topic> <rf>` with runScript.
func runPython(t *testing.T, python, dir, script, bootstrap, topic string, rf int) {
	t.Helper()
	// No __pycache__ in the source tree.
	runScript(t, pythonTimeout, dir, []string{"PYTHONDONTWRITEBYTECODE=1"},
		python, filepath.Join(dir, script+".py"), bootstrap, topic, strconv.Itoa(rf))
}
