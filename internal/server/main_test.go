package server

import (
	"bytes"
	"io"
	"net/http"
	"os"
	"os/exec"
	"sync"
	"testing"
	"time"

	"github.com/runnel-io/runnel/internal/cli"
)

// The tests that start nodes are in package server_test (they run them with
// internal/clustertest, which imports this package; export_test.go gives them the few
// internals they check). What stays here is what needs this package's own test
// binary as the runnel command (startRunnel) or unexported parts (dev-cluster's
// layout).

// execEnv, when set in a test binary's environment, makes it run as the runnel
// binary (cmd/runnel's main) instead of running tests: tests start real `runnel
// server` and `runnel dev-cluster` processes from os.Args[0] without building one,
// and dev-cluster's children (os.Executable, the same environment) are servers too.
const execEnv = "RUNNEL_SERVER_TEST_EXEC"

func TestMain(m *testing.M) {
	if os.Getenv(execEnv) == "1" {
		os.Exit(cli.Main(os.Args[1:], NewCommand(), NewDevClusterCommand()))
	}
	os.Exit(m.Run())
}

// runnelProc is a runnel process started by a test, killed when the test ends.
type runnelProc struct {
	cmd    *exec.Cmd
	out    *syncBuffer // stdout and stderr together
	exited chan struct{}
	err    error // the exit status, set before exited is closed
}

// startRunnel starts this test binary as `runnel args...`.
func startRunnel(t *testing.T, args ...string) *runnelProc {
	t.Helper()
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(os.Environ(), execEnv+"=1")
	p := &runnelProc{cmd: cmd, out: &syncBuffer{}, exited: make(chan struct{})}
	cmd.Stdout, cmd.Stderr = p.out, p.out
	if err := cmd.Start(); err != nil {
		t.Fatalf("start runnel %v: %v", args, err)
	}
	go func() {
		p.err = cmd.Wait()
		close(p.exited)
	}()
	t.Cleanup(func() {
		cmd.Process.Kill()
		<-p.exited
		if t.Failed() {
			t.Logf("runnel %v output:\n%s", args, p.out)
		}
	})
	return p
}

// wait waits up to d for the process to exit and returns its exit code, or fails.
func (p *runnelProc) wait(t *testing.T, d time.Duration) int {
	t.Helper()
	select {
	case <-p.exited:
	case <-time.After(d):
		t.Fatalf("runnel %v still runs after %v; output:\n%s", p.cmd.Args[1:], d, p.out)
	}
	if p.err == nil {
		return 0
	}
	if ee, ok := p.err.(*exec.ExitError); ok {
		return ee.ExitCode()
	}
	t.Fatalf("runnel %v: %v", p.cmd.Args[1:], p.err)
	return -1
}

// lines returns the process's output so far.
func (p *runnelProc) output() string { return p.out.String() }

// syncBuffer collects a process's output, safe for concurrent writers.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// get fetches url and returns the status after reading the whole body.
func get(url string) (int, error) {
	c := http.Client{Timeout: 5 * time.Second}
	resp, err := c.Get(url)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	if _, err := io.Copy(io.Discard, resp.Body); err != nil {
		return 0, err
	}
	return resp.StatusCode, nil
}
