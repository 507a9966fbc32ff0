package server

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/runnel-io/runnel/internal/config"
	"github.com/runnel-io/runnel/internal/testutil"
)

// A second server on a data directory a running node holds exits 1 at once, naming
// the directory and the holder, instead of waiting for ever in Raft's bolt store.
func TestSecondServerOnLockedDataDir(t *testing.T) {
	dir := t.TempDir()
	cfg := config.Default()
	for k, v := range map[string]string{"listen": "127.0.0.1:0", "http.listen": "127.0.0.1:0",
		"controller.listen": testutil.FreeAddr(t), "log.dirs": dir} {
		testutil.NoError(t, cfg.Set(k, v), "config.Set(%q)", k)
	}
	start := func() *Node {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		n, err := Start(ctx, cfg, Options{Logger: slog.New(slog.DiscardHandler)})
		testutil.NoError(t, err, "start a node on %s", dir)
		t.Cleanup(func() { n.Close() })
		return n
	}
	first := start()

	began := time.Now()
	p := startRunnel(t, "server", "--data-dir", dir, "--listen", "127.0.0.1:0",
		"--controller-listen", "127.0.0.1:0", "--http-listen", "127.0.0.1:0")
	code := p.wait(t, time.Second)
	took := time.Since(began)
	testutil.Equal(t, code, 1, "exit code of the second server")
	want := fmt.Sprintf("runnel: data directory %s is in use by another runnel process (pid %d)\n", dir, os.Getpid())
	testutil.Equal(t, p.output(), want, "output of the second server (in %v)", took)

	// The first node still works, and once it is closed the directory is free again.
	testutil.NoError(t, first.Close(), "close the first node")
	start()
}

// A server still waiting for its metadata quorum stops at SIGTERM, exit 0: start-up
// waits obey signals.
func TestServerStopsWhileWaitingForQuorum(t *testing.T) {
	self, absent := testutil.FreeAddr(t), testutil.FreeAddr(t)
	p := startRunnel(t, "server", "--node-id", "1", "--data-dir", t.TempDir(), "--listen", "127.0.0.1:0",
		"--controller-listen", self, "--http-listen", "127.0.0.1:0",
		"--controllers", "1@"+self+",2@"+absent)
	testutil.Eventually(t, 10*time.Second, func() error {
		if !strings.Contains(p.output(), "raft") && !strings.Contains(p.output(), "level=") {
			return fmt.Errorf("no log line yet: %q", p.output())
		}
		return nil
	})
	testutil.NoError(t, p.cmd.Process.Signal(syscall.SIGTERM), "SIGTERM")
	testutil.Equal(t, p.wait(t, 5*time.Second), 0, "exit code after SIGTERM during start-up")
}

// A start that fails reports its cause alone: no "runnel node stopped err=<nil>" line
// before it.
func TestFailedStartReportsOnlyTheCause(t *testing.T) {
	taken := testutil.FreeAddr(t)
	ln, err := net.Listen("tcp", taken)
	testutil.NoError(t, err, "listen on %s", taken)
	defer ln.Close()
	p := startRunnel(t, "server", "--data-dir", t.TempDir(), "--listen", taken,
		"--controller-listen", "127.0.0.1:0", "--http-listen", "127.0.0.1:0")
	testutil.Equal(t, p.wait(t, 30*time.Second), 1, "exit code")
	out := p.output()
	testutil.True(t, !strings.Contains(out, "runnel node stopped"), "a failed start logs the node as stopped:\n%s", out)
	want := fmt.Sprintf("runnel: kafka listener PLAINTEXT on %s: listen tcp %s: bind: address already in use\n", taken, taken)
	testutil.True(t, strings.HasSuffix(out, want), "output does not end with %q:\n%s", want, out)
}
