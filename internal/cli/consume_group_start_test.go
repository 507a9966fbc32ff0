package cli

import (
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/runnel-io/runnel/internal/clustertest"
)

// A group consumer says on stderr where it starts: a new group at the end of the log
// (with the hint that --from-beginning reads what is there) or, with
// --from-beginning, at the earliest offset; a group with commits resumes from them.
// Before, `consume --group NEW -n N` waited at the end without a word. --client-id
// names the client in the group's members (and to client-id quotas).
func TestConsumeGroupStart(t *testing.T) {
	b := clustertest.StartOne(t, "group.initial.rebalance.delay.ms=0")
	mustRun(t, "", "topic", "create", "t", "-b", b, "-p", "1")
	mustRun(t, "a\nb\nc\n", "produce", "t", "-b", b)

	r := mustRun(t, "", "consume", "t", "-b", b, "--group", "new", "--from-beginning", "-n", "3")
	if r.stderr != "runnel: group \"new\" has no committed offset: it starts at the earliest offset\n" || strings.Count(r.stdout, "\n") != 3 {
		t.Errorf("new group with --from-beginning: stdout %q, stderr %q", r.stdout, r.stderr)
	}
	r = mustRun(t, "", "consume", "t", "-b", b, "--group", "new", "--idle-timeout", "500ms")
	if r.stderr != "runnel: group \"new\" resumes from its committed offsets\n" || r.stdout != "" {
		t.Errorf("group with commits: stdout %q, stderr %q", r.stdout, r.stderr)
	}
	r = mustRun(t, "", "consume", "t", "-b", b, "--group", "other", "--idle-timeout", "500ms")
	if want := "runnel: group \"other\" has no committed offset: it starts at the end of the log (records produced from now on; " +
		"--from-beginning starts a new group at the earliest offset)\n"; r.stderr != want || r.stdout != "" {
		t.Errorf("new group: stdout %q, stderr %q, want stderr %q", r.stdout, r.stderr, want)
	}

	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		run(t, "", "consume", "t", "-b", b, "--group", "named", "--client-id", "billing-app", "--idle-timeout", "2s")
	}()
	eventually(t, 10*time.Second, func() error {
		out := run(t, "", "group", "describe", "named", "-b", b).stdout
		return errIf(!strings.Contains(out, "billing-app"), "group describe shows no member with client id billing-app:\n%s", out)
	})
	wg.Wait()
}
