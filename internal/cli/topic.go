package cli

import "github.com/spf13/cobra"

func newTopicCommand() *cobra.Command {
	return &cobra.Command{Use: "topic", Short: "TODO", Args: cobra.ArbitraryArgs, RunE: groupRunE}
}
