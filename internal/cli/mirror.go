package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/runnel-io/runnel/client"
	"github.com/runnel-io/runnel/mirror"
	"github.com/spf13/cobra"
)

func init() { register(newMirrorCommand) }

func newMirrorCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "mirror",
		Short: "Geo-replication: copy topics and group offsets from one cluster to another, exactly once",
		Long: `Geo-replication between two Kafka-compatible clusters (see docs/geo-replication.md).

run copies the chosen topics continuously, exactly once, and syncs consumer groups;
status shows each partition's lag and state; failover moves consumer groups onto
the target; translate maps a source offset to its target offset.`,
		Args: noArgs,
		RunE: groupRunE,
	}
	cmd.AddCommand(newMirrorRunCommand(), newMirrorStatusCommand(), newMirrorFailoverCommand(), newMirrorTranslateCommand())
	return cmd
}

// mirrorFlow is one mirror flow, as flags give it or as a --config file lists it.
type mirrorFlow struct {
	Name        string   `json:"name"`
	Source      string   `json:"source"`
	Target      string   `json:"target"`
	Topics      []string `json:"topics"`
	Exclude     []string `json:"exclude"`
	Groups      []string `json:"groups"`
	Naming      string   `json:"naming"`
	SourceAlias string   `json:"source_alias"`
	Delivery    string   `json:"delivery"`
	OnDataLoss  string   `json:"on_data_loss"`
}

type mirrorRunFlags struct {
	flow       mirrorFlow
	httpListen string
	configFile string
	groupEvery time.Duration
	session    time.Duration
	txnTimeout time.Duration
	source     *securityFlags // --source-X, --source-command-config
	target     *securityFlags // --target-X, --target-command-config
	overload   produceFlags   // only the overload fields are used
}

