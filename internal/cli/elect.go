package cli

import (
	"errors"
	"fmt"
	"io"
	"slices"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/runnel-io/runnel/internal/clitext"
)

// clusterExtra returns the `cluster` subcommands that live in their own files
// (elect-leaders, decommission, quorum, add-voter, remove-voter); newClusterCommand
// adds them.
func clusterExtra(conn *connFlags) []*cobra.Command {
	return append([]*cobra.Command{newElectLeaders(conn), newDecommission(conn)}, clusterQuorumCommands(conn)...)
}

// electRow is one partition's result in `cluster elect-leaders`.
type electRow struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	// Result is "elected" (its preferred replica leads now), "already preferred"
	// (it led already: Kafka's ELECTION_NOT_NEEDED) or "error".
	Result string `json:"result"`
	Error  string `json:"error,omitempty"`
}

func newElectLeaders(conn *connFlags) *cobra.Command {
	var topic string
	var partition int32
	var out outputFlags
	cmd := &cobra.Command{
		Use:   "elect-leaders",
		Short: "Move leadership back to each partition's preferred replica (ElectLeaders)",
		Long: `Elect the preferred replica (the first of the replica list) leader of every partition,
of one topic's partitions (--topic), or of one partition (--topic and --partition), as
kafka-leader-election.sh --election-type preferred does. Prints per partition whether
its leader was elected, was already the preferred one, or could not be (with the
reason: the preferred replica is down or out of sync, say).`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			asJSON, err := out.json()
			if err != nil {
				return err
			}
			if cmd.Flags().Changed("partition") && topic == "" {
				return usageErrorf("--partition needs --topic")
			}
			return withAdmin(conn, func(adm *kadm.Client) error {
				var set kadm.TopicsSet // nil: every partition
				if topic != "" {
					if set, err = electSet(cmd, adm, topic, partition); err != nil {
						return err
					}
				}
				res, err := adm.ElectLeaders(cmd.Context(), kadm.ElectPreferredReplica, set)
				if err != nil {
					return fmt.Errorf("elect leaders: %w", brokerMessage(err))
				}
				rows := electRows(res)
				if asJSON {
					err = writeJSON(cmd.OutOrStdout(), rows)
				} else {
					err = printElectRows(cmd.OutOrStdout(), rows)
				}
				if err == nil {
					err = electFailures(rows)
				}
				return err
			})
		},
	}
	cmd.Flags().StringVar(&topic, "topic", "", "only this topic's partitions")
	cmd.Flags().Int32Var(&partition, "partition", -1, "only this partition (with --topic)")
	out.add(cmd)
	return cmd
}

// electSet is the partitions of topic (or just partition p, if p ≥ 0), checked
// against the metadata so that a wrong name or number is a clear error.
func electSet(cmd *cobra.Command, adm *kadm.Client, topic string, p int32) (kadm.TopicsSet, error) {
	md, err := adm.Metadata(cmd.Context(), topic)
	if err != nil {
		return nil, fmt.Errorf("metadata of topic %q: %w", topic, err)
	}
	td, ok := md.Topics[topic]
	if !ok || errors.Is(td.Err, kerr.UnknownTopicOrPartition) {
		return nil, topicNotFound(topic)
	}
	if td.Err != nil {
		return nil, fmt.Errorf("metadata of topic %q: %w", topic, td.Err)
	}
	set := kadm.TopicsSet{}
	if p >= 0 {
		if _, ok := td.Partitions[p]; !ok {
			return nil, fmt.Errorf("topic %q has no partition %d (it has %d)", topic, p, len(td.Partitions))
		}
		set.Add(topic, p)
		return set, nil
	}
	for _, pd := range td.Partitions {
		set.Add(topic, pd.Partition)
	}
	return set, nil
}

func electRows(res kadm.ElectLeadersResults) []electRow {
	rows := []electRow{}
	for _, ps := range res {
		for _, r := range ps {
			row := electRow{Topic: r.Topic, Partition: r.Partition, Result: "elected"}
			switch {
			case errors.Is(r.Err, kerr.ElectionNotNeeded):
				row.Result = "already preferred"
			case r.Err != nil:
				row.Result, row.Error = "error", withMessage(r.Err, r.ErrMessage).Error()
			}
			rows = append(rows, row)
		}
	}
	slices.SortFunc(rows, func(a, b electRow) int {
		if a.Topic != b.Topic {
			if a.Topic < b.Topic {
				return -1
			}
			return 1
		}
		return int(a.Partition - b.Partition)
	})
	return rows
}

func printElectRows(w io.Writer, rows []electRow) error {
	if len(rows) == 0 {
		// Asked for every partition, Kafka (and Runnel) list only those that
		// changed or failed for another reason than ELECTION_NOT_NEEDED.
		_, err := fmt.Fprintln(w, "Every partition is led by its preferred replica: nothing to elect.")
		return err
	}
	tw := newTable(w)
	fmt.Fprintln(tw, "TOPIC\tPARTITION\tRESULT")
	elected, already := 0, 0
	for _, r := range rows {
		res := r.Result
		switch r.Result {
		case "error":
			res = "error: " + r.Error
		case "elected":
			elected++
		default:
			already++
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\n", r.Topic, r.Partition, res)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(w, "\n%d elected, %d already led by their preferred replica, %d failed\n", elected, already, len(rows)-elected-already)
	return nil
}

// electFailures makes the command fail (exit 1) when any partition could not elect
// its preferred leader, as kafka-leader-election.sh does.
func electFailures(rows []electRow) error {
	n := 0
	for _, r := range rows {
		if r.Result == "error" {
			n++
		}
	}
	if n > 0 {
		return fmt.Errorf("%d of %s could not elect their preferred leader", n, clitext.Plural(len(rows), "partition", "partitions"))
	}
	return nil
}
