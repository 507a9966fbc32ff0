package controller

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
)

// hclogAdapter sends hashicorp/raft's hclog output to slog. It drops everything below
// its level (Warn by default) so Raft's chatter stays out of the node's log.
type hclogAdapter struct {
	l       *slog.Logger
	name    string
	level   *atomic.Int32 // an hclog.Level, shared by the loggers derived with With/Named
	implied []any
	// leaving is set once this node has begun to stop (Controller.Leaving), shared
	// like level: its peers are then mostly stopping too, and Raft's failures to reach
	// them are expected.
	leaving *atomic.Bool
	// unreachable limits the reports of a peer Raft cannot reach, shared like level.
	unreachable *peerLog
	// diskFull, if set, reports that this node's metadata disk is full: its failing
	// election attempts are then expected (raftstore.go) and logged at Debug.
	diskFull func() bool
}

func newHclogAdapter(l *slog.Logger) *hclogAdapter {
	a := &hclogAdapter{l: l, level: new(atomic.Int32), leaving: new(atomic.Bool), unreachable: newPeerLog(time.Now)}
	a.level.Store(int32(hclog.Warn))
	return a
}

var _ hclog.Logger = (*hclogAdapter)(nil)

func slogLevel(l hclog.Level) slog.Level {
	switch {
	case l <= hclog.Trace:
		return slog.LevelDebug - 4
	case l == hclog.Debug:
		return slog.LevelDebug
	case l == hclog.Info:
		return slog.LevelInfo
	case l == hclog.Warn:
		return slog.LevelWarn
	}
	return slog.LevelError
}

func (a *hclogAdapter) Log(level hclog.Level, msg string, args ...any) {
	var ok bool
	if ended := a.unreachable.resumed(msg, args); len(ended) > 0 {
		// Not Raft's chatter: the end of a run of failures logged above Info.
		a.l.Info("raft reaches the peer again", "module", a.name, "peer", peerArg(args), "failures", strings.Join(ended, "; "))
	}
	level = demote(level, msg, args)
	if words, ok := catchUp(level, msg, args); ok {
		// Info, but shown at the adapter's default level: a node joining is worth
		// a line, in words that do not read like a fault.
		a.l.Info(words, append(append([]any{"module", a.name}, a.implied...), append(args, "raft", msg)...)...)
		return
	}
	if a.leaving.Load() && level > hclog.Info && peerFailure(msg) {
		level = hclog.Info
	}
	if level > hclog.Debug && a.diskFull != nil && slices.Contains(fullDiskCampaign, msg) && a.diskFull() {
		level = hclog.Debug
	}
	if level == hclog.Off || level < a.GetLevel() {
		return
	}
	if msg, args, ok = a.unreachable.filter(msg, args); !ok {
		return
	}
	attrs := make([]any, 0, len(a.implied)+len(args)+2)
	if a.name != "" {
		attrs = append(attrs, "module", a.name)
	}
	attrs = append(append(attrs, a.implied...), args...)
	a.l.Log(context.Background(), slogLevel(level), msg, attrs...)
}

func (a *hclogAdapter) Trace(msg string, args ...any) { a.Log(hclog.Trace, msg, args...) }
func (a *hclogAdapter) Debug(msg string, args ...any) { a.Log(hclog.Debug, msg, args...) }
func (a *hclogAdapter) Info(msg string, args ...any)  { a.Log(hclog.Info, msg, args...) }
func (a *hclogAdapter) Warn(msg string, args ...any)  { a.Log(hclog.Warn, msg, args...) }
func (a *hclogAdapter) Error(msg string, args ...any) { a.Log(hclog.Error, msg, args...) }
func (a *hclogAdapter) IsTrace() bool                 { return a.GetLevel() <= hclog.Trace }
func (a *hclogAdapter) IsDebug() bool                 { return a.GetLevel() <= hclog.Debug }
func (a *hclogAdapter) IsInfo() bool                  { return a.GetLevel() <= hclog.Info }
func (a *hclogAdapter) IsWarn() bool                  { return a.GetLevel() <= hclog.Warn }
func (a *hclogAdapter) IsError() bool                 { return a.GetLevel() <= hclog.Error }
func (a *hclogAdapter) ImpliedArgs() []any            { return a.implied }
func (a *hclogAdapter) Name() string                  { return a.name }
func (a *hclogAdapter) SetLevel(l hclog.Level)        { a.level.Store(int32(l)) }
func (a *hclogAdapter) GetLevel() hclog.Level         { return hclog.Level(a.level.Load()) }

