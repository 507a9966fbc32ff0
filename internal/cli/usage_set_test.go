package cli

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/runnel-io/runnel/internal/server"
)

// A bad property on runnel server's command line (--set) is bad usage, exit 2, as a
// bad flag is (INTERFACE.md); an unknown one names the property it most likely
// meant. The same mistake in a --config file is a failure, exit 1.
func TestServerSetIsUsage(t *testing.T) {
	file := writeFile(t, t.TempDir(), "server.properties", "num.partition=3\n")
	for _, tt := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"--set", "foo"}, 2, `runnel: config: --set: "foo" is not KEY=VALUE`},
		{[]string{"--set", "num.partition=3"}, 2, `runnel: config: unknown property "num.partition" (in --set); did you mean "num.partitions"?`},
		{[]string{"--set", "num.partitions=many"}, 2, `runnel: config: num.partitions: "many" is not an integer (in --set)`},
		{[]string{"--config", file}, 1, `runnel: config: unknown property "num.partition" (in ` + file + `); did you mean "num.partitions"?`},
	} {
		var stdout, stderr strings.Builder
		args := append([]string{"server", "--data-dir", filepath.Join(t.TempDir(), "data")}, tt.args...)
		code := MainIO(args, strings.NewReader(""), &stdout, &stderr, server.NewCommand())
		first, _, _ := strings.Cut(stderr.String(), "\n")
		if code != tt.code || first != tt.want {
			t.Errorf("runnel %s: exit %d, stderr %q; want exit %d and first line %q", strings.Join(args, " "), code, stderr.String(), tt.code, tt.want)
		}
	}
}
