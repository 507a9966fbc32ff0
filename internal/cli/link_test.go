package cli

import (
	"strings"
	"testing"

	"github.com/runnel-io/runnel/internal/clustertest"
)

// TestLinkSwitchoverWholeLinkByDefault: INTERFACE.md's form is `runnel link
// switchover NAME`: without --topic or --all it switches the whole link (here it gets
// as far as looking the link up), and --topic with --all is still a usage error.
func TestLinkSwitchoverWholeLinkByDefault(t *testing.T) {
	b := clustertest.StartOne(t)
	r := run(t, "", "link", "switchover", "nosuch", "-b", b)
	if r.code == 0 || !strings.Contains(r.stderr, `no link "nosuch" on this cluster`) {
		t.Errorf("link switchover NAME: exit %d, stderr %q; want the link looked up (no link \"nosuch\")", r.code, r.stderr)
	}
	r = run(t, "", "link", "switchover", "nosuch", "--all", "--topic", "orders", "-b", b)
	if r.code == 0 || !strings.Contains(r.stderr, "give --topic T (repeatable) or --all") {
		t.Errorf("link switchover with --topic and --all: exit %d, stderr %q; want the usage error", r.code, r.stderr)
	}
}
