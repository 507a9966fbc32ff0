package cli

import "github.com/spf13/cobra"

func newProduceCommand() *cobra.Command {
	return &cobra.Command{Use: "produce", Short: "TODO", Args: cobra.ArbitraryArgs, RunE: groupRunE}
}
