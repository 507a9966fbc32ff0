package cli

import "github.com/spf13/cobra"

// newBenchCommand is the `runnel bench` group: produce, consume and e2e load.
func newBenchCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "bench",
		Short: "Load generator: records/s, MB/s, latency percentiles",
		Args:  noArgs,
		RunE:  groupRunE,
	}
	return cmd
}
