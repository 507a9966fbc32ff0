package interop_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/runnel-io/runnel/internal/testutil"
	"github.com/twmb/franz-go/pkg/kgo"
)

// process is `runnel server` running as a child process.
type process struct {
	cmd        *exec.Cmd
	dataDir    string
	kafka      string // HOST:PORT of the Kafka listener
	controller string
	http       string
	args       []string      // the extra arguments it was started with
	output     *lockedBuffer // its stdout and stderr
	exited     chan struct{} // closed once Wait returned; then waitErr is set
	waitErr    error
}

// processAddrs are the three listeners of a process; a restart reuses them, since the
// metadata quorum keeps the controller address in its data.
type processAddrs struct{ kafka, controller, http string }

func freeAddrs(t *testing.T) processAddrs {
	return processAddrs{testutil.FreeAddr(t), testutil.FreeAddr(t), testutil.FreeAddr(t)}
}

// startFresh starts a server on a new data directory and free ports. A port can be
// taken between finding it free and the server binding it; then it tries other ports.
func startFresh(t *testing.T) (*process, processAddrs) {
	t.Helper()
	return startFreshIn(t, t.TempDir())
}

// startFreshIn is startFresh with the data in dir.
func startFreshIn(t *testing.T, dir string) (*process, processAddrs) {
	t.Helper()
	for attempt := 1; ; attempt++ {
		addrs := freeAddrs(t)
		p, err := tryStart(t, dir, addrs)
		if err == nil {
			return p, addrs
		}
		if attempt == 3 || !strings.Contains(p.output.String(), "address already in use") {
			t.Fatalf("%v\n%s", err, p.output)
		}
	}
}

// startProcess runs the runnel binary as a server on addrs with its data in dataDir,
// plus extra arguments, and waits until /readyz answers 200. When the test ends the
// process is killed if it still runs, and its output is printed if the test failed.
func startProcess(t *testing.T, dataDir string, addrs processAddrs, extra ...string) *process {
	t.Helper()
	p, err := tryStart(t, dataDir, addrs, extra...)
	if err != nil {
		t.Fatalf("%v\n%s", err, p.output)
	}
	return p
}

// tryStart launches the server and waits for /readyz; the error says why it never
// became ready (it exited, or the deadline passed).
func tryStart(t *testing.T, dataDir string, addrs processAddrs, extra ...string) (*process, error) {
	t.Helper()
	p := launch(t, dataDir, addrs, extra...)
	var last error
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(testutil.PollInterval) {
		select {
		case <-p.exited:
			return p, fmt.Errorf("runnel server exited during start-up: %v", p.waitErr)
		default:
		}
		code, _, err := httpGet(p.http + "/readyz")
		switch {
		case err != nil:
			last = fmt.Errorf("GET /readyz: %w", err)
		case code != http.StatusOK:
			last = fmt.Errorf("GET /readyz: %d, want 200", code)
		default:
			return p, nil
		}
	}
	p.kill()
	return p, fmt.Errorf("runnel server not ready after 30s: %v", last)
}

// launch starts the process without waiting for it to be ready.
func launch(t *testing.T, dataDir string, addrs processAddrs, extra ...string) *process {
	t.Helper()
	args := append([]string{"server", "--data-dir", dataDir, "--listen", addrs.kafka,
		"--controller-listen", addrs.controller, "--http-listen", addrs.http}, extra...)
	p := &process{dataDir: dataDir, kafka: addrs.kafka, controller: addrs.controller, http: addrs.http,
		args: extra, output: &lockedBuffer{}, exited: make(chan struct{})}
	p.cmd = exec.Command(runnelBin, args...)
	p.cmd.Stdout, p.cmd.Stderr = p.output, p.output
	testutil.NoError(t, p.cmd.Start(), "starting %s %s", runnelBin, strings.Join(args, " "))
	go func() {
		p.waitErr = p.cmd.Wait()
		close(p.exited)
	}()
	t.Cleanup(func() {
		p.kill()
		if t.Failed() {
			t.Logf("output of runnel %s:\n%s", strings.Join(args, " "), p.output)
		}
	})
	return p
}

// kill sends SIGKILL, as a crash, and waits for the process to be gone.
func (p *process) kill() {
	select {
	case <-p.exited:
		return
	default:
	}
	p.cmd.Process.Signal(syscall.SIGKILL)
	<-p.exited
}

// stop sends SIGTERM and returns the exit error and how long the exit took; it fails
// the test if the process has not exited within limit.
func (p *process) stop(t *testing.T, limit time.Duration) (error, time.Duration) {
	t.Helper()
	start := time.Now()
	testutil.NoError(t, p.cmd.Process.Signal(syscall.SIGTERM), "sending SIGTERM")
	select {
	case <-p.exited:
		return p.waitErr, time.Since(start)
	case <-time.After(limit):
		t.Fatalf("runnel server still runs %v after SIGTERM", limit)
		return nil, 0
	}
}

