package controller

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"

	"github.com/hashicorp/go-hclog"
)

func TestHclogAdapter(t *testing.T) {
	var buf bytes.Buffer
	a := newHclogAdapter(slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug - 4})))
	a.Info("hidden info")
	named := a.Named("raft").With("peer", "2")
	named.Warn("heartbeat failed", "err", "boom")
	a.StandardLogger(nil).Print("[ERR] stdlog line")
	a.StandardLogger(nil).Print("[DEBUG] dropped")
	out := buf.String()
	for _, want := range []string{`level=WARN msg="heartbeat failed" module=raft peer=2 err=boom`, `level=ERROR msg="[ERR] stdlog line"`} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "hidden") || strings.Contains(out, "dropped") {
		t.Errorf("below-Warn lines leaked:\n%s", out)
	}
	a.SetLevel(hclog.Trace)
	if !named.IsTrace() {
		t.Error("level not shared with derived loggers")
	}
	named.Trace("now visible")
	if !strings.Contains(buf.String(), "now visible") {
		t.Error("trace not logged after SetLevel(Trace)")
	}
}
