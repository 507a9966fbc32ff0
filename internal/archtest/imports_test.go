// Package archtest checks that the import graph docs/architecture.md draws is the
// code's, and that the code keeps DESIGN.md's rules of which package may import which.
package archtest

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
)

const module = "github.com/runnel-io/runnel/"

// graph maps a package (short name: the module and internal/ dropped) to the
// packages of the module it imports.
type graph map[string][]string

// goList returns the module's import graph from `go list` (non-test imports).
func goList(t *testing.T) graph {
	t.Helper()
	cmd := exec.Command("go", "list", "-f", `{{.ImportPath}}: {{join .Imports " "}}`, "./...")
	cmd.Dir = root(t)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	g := graph{}
	for line := range strings.Lines(string(out)) {
		name, imports, _ := strings.Cut(strings.TrimSpace(line), ":")
		if !strings.HasPrefix(name, module) {
			continue
		}
		deps := []string{}
		for _, imp := range strings.Fields(imports) {
			if strings.HasPrefix(imp, module) {
				deps = append(deps, short(imp))
			}
		}
		sort.Strings(deps)
		g[short(name)] = deps
	}
	// Packages with only tests (their graph is the tests' own).
	delete(g, "archtest")
	return g
}

func short(path string) string {
	return strings.TrimPrefix(strings.TrimPrefix(path, module), "internal/")
}

