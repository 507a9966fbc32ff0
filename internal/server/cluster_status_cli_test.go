package server_test

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
	b := nodes[0].addr()
	if code, _, stderr := runCLI("topic", "create", "-b", b, "rf3", "-p", "3", "-r", "3"); code != 0 {
		t.Fatalf("create rf3: exit %d, %s", code, stderr)
	}
	testutil.NoError(t, nodes[2].stop(), "stop node 3")
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
	// The row comes from DescribeCluster v2's fenced brokers, so it has the address.
	addr := nodes[2].addr()
	var row string
	for _, line := range strings.Split(out, "\n") {
		if strings.HasPrefix(line, "3 ") {
			row = line
		}
	}
	testutil.True(t, strings.Contains(row, addr) && strings.HasSuffix(row, "down (fenced by the controller: no heartbeat, process gone or stopped)"),
		"node 3's row %q does not show it fenced at %s, in:\n%s", row, addr, out)
}