func newMirrorRunCommand() *cobra.Command {
	f := &mirrorRunFlags{}
	cmd := &cobra.Command{
		Use:   "run",
		Short: "Run a mirror until SIGTERM",
		Long: `Run a mirror until SIGTERM: copy the chosen topics from the source cluster to the
target cluster, continuously and exactly once, and sync the chosen consumer groups'
offsets. --naming prefix (default) writes ALIAS.TOPIC on the target (ALIAS defaults
to the source's cluster id); identity keeps the name. Several processes with the
same --name share the partitions.

--topics and --exclude take comma-separated regular expressions matched against
whole names (a plain name matches itself); topics starting with __ are never
mirrored. --config FILE runs several flows: {"mirrors": [{"name": ..., "source":
..., "target": ..., "topics": [...], "exclude": [...], "groups": [...], "naming":
..., "source_alias": ..., "delivery": ..., "on_data_loss": ...}, ...]}.

Overload options apply to each source partition's producer on the target:
--buffer-records and --buffer-bytes bound what is in flight, --rate caps records
per second per partition, --enqueue-timeout bounds one wait for room. --on-full
takes only block (the default): the mirror waits for room, which is backpressure
on the source fetch, never loss. drop is refused at start-up (an exactly-once
mirror never drops a record), and so is error (a mirror has no caller to hand the
error to: the partition would abort and retry its transaction for as long as the
target is slow).

Security: each cluster has its own client properties, as the client commands'
-X and --command-config (docs/security.md): --source-X KEY=VALUE and
--source-command-config FILE for the source, --target-X KEY=VALUE and
--target-command-config FILE for the target; -X wins over the file. They apply to
every flow of a --config file. Without them a side is plaintext without
authentication.`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runMirror(cmd, f) },
	}
	fs := cmd.Flags()
	fs.StringVar(&f.flow.Source, "source", "", "source cluster bootstrap, HOST:PORT[,...]")
	fs.StringVar(&f.flow.Target, "target", "", "target cluster bootstrap, HOST:PORT[,...]")
	fs.StringVar(&f.flow.Name, "name", "", "mirror name (progress topic __runnel_mirror.NAME on the target)")
	fs.StringSliceVar(&f.flow.Topics, "topics", nil, "topics to mirror: names or regular expressions (default: all)")
	fs.StringSliceVar(&f.flow.Exclude, "exclude", nil, "topics not to mirror: regular expressions")
	fs.StringSliceVar(&f.flow.Groups, "groups", nil, "consumer groups whose offsets to sync: regular expressions")
	fs.StringVar(&f.flow.Naming, "naming", "prefix", "target topic names: prefix (ALIAS.TOPIC) or identity")
	fs.StringVar(&f.flow.SourceAlias, "source-alias", "", "ALIAS for prefix naming (default: the source's cluster id)")
	fs.StringVar(&f.flow.Delivery, "delivery", "exactly-once", "exactly-once or at-least-once (for targets without transactions)")
	fs.StringVar(&f.flow.OnDataLoss, "on-data-loss", "stop", "when the source lost unmirrored records: stop the partition, or skip and count")
	fs.StringVar(&f.httpListen, "http-listen", "", "serve /metrics and /status on HOST:PORT")
	fs.StringVar(&f.configFile, "config", "", "a JSON file of mirror flows to run (instead of the flow flags)")
	fs.DurationVar(&f.groupEvery, "group-sync-interval", 5*time.Second, "how often group offsets are synced")
	fs.DurationVar(&f.session, "session-timeout", 6*time.Second, "how long a dead or paused process keeps its partitions (the source group's session; the source's group.min.session.timeout.ms must allow it)")
	fs.DurationVar(&f.txnTimeout, "transaction-timeout", 10*time.Second, "transaction.timeout.ms of each partition producer on the target")
	fs.IntVar(&f.overload.bufferRecords, "buffer-records", client.DefaultMaxBufferedRecords, "most records in flight per partition producer")
	fs.IntVar(&f.overload.bufferBytes, "buffer-bytes", 0, "most bytes in flight per partition producer (0: no limit)")
	fs.StringVar(&f.overload.onFull, "on-full", "block", "when the buffer is full: block (wait for room; drop and error are refused, see above)")
	f.source = addSecurityFlags(fs, "source-", "source cluster: ")
	f.target = addSecurityFlags(fs, "target-", "target cluster: ")
	fs.StringVar(&f.overload.enqueueTimeout, "enqueue-timeout", "", "how long to wait for buffer room; -1 for ever")
	fs.Float64Var(&f.overload.rate, "rate", 0, "most records per second per source partition (0: no limit)")
	return cmd
}

// flows returns the flows to run: from --config, else from the flags.
func (f *mirrorRunFlags) flows() ([]mirrorFlow, error) {
	if f.configFile == "" {
		if f.flow.Source == "" || f.flow.Target == "" || f.flow.Name == "" {
			return nil, usageErrorf("--source, --target and --name are required (or --config FILE)")
		}
		return []mirrorFlow{f.flow}, nil
	}
	b, err := os.ReadFile(f.configFile)
	if err != nil {
		return nil, fmt.Errorf("reading --config: %w", err)
	}
	var file struct {
		Mirrors []mirrorFlow `json:"mirrors"`
	}
	if err := json.Unmarshal(b, &file); err != nil {
		return nil, usageErrorf("bad --config %s: %v", f.configFile, err)
	}
	if len(file.Mirrors) == 0 {
		return nil, usageErrorf("bad --config %s: no mirrors", f.configFile)
	}
	return file.Mirrors, nil
}

