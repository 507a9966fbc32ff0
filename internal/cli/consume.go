package cli

import "github.com/spf13/cobra"

func newConsumeCommand() *cobra.Command {
	return &cobra.Command{Use: "consume", Short: "TODO", Args: cobra.ArbitraryArgs, RunE: groupRunE}
}
