package cli

// `runnel link failback` and `runnel link switchover`: the orchestration runs here,
// in the client that holds both clusters (internal/link/failback_run.go); the
// brokers only answer its short phases (internal/link/failback.go).

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/runnel-io/runnel/internal/link"
)

func newLinkFailback(conn *connFlags) *cobra.Command {
	var topics []string
	var all bool
	var source string
	var out outputFlags
	var timeout time.Duration
	var sourceSec *securityFlags
	cmd := &cobra.Command{
		Use:   "failback NAME",
		Short: "On the old source after a promote elsewhere: set its unmirrored tail aside, cut, mirror the new primary",
		Long: `Run on the old source (-b) after link NAME's topics were promoted on the new primary
(--source). Per partition it finds where the two logs diverge (the end of what the
promote recorded as mirrored, the old source's leader epoch of the last mirrored
batch, and a comparison of the batches), copies the old source's records above that
point (its tail, never mirrored) into the topic <topic>.quarantine.<ms> on the old
source (counted, kept for ever, readable by any consumer), cuts every replica's log
there, and makes the topic a mirror topic of a link named NAME on the old source,
fetching the new primary's records. If the quarantine copy fails nothing is cut.
Run again after any failure: it resumes, and once cut it prints what was recorded.
--source-X KEY=VALUE and --source-command-config FILE give the new primary's client
security (kept by the new link, as link create does).`,
		Args: exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			asJSON, err := topicsOrAll(&out, topics, all)
			if err != nil {
				return err
			}
			if source == "" {
				return usageErrorf("--source (the new primary's bootstrap) is required")
			}
			newConn := &connFlags{bootstrap: source, security: sourceSec, clientID: conn.clientID}
			if _, err := newConn.seeds(); err != nil {
				return usageErrorf("bad --source %q: want HOST:PORT[,HOST:PORT...]", source)
			}
			props, err := rawProperties(sourceSec)
			if err != nil {
				return err
			}
			oldCl, err := conn.client()
			if err != nil {
				return err
			}
			defer oldCl.Close()
			newCl, err := newConn.client()
			if err != nil {
				return err
			}
			defer newCl.Close()
			rows, err := link.RunFailback(cmd.Context(), link.FailbackConfig{Link: args[0], Topics: topics, All: all,
				Old: oldCl, New: newCl, OldBootstrap: conn.bootstrap, NewBootstrap: source, NewProps: props, Timeout: timeout})
			if rows != nil {
				sortPartitions(rows)
				if perr := printFailback(cmd, rows, asJSON); perr != nil && err == nil {
					err = perr
				}
			}
			if err != nil {
				return fmt.Errorf("link failback %s: %w", args[0], err)
			}
			return nil
		},
	}
	sourceSec = addSecurityFlags(cmd.Flags(), "source-", "new primary: ")
	cmd.Flags().StringVar(&source, "source", "", "the new primary's bootstrap, HOST:PORT[,...] (where the topics were promoted)")
	cmd.Flags().StringArrayVar(&topics, "topic", nil, "fail back this topic (repeatable)")
	cmd.Flags().BoolVar(&all, "all", false, "fail back every topic of the link promoted on the new primary")
	cmd.Flags().DurationVar(&timeout, "timeout", 30*time.Second, "how long each wait may take (the promote's record, the topics settling, the mirror starting)")
	out.add(cmd)
	return cmd
}

func failbackRows(ps []link.PartitionStatus) []promotedJSON {
	rows := []promotedJSON{}
	for _, p := range ps {
		rows = append(rows, promotedJSON{Topic: p.Topic, Partition: p.Partition, WritableFrom: p.WritableFrom,
			TruncatedTo: p.TruncatedTo, QuarantinedRecords: p.QuarantinedRecords, Quarantine: p.Quarantine})
	}
	return rows
}

func printFailback(cmd *cobra.Command, ps []link.PartitionStatus, asJSON bool) error {
	if asJSON {
		return writeJSON(cmd.OutOrStdout(), map[string]any{"partitions": failbackRows(ps)})
	}
	tw := newTable(cmd.OutOrStdout())
	fmt.Fprintln(tw, "TOPIC\tPARTITION\tTRUNCATED TO\tQUARANTINED RECORDS\tQUARANTINE\tSTATE")
	for _, p := range ps {
		q := p.Quarantine
		if q == "" {
			q = "-"
		}
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%s\t%s\n", p.Topic, p.Partition, p.TruncatedTo, p.QuarantinedRecords, q, p.State)
	}
	return tw.Flush()
}

