package doctest

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/runnel-io/runnel/internal/config"
)

// The README's paragraph on properties "accepted ... but Runnel does not act on them"
// names only properties the node reports as ignored (the warning it logs at start-up,
// config.Broker.IgnoredWarnings), and the ones it says act (the replication
// throttles) are not reported so. Before, it listed the throttle rates, which act,
// among the ignored.
func TestReadmeIgnoredProperties(t *testing.T) {
	readme, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	text := strings.Join(strings.Fields(string(readme)), " ")
	start := strings.Index(text, "Some Kafka properties are accepted")
	if start < 0 {
		t.Fatal("README.md has no paragraph on accepted but ignored properties")
	}
	para := text[start:]
	para = para[:strings.Index(para, "Topic configs")]
	ignored, acting, _ := strings.Cut(para, "Setting one logs")
	names := func(s string) []string {
		var out []string
		for _, m := range regexp.MustCompile("`([a-z][a-z0-9.]+)`").FindAllStringSubmatch(s, -1) {
			out = append(out, m[1])
		}
		return out
	}
	defaults := config.Default().Raw
	check := func(name string, wantIgnored bool) {
		cfg, err := config.Load("", []string{name + "=" + defaults[name]})
		if err != nil {
			t.Errorf("README names %s: %v", name, err)
			return
		}
		warned := slices.ContainsFunc(cfg.IgnoredWarnings(), func(w string) bool { return strings.Contains(w, "property "+name+" ") })
		if got := slices.Contains(cfg.IgnoredSet(), name); got != wantIgnored || warned != wantIgnored {
			t.Errorf("README says %s is ignored: %v; the node reports it ignored: %v, warns: %v", name, wantIgnored, got, warned)
		}
	}
	var listed []string
	for _, n := range names(ignored) {
		if _, known := defaults[n]; known || strings.Count(n, ".") > 1 {
			listed = append(listed, n) // a property (server.properties is the file)
		}
	}
	if len(listed) < 3 {
		t.Fatalf("the README's list of ignored properties has %d names: %q", len(listed), ignored)
	}
	for _, n := range listed {
		check(n, true)
	}
	for _, n := range names(acting) {
		if _, known := defaults[n]; known {
			check(n, false)
		}
	}
}

// Every page a page names (docs/NAME.md) exists: the README linked docs/console.md
// before there was one.
func TestDocLinks(t *testing.T) {
	root := filepath.Join("..", "..")
	pages, _ := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	pages = append(pages, filepath.Join(root, "README.md"))
	for _, p := range pages {
		text, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range regexp.MustCompile(`docs/[a-z0-9-]+\.md`).FindAllString(string(text), -1) {
			if _, err := os.Stat(filepath.Join(root, m)); err != nil {
				t.Errorf("%s names %s, which does not exist", filepath.Base(p), m)
			}
		}
	}
}
