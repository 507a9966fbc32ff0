package cli

// `runnel link`: cluster links (docs/cluster-links.md, INTERFACE.md "Cluster links").
// Every subcommand is one link operation sent to the destination cluster (-b) in a
// DescribeCluster request carrying a Runnel tagged field (internal/link/wire.go says
// why); status and promote's result ask every broker, each answering for the mirror
// partitions it leads.

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/runnel-io/runnel/internal/config"
	"github.com/runnel-io/runnel/internal/link"
)

func init() { register(newLinkCommand) }

func newLinkCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "link",
		Short: "Cluster links: offset-preserving mirror topics, promote",
		Long: `Cluster links live on the destination cluster (-b): a link fetches the chosen topics
from a source cluster and appends the source's batches unchanged at the same offsets
into mirror topics (same names, partitions, offsets, timestamps, producer ids,
transaction markers), which are read-only until promoted. docs/cluster-links.md
says what works and what does not yet.`,
		Args: cobra.ArbitraryArgs,
		RunE: groupRunE,
	}
	conn := addConnFlags(cmd.PersistentFlags())
	cmd.AddCommand(newLinkCreate(conn), newLinkList(conn), newLinkStatus(conn),
		newLinkPause(conn, true), newLinkPause(conn, false), newLinkPromote(conn), newLinkDelete(conn),
		newLinkFailback(conn), newLinkSwitchover(conn))
	return cmd
}

// linkDo sends one operation to the cluster and turns an answer's error into the
// command's.
func linkDo(ctx context.Context, conn *connFlags, req link.Request) (link.Response, error) {
	cl, err := conn.client()
	if err != nil {
		return link.Response{}, err
	}
	defer cl.Close()
	return linkSend(ctx, cl, req)
}

func linkSend(ctx context.Context, r link.Requester, req link.Request) (link.Response, error) {
	resp, err := link.Send(ctx, r, req)
	if err != nil {
		return resp, fmt.Errorf("link %s: %w", req.Op, err)
	}
	if resp.Error != "" {
		code := kerr.ErrorForCode(resp.ErrorCode)
		var ke *kerr.Error
		if errors.As(code, &ke) {
			return resp, &brokerError{code: ke, msg: resp.Error}
		}
		return resp, errors.New(resp.Error)
	}
	return resp, nil
}

type linkCreateFlags struct {
	source            string
	sourceSec         *securityFlags
	topics, exclude   []string
	groups            []string
	syncACLs          bool
	syncConfigs       bool
	replicationFactor int16
	throttle          int64
	groupSync         time.Duration
}

func newLinkCreate(conn *connFlags) *cobra.Command {
	f := &linkCreateFlags{}
	cmd := &cobra.Command{
		Use:   "create NAME",
		Short: "Create a link and its mirror topics",
		Long: `Create link NAME on the cluster -b names, fetching from --source. The source topics
that --topics matches (all but __ topics when not given) and --exclude does not
become mirror topics at once, with the source's partition counts and non-default
configs; matching source topics created later become mirror topics within seconds,
and partition increases follow. --topics, --exclude and --groups take
comma-separated regular expressions matched against whole names (a plain name
matches itself). --source-X KEY=VALUE and --source-command-config FILE give the
source client's security properties, as -X does for the client commands.

--groups copies the committed offsets of the matching source groups (unchanged:
the offsets are the same on both clusters) every --group-sync-interval (default
5s), for groups with no member on this cluster, never backwards and never past
what was copied. --sync-configs keeps following the source's topic configs,
--sync-acls its topic ACLs (LITERAL ones naming a mirror topic). --throttle bounds
the link's copying, in bytes per second per node of this cluster.
docs/cluster-links.md says what each copies.`,
		Args: exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error { return runLinkCreate(cmd, conn, f, args[0]) },
	}
	fs := cmd.Flags()
	fs.StringVar(&f.source, "source", "", "source cluster bootstrap, HOST:PORT[,...]")
	f.sourceSec = addSecurityFlags(fs, "source-", "source cluster: ")
	fs.StringSliceVar(&f.topics, "topics", nil, "source topics to mirror: names or regular expressions (default: all)")
	fs.StringSliceVar(&f.exclude, "exclude", nil, "source topics not to mirror: regular expressions")
	fs.StringSliceVar(&f.groups, "groups", nil, "consumer groups whose committed offsets to sync: names or regular expressions")
	fs.BoolVar(&f.syncACLs, "sync-acls", false, "follow the source's topic ACLs (LITERAL, naming a mirror topic)")
	fs.BoolVar(&f.syncConfigs, "sync-configs", false, "follow the source's topic config changes")
	fs.Int16Var(&f.replicationFactor, "replication-factor", -1, "mirror topics' replication factor (default: default.replication.factor)")
	fs.Int64Var(&f.throttle, "throttle", 0, "bytes per second the link copies, per node of this cluster (0: no bound)")
	fs.DurationVar(&f.groupSync, "group-sync-interval", 0, "how often group offsets are synced, a Go duration (default 5s)")
	return cmd
}

