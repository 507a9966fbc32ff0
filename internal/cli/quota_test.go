package cli

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/runnel-io/runnel/internal/clustertest"
)

// Against a real node: quota alter with each entity form, describe (text and JSON,
// every entity or exactly one), delete, validate-only, and the errors a user sees.
func TestQuotaCommands(t *testing.T) {
	b := clustertest.StartOne(t)
	mustRun(t, "", "quota", "alter", "-b", b, "--client-id", "ingest", "--set", "producer_byte_rate=1048576")
	mustRun(t, "", "quota", "alter", "-b", b, "--user-defaults", "--set", "consumer_byte_rate=2000", "--set", "request_percentage=12.5")
	r := mustRun(t, "", "quota", "alter", "-b", b, "--user", "alice", "--client-defaults", "--set", "producer_byte_rate=10")
	if want := "Altered client quotas of user=alice, client-id=<default>.\n"; r.stdout != want {
		t.Errorf("alter output %q, want %q", r.stdout, want)
	}

	r = mustRun(t, "", "quota", "describe", "-b", b)
	want := "ENTITY                           QUOTAS\n" +
		"client-id=ingest                 producer_byte_rate=1048576\n" +
		"user=<default>                   consumer_byte_rate=2000,request_percentage=12.5\n" +
		"user=alice, client-id=<default>  producer_byte_rate=10\n"
	if r.stdout != want {
		t.Errorf("describe:\n%s\nwant:\n%s", r.stdout, want)
	}
	var rows []quotaRow
	r = mustRun(t, "", "quota", "describe", "-b", b, "--user-defaults", "--output", "json")
	if err := json.Unmarshal([]byte(r.stdout), &rows); err != nil {
		t.Fatalf("describe --output json: %v in %q", err, r.stdout)
	}
	if len(rows) != 1 || len(rows[0].Entity) != 1 || rows[0].Entity[0].Type != "user" || rows[0].Entity[0].Name != nil ||
		rows[0].Values["request_percentage"] != 12.5 {
		t.Errorf("describe --user-defaults --output json = %s", r.stdout)
	}
	// Exactly the entity named: alice alone has none of her own.
	r = mustRun(t, "", "quota", "describe", "-b", b, "--user", "alice")
	if strings.Count(r.stdout, "\n") != 1 {
		t.Errorf("describe --user alice (strict): %q", r.stdout)
	}

	mustRun(t, "", "quota", "alter", "-b", b, "--client-id", "ingest", "--delete", "producer_byte_rate")
	r = mustRun(t, "", "quota", "alter", "-b", b, "--client-id", "x", "--set", "producer_byte_rate=5", "--validate-only")
	if !strings.HasPrefix(r.stdout, "Validated") {
		t.Errorf("--validate-only: %q", r.stdout)
	}
	r = mustRun(t, "", "quota", "describe", "-b", b, "--output", "json")
	if err := json.Unmarshal([]byte(r.stdout), &rows); err != nil || len(rows) != 2 {
		t.Errorf("after the delete and a validate-only change: %s (%v)", r.stdout, err)
	}

	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"--client-id", "x", "--set", "producer_byte_rat=5"}, 1, `unknown quota key "producer_byte_rat"`},
		{[]string{"--client-id", "x", "--set", "producer_byte_rate=1.5"}, 1, "producer_byte_rate=1.5: must be a whole number"},
		{[]string{"--client-id", "x", "--set", "consumer_byte_rate=abc"}, 2, "consumer_byte_rate is not a number"},
		{[]string{"--set", "producer_byte_rate=5"}, 2, "name an entity"},
		{[]string{"--client-id", "x"}, 2, "nothing to change"},
		{[]string{"--user", "a", "--user-defaults", "--set", "producer_byte_rate=5"}, 2, "user"},
	} {
		r := run(t, "", append([]string{"quota", "alter", "-b", b}, tc.args...)...)
		if r.code != tc.code || !strings.Contains(r.stderr, tc.want) {
			t.Errorf("quota alter %v: exit %d, stderr %q; want exit %d naming %q", tc.args, r.code, r.stderr, tc.code, tc.want)
		}
	}
}
