package cli

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/runnel-io/runnel/internal/clustertest"
)

// Against a real node: user create (both mechanisms, one, password on stdin), list
// (text, JSON, named users), delete (one mechanism, all), and the errors a user sees.
func TestUserCommands(t *testing.T) {
	b := clustertest.StartOne(t)
	r := mustRun(t, "", "user", "create", "-b", b, "alice", "--password", "alice-secret")
	if want := "Created user \"alice\" (SCRAM-SHA-512, SCRAM-SHA-256).\n"; r.stdout != want {
		t.Errorf("create output %q, want %q", r.stdout, want)
	}
	mustRun(t, "bob-secret\n", "user", "create", "-b", b, "bob", "--mechanism", "SCRAM-SHA-512", "--iterations", "8192")

	r = mustRun(t, "", "user", "list", "-b", b)
	want := "USER   MECHANISMS\n" +
		"alice  SCRAM-SHA-256 (iterations=4096), SCRAM-SHA-512 (iterations=4096)\n" +
		"bob    SCRAM-SHA-512 (iterations=8192)\n"
	if r.stdout != want {
		t.Errorf("list:\n%s\nwant:\n%s", r.stdout, want)
	}
	var rows []userRow
	r = mustRun(t, "", "user", "list", "-b", b, "bob", "--json")
	if err := json.Unmarshal([]byte(r.stdout), &rows); err != nil || len(rows) != 1 || rows[0].User != "bob" ||
		len(rows[0].Mechanisms) != 1 || rows[0].Mechanisms[0] != (userMechanism{"SCRAM-SHA-512", 8192}) {
		t.Errorf("list bob --json = %s (%v)", r.stdout, err)
	}
	if strings.Contains(r.stdout, "salt") || strings.Contains(r.stdout, "key") {
		t.Errorf("list shows credential material: %s", r.stdout)
	}

	mustRun(t, "", "user", "delete", "-b", b, "alice", "--mechanism", "SCRAM-SHA-256")
	r = mustRun(t, "", "user", "list", "-b", b, "alice")
	if !strings.Contains(r.stdout, "alice  SCRAM-SHA-512 (iterations=4096)\n") || strings.Contains(r.stdout, "SHA-256") {
		t.Errorf("after deleting alice's SCRAM-SHA-256: %q", r.stdout)
	}
	r = mustRun(t, "", "user", "delete", "-b", b, "alice")
	if want := "Deleted user \"alice\" (SCRAM-SHA-512).\n"; r.stdout != want {
		t.Errorf("delete output %q, want %q", r.stdout, want)
	}

	for _, tc := range []struct {
		args  []string
		stdin string
		code  int
		want  string
	}{
		{[]string{"list", "alice"}, "", 1, "Attempt to describe a user credential that does not exist: alice"},
		{[]string{"delete", "alice"}, "", 1, "does not exist"},
		{[]string{"delete", "bob", "--mechanism", "SCRAM-SHA-256"}, "", 1, "has no SCRAM-SHA-256 credential"},
		{[]string{"create", "carol", "--password", "x", "--iterations", "20000"}, "", 1, "iterations"},
		{[]string{"create", "carol", "--password", "x", "--mechanism", "SCRAM-SHA-1"}, "", 2, `unknown --mechanism "SCRAM-SHA-1"`},
		{[]string{"create", "carol"}, "", 2, "no password"},
		{[]string{"create", "carol", "--password", ""}, "", 2, "--password must not be empty"},
		{[]string{"create"}, "", 2, "missing"},
	} {
		r := run(t, tc.stdin, append([]string{"user", "-b", b}, tc.args...)...)
		if r.code != tc.code || !strings.Contains(r.stderr, tc.want) {
			t.Errorf("user %v: exit %d, stderr %q; want exit %d naming %q", tc.args, r.code, r.stderr, tc.code, tc.want)
		}
	}
	r = mustRun(t, "", "user", "list", "-b", b)
	if want := "USER  MECHANISMS\nbob   SCRAM-SHA-512 (iterations=8192)\n"; r.stdout != want {
		t.Errorf("final list %q, want %q", r.stdout, want)
	}
}
