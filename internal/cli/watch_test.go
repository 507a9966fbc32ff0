package cli

import (
	"encoding/json"
	"io"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kfake"
)

// --watch on a non-terminal prints each refresh after a "--- TIME ---" line (JSON: a
// stream of documents); on a terminal it clears the screen before each one, under a
// header.
func TestGroupDescribeWatch(t *testing.T) {
	_, b := newCluster(t, kfake.SeedTopics(1, "t"))
	mustRun(t, "a\nb\n", "produce", "t", "-b", b)
	mustRun(t, "", "consume", "t", "-b", b, "--group", "g", "--from-beginning", "-n", "1")

	r := mustRun(t, "", "group", "describe", "g", "-b", b, "--watch", "--interval", "20ms", "--watch-count", "3")
	if strings.Count(r.stdout, "\n--- ") != 2 || !strings.HasPrefix(r.stdout, "--- ") ||
		strings.Count(r.stdout, "Group: g ") != 3 || strings.Contains(r.stdout, clearScreen) {
		t.Errorf("--watch on a pipe printed:\n%s", r.stdout)
	}
	r = mustRun(t, "", "group", "describe", "g", "-b", b, "-w", "--interval", "20ms", "--watch-count", "2", "-o", "json")
	dec := json.NewDecoder(strings.NewReader(r.stdout))
	for i := range 3 {
		var d groupDescription
		err := dec.Decode(&d)
		if i < 2 && (err != nil || d.Group != "g" || d.TotalLag != 1) {
			t.Errorf("JSON refresh %d: %+v, %v", i, d, err)
		}
		if i == 2 && err != io.EOF {
			t.Errorf("a third JSON document after --watch-count 2: %v", err)
		}
	}

	// A failed refresh is reported and the watch goes on (a node may be failing over).
	r = mustRun(t, "", "group", "describe", "nope", "-b", b, "--watch", "--interval", "20ms", "--watch-count", "2")
	if strings.Count(r.stderr, `runnel: group "nope" does not exist`) != 2 || strings.Count(r.stdout, "--- ") != 2 {
		t.Errorf("--watch of a missing group: stdout %q, stderr %q", r.stdout, r.stderr)
	}

	defer func(f func(io.Writer) bool) { isTerminal = f }(isTerminal)
	isTerminal = func(io.Writer) bool { return true }
	r = mustRun(t, "", "group", "describe", "g", "-b", b, "--watch", "--interval", "20ms", "--watch-count", "2")
	if strings.Count(r.stdout, clearScreen+"Every 20ms: runnel group describe  ") != 2 || strings.Count(r.stdout, "Group: g ") != 2 {
		t.Errorf("--watch on a terminal printed %q", r.stdout)
	}
	for _, args := range [][]string{{"--interval", "0s", "--watch"}, {"--watch-count", "2"}, {"--watch", "--watch-count", "-1"}} {
		expectFailure(t, 2, "", append([]string{"group", "describe", "g", "-b", b}, args...)...)
	}
}

// cluster status takes --watch and --output json too.
func TestClusterStatusWatch(t *testing.T) {
	_, b := newCluster(t, kfake.NumBrokers(2), kfake.SeedTopics(2, "t"))
	r := mustRun(t, "", "cluster", "status", "-b", b, "--watch", "--interval", "20ms", "--watch-count", "2")
	if strings.Count(r.stdout, "--- ") != 2 || strings.Count(r.stdout, "Cluster ID:") != 2 || !strings.Contains(r.stdout, "2 of 2 nodes up") {
		t.Errorf("cluster status --watch printed:\n%s", r.stdout)
	}
	r = mustRun(t, "", "cluster", "status", "-b", b, "-w", "--interval", "20ms", "--watch-count", "2", "--output", "json")
	dec := json.NewDecoder(strings.NewReader(r.stdout))
	for i := range 2 {
		var st clusterStatus
		if err := dec.Decode(&st); err != nil || len(st.Nodes) != 2 || st.Partitions != 2 {
			t.Errorf("JSON refresh %d: %+v, %v", i, st, err)
		}
	}
	expectFailure(t, 2, `bad --output "xml"`, "cluster", "status", "-b", b, "-o", "xml")
}
