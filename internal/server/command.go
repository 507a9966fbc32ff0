package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/runnel-io/runnel/internal/config"
	"github.com/spf13/cobra"
)

// flagProperties maps each `runnel server` flag to the property it sets, so flags,
// --config files and --set all go through config.Load's validation.
var flagProperties = []struct{ flag, property, usage, dflt string }{
	{"node-id", "node.id", "this node's id, unique in the cluster", "1"},
	{"data-dir", "log.dirs", "where the logs and the metadata live", "./runnel-data"},
	{"listen", "listen", "Kafka protocol listener HOST:PORT", "localhost:9092"},
	{"advertise", "advertise", "address given to clients in metadata (default: --listen)", ""},
	{"controller-listen", "controller.listen", "metadata quorum (Raft) listener HOST:PORT", "localhost:9093"},
	{"controllers", "controllers", "the metadata quorum's voters ID@HOST:PORT,... (default: this node alone)", ""},
	{"http-listen", "http.listen", "HTTP listener for /metrics, /healthz, /readyz and the console", "localhost:9644"},
}

// NewCommand returns the `runnel server` command. It lives here, not in internal/cli,
// because internal/cli must not import the server (it is a Kafka client like any other).
func NewCommand() *cobra.Command {
	var configFile string
	var sets []string
	cmd := &cobra.Command{
		Use:   "server",
		Short: "Run a Runnel node (with no flags: a single-node cluster on localhost:9092, data in ./runnel-data)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var all []string
			for _, fp := range flagProperties {
				if f := cmd.Flags().Lookup(fp.flag); f.Changed {
					all = append(all, fp.property+"="+f.Value.String())
				}
			}
			cfg, err := config.Load(configFile, append(all, sets...))
			if err != nil {
				return blameFlag(cmd, err)
			}
			cmd.SilenceUsage = true
			return withGCFloor(func() error { return Run(cfg) })
		},
	}
	for _, fp := range flagProperties {
		cmd.Flags().String(fp.flag, fp.dflt, fp.usage)
	}
	cmd.Flags().StringVar(&configFile, "config", "", "a server.properties file")
	cmd.Flags().StringArrayVar(&sets, "set", nil, "KEY=VALUE property, repeatable; wins over --config")
	return cmd
}

// Run starts a node and blocks until SIGTERM or SIGINT, then shuts it down cleanly.
func Run(cfg *config.Broker) error {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	n, err := Start(ctx, cfg, Options{})
	if errors.Is(err, ErrStartInterrupted) {
		// SIGTERM or SIGINT before the node was ready: stopping is what was asked for.
		slog.Info("start-up interrupted by a signal; stopped", "node", cfg.NodeID)
		return nil
	}
	if err != nil {
		return err
	}
	select {
	case <-ctx.Done():
		n.logger.Info("shutting down", "signal", "SIGTERM/SIGINT")
	case err := <-n.Done():
		if err != nil && !errors.Is(err, context.Canceled) {
			n.Close()
			return fmt.Errorf("node %d stopped: %w", cfg.NodeID, err)
		}
	}
	if err := n.Close(); err != nil {
		fmt.Fprintln(os.Stderr, "runnel: shutdown:", err)
		return err
	}
	return nil
}

// blameFlag names the flag behind a rejected property: config.Load sees the flags as
// --set properties, so its error would blame --set for a bad --node-id. A flag's bad
// value is bad usage (the root's flag error function makes it exit 2).
func blameFlag(cmd *cobra.Command, err error) error {
	var ce *config.Error
	if !errors.As(err, &ce) || ce.Origin != "--set" {
		return err
	}
	for _, fp := range flagProperties {
		f := cmd.Flags().Lookup(fp.flag)
		if f.Changed && fp.property == ce.Key && strings.TrimSpace(f.Value.String()) == ce.Value {
			return cmd.FlagErrorFunc()(cmd, fmt.Errorf("invalid --%s %q: %s", fp.flag, f.Value.String(),
				strings.TrimPrefix(ce.Reason, "is ")))
		}
	}
	return err
}
