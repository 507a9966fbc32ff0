package server_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/runnel-io/runnel/internal/clustertest"
	"github.com/runnel-io/runnel/internal/server"
	"github.com/runnel-io/runnel/internal/testutil"
)

// Every HTTP endpoint answers while the node starts (the listener comes up before the
// metadata quorum): no handler touches a part of the node that does not exist yet.
// net/http turns a handler's panic into a dropped connection, so any answer other than
// a refused connection (not listening yet) or a whole HTTP response fails the test.
func TestHTTPEndpointsDuringStartup(t *testing.T) {
	httpAddr := testutil.FreeAddr(t)
	cfg := ownConfig(t, 1, "http.listen="+httpAddr, "http.pprof.enable=true")
	logs := &clustertest.LockedBuffer{}
	paths := []string{"/", "/healthz", "/readyz", "/metrics", "/debug/pprof/"}

	stop := make(chan struct{})
	var wg sync.WaitGroup
	var mu sync.Mutex // guards answered and failures
	answered := map[string]int{}
	var failures []string
	for _, path := range paths {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				status, err := server.HTTPGet("http://" + httpAddr + path)
				mu.Lock()
				switch {
				case err == nil:
					answered[path]++
				case !errors.Is(err, syscall.ECONNREFUSED) && len(failures) < 5:
					failures = append(failures, fmt.Sprintf("GET %s: %v", path, err))
				}
				// /readyz and the web console at / answer 503 until the node serves
				// (the console has no cluster to show before the first image).
				if err == nil && status != 200 && !((path == "/readyz" || path == "/") && status == 503) {
					failures = append(failures, fmt.Sprintf("GET %s: status %d", path, status))
				}
				mu.Unlock()
			}
		}()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	n, err := server.Start(ctx, cfg, server.Options{Logger: slog.New(slog.NewTextHandler(logs, nil))})
	if err == nil {
		// Keep polling a moment once ready, then through the shutdown.
		time.Sleep(100 * time.Millisecond)
		n.Close()
	}
	close(stop)
	wg.Wait()
	if err != nil {
		t.Fatalf("start: %v\n%s", err, logs)
	}
	for _, f := range failures {
		t.Error(f)
	}
	for _, path := range paths {
		if answered[path] == 0 {
			t.Errorf("GET %s never answered during start-up", path)
		}
	}
}

// A single node's clean start and stop log no warning, and no attribute twice
// (component=controller component=controller).
func TestSingleNodeLogsClean(t *testing.T) {
	tn, logs := startOwn(t, ownConfig(t, 1))
	testutil.NoError(t, tn.own.Close(), "close")
	for line := range strings.Lines(logs.String()) {
		if strings.Contains(line, "level=WARN") || strings.Contains(line, "level=ERROR") {
			t.Errorf("a clean start and stop logged: %s", line)
		}
		seen := map[string]bool{}
		for _, f := range strings.Fields(line) {
			k, _, ok := strings.Cut(f, "=")
			if ok && k == "component" && seen[f] {
				t.Errorf("attribute %s twice: %s", f, line)
			}
			seen[f] = true
		}
	}
}

// /debug/pprof/ is served only with http.pprof.enable=true (INTERFACE.md): a profile
// costs the node CPU and shows its internals.
func TestPprofOffByDefault(t *testing.T) {
	httpAddr := testutil.FreeAddr(t)
	startOwn(t, ownConfig(t, 1, "http.listen="+httpAddr))
	status, err := server.HTTPGet("http://" + httpAddr + "/debug/pprof/")
	testutil.NoError(t, err, "GET /debug/pprof/")
	testutil.Equal(t, status, 404, "GET /debug/pprof/ without http.pprof.enable")
	status, err = server.HTTPGet("http://" + httpAddr + "/metrics")
	testutil.NoError(t, err, "GET /metrics")
	testutil.Equal(t, status, 200, "GET /metrics")
}