func newLinkSwitchover(conn *connFlags) *cobra.Command {
	var topics []string
	var all bool
	var out outputFlags
	var timeout time.Duration
	var sourceSec *securityFlags
	cmd := &cobra.Command{
		Use:   "switchover NAME",
		Short: "Planned move with no loss: wait for lag 0, promote here, fail the source back to follow",
		Long: `Move link NAME's topics (all of them, or only those --topic names, repeatable; --all
says all explicitly) from the link's source to this cluster (-b, where the link lives) with nothing lost, once the producers are
paused: it waits until this cluster holds every record of the source (lag 0), promotes
the topics here, and fails the source back (runnel link failback on the source, with
this cluster as the new primary): the source's topics become mirror topics of a link
NAME on the source. Then move the producers and consumers here. It runs in this
client, with both clusters' bootstraps: the source's is the link's; --source-X and
--source-command-config give this client's security towards the source, -X this
cluster's (kept by the source's new link). Run again after a failure: every step is
idempotent.`,
		Args: exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			// INTERFACE.md's form is "switchover NAME": the whole link.
			if !all && len(topics) == 0 {
				all = true
			}
			asJSON, err := topicsOrAll(&out, topics, all)
			if err != nil {
				return err
			}
			var destProps map[string]string
			if conn.security != nil {
				if destProps, err = rawProperties(conn.security); err != nil {
					return err
				}
			}
			dest, err := conn.client()
			if err != nil {
				return err
			}
			defer dest.Close()
			resp, err := linkSend(cmd.Context(), dest, link.Request{Op: link.OpList})
			if err != nil {
				return err
			}
			source := ""
			for _, l := range resp.Links {
				if l.Link == args[0] {
					source = l.Source
				}
			}
			if source == "" {
				return fmt.Errorf("link switchover: no link %q on this cluster", args[0])
			}
			srcCl, err := (&connFlags{bootstrap: source, security: sourceSec, clientID: conn.clientID}).client()
			if err != nil {
				return err
			}
			defer srcCl.Close()
			res, err := link.RunSwitchover(cmd.Context(), link.SwitchoverConfig{Link: args[0], Topics: topics, All: all,
				Dest: dest, Source: srcCl, SourceBootstrap: source, DestBootstrap: conn.bootstrap, DestProps: destProps, Timeout: timeout})
			sortPartitions(res.Promoted)
			sortPartitions(res.FailedBack)
			if asJSON {
				if perr := writeJSON(cmd.OutOrStdout(), map[string]any{"promoted": failbackRows(res.Promoted), "failed_back": failbackRows(res.FailedBack)}); perr != nil && err == nil {
					err = perr
				}
			} else {
				w := cmd.OutOrStdout()
				fmt.Fprintf(w, "promoted on this cluster:\n")
				tw := newTable(w)
				fmt.Fprintln(tw, "TOPIC\tPARTITION\tWRITABLE FROM")
				for _, p := range res.Promoted {
					fmt.Fprintf(tw, "%s\t%d\t%s\n", p.Topic, p.Partition, dash(p.WritableFrom))
				}
				_ = tw.Flush()
				if res.FailedBack != nil {
					fmt.Fprintf(w, "failed back on %s:\n", source)
					_ = printFailback(cmd, res.FailedBack, false)
				}
			}
			if err != nil {
				return fmt.Errorf("link switchover %s (source %s, destination %s): %w", args[0], source, conn.bootstrap, err)
			}
			return nil
		},
	}
	sourceSec = addSecurityFlags(cmd.Flags(), "source-", "source: ")
	cmd.Flags().StringArrayVar(&topics, "topic", nil, "switch this mirror topic over (repeatable)")
	cmd.Flags().BoolVar(&all, "all", false, "switch every mirror topic of the link over (the default without --topic)")
	cmd.Flags().DurationVar(&timeout, "timeout", time.Minute, "how long each wait may take (lag 0, the promote, the failback)")
	out.add(cmd)
	return cmd
}
