package cli

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/runnel-io/runnel/internal/link"
)

func newMetadataNoTopics() *kmsg.MetadataRequest {
	req := kmsg.NewPtrMetadataRequest()
	req.Topics = []kmsg.MetadataRequestTopic{}
	return req
}

func metadataBrokers(r kmsg.Response) []int32 {
	var ids []int32
	for _, b := range r.(*kmsg.MetadataResponse).Brokers {
		ids = append(ids, b.NodeID)
	}
	slices.Sort(ids)
	return ids
}

func sortPartitions(ps []link.PartitionStatus) {
	slices.SortFunc(ps, func(a, b link.PartitionStatus) int {
		return cmp.Or(cmp.Compare(a.Topic, b.Topic), cmp.Compare(a.Partition, b.Partition))
	})
}

// linkStatusJSON is `link status --json` (INTERFACE.md's field names).
type linkStatusJSON struct {
	Link       string              `json:"link"`
	Partitions []linkPartitionJSON `json:"partitions"`
	Groups     []linkGroupJSON     `json:"groups"`
}

type linkPartitionJSON struct {
	Topic      string  `json:"topic"`
	Partition  int32   `json:"partition"`
	SourceEnd  int64   `json:"source_end"`
	End        int64   `json:"end"`
	LagRecords int64   `json:"lag_records"`
	LagSeconds float64 `json:"lag_seconds"`
	State      string  `json:"state"`
	Error      string  `json:"error"`
}

// linkGroupJSON is a group offset the link synced: the offset this cluster's group
// holds, equal to the source's (clamped to what was copied), and when a sync round
// last found it so.
type linkGroupJSON struct {
	Group      string `json:"group"`
	Topic      string `json:"topic"`
	Partition  int32  `json:"partition"`
	Offset     int64  `json:"offset"`
	SyncedAtMs int64  `json:"synced_at_ms"`
}

func newLinkStatus(conn *connFlags) *cobra.Command {
	var out outputFlags
	cmd := &cobra.Command{
		Use:   "status NAME",
		Short: "Per mirror partition: source end, destination end, lag in records and seconds, state",
		Long: `Per mirror partition of link NAME, as its leader on this cluster reports it: the
source's end (its high watermark at the last fetch; -1 before the first), this
cluster's end, the lag in records and in seconds (how long this cluster is known to
be behind; while the source is unreachable, at least the time since the last
successful fetch), the state (mirroring, paused, promoting, promoted, failed, and
failing_back while a link failback runs on this cluster) and the last error. Then, per consumer group partition the link syncs (--groups), the
offset synced and when (answered by the active controller's node, which syncs).`,
		Args: exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			asJSON, err := out.json()
			if err != nil {
				return err
			}
			ps, gs, err := everyBrokerStatus(cmd.Context(), conn, link.Request{Op: link.OpStatus, Link: args[0]})
			if err != nil {
				return err
			}
			sortPartitions(ps)
			if asJSON {
				st := linkStatusJSON{Link: args[0], Partitions: []linkPartitionJSON{}, Groups: []linkGroupJSON{}}
				for _, p := range ps {
					st.Partitions = append(st.Partitions, linkPartitionJSON{Topic: p.Topic, Partition: p.Partition, SourceEnd: p.SourceEnd,
						End: p.End, LagRecords: p.LagRecords, LagSeconds: p.LagSeconds, State: p.State, Error: p.Error})
				}
				for _, g := range gs {
					st.Groups = append(st.Groups, linkGroupJSON{Group: g.Group, Topic: g.Topic, Partition: g.Partition, Offset: g.Offset, SyncedAtMs: g.SyncedAtMs})
				}
				return writeJSON(cmd.OutOrStdout(), st)
			}
			tw := newTable(cmd.OutOrStdout())
			fmt.Fprintln(tw, "TOPIC\tPARTITION\tSOURCE END\tEND\tLAG\tLAG SECONDS\tSTATE\tERROR")
			for _, p := range ps {
				fmt.Fprintf(tw, "%s\t%d\t%s\t%d\t%d\t%.1f\t%s\t%s\n", p.Topic, p.Partition, dash(p.SourceEnd), p.End, p.LagRecords, p.LagSeconds, p.State, p.Error)
			}
			if err := tw.Flush(); err != nil {
				return err
			}
			if len(gs) == 0 {
				return nil
			}
			fmt.Fprintln(cmd.OutOrStdout())
			tw = newTable(cmd.OutOrStdout())
			fmt.Fprintln(tw, "GROUP\tTOPIC\tPARTITION\tOFFSET\tSYNCED AT")
			for _, g := range gs {
				fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%s\n", g.Group, g.Topic, g.Partition, g.Offset,
					time.UnixMilli(g.SyncedAtMs).UTC().Format(time.RFC3339))
			}
			return tw.Flush()
		},
	}
	out.add(cmd)
	return cmd
}