func (a *hclogAdapter) With(args ...any) hclog.Logger {
	n := *a
	n.implied = append(append([]any(nil), a.implied...), args...)
	return &n
}

func (a *hclogAdapter) Named(name string) hclog.Logger {
	if a.name != "" {
		name = a.name + "." + name
	}
	return a.ResetNamed(name)
}

func (a *hclogAdapter) ResetNamed(name string) hclog.Logger {
	n := *a
	n.name = name
	return &n
}

func (a *hclogAdapter) StandardLogger(opts *hclog.StandardLoggerOptions) *log.Logger {
	return log.New(a.StandardWriter(opts), "", 0)
}

// StandardWriter returns a writer that logs each line, at the level its "[WARN]"-style
// prefix names (Info without one).
func (a *hclogAdapter) StandardWriter(*hclog.StandardLoggerOptions) io.Writer {
	return writerFunc(func(p []byte) (int, error) {
		for _, line := range bytes.Split(bytes.TrimRight(p, "\n"), []byte("\n")) {
			s := string(line)
			a.Log(inferLevel(s), strings.TrimSpace(s))
		}
		return len(p), nil
	})
}

func inferLevel(s string) hclog.Level {
	switch {
	case strings.Contains(s, "[ERR"):
		return hclog.Error
	case strings.Contains(s, "[WARN"):
		return hclog.Warn
	case strings.Contains(s, "[DEBUG"):
		return hclog.Debug
	case strings.Contains(s, "[TRACE"):
		return hclog.Trace
	}
	return hclog.Info
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

// demote lowers the level of Raft's warnings that describe normal operation. A node
// that never had a leader (a fresh start, or a single voter) logs "heartbeat timeout
// reached, starting election" with an empty last-leader-id on every start; that is the
// first election, not a lost leader, so it is Info.
//
// "failed to decode incoming command" with a reset connection or EOF is a peer's
// connection closing under Raft's reader: the peer stopped or was killed, which the
// controller's failure detection reports in the user's words (which node, fenced), so
// it is Info. Any other decode failure stays an error.
func demote(level hclog.Level, msg string, args []any) hclog.Level {
	if level == hclog.Error && msg == "failed to decode incoming command" {
		for i := 0; i+1 < len(args); i += 2 {
			if k, _ := args[i].(string); k == "error" {
				if e := fmt.Sprint(args[i+1]); strings.Contains(e, "connection reset by peer") || strings.HasSuffix(e, "EOF") {
					return hclog.Info
				}
			}
		}
		return level
	}
	if level != hclog.Warn || msg != "heartbeat timeout reached, starting election" {
		return level
	}
	for i := 0; i+1 < len(args); i += 2 {
		if k, _ := args[i].(string); k == "last-leader-id" {
			if v := fmt.Sprint(args[i+1]); v != "" {
				return level
			}
		}
	}
	return hclog.Info
}

// catchUp rewords Raft's warnings of a quorum member catching up, which read like
// faults but are how every node that joins (or restarts behind) gets the metadata
// log: the leader's "appendEntries rejected, sending older logs" (the member lacks
// the entry before the ones sent) and the member's own "failed to get previous log"
// when its log ends before that entry (last-index < previous-index; a brand-new node
// has last-index 0). It returns the Info words that say so; Raft's message stays in
// the "raft" attribute. A member whose log reaches the entry and still lacks it is
// not catching up: that warning is left as it is.
func catchUp(level hclog.Level, msg string, args []any) (string, bool) {
	if level != hclog.Warn {
		return "", false
	}
	switch msg {
	case "appendEntries rejected, sending older logs":
		return "a metadata quorum member is behind the leader's log (a node that joined or restarted): sending it the older entries; expected", true
	case "failed to get previous log":
		prev, last := intArg(args, "previous-index"), intArg(args, "last-index")
		if prev >= 0 && last >= 0 && last < prev {
			return "this node's metadata log ends before the leader's entries (a node that joined or restarted): the leader sends the missing ones; expected", true
		}
	}
	return "", false
}

// intArg is the integer argument key of a Raft log call, -1 if absent or not one.
func intArg(args []any, key string) int64 {
	for i := 0; i+1 < len(args); i += 2 {
		if k, _ := args[i].(string); k == key {
			switch v := args[i+1].(type) {
			case uint64:
				return int64(v)
			case int64:
				return v
			case int:
				return int64(v)
			}
		}
	}
	return -1
}

// peerFailure reports whether msg is Raft's report of a peer it could not reach.
func peerFailure(msg string) bool {
	for _, m := range []string{"failed to make requestVote RPC", "failed to appendEntries to", "failed to heartbeat to",
		"failed to contact", "heartbeat timeout reached, starting election", "failed to decode incoming command"} {
		if strings.HasPrefix(msg, m) {
			return true
		}
	}
	return false
}

// fullDiskCampaign are Raft's messages of an election that a node whose metadata disk
// is full keeps starting and that fails by design (it asks for no votes): one line
// per election timeout otherwise.
var fullDiskCampaign = []string{"failed to make requestVote RPC", "Election timeout reached, restarting election",
	"heartbeat timeout reached, starting election", "entering candidate state"}

// Raft's leader reports every failed heartbeat to a peer that is down ("failed to
// heartbeat to", at Error, four times a second: 43 lines in 10 s) and every failed
// appendEntries. The node's own failure detection already says, in the user's words,
// that the node is down (fenced). So peerLog keeps one line per change of state: the
// first failure to reach a peer is logged as Raft logs it; while it keeps failing,
// one summary every peerSummaryEvery (the failures since the last line, for how long
// it has failed, the last error); when Raft reaches it again (its "pipelining
// replication" to the peer) one Info line says so, with the count. A peer not failed
// for peerQuiet is taken as reached again (heartbeats that resume are not logged by
// Raft), and its next failure is a new first one.
const (
	peerSummaryEvery = 30 * time.Second
	peerQuiet        = 10 * time.Second
)

// repeatedPeerFailures are the messages Raft repeats for as long as a peer is down.
var repeatedPeerFailures = []string{"failed to heartbeat to", "failed to appendEntries to",
	"failed to pipeline appendEntries", "failed to start pipeline replication to"}

// peerLog is the state of each (message, peer) being reported.
type peerLog struct {
	now   func() time.Time
	mu    sync.Mutex
	peers map[peerKey]*peerFailures // guarded by mu
}

type peerKey struct{ msg, peer string }

// peerFailures is one peer's run of failures of one kind.
type peerFailures struct {
	since, last, logged time.Time // first failure of the run, latest, latest line logged
	unlogged, total     int       // failures since the latest line logged; in the run
}

func newPeerLog(now func() time.Time) *peerLog {
	return &peerLog{now: now, peers: map[peerKey]*peerFailures{}}
}

// peerArg is the "peer" argument of a Raft log call, as text ("" if none).
func peerArg(args []any) string {
	for i := 0; i+1 < len(args); i += 2 {
		if k, _ := args[i].(string); k == "peer" {
			return fmt.Sprint(args[i+1])
		}
	}
	return ""
}

// filter decides whether a line is logged and with what words: other messages pass
// unchanged; a repeated peer failure passes when it starts a run, and as a summary
// once every peerSummaryEvery of the run.
func (p *peerLog) filter(msg string, args []any) (string, []any, bool) {
	if p == nil || !slices.Contains(repeatedPeerFailures, msg) {
		return msg, args, true
	}
	key := peerKey{msg, peerArg(args)}
	now := p.now()
	p.mu.Lock()
	defer p.mu.Unlock()
	f := p.peers[key]
	if f == nil || now.Sub(f.last) >= peerQuiet {
		p.peers[key] = &peerFailures{since: now, last: now, logged: now, total: 1}
		return msg, append(args, "repeats", fmt.Sprintf("summarized every %v while it fails", peerSummaryEvery)), true
	}
	f.last = now
	f.total++
	f.unlogged++
	if now.Sub(f.logged) < peerSummaryEvery {
		return "", nil, false
	}
	summary := append(args, "failures_since_last_line", f.unlogged, "failing_for", now.Sub(f.since).Round(time.Second).String())
	f.logged, f.unlogged = now, 0
	return msg + " (still failing)", summary, true
}

// resumed notes Raft's "pipelining replication" to a peer: the peer answers again.
// It returns, for each run of failures to that peer it ends, how long it lasted.
func (p *peerLog) resumed(msg string, args []any) []string {
	if p == nil || msg != "pipelining replication" {
		return nil
	}
	peer := peerArg(args)
	if peer == "" {
		return nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	var ended []string
	for key, f := range p.peers {
		if key.peer != "" && (strings.Contains(peer, key.peer) || strings.Contains(key.peer, peer)) {
			ended = append(ended, fmt.Sprintf("%s: %d failures over %v", key.msg, f.total, f.last.Sub(f.since).Round(time.Second)))
			delete(p.peers, key)
		}
	}
	slices.Sort(ended)
	return ended
}
