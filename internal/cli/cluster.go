package cli

import "github.com/spf13/cobra"

func newClusterCommand() *cobra.Command {
	return &cobra.Command{Use: "cluster", Short: "TODO", Args: cobra.ArbitraryArgs, RunE: groupRunE}
}
