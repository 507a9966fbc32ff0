package server

import (
	"fmt"
	"math/rand/v2"
	"net"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/runnel-io/runnel/internal/testutil"
)

func TestDevNodesLayout(t *testing.T) {
	ns := devNodes(3, 9092, "dev")
	want := []struct{ kafka, raft, http, dir string }{
		{"127.0.0.1:9092", "127.0.0.1:9093", "127.0.0.1:9094", "dev/node-1"},
		{"127.0.0.1:9102", "127.0.0.1:9103", "127.0.0.1:9104", "dev/node-2"},
		{"127.0.0.1:9112", "127.0.0.1:9113", "127.0.0.1:9114", "dev/node-3"},
	}
	for i, w := range want {
		n := ns[i]
		if n.id != i+1 || n.kafka != w.kafka || n.raft != w.raft || n.http != w.http || n.dir != w.dir {
			t.Errorf("node %d = %+v, want %+v", i+1, *n, w)
		}
	}
}

// kill -9 of one dev-cluster node leaves the others running: the supervisor reports
// the exit and prints the exact command that restarts the node, and that command
// brings the node back into the cluster. SIGTERM then stops the cluster, exit 0.
func TestDevClusterSurvivesKill(t *testing.T) {
	base := freeBasePort(t, 3)
	p := startRunnel(t, "dev-cluster", "--nodes", "3", "--base-port", strconv.Itoa(base), "--data-dir", t.TempDir())
	p.waitOutput(t, 60*time.Second, "Runnel dev cluster: 3 nodes ready")
	pid := p.nodePid(t, 2)
	testutil.NoError(t, syscall.Kill(pid, syscall.SIGKILL), "kill -9 node 2")

	p.waitOutput(t, 10*time.Second, fmt.Sprintf("[dev-cluster] node 2 (pid %d) exited: signal: killed; nodes 1, 3 keep running\n", pid))
	m := p.waitMatch(t, 10*time.Second, regexp.MustCompile(`\[dev-cluster\] restart node 2 with: (.*)\n`))
	restart := startShell(t, m[1])
	http2 := fmt.Sprintf("127.0.0.1:%d", base+12)
	waitReadyz(t, 30*time.Second, http2, "node 2 started with the printed command")
	for i, addr := range []string{fmt.Sprintf("127.0.0.1:%d", base+2), fmt.Sprintf("127.0.0.1:%d", base+22)} {
		code, err := get("http://" + addr + "/readyz")
		testutil.True(t, err == nil && code == 200, "node %d /readyz after node 2's kill and restart: %d %v", []int{1, 3}[i], code, err)
	}
	select {
	case <-p.exited:
		t.Fatalf("the dev cluster exited after one node was killed: %v", p.err)
	default:
	}
	restart.Process.Signal(syscall.SIGTERM)
	testutil.NoError(t, p.cmd.Process.Signal(syscall.SIGTERM), "SIGTERM to the dev cluster")
	testutil.Equal(t, p.wait(t, 30*time.Second), 0, "exit code of the dev cluster after SIGTERM")
}

// With --restart the supervisor starts a killed node again after --restart-delay.
func TestDevClusterRestart(t *testing.T) {
	base := freeBasePort(t, 1)
	p := startRunnel(t, "dev-cluster", "--nodes", "1", "--base-port", strconv.Itoa(base), "--data-dir", t.TempDir(),
		"--restart", "--restart-delay", "100ms")
	p.waitOutput(t, 60*time.Second, "Runnel dev cluster: 1 nodes ready")
	pid := p.nodePid(t, 1)
	testutil.NoError(t, syscall.Kill(pid, syscall.SIGKILL), "kill -9 node 1")
	p.waitOutput(t, 10*time.Second, fmt.Sprintf("[dev-cluster] node 1 (pid %d) exited: signal: killed; no other node is running\n"+
		"[dev-cluster] restarting node 1 in 100ms\n", pid))
	p.waitMatch(t, 10*time.Second, regexp.MustCompile(`\[dev-cluster\] node 1 restarted \(pid \d+\)\n`))
	waitReadyz(t, 30*time.Second, fmt.Sprintf("127.0.0.1:%d", base+2), "node 1 after its restart")
	testutil.NoError(t, p.cmd.Process.Signal(syscall.SIGTERM), "SIGTERM to the dev cluster")
	testutil.Equal(t, p.wait(t, 30*time.Second), 0, "exit code of the dev cluster after SIGTERM")
}

func TestShellCommand(t *testing.T) {
	got := shellCommand("/tmp/my bin/runnel", []string{"server", "--data-dir", "it's", "--controllers", "1@127.0.0.1:9093,2@h:1"})
	testutil.Equal(t, got, `'/tmp/my bin/runnel' server --data-dir 'it'\''s' --controllers 1@127.0.0.1:9093,2@h:1`)
}

// waitOutput waits until the process's output contains s.
func (p *runnelProc) waitOutput(t *testing.T, d time.Duration, s string) {
	t.Helper()
	testutil.Eventually(t, d, func() error {
		if strings.Contains(p.output(), s) {
			return nil
		}
		select {
		case <-p.exited:
			t.Fatalf("runnel exited (%v) before printing %q:\n%s", p.err, s, p.output())
		default:
		}
		return fmt.Errorf("no %q in the output", s)
	})
}

// waitMatch waits until re matches the output and returns the submatches.
func (p *runnelProc) waitMatch(t *testing.T, d time.Duration, re *regexp.Regexp) []string {
	t.Helper()
	var m []string
	testutil.Eventually(t, d, func() error {
		if m = re.FindStringSubmatch(p.output()); m != nil {
			return nil
		}
		return fmt.Errorf("no match of %s in the output", re)
	})
	return m
}

// nodePid reads node id's pid from the dev cluster's ready table.
func (p *runnelProc) nodePid(t *testing.T, id int) int {
	t.Helper()
	m := regexp.MustCompile(fmt.Sprintf(`(?m)^  node %d  pid (\d+)  kafka `, id)).FindStringSubmatch(p.output())
	if m == nil {
		t.Fatalf("no pid of node %d in:\n%s", id, p.output())
	}
	pid, _ := strconv.Atoi(m[1])
	return pid
}

// startShell runs command with sh, as a user pasting it would; killed at the end.
func startShell(t *testing.T, command string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command("sh", "-c", "exec "+command)
	cmd.Env = append(cmd.Environ(), execEnv+"=1")
	out := &syncBuffer{}
	cmd.Stdout, cmd.Stderr = out, out
	testutil.NoError(t, cmd.Start(), "sh -c %q", command)
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
		if t.Failed() {
			t.Logf("%s:\n%s", command, out)
		}
	})
	return cmd
}

func waitReadyz(t *testing.T, d time.Duration, addr, what string) {
	t.Helper()
	testutil.Eventually(t, d, func() error {
		code, err := get("http://" + addr + "/readyz")
		if err == nil && code == 200 {
			return nil
		}
		return fmt.Errorf("%s: /readyz on %s: %d %v", what, addr, code, err)
	})
}

// freeBasePort finds a dev-cluster --base-port whose n nodes' ports (base+10i+0..2)
// are all free a moment ago.
func freeBasePort(t *testing.T, n int) int {
	t.Helper()
	for range 100 {
		base := 20000 + 10*rand.IntN(3000)
		ok := true
		for i := range n {
			for j := range 3 {
				ln, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", base+10*i+j))
				if err != nil {
					ok = false
					break
				}
				ln.Close()
			}
		}
		if ok {
			return base
		}
	}
	t.Fatal("no free base port")
	return 0
}