// config turns a flow into a mirror.Config.
func (f *mirrorRunFlags) config(fl mirrorFlow, logger *slog.Logger) (mirror.Config, error) {
	cfg := mirror.Config{Name: fl.Name, Topics: fl.Topics, Exclude: fl.Exclude, Groups: fl.Groups,
		SourceAlias: fl.SourceAlias, GroupSyncInterval: f.groupEvery, Logger: logger,
		SessionTimeout: f.session, TransactionTimeout: f.txnTimeout}
	var err error
	for _, side := range []struct {
		flag, v string
		out     *[]string
	}{{"--source", fl.Source, &cfg.Source}, {"--target", fl.Target, &cfg.Target}} {
		if *side.out, err = (&connFlags{bootstrap: side.v}).seeds(); err != nil {
			return cfg, usageErrorf("mirror %s: bad %s %q: want HOST:PORT[,HOST:PORT...]", fl.Name, side.flag, side.v)
		}
	}
	if cfg.Naming, err = mirror.ParseNaming(fl.Naming); err != nil {
		return cfg, usageError{err}
	}
	if cfg.Delivery, err = mirror.ParseDelivery(fl.Delivery); err != nil {
		return cfg, usageError{err}
	}
	if cfg.OnDataLoss, err = mirror.ParseOnDataLoss(fl.OnDataLoss); err != nil {
		return cfg, usageError{err}
	}
	switch f.overload.onFull {
	case "drop":
		return cfg, usageErrorf("--on-full drop is refused: an exactly-once mirror never drops a record; it waits for room (--on-full block, the default)")
	case "error":
		return cfg, usageErrorf("--on-full error is refused: a mirror has no caller to hand a full-buffer error to, so its partition would abort and retry its transaction for as long as the target is slow; it waits for room (--on-full block, the default)")
	}
	if cfg.SourceOptions, err = f.source.options(); err != nil {
		return cfg, err
	}
	if cfg.TargetOptions, err = f.target.options(); err != nil {
		return cfg, err
	}
	if cfg.Producer, err = f.overload.overloadOptions(f.overload.rate); err != nil {
		return cfg, err
	}
	return cfg, nil
}

func runMirror(cmd *cobra.Command, f *mirrorRunFlags) error {
	flows, err := f.flows()
	if err != nil {
		return err
	}
	logger := slog.New(slog.NewTextHandler(cmd.ErrOrStderr(), nil))
	var ms []*mirror.Mirror
	for _, fl := range flows {
		cfg, err := f.config(fl, logger)
		if err != nil {
			return err
		}
		m, err := mirror.New(cfg)
		if err != nil {
			return usageError{err}
		}
		ms = append(ms, m)
	}
	ctx := cmd.Context()
	if f.httpListen != "" {
		stop, err := serveMirrorHTTP(ctx, f.httpListen, ms, logger)
		if err != nil {
			return err
		}
		defer stop()
	}
	errs := make([]error, len(ms))
	var wg sync.WaitGroup
	for i, m := range ms {
		wg.Go(func() { errs[i] = m.Run(ctx) })
	}
	wg.Wait()
	return errors.Join(errs...)
}

// serveMirrorHTTP serves /metrics (every mirror's registry) and /status (JSON).
func serveMirrorHTTP(ctx context.Context, addr string, ms []*mirror.Mirror, logger *slog.Logger) (func(), error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("--http-listen %s: %w", addr, err)
	}
	var gs prometheus.Gatherers
	for _, m := range ms {
		gs = append(gs, m.Registry())
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(gs, promhttp.HandlerOpts{}))
	mux.HandleFunc("/status", func(w http.ResponseWriter, _ *http.Request) {
		var out []mirrorLiveStatus
		for _, m := range ms {
			out = append(out, mirrorLiveStatus{Partitions: m.Status(time.Now()), Groups: m.GroupStatuses()})
		}
		w.Header().Set("Content-Type", "application/json")
		_ = writeJSON(w, out)
	})
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			logger.Error("mirror http server", "err", err)
		}
	}()
	logger.Info("mirror http listening", "addr", ln.Addr().String())
	return func() { _ = srv.Close() }, nil
}

type mirrorLiveStatus struct {
	Partitions []mirror.PartitionState `json:"partitions"`
	Groups     []mirror.GroupStatus    `json:"groups"`
}
