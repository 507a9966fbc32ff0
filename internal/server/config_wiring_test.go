package server_test

import (
	"strings"
	"testing"

	"github.com/runnel-io/runnel/internal/testutil"
)

// A property that is accepted but ignored, once set, is named in one start-up warning.
func TestIgnoredPropertyWarnsAtStartup(t *testing.T) {
	tn, logs := startOwn(t, ownConfig(t, 1, "num.io.threads=16"))
	testutil.NoError(t, tn.own.Close(), "close")
	var warns []string
	for line := range strings.Lines(logs.String()) {
		if strings.Contains(line, "level=WARN") {
			warns = append(warns, line)
		}
	}
	want := "property num.io.threads is accepted for compatibility but ignored: "
	if len(warns) != 1 || !strings.Contains(warns[0], want) {
		t.Errorf("warnings = %q, want one with %q", warns, want)
	}
}
