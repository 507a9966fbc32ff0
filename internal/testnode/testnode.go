// Package testnode starts a real single-node Runnel cluster inside a test process:
// the same server the binary runs (internal/server), over real loopback sockets. It is
// for the tests of packages above the server (internal/cli, mirror) that need a real
// broker without the cost of a separate process (internal/cluster does processes).
//
// It is a package of its own, not part of internal/testutil, because it imports
// internal/server, whose own tests import testutil: testutil importing the server would
// be an import cycle.
package testnode

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/runnel-io/runnel/internal/config"
	"github.com/runnel-io/runnel/internal/server"
	"github.com/runnel-io/runnel/internal/testutil"
)

// LogTailLines is how many lines of the node's log a failed test prints.
const LogTailLines = 200

// Start starts a single-node Runnel cluster (node.id 1, every listener on a free
// loopback port, a fresh data directory) with the extra properties sets (KEY=VALUE),
// and returns its Kafka address. The node is closed when the test ends; if the test
// failed, the tail of its log is printed.
func Start(t testing.TB, sets ...string) string {
	t.Helper()
	cfg := config.Default()
	props := []string{"node.id=1", "listen=127.0.0.1:0", "http.listen=127.0.0.1:0",
		"controller.listen=" + testutil.FreeAddr(t), "log.dirs=" + t.TempDir()}
	for _, s := range append(props, sets...) {
		k, v, _ := strings.Cut(s, "=")
		if err := cfg.Set(k, v); err != nil {
			t.Fatalf("testnode: config %s: %v", s, err)
		}
	}
	logs := &LockedBuffer{}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	n, err := server.Start(ctx, cfg, server.Options{Logger: slog.New(slog.NewTextHandler(logs, nil))})
	if err != nil {
		t.Fatalf("testnode: starting the node: %v\n%s", err, logs)
	}
	t.Cleanup(func() {
		n.Close()
		if t.Failed() {
			t.Logf("node %s log (last %d lines):\n%s", n.KafkaAddr(), LogTailLines, tail(logs.String(), LogTailLines))
		}
	})
	return n.KafkaAddr().String()
}

func tail(s string, n int) string {
	ls := strings.Split(s, "\n")
	if len(ls) > n {
		ls = ls[len(ls)-n:]
	}
	return strings.Join(ls, "\n")
}

// LockedBuffer is an io.Writer safe for concurrent writers (a node's log: the server
// writes it from many goroutines), read back whole with String.
type LockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *LockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *LockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