func runLinkCreate(cmd *cobra.Command, conn *connFlags, f *linkCreateFlags, name string) error {
	if f.source == "" {
		return usageErrorf("--source is required")
	}
	if _, err := (&connFlags{bootstrap: f.source}).seeds(); err != nil {
		return usageErrorf("bad --source %q: want HOST:PORT[,HOST:PORT...]", f.source)
	}
	if f.throttle < 0 {
		return usageErrorf("--throttle %d: want bytes per second, 0 for no bound", f.throttle)
	}
	if f.groupSync < 0 || f.groupSync > 0 && f.groupSync < time.Millisecond {
		return usageErrorf("--group-sync-interval %v: want a duration of at least 1ms", f.groupSync)
	}
	props, err := rawProperties(f.sourceSec)
	if err != nil {
		return err
	}
	// A secret given as a plain value is kept in the metadata log as given: still
	// taken, but said (never with its value).
	for _, k := range slices.Sorted(maps.Keys(props)) {
		if link.SecretProperty(k) && !link.IsReference(props[k]) {
			fmt.Fprintf(cmd.ErrOrStderr(), "warning: link %s: source property %s is a plain value, kept in the metadata log as given; "+
				"give it as a reference resolved on each node instead, ${file:PATH:KEY} or ${env:NAME} (docs/cluster-links.md)\n", name, k)
		}
	}
	resp, err := linkDo(cmd.Context(), conn, link.Request{Op: link.OpCreate, Link: name, Source: f.source, SourceProps: props,
		Topics: f.topics, Exclude: f.exclude, ReplicationFactor: f.replicationFactor,
		Groups: f.groups, SyncACLs: f.syncACLs, SyncConfigs: f.syncConfigs, ThrottleBytes: f.throttle,
		GroupSyncIntervalMs: f.groupSync.Milliseconds()})
	if err != nil {
		return err
	}
	fmt.Fprintf(cmd.OutOrStdout(), "created link %s from %s with %d mirror topics: %s\n", name, f.source, len(resp.Topics), strings.Join(resp.Topics, ", "))
	return nil
}

// rawProperties checks the source's security flags as every client command does,
// then returns them as the properties the link keeps (the file's, then -X over them).
func rawProperties(s *securityFlags) (map[string]string, error) {
	if _, err := s.options(); err != nil {
		return nil, err
	}
	props := map[string]string{}
	if s.file != "" {
		fh, err := os.Open(s.file)
		if err != nil {
			return nil, usageErrorf("%s: %v", s.fileFlag, err)
		}
		defer fh.Close()
		fileProps, err := config.ParseProperties(fh)
		if err != nil {
			return nil, usageErrorf("%s %s: %v", s.fileFlag, s.file, err)
		}
		maps.Copy(props, fileProps)
	}
	for _, kv := range s.props {
		k, v, _ := strings.Cut(kv, "=")
		props[strings.TrimSpace(k)] = v
	}
	if len(props) == 0 {
		return nil, nil
	}
	return props, nil
}

