package cli

import (
	"errors"
	"runtime"
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

func TestExtraCommand(t *testing.T) {
	var ran bool
	extra := &cobra.Command{Use: "server", RunE: func(*cobra.Command, []string) error { ran = true; return nil }}
	if code := MainIO([]string{"server"}, strings.NewReader(""), &strings.Builder{}, &strings.Builder{}, extra); code != 0 || !ran {
		t.Errorf("extra command: exit %d, ran %v", code, ran)
	}
	failing := &cobra.Command{Use: "server", RunE: func(*cobra.Command, []string) error {
		return errors.New("bind: address in use\nmore detail")
	}}
	var stderr strings.Builder
	if code := MainIO([]string{"server"}, strings.NewReader(""), &strings.Builder{}, &stderr, failing); code != 1 ||
		stderr.String() != "runnel: bind: address in use; more detail\n" {
		t.Errorf("failing extra command: exit %d, stderr %q", code, stderr.String())
	}
	stderr.Reset()
	withFlag := &cobra.Command{Use: "server", RunE: func(*cobra.Command, []string) error { return nil }}
	withFlag.Flags().Int("node-id", 1, "")
	if code := MainIO([]string{"server", "--node-id", "x"}, strings.NewReader(""), &strings.Builder{}, &stderr, withFlag); code != 2 ||
		!strings.Contains(stderr.String(), "runnel server --help") {
		t.Errorf("bad flag value of an extra command: exit %d, stderr %q", code, stderr.String())
	}
}

func TestReportOneLine(t *testing.T) {
	var b strings.Builder
	if code := report(&b, nil, errors.New("  a\n\n b  ")); code != 1 || b.String() != "runnel: a; b\n" {
		t.Errorf("report = %d, %q", code, b.String())
	}
}

func TestRootHelpListsCommands(t *testing.T) {
	r := mustRun(t, "", "--help")
	for _, c := range []string{"topic", "produce", "consume", "group", "cluster"} {
		if !strings.Contains(r.stdout, c) {
			t.Errorf("root help lacks %q", c)
		}
	}
}

func TestVersionCommand(t *testing.T) {
	r := mustRun(t, "", "version")
	if !strings.HasPrefix(r.stdout, "runnel ") || !strings.Contains(r.stdout, "\n  go:      "+runtime.Version()+" ") ||
		!strings.Contains(r.stdout, "\n  commit:  ") || !strings.Contains(r.stdout, "\n  built:   ") {
		t.Fatalf("runnel version printed %q", r.stdout)
	}
	if f := mustRun(t, "", "--version"); f.stdout != r.stdout {
		t.Fatalf("runnel --version printed %q, runnel version %q", f.stdout, r.stdout)
	}
}
