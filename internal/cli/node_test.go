package cli

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

// startNode starts a real single-node Runnel cluster with the given properties
// (KEY=VALUE) and returns its Kafka address; it is closed when the test ends, and its
// log printed if the test failed. For what kfake does not do as Runnel does
// (config sources).
func startNode(t *testing.T, sets ...string) string {
	t.Helper()
	cfg := config.Default()
	props := []string{"node.id=1", "listen=127.0.0.1:0", "http.listen=127.0.0.1:0",
		"controller.listen=" + testutil.FreeAddr(t), "log.dirs=" + t.TempDir()}
	for _, s := range append(props, sets...) {
		k, v, _ := strings.Cut(s, "=")
		if err := cfg.Set(k, v); err != nil {
			t.Fatalf("config %s: %v", s, err)
		}
	}
	logs := &lockedBuffer{}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	n, err := server.Start(ctx, cfg, server.Options{Logger: slog.New(slog.NewTextHandler(logs, nil))})
	if err != nil {
		t.Fatalf("start node: %v\n%s", err, logs)
	}
	t.Cleanup(func() {
		n.Close()
		if t.Failed() {
			t.Logf("node log:\n%s", logs)
		}
	})
	return n.KafkaAddr().String()
}

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
