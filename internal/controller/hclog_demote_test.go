package controller

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"

	"github.com/hashicorp/raft"
)

// Raft's first election after a start (no leader known yet) is not a warning; losing a
// known leader still is.
func TestHclogDemotesFirstElection(t *testing.T) {
	var buf bytes.Buffer
	a := newHclogAdapter(slog.New(slog.NewTextHandler(&buf, nil)))
	a.Warn("heartbeat timeout reached, starting election", "last-leader-addr", raft.ServerAddress(""), "last-leader-id", raft.ServerID(""))
	if buf.Len() != 0 {
		t.Fatalf("the first election was logged at Warn: %s", buf.String())
	}
	a.Warn("heartbeat timeout reached, starting election", "last-leader-addr", raft.ServerAddress("h:1"), "last-leader-id", raft.ServerID("2"))
	if !strings.Contains(buf.String(), "level=WARN") || !strings.Contains(buf.String(), "last-leader-id=2") {
		t.Fatalf("a lost leader is not a warning: %q", buf.String())
	}
}

// Once the node is leaving, Raft's failures to reach peers (stopping too) are Info;
// before, they are errors.
func TestHclogDemotesPeerFailuresWhileLeaving(t *testing.T) {
	var buf bytes.Buffer
	a := newHclogAdapter(slog.New(slog.NewTextHandler(&buf, nil)))
	var c Controller
	a.leaving = &c.leaving
	a.Error("failed to make requestVote RPC", "target", "2", "error", "connection refused")
	if !strings.Contains(buf.String(), "level=ERROR") {
		t.Fatalf("a peer failure of a running node is not an error: %q", buf.String())
	}
	buf.Reset()
	c.Leaving()
	a.Named("x").Error("failed to make requestVote RPC", "target", "2", "error", "connection refused")
	a.Error("failed to appendEntries to", "peer", "3", "error", "EOF")
	if strings.Contains(buf.String(), "level=ERROR") || buf.Len() != 0 {
		t.Fatalf("peer failures of a leaving node are logged above Info: %q", buf.String())
	}
}

// A peer's connection reset under Raft's reader (the peer was killed) is not an error;
// another decode failure is.
func TestHclogDemotesResetPeerConnection(t *testing.T) {
	var buf bytes.Buffer
	a := newHclogAdapter(slog.New(slog.NewTextHandler(&buf, nil)))
	a.Error("failed to decode incoming command", "error", "read tcp 127.0.0.1:9093->127.0.0.1:40000: read: connection reset by peer")
	if strings.Contains(buf.String(), "level=ERROR") {
		t.Fatalf("a killed peer's reset connection was logged as an error: %q", buf.String())
	}
	buf.Reset()
	a.Error("failed to decode incoming command", "error", "msgpack decode error: invalid code")
	if !strings.Contains(buf.String(), "level=ERROR") {
		t.Fatalf("a real decode failure is not an error: %q", buf.String())
	}
}
