package interop_test

import (
	"fmt"
	"os/exec"
	"sort"
	"strings"
	"testing"

	"github.com/runnel-io/runnel/internal/testutil"
)

// TestKcatGroup: librdkafka's balanced consumer (kcat -G) joins a group, reads every
// record, commits on close, and a second run of the same group resumes exactly after
// what the first one consumed.
func TestKcatGroup(t *testing.T) {
	if _, err := exec.LookPath("kcat"); err != nil {
		testutil.Missing(t, "kcat is not on PATH (scripts/install-deps.sh installs it)")
	}
	n := startNode(t)
	addr := bootstrap(n)
	topic := topicName(t)
	createTopic(t, newAdmin(t, addr), topic, 3)
	produce := func(from, to int) {
		var b strings.Builder
		for i := from; i < to; i++ {
			fmt.Fprintf(&b, "k%d:v%d\n", i, i)
		}
		kcat(t, addr, b.String(), "-P", "-t", topic, "-K:")
	}
	consume := func(count int) []string {
		out := kcat(t, addr, "", "-G", "kcat-group", "-X", "auto.offset.reset=earliest",
			"-c", fmt.Sprint(count), "-f", `%s\n`, topic)
		vals := strings.Fields(out)
		sort.Strings(vals)
		return vals
	}
	want := func(from, to int) []string {
		var vs []string
		for i := from; i < to; i++ {
			vs = append(vs, fmt.Sprintf("v%d", i))
		}
		sort.Strings(vs)
		return vs
	}
	produce(0, 30)
	if got := consume(30); strings.Join(got, ",") != strings.Join(want(0, 30), ",") {
		t.Fatalf("first group run read %v, want %v", got, want(0, 30))
	}
	produce(30, 40)
	if got := consume(10); strings.Join(got, ",") != strings.Join(want(30, 40), ",") {
		t.Fatalf("second group run read %v, want only the 10 new records %v (committed offsets not resumed)", got, want(30, 40))
	}
}
