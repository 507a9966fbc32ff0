package controller

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log"
	"log/slog"
	"strings"
	"sync/atomic"

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
}

func newHclogAdapter(l *slog.Logger) *hclogAdapter {
	a := &hclogAdapter{l: l, level: new(atomic.Int32), leaving: new(atomic.Bool)}
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
	level = demote(level, msg, args)
	if a.leaving.Load() && level > hclog.Info && peerFailure(msg) {
		level = hclog.Info
	}
	if level == hclog.Off || level < a.GetLevel() {
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
