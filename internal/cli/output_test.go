package cli

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kfake"
)

// Every describing command takes --output json (and -o json, and --json): the same
// JSON, with the documented field names; --output text is the table; anything else
// is bad usage.
func TestOutputJSON(t *testing.T) {
	_, b := newCluster(t, kfake.NumBrokers(1), kfake.SeedTopics(2, "t"))
	mustRun(t, "a\nb\n", "produce", "t", "-b", b, "--partition", "0")
	mustRun(t, "", "consume", "t", "-b", b, "--group", "g", "--from-beginning", "-n", "2")
	for _, tc := range []struct {
		args   []string
		fields []string // JSON keys the output must carry
	}{
		{[]string{"topic", "list"}, []string{`"topic": "t"`, `"partitions": 2`, `"replication_factor": 1`, `"id"`, `"internal"`}},
		{[]string{"topic", "describe", "t"}, []string{`"topic": "t"`, `"partitions": [`, `"leader"`, `"leader_epoch"`,
			`"replicas"`, `"isr"`, `"log_start_offset"`, `"log_end_offset": 2`, `"configs"`}},
		{[]string{"group", "list"}, []string{`"group": "g"`, `"state"`, `"protocol_type"`, `"coordinator"`}},
		{[]string{"group", "describe", "g"}, []string{`"group": "g"`, `"state"`, `"members"`, `"partitions"`,
			`"committed_offset": 2`, `"log_end_offset": 2`, `"lag": 0`, `"total_lag": 0`}},
		{[]string{"group", "reset-offsets", "g", "--topic", "t", "--to", "earliest"}, []string{`"current_offset": 2`,
			`"new_offset": 0`, `"log_start_offset"`, `"log_end_offset"`}},
		{[]string{"cluster", "config"}, []string{`"node"`, `"configs"`, `"name"`, `"value"`, `"source"`, `"origin"`}},
	} {
		var outs []string
		for _, flag := range [][]string{{"--output", "json"}, {"-o", "json"}, {"--json"}} {
			args := append(append([]string{}, tc.args...), append([]string{"-b", b}, flag...)...)
			r := mustRun(t, "", args...)
			if !json.Valid([]byte(r.stdout)) {
				t.Errorf("runnel %s: not JSON: %q", strings.Join(args, " "), r.stdout)
			}
			for _, f := range tc.fields {
				if !strings.Contains(r.stdout, f) {
					t.Errorf("runnel %s: no %s in\n%s", strings.Join(args, " "), f, r.stdout)
				}
			}
			outs = append(outs, r.stdout)
		}
		if outs[0] != outs[1] || outs[0] != outs[2] {
			t.Errorf("runnel %s: --output json, -o json and --json differ", strings.Join(tc.args, " "))
		}
		text := mustRun(t, "", append(append([]string{}, tc.args...), "-b", b, "--output", "text")...)
		if json.Valid([]byte(text.stdout)) {
			t.Errorf("runnel %s --output text printed JSON", strings.Join(tc.args, " "))
		}
		expectFailure(t, 2, `bad --output "yaml": want text or json`, append(append([]string{}, tc.args...), "-b", b, "-o", "yaml")...)
	}
}
