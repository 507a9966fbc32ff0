package clustertest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"

	"github.com/runnel-io/runnel/internal/invariants"
)

// mainPackage is the import path of the runnel binary.
const mainPackage = "github.com/runnel-io/runnel/cmd/runnel"

// built is the binary built for this test process, once.
var built struct {
	once sync.Once
	dir  string // the temporary directory holding it; removed by Main
	path string
	err  error
}

// BinEnv names an environment variable that, when set, gives the runnel binary for
// every cluster whose Options.BinPath is empty, instead of building one.
const BinEnv = "RUNNEL_CLUSTER_BIN"

// binary returns the path of the runnel binary: o.BinPath, else $RUNNEL_CLUSTER_BIN,
// else one built from this checkout the first time a test asks.
func binary(t testing.TB, o Options) string {
	t.Helper()
	if o.BinPath != "" {
		return o.BinPath
	}
	if p := os.Getenv(BinEnv); p != "" {
		return p
	}
	built.once.Do(build)
	if built.err != nil {
		t.Fatalf("building %s: %v", mainPackage, built.err)
	}
	return built.path
}

// build compiles the binary. Its name avoids "runnel", so that someone ending their
// own servers by name (pkill runnel) does not stop this test's nodes.
func build() {
	built.dir, built.err = os.MkdirTemp("", "cluster-harness-")
	if built.err != nil {
		return
	}
	built.path = filepath.Join(built.dir, "clusternode")
	args := []string{"build", "-o", built.path}
	if invariants.Enabled {
		// The nodes check what the test binary checks (scripts/test.sh sets the tag);
		// shutdown fails the test when a node reports a violation.
		args = append(args, "-tags", "invariants")
	}
	out, err := exec.Command("go", append(args, mainPackage)...).CombinedOutput()
	if err != nil {
		built.err = fmt.Errorf("%w\n%s", err, out)
	}
}

// Main runs the tests and then removes the binary built for them. Use it from TestMain:
// os.Exit(cluster.Main(m)).
func Main(m *testing.M) int {
	code := m.Run()
	if built.dir != "" {
		os.RemoveAll(built.dir)
	}
	return code
}
