package controller

import (
	"context"
	"strings"
	"testing"

	"github.com/runnel-io/runnel/internal/metadata"
)

// TestUnregisterJustKilledNode: node 2 holds no replica and is registered as alive
// (its session has not expired). While its process answers, UnregisterBroker refuses,
// saying it is still registered as alive and by when a stopped one is fenced; once
// its process is gone (ProcessGone: its listener refuses connections) the same call
// fences it and unregisters it, without waiting for the session timeout.
func TestUnregisterJustKilledNode(t *testing.T) {
	cfg := testConfig(t)
	gone := false
	cfg.ProcessGone = func(_ context.Context, b metadata.Broker) bool { return b.ID == 2 && gone }
	c := startController(t, cfg)
	registerLive(t, c, metadata.Broker{ID: 1, Host: "localhost", Port: 9092})
	registerLive(t, c, metadata.Broker{ID: 2, Host: "localhost", Port: 9093})

	err := c.UnregisterBroker(testCtx(t), 2)
	wantErr(t, "unregistering a live node", err, ErrInvalidRequest)
	for _, want := range []string{"node 2 is still registered as alive", "will be fenced within 1m1s", "broker.session.timeout.ms=60000"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
	if _, ok := c.Image().Brokers[2]; !ok {
		t.Fatalf("node 2 unregistered while its process answers")
	}

	gone = true
	if err := c.UnregisterBroker(testCtx(t), 2); err != nil {
		t.Fatalf("unregistering a node whose process is gone: %v", err)
	}
	if b, ok := c.Image().Brokers[2]; ok {
		t.Fatalf("node 2 still registered: %+v", b)
	}
}
