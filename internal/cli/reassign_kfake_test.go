package cli

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
)

// The same commands against another Kafka implementation (kfake, three brokers):
// they speak only the standard APIs: a plan made there is accepted there with its
// throttles, status removes them, cancel and elect-leaders answer as against Runnel.
func TestReassignAgainstKfake(t *testing.T) {
	_, b := newCluster(t, kfake.NumBrokers(3))
	mustRun(t, "", "topic", "create", "-b", b, "events", "-p", "6", "-r", "2")
	r := mustRun(t, "", "reassign", "plan", "-b", b, "--drain", "2")
	var plan reassignmentJSON
	if err := json.Unmarshal([]byte(r.stdout), &plan); err != nil {
		t.Fatalf("plan: %v in %q", err, r.stdout)
	}
	for _, p := range plan.Partitions {
		if strings.Contains(joinInt32s(p.Replicas), "2") {
			t.Errorf("plan draining node 2 places %s/%d on it: %v", p.Topic, p.Partition, p.Replicas)
		}
	}
	if len(plan.Partitions) == 0 && strings.Contains(r.stderr, "already balanced") {
		t.Skip("kfake's random placement left nothing on node 2 and leaders balanced: nothing to move")
	}
	if len(plan.Partitions) == 0 || regexp.MustCompile(`(?m)^2\s+krack\s+\d+ -> [1-9]`).MatchString(r.stderr) {
		t.Fatalf("plan draining node 2:\n%s%s", r.stdout, r.stderr)
	}
	file := filepath.Join(t.TempDir(), "plan.json")
	if err := os.WriteFile(file, []byte(r.stdout), 0o600); err != nil {
		t.Fatal(err)
	}
	r = mustRun(t, "", "reassign", "execute", "-b", b, "--plan", file, "--throttle", "1000000")
	if !strings.Contains(r.stdout, fmt.Sprintf("Started %d reassignments", len(plan.Partitions))) {
		t.Errorf("execute:\n%s", r.stdout)
	}
	adm, err := (&connFlags{bootstrap: b}).admin()
	if err != nil {
		t.Fatal(err)
	}
	defer adm.Close()
	rcs, err := adm.DescribeTopicConfigs(ctxTimeout(t, 10*time.Second), "events")
	if err != nil || len(rcs) != 1 {
		t.Fatalf("describe configs: %v", err)
	}
	for _, c := range rcs[0].Configs {
		if c.Key == followerReplicaKey && !strings.Contains(c.MaybeValue(), ":0") && !strings.Contains(c.MaybeValue(), ":1") {
			t.Errorf("%s after execute: %q", followerReplicaKey, c.MaybeValue())
		}
	}
	// kfake validates reassignments without moving anything (it never has one in
	// progress): the next status finds nothing and removes the throttles.
	r = mustRun(t, "", "reassign", "status", "-b", b, "--interval", "0")
	if !strings.HasPrefix(r.stdout, "No reassignment in progress.\nRemoved the reassignment throttles: throttled replicas on topics events") {
		t.Errorf("status:\n%s", r.stdout)
	}
	if r := mustRun(t, "", "reassign", "cancel", "-b", b); r.stdout != "No reassignment in progress.\n" {
		t.Errorf("cancel:\n%s", r.stdout)
	}
	var rows []electRow
	r = mustRun(t, "", "cluster", "elect-leaders", "-b", b, "--topic", "events", "--json")
	if err := json.Unmarshal([]byte(r.stdout), &rows); err != nil || len(rows) != 6 {
		t.Fatalf("elect-leaders --json: %v in %q", err, r.stdout)
	}
	for _, row := range rows {
		if row.Result == "error" {
			t.Errorf("elect-leaders: %+v", row)
		}
	}
}
