package cli

import (
	"fmt"
	"runtime"
	"runtime/debug"
	"strings"

	"github.com/spf13/cobra"
)

// Stamped by the linker (scripts/build.sh):
// -X github.com/runnel-io/runnel/internal/cli.version=v1.2.3
// -X github.com/runnel-io/runnel/internal/cli.buildTime=2026-01-02T15:04:05Z
// -X github.com/runnel-io/runnel/internal/cli.commit=<git rev-parse HEAD>
// The commit is Go's own VCS stamp when the linker did not set it (builds with
// -buildvcs=false have none).
var (
	version   string
	buildTime string
	commit    string
)

// buildVersion describes this binary: the stamped version, else the module version
// (a `go install`), else "dev"; the commit and its time from Go's VCS stamp.
type buildVersion struct {
	Version, Commit, CommitTime, BuildTime, GoVersion, Platform string
	Modified                                                    bool
}

func readBuildVersion() buildVersion {
	v := buildVersion{Version: version, BuildTime: buildTime, GoVersion: runtime.Version(),
		Platform: runtime.GOOS + "/" + runtime.GOARCH}
	if bi, ok := debug.ReadBuildInfo(); ok {
		if v.Version == "" && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
			v.Version = bi.Main.Version
		}
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				v.Commit = s.Value
			case "vcs.time":
				v.CommitTime = s.Value
			case "vcs.modified":
				v.Modified = s.Value == "true"
			}
		}
	}
	if v.Version == "" {
		v.Version = "dev"
	}
	if commit != "" {
		v.Commit = commit
	}
	return v
}

func (v buildVersion) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "runnel %s\n", v.Version)
	commit := orUnknown(v.Commit)
	if v.Modified {
		commit += " (modified)"
	}
	if v.CommitTime != "" {
		commit += " of " + v.CommitTime
	}
	fmt.Fprintf(&b, "  commit:  %s\n  go:      %s %s\n  built:   %s\n", commit, v.GoVersion, v.Platform, orUnknown(v.BuildTime))
	return b.String()
}

func orUnknown(s string) string {
	if s == "" {
		return "unknown"
	}
	return s
}

func newVersionCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the version, commit, Go version and build time",
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			_, err := fmt.Fprint(cmd.OutOrStdout(), readBuildVersion())
			return err
		},
	}
}

// setVersionFlag makes `runnel --version` print what `runnel version` prints.
func setVersionFlag(root *cobra.Command) {
	root.Version = readBuildVersion().Version
	root.SetVersionTemplate(readBuildVersion().String())
}