// root is the module's root directory.
func root(t *testing.T) string {
	t.Helper()
	dir, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

// docGraph parses the graph drawn in docs/architecture.md's "Import graph" block:
// `NAME[, NAME] → DEP, DEP` lines (continued on indented lines), `leaves: ...`
// lines listing packages that import nothing in the module, and headings ending in
// a colon. "(nothing in the module)" and "(nothing outside its tests)" are no edges.
func docGraph(t *testing.T) graph {
	t.Helper()
	f, err := os.Open(filepath.Join(root(t), "docs", "architecture.md"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var lines []string
	in, block := false, false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		l := sc.Text()
		switch {
		case strings.HasPrefix(l, "## "):
			in = l == "## Import graph"
		case in && strings.HasPrefix(l, "```"):
			if block {
				in = false
			}
			block = !block
		case in && block:
			if strings.HasPrefix(l, " ") && len(lines) > 0 {
				lines[len(lines)-1] += " " + strings.TrimSpace(l)
			} else if strings.TrimSpace(l) != "" {
				lines = append(lines, strings.TrimSpace(l))
			}
		}
	}
	if len(lines) == 0 {
		t.Fatal(`docs/architecture.md has no graph block under "## Import graph"`)
	}
	g := graph{}
	list := func(s string) []string {
		var out []string
		for _, x := range strings.Split(s, ",") {
			if x = strings.TrimSpace(x); x != "" && !strings.HasPrefix(x, "(") {
				out = append(out, x)
			}
		}
		return out
	}
	for _, l := range lines {
		if rest, ok := strings.CutPrefix(l, "leaves:"); ok {
			for _, p := range list(rest) {
				g[p] = []string{}
			}
			continue
		}
		names, deps, ok := strings.Cut(l, "→")
		if !ok {
			continue // a heading ("test support:")
		}
		for _, n := range list(names) {
			d := list(deps)
			sort.Strings(d)
			g[n] = d
		}
	}
	return g
}

// TestImportGraphMatchesDocs: every package of the module and every import edge
// between them is in docs/architecture.md's graph, and the graph has nothing else.
// Regenerate the block by hand from the command it names when this fails.
func TestImportGraphMatchesDocs(t *testing.T) {
	code, doc := goList(t), docGraph(t)
	var problems []string
	for p, deps := range code {
		d, ok := doc[p]
		if !ok {
			problems = append(problems, fmt.Sprintf("package %s (imports %v) is not in the graph", p, deps))
			continue
		}
		for _, dep := range deps {
			if !slices.Contains(d, dep) {
				problems = append(problems, fmt.Sprintf("%s imports %s: the graph lacks the edge", p, dep))
			}
		}
		for _, dep := range d {
			if !slices.Contains(deps, dep) {
				problems = append(problems, fmt.Sprintf("the graph says %s imports %s: it does not", p, dep))
			}
		}
	}
	for p := range doc {
		if _, ok := code[p]; !ok {
			problems = append(problems, fmt.Sprintf("the graph names %s, which is no package of the module", p))
		}
	}
	sort.Strings(problems)
	for _, p := range problems {
		t.Error(p)
	}
}

// TestDesignRules: DESIGN.md's rules of the graph. kafka never imports log;
// controller and replica never import each other; client and mirror import nothing
// under internal/; nothing the binary links imports the test harness.
func TestDesignRules(t *testing.T) {
	for _, v := range checkRules(goList(t)) {
		t.Error(v)
	}
}

// checkRules lists the rules g breaks.
func checkRules(g graph) []string {
	var out []string
	forbid := func(from, to, why string) {
		if slices.Contains(g[from], to) {
			out = append(out, fmt.Sprintf("%s imports %s: %s", from, to, why))
		}
	}
	forbid("kafka", "log", "the protocol layer reaches the log through replica (its types re-exported there)")
	forbid("controller", "replica", "the controller publishes images; replica applies them")
	forbid("replica", "controller", "ISR changes go through replica.IsrChanger")
	internal := regexp.MustCompile(`^[a-z]`)
	for _, p := range []string{"client", "mirror"} {
		for _, dep := range g[p] {
			if dep != "client" && dep != "mirror" && internal.MatchString(dep) && !strings.Contains(dep, "/") {
				out = append(out, fmt.Sprintf("%s imports %s: client and mirror import nothing under internal/", p, dep))
			}
		}
	}
	harness := []string{"clustertest", "testutil", "log/logtest", "interop"}
	seen := map[string]bool{}
	var walk func(p string, path []string)
	walk = func(p string, path []string) {
		if seen[p] {
			return
		}
		seen[p] = true
		for _, dep := range g[p] {
			if slices.Contains(harness, dep) {
				out = append(out, fmt.Sprintf("the binary links the test harness %s: %s", dep, strings.Join(append(path, p, dep), " → ")))
				continue
			}
			walk(dep, append(path, p))
		}
	}
	walk("cmd/runnel", nil)
	return out
}

// TestDesignRulesCatchWrongImports: each rule fails a graph that breaks it.
func TestDesignRulesCatchWrongImports(t *testing.T) {
	base := graph{"cmd/runnel": {"server"}, "server": {"kafka"}, "kafka": {"replica"}, "replica": {"log"},
		"controller": {"metadata"}, "client": {}, "mirror": {"client"}}
	if v := checkRules(base); len(v) != 0 {
		t.Fatalf("a graph keeping every rule broke %v", v)
	}
	for _, tc := range []struct {
		name       string
		from, to   string
		wantInRule string
	}{
		{"kafka imports log", "kafka", "log", "kafka imports log"},
		{"controller imports replica", "controller", "replica", "controller imports replica"},
		{"replica imports controller", "replica", "controller", "replica imports controller"},
		{"mirror imports an internal package", "mirror", "kafka", "mirror imports kafka"},
		{"client imports an internal package", "client", "metadata", "client imports metadata"},
		{"the binary links the harness", "server", "clustertest", "the binary links the test harness clustertest"},
	} {
		g := graph{}
		for k, v := range base {
			g[k] = slices.Clone(v)
		}
		g[tc.from] = append(g[tc.from], tc.to)
		v := checkRules(g)
		if len(v) != 1 || !strings.Contains(v[0], tc.wantInRule) {
			t.Errorf("%s: rules found %v, want one naming %q", tc.name, v, tc.wantInRule)
		}
	}
}
