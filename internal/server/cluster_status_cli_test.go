package server

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/runnel-io/runnel/internal/testutil"
)

// `runnel cluster status` lists a node that went away as down, with a summary line,
// instead of leaving it out of the table.
func TestClusterStatusShowsDownNode(t *testing.T) {
	nodes := startCluster(t, 3)
	b := nodes[0].node.KafkaAddr().String()
	if code, _, stderr := runCLI("topic", "create", "-b", b, "rf3", "-p", "3", "-r", "3"); code != 0 {
		t.Fatalf("create rf3: exit %d, %s", code, stderr)
	}
	testutil.NoError(t, nodes[2].node.Close(), "stop node 3")
	var out string
	testutil.Eventually(t, 20*time.Second, func() error {
		code, stdout, stderr := runCLI("cluster", "status", "-b", b)
		out = stdout
		if code != 0 {
			return fmt.Errorf("exit %d: %s", code, stderr)
		}
		if !strings.Contains(stdout, "\n1 of 3 nodes down\n") {
			return fmt.Errorf("no summary line of a down node in:\n%s", stdout)
		}
		return nil
	})
	want := "3     -                -     0        down (fenced or not registered; it still holds replicas)\n"
	testutil.True(t, strings.Contains(out, want), "node 3's row is not %q in:\n%s", want, out)
}
