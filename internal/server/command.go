package server

import (
	"github.com/spf13/cobra"
)

// NewCommand returns the `runnel server` command. It lives here, not in internal/cli,
// because internal/cli must not import the server (it is a Kafka client like any other).
func NewCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "server",
		Short: "Run a Runnel node (a single-node cluster with no flags)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runCommand(cmd)
		},
	}
	return cmd
}

func runCommand(cmd *cobra.Command) error { return nil }
