package interop_test

import (
	"bufio"
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/runnel-io/runnel/internal/testutil"
)

// kgoIntegrationTests are the tests of franz-go's own pkg/kgo suite that
// TestKgoIntegration runs against a node: the classic and KIP-848 consumer groups
// (TestGroupETL runs each balancer classic, with 848 and static members), the broker's
// regex subscriptions, and the share groups (KIP-932). franz-go skips the 848 and
// share tests when the broker's ApiVersions lacks ConsumerGroupHeartbeat v1 or
// ShareFetch and ShareAcknowledge v2; here a skip is a failure.
var kgoIntegrationTests = []string{
	"TestGroupSimple",
	"TestGroupETL",
	"Test848RegexBrokerResolves",
	"TestShareGroup",
	"TestShareGroupETL",
	"TestShareGroupAckOnClose",
	"TestShareGroupOffsetsAdmin",
	"TestConsumeRegexShareSkipsInternal",
}

// kgoResult is a test's outcome line of `go test -v`: "--- PASS: TestX (1.2s)".
var kgoResult = regexp.MustCompile(`^\s*--- (PASS|FAIL|SKIP): (\S+)`)

// TestKgoIntegration runs franz-go's own integration tests (the version go.mod names,
// from the module cache, unchanged) against one in-process node, with the env knobs of
// their helpers_test.go: KGO_SEEDS, KGO_TEST_RF=1, and KGO_TEST_RECORDS low enough
// for the whole run to stay under about a minute and a half. It is skipped only when
// the module's source is not downloaded (a failure under scripts/test.sh, which
// downloads it: testutil.Missing). scripts/kgo-integration.sh runs the whole
// suite, on one node or three.
func TestKgoIntegration(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: franz-go's integration tests take about a minute")
	}
	dir := kgoSourceDir(t)
	n := startNode(t)

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	run := "^(" + strings.Join(kgoIntegrationTests, "|") + ")$"
	cmd := exec.CommandContext(ctx, "go", "test", "-count=1", "-v", "-timeout=150s", "-run", run,
		"github.com/twmb/franz-go/pkg/kgo")
	cmd.Dir = moduleRoot(t) // the main module pins franz-go's version
	cmd.Env = append(os.Environ(),
		"KGO_SEEDS="+bootstrap(n),
		"KGO_TEST_RF=1",
		"KGO_TEST_RECORDS=2000",
		"KGO_LOG_LEVEL=none",
		"GOFLAGS=", // not the caller's -tags or -race: kgo's tests build as they ship
	)
	start := time.Now()
	out, err := cmd.CombinedOutput()
	t.Logf("franz-go's kgo tests from %s ran in %v", dir, time.Since(start).Round(time.Second))

	results := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		if m := kgoResult.FindStringSubmatch(sc.Text()); m != nil {
			results[m[2]] = m[1]
		}
	}
	names := make([]string, 0, len(results))
	for name := range results {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		t.Logf("%s %s", results[name], name)
	}
	failed := false
	for _, name := range kgoIntegrationTests {
		if got := results[name]; got != "PASS" {
			t.Errorf("%s: %q, want PASS (SKIP: the node did not advertise the APIs it needs)", name, got)
			failed = true
		}
	}
	for _, name := range names {
		if results[name] == "FAIL" && !failed {
			t.Errorf("%s failed", name)
			failed = true
		}
	}
	if err != nil || failed {
		t.Errorf("go test github.com/twmb/franz-go/pkg/kgo: %v; output:\n%s", err, tail(out, 200))
	}
}

// kgoSourceDir is franz-go's module directory in the module cache, or skips the test
// when its pkg/kgo tests are not there (modules not downloaded).
func kgoSourceDir(t *testing.T) string {
	t.Helper()
	cmd := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "github.com/twmb/franz-go")
	cmd.Dir = moduleRoot(t)
	out, err := cmd.Output()
	dir := strings.TrimSpace(string(out))
	if err != nil || dir == "" {
		testutil.Missing(t, "franz-go's module source is not downloaded (go list -m: %v)", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "pkg", "kgo", "helpers_test.go")); err != nil {
		testutil.Missing(t, "franz-go's kgo tests are not in %s: %v", dir, err)
	}
	return dir
}

// moduleRoot is the directory of Runnel's go.mod (the tests run in internal/interop).
func moduleRoot(t *testing.T) string {
	t.Helper()
	dir, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatalf("module root: %v", err)
	}
	return dir
}

// tail is the last n lines of out.
func tail(out []byte, n int) string {
	lines := strings.Split(strings.TrimRight(string(out), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