func httpGet(url string) (int, string, error) {
	c := http.Client{Timeout: 5 * time.Second}
	resp, err := c.Get("http://" + url)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body), err
}

// TestProcess runs the binary: health endpoints, metrics, a clean SIGTERM that keeps
// every record, and start-up refusing bad properties.
func TestProcess(t *testing.T) {
	t.Run("HTTPAndSIGTERM", func(t *testing.T) { t.Parallel(); testHTTPAndSIGTERM(t) })
	t.Run("NotReadyWithoutQuorum", func(t *testing.T) { t.Parallel(); testNotReady(t) })
	t.Run("BadProperties", func(t *testing.T) { t.Parallel(); testBadProperties(t) })
}

func testHTTPAndSIGTERM(t *testing.T) {
	p, addrs := startFresh(t)
	dir := p.dataDir
	code, body, err := httpGet(p.http + "/healthz")
	testutil.NoError(t, err, "GET /healthz")
	testutil.Equal(t, code, http.StatusOK, "GET /healthz status (%s)", body)

	topic := topicName(t)
	createTopic(t, newAdmin(t, p.kafka), topic, 2)
	cl := newClient(t, p.kafka, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	produceValues(t, cl, topic, 0, "a", "b", "c", "d", "e")

	code, metrics, err := httpGet(p.http + "/metrics")
	testutil.NoError(t, err, "GET /metrics")
	testutil.Equal(t, code, http.StatusOK, "GET /metrics status")
	for _, re := range []string{
		`(?m)^runnel_requests_total\{api="Produce"\} [1-9]`,
		`(?m)^runnel_log_end_offset\{partition="0",topic="` + regexp.QuoteMeta(topic) + `"\} 5$`,
		`(?m)^runnel_log_end_offset\{partition="1",topic="` + regexp.QuoteMeta(topic) + `"\} 0$`,
	} {
		testutil.True(t, regexp.MustCompile(re).MatchString(metrics), "/metrics has no line matching %s", re)
	}

	cl.Close()
	err, took := p.stop(t, 10*time.Second)
	testutil.NoError(t, err, "exit status after SIGTERM")
	t.Logf("SIGTERM to exit: %v", took)

	// A clean stop keeps everything.
	p = startProcess(t, dir, addrs)
	got := consumePartitions(t, p.kafka, topic, map[int32]int{0: 5})[0]
	var values []string
	for _, r := range got {
		values = append(values, fmt.Sprintf("%d=%s", r.Offset, r.Value))
	}
	testutil.Equal(t, values, []string{"0=a", "1=b", "2=c", "3=d", "4=e"}, "records after a restart")
	err, _ = p.stop(t, 10*time.Second)
	testutil.NoError(t, err, "exit status after the second SIGTERM")
}

// testNotReady starts a node whose quorum needs a second voter that never comes: it is
// alive (/healthz 200) but not ready (/readyz 503).
func testNotReady(t *testing.T) {
	addrs := freeAddrs(t)
	other := testutil.FreeAddr(t)
	p := launch(t, t.TempDir(), addrs, "--controllers", fmt.Sprintf("1@%s,2@%s", addrs.controller, other))
	testutil.Eventually(t, 20*time.Second, func() error {
		code, _, err := httpGet(p.http + "/healthz")
		if err != nil || code != http.StatusOK {
			return fmt.Errorf("GET /healthz: %d, %v; want 200", code, err)
		}
		return nil
	})
	for range 3 {
		code, _, err := httpGet(p.http + "/readyz")
		testutil.NoError(t, err, "GET /readyz")
		testutil.Equal(t, code, http.StatusServiceUnavailable, "GET /readyz without a quorum")
		time.Sleep(100 * time.Millisecond)
	}
}

func testBadProperties(t *testing.T) {
	for _, tc := range []struct{ set, name string }{
		{"foo.bar=1", "foo.bar"},
		{"num.partitions=many", "num.partitions"},
	} {
		ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
		addrs := freeAddrs(t)
		cmd := exec.CommandContext(ctx, runnelBin, "server", "--data-dir", t.TempDir(), "--listen", addrs.kafka,
			"--controller-listen", addrs.controller, "--http-listen", addrs.http, "--set", tc.set)
		out, err := cmd.CombinedOutput()
		timedOut := ctx.Err() != nil
		cancel()
		var exit *exec.ExitError
		testutil.True(t, errors.As(err, &exit) && exit.ExitCode() > 0 && !timedOut,
			"runnel server --set %s: %v (want a non-zero exit), output:\n%s", tc.set, err, out)
		testutil.True(t, strings.Contains(string(out), tc.name), "runnel server --set %s: the message does not name %s:\n%s", tc.set, tc.name, out)
	}
}
