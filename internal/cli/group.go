package cli

import "github.com/spf13/cobra"

func newGroupCommand() *cobra.Command {
	return &cobra.Command{Use: "group", Short: "TODO", Args: cobra.ArbitraryArgs, RunE: groupRunE}
}