func newLinkList(conn *connFlags) *cobra.Command {
	var out outputFlags
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List the links with their source, state and number of mirror topics",
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			asJSON, err := out.json()
			if err != nil {
				return err
			}
			resp, err := linkDo(cmd.Context(), conn, link.Request{Op: link.OpList})
			if err != nil {
				return err
			}
			if asJSON {
				if resp.Links == nil {
					resp.Links = []link.LinkInfo{}
				}
				return writeJSON(cmd.OutOrStdout(), map[string]any{"links": resp.Links})
			}
			tw := newTable(cmd.OutOrStdout())
			fmt.Fprintln(tw, "LINK\tSOURCE\tSTATE\tMIRROR TOPICS")
			for _, l := range resp.Links {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%d\n", l.Link, l.Source, l.State, l.MirrorTopics)
			}
			return tw.Flush()
		},
	}
	out.add(cmd)
	return cmd
}

func newLinkPause(conn *connFlags, pause bool) *cobra.Command {
	var topics []string
	op, verb := link.OpResume, "Restart fetching"
	if pause {
		op, verb = link.OpPause, "Stop fetching (the topics stay read-only)"
	}
	cmd := &cobra.Command{
		Use:   op + " NAME",
		Short: verb + " for the link or some of its topics",
		Args:  exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if _, err := linkDo(cmd.Context(), conn, link.Request{Op: op, Link: args[0], Topics: topics}); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%sd link %s\n", op, args[0])
			return nil
		},
	}
	cmd.Flags().StringArrayVar(&topics, "topic", nil, "only this mirror topic (repeatable)")
	return cmd
}

func newLinkDelete(conn *connFlags) *cobra.Command {
	var promote bool
	cmd := &cobra.Command{
		Use:   "delete NAME",
		Short: "Remove the link (mirror topics stay read-only unless --promote)",
		Args:  exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if _, err := linkDo(cmd.Context(), conn, link.Request{Op: link.OpDelete, Link: args[0], Promote: promote}); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "deleted link %s\n", args[0])
			return nil
		},
	}
	cmd.Flags().BoolVar(&promote, "promote", false, "promote the mirror topics first")
	return cmd
}

// everyBroker runs req on every broker of the cluster and merges their partitions.
func everyBroker(ctx context.Context, conn *connFlags, req link.Request) ([]link.PartitionStatus, error) {
	ps, _, err := everyBrokerStatus(ctx, conn, req)
	return ps, err
}

// everyBrokerStatus runs req on every broker of the cluster and merges their
// partitions and group offsets (of a group partition two nodes report, after the
// active controller moved, the latest synced).
func everyBrokerStatus(ctx context.Context, conn *connFlags, req link.Request) ([]link.PartitionStatus, []link.GroupStatus, error) {
	cl, err := conn.client()
	if err != nil {
		return nil, nil, err
	}
	defer cl.Close()
	first, err := linkSend(ctx, cl, req) // checks the link exists, and fills the client's broker list
	if err != nil {
		return nil, nil, err
	}
	brokers, err := clusterBrokers(ctx, cl)
	if err != nil {
		return nil, nil, err
	}
	var out []link.PartitionStatus
	groups := map[[3]string]link.GroupStatus{}
	add := func(resp link.Response) {
		out = append(out, resp.Partitions...)
		for _, g := range resp.Groups {
			k := [3]string{g.Group, g.Topic, strconv.Itoa(int(g.Partition))}
			if cur, ok := groups[k]; !ok || g.SyncedAtMs > cur.SyncedAtMs {
				groups[k] = g
			}
		}
	}
	for _, id := range brokers {
		if id == first.Node {
			add(first)
			continue
		}
		resp, err := linkSend(ctx, cl.Broker(int(id)), req)
		if err != nil {
			continue // a node down leads nothing the metadata would not have moved
		}
		add(resp)
	}
	gs := slices.Collect(maps.Values(groups))
	slices.SortFunc(gs, func(a, b link.GroupStatus) int {
		return cmp.Or(cmp.Compare(a.Group, b.Group), cmp.Compare(a.Topic, b.Topic), cmp.Compare(a.Partition, b.Partition))
	})
	return out, gs, nil
}

func clusterBrokers(ctx context.Context, cl *kgo.Client) ([]int32, error) {
	meta, err := cl.Request(ctx, newMetadataNoTopics())
	if err != nil {
		return nil, fmt.Errorf("metadata: %w", err)
	}
	return metadataBrokers(meta), nil
}
