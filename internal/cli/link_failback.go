package cli

import (
	"errors"

	"github.com/spf13/cobra"
)

// newLinkFailback and newLinkSwitchover: not built yet (issue 32).
func newLinkFailback(conn *connFlags) *cobra.Command {
	return &cobra.Command{Use: "failback NAME", Short: "Not built yet", Hidden: true,
		RunE: func(*cobra.Command, []string) error { return errors.New("link failback is not built yet") }}
}

func newLinkSwitchover(conn *connFlags) *cobra.Command {
	return &cobra.Command{Use: "switchover NAME", Short: "Not built yet", Hidden: true,
		RunE: func(*cobra.Command, []string) error { return errors.New("link switchover is not built yet") }}
}
