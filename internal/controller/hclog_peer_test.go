package controller

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/raft"
)

// While a peer is down the leader's Raft reports every failed heartbeat (four a
// second). The node's log keeps one line when the failures start, one summary every
// peerSummaryEvery while they go on, and one Info line when Raft reaches the peer
// again; a new outage starts again with one line.
func TestHclogPeerFailuresOncePerStateChange(t *testing.T) {
	var buf bytes.Buffer
	a := newHclogAdapter(slog.New(slog.NewTextHandler(&buf, nil)))
	clock := time.Unix(1000, 0)
	a.unreachable = newPeerLog(func() time.Time { return clock })
	r := a.Named("raft")
	heartbeats := func(d time.Duration) {
		for end := clock.Add(d); clock.Before(end); clock = clock.Add(250 * time.Millisecond) {
			r.Error("failed to heartbeat to", "peer", raft.ServerAddress("127.0.0.1:9093"), "backoff time", 10*time.Millisecond,
				"error", "dial tcp 127.0.0.1:9093: connect: connection refused")
		}
	}
	lines := func() []string {
		defer buf.Reset()
		return strings.Split(strings.TrimSpace(buf.String()), "\n")
	}

	heartbeats(10 * time.Second) // 40 failures
	if l := lines(); len(l) != 1 || !strings.Contains(l[0], `level=ERROR msg="failed to heartbeat to"`) || !strings.Contains(l[0], "peer=127.0.0.1:9093") {
		t.Fatalf("10 s of failed heartbeats logged %d lines, want the first alone:\n%s", len(l), strings.Join(l, "\n"))
	}
	heartbeats(25 * time.Second) // past peerSummaryEvery since the first line
	l := lines()
	if len(l) != 1 || !strings.Contains(l[0], `msg="failed to heartbeat to (still failing)"`) ||
		!strings.Contains(l[0], "failures_since_last_line=120") || !strings.Contains(l[0], "failing_for=30s") {
		t.Fatalf("after 35 s: %d lines, want one summary of the 120 failures since the first:\n%s", len(l), strings.Join(l, "\n"))
	}
	r.Info("pipelining replication", "peer", raft.Server{Suffrage: raft.Voter, ID: "2", Address: "127.0.0.1:9093"})
	if l := lines(); len(l) != 1 || !strings.Contains(l[0], `level=INFO msg="raft reaches the peer again"`) ||
		!strings.Contains(l[0], "failed to heartbeat to: 140 failures over 35s") {
		t.Fatalf("the peer answering again: %d lines, want one Info line with the count:\n%s", len(l), strings.Join(l, "\n"))
	}
	heartbeats(time.Second)
	if l := lines(); len(l) != 1 || !strings.Contains(l[0], `level=ERROR msg="failed to heartbeat to"`) {
		t.Fatalf("a new outage: %d lines, want its first failure:\n%s", len(l), strings.Join(l, "\n"))
	}
	// Another peer's failures are their own run; other errors are untouched.
	r.Error("failed to heartbeat to", "peer", raft.ServerAddress("127.0.0.1:9094"), "error", "refused")
	r.Error("failed to get log", "index", 7, "error", "boom")
	r.Error("failed to get log", "index", 7, "error", "boom")
	if l := lines(); len(l) != 3 {
		t.Fatalf("another peer's first failure and two other errors: %d lines, want 3:\n%s", len(l), strings.Join(l, "\n"))
	}
	// A run that ended without Raft saying so (heartbeats resumed): after peerQuiet
	// the next failure is a first one again.
	clock = clock.Add(peerQuiet)
	heartbeats(time.Second)
	if l := lines(); len(l) != 1 || !strings.Contains(l[0], `msg="failed to heartbeat to"`) {
		t.Fatalf("after %v without a failure: %d lines, want a first failure:\n%s", peerQuiet, len(l), strings.Join(l, "\n"))
	}
}

// A node joining the quorum (or restarting behind) makes Raft warn on both sides:
// "appendEntries rejected, sending older logs" on the leader, "failed to get previous
// log" on the new node. Both are logged at Info in words that say it is expected; a
// member whose log reaches the entry and lacks it still gets Raft's warning.
func TestHclogCatchUpIsExpected(t *testing.T) {
	var buf bytes.Buffer
	a := newHclogAdapter(slog.New(slog.NewTextHandler(&buf, nil))).Named("raft")
	a.Warn("appendEntries rejected, sending older logs", "peer", raft.Server{Suffrage: raft.Nonvoter, ID: "4", Address: "127.0.0.1:29493"}, "next", uint64(1))
	a.Warn("failed to get previous log", "previous-index", uint64(20), "last-index", uint64(0), "error", "log not found")
	l := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(l) != 2 || strings.Contains(buf.String(), "level=WARN") || strings.Count(buf.String(), "expected") != 2 ||
		!strings.Contains(l[0], `raft="appendEntries rejected, sending older logs"`) || !strings.Contains(l[1], "last-index=0") {
		t.Fatalf("a joining node's catch-up: want two Info lines saying it is expected, got:\n%s", buf.String())
	}
	buf.Reset()
	a.Warn("failed to get previous log", "previous-index", uint64(20), "last-index", uint64(30), "error", "log not found")
	if !strings.Contains(buf.String(), `level=WARN msg="failed to get previous log"`) {
		t.Fatalf("a missing entry inside the log is not a catch-up: %q", buf.String())
	}
}