// topicsOrAll checks the choice of the link commands that act on some or all of a
// link's mirror topics (exactly one of --topic T, repeatable, and --all) and reports
// whether JSON output was asked for.
func topicsOrAll(out *outputFlags, topics []string, all bool) (asJSON bool, err error) {
	if asJSON, err = out.json(); err != nil {
		return false, err
	}
	if all == (len(topics) > 0) {
		return false, usageErrorf("give --topic T (repeatable) or --all")
	}
	return asJSON, nil
}

// promotedJSON is one partition of `link promote --json` (INTERFACE.md).
type promotedJSON struct {
	Topic              string `json:"topic"`
	Partition          int32  `json:"partition"`
	WritableFrom       int64  `json:"writable_from"`
	TruncatedTo        int64  `json:"truncated_to"`
	QuarantinedRecords int64  `json:"quarantined_records"`
	Quarantine         string `json:"quarantine"`
}

func newLinkPromote(conn *connFlags) *cobra.Command {
	var topics []string
	var all bool
	var out outputFlags
	var wait time.Duration
	cmd := &cobra.Command{
		Use:   "promote NAME",
		Short: "Failover: stop mirroring, cut each partition to its last stable offset, make the topics writable",
		Long: `Promote mirror topics of link NAME (--topic, repeatable, or --all): fetching stops,
each partition's leader cuts its log to its last stable offset (no half transaction of
the source survives) and the topics become writable. It needs nothing from the
source, which may be down. Prints, per partition, the offset where writes start
(writable_from, which is also where the log was cut: truncated_to).`,
		Args: exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			asJSON, err := topicsOrAll(&out, topics, all)
			if err != nil {
				return err
			}
			resp, err := linkDo(cmd.Context(), conn, link.Request{Op: link.OpPromote, Link: args[0], Topics: topics})
			if err != nil {
				return err
			}
			ps, err := awaitPromoted(cmd.Context(), conn, args[0], topics, wait)
			if err != nil {
				return err
			}
			return printPromoted(cmd, ps, resp.Topics, asJSON)
		},
	}
	cmd.Flags().StringArrayVar(&topics, "topic", nil, "promote this mirror topic (repeatable)")
	cmd.Flags().BoolVar(&all, "all", false, "promote every mirror topic of the link")
	cmd.Flags().DurationVar(&wait, "timeout", 30*time.Second, "how long to wait for every partition's leader to take the promote")
	out.add(cmd)
	return cmd
}

// awaitPromoted polls the leaders until every partition of the promoted topics is
// writable (state promoted), or timeout passes (then the partitions still promoting
// are printed as such: an offline partition becomes writable when it gets a leader).
func awaitPromoted(ctx context.Context, conn *connFlags, name string, topics []string, timeout time.Duration) ([]link.PartitionStatus, error) {
	deadline := time.Now().Add(timeout)
	for {
		ps, err := everyBroker(ctx, conn, link.Request{Op: link.OpStatus, Link: name})
		if err != nil {
			return nil, err
		}
		ps = slices.DeleteFunc(ps, func(p link.PartitionStatus) bool {
			return len(topics) > 0 && !slices.Contains(topics, p.Topic)
		})
		done := !slices.ContainsFunc(ps, func(p link.PartitionStatus) bool { return p.State != "promoted" })
		if done || time.Now().After(deadline) {
			sortPartitions(ps)
			return ps, nil
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func printPromoted(cmd *cobra.Command, ps []link.PartitionStatus, promoted []string, asJSON bool) error {
	if asJSON {
		rows := []promotedJSON{}
		for _, p := range ps {
			rows = append(rows, promotedJSON{Topic: p.Topic, Partition: p.Partition, WritableFrom: p.WritableFrom, TruncatedTo: p.WritableFrom})
		}
		return writeJSON(cmd.OutOrStdout(), map[string]any{"partitions": rows})
	}
	tw := newTable(cmd.OutOrStdout())
	fmt.Fprintln(tw, "TOPIC\tPARTITION\tSTATE\tWRITABLE FROM")
	for _, p := range ps {
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\n", p.Topic, p.Partition, p.State, dash(p.WritableFrom))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if len(promoted) == 0 {
		fmt.Fprintln(cmd.OutOrStdout(), "(nothing newly promoted: the topics were promoted already)")
	}
	return nil
}
