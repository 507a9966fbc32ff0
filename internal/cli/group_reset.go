package cli

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
)

// errGroupNotEmpty is returned by reset-offsets --execute while the group has members.
var errGroupNotEmpty = errors.New("has active members")

// resetFlags are `group reset-offsets`'s flags.
type resetFlags struct {
	topic   string
	to      string
	shiftBy int64
	execute bool
	out     outputFlags
}

// resetRow is one partition of a reset plan. Current is -1 without a commit.
type resetRow struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	Current   int64  `json:"current_offset"`
	New       int64  `json:"new_offset"`
	LogStart  int64  `json:"log_start_offset"`
	LogEnd    int64  `json:"log_end_offset"`
}

func newGroupResetOffsets(conn *connFlags) *cobra.Command {
	f := &resetFlags{}
	cmd := &cobra.Command{
		Use:   "reset-offsets GROUP --topic T --to earliest|latest|OFFSET|@TIMESTAMP [--shift-by N] [--execute]",
		Short: "Plan, and with --execute commit, new offsets for an empty group",
		Long: `Compute new committed offsets for every partition of a topic: the --to position
(or the current commit, when only --shift-by is given) plus --shift-by, kept within
the log. Without --execute the plan is only printed. With --execute it is committed,
which Kafka allows only while the group has no members.`,
		Args: exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			to, err := f.spec()
			if err != nil {
				return err
			}
			if _, err := f.out.json(); err != nil {
				return err
			}
			return withAdmin(conn, func(adm *kadm.Client) error {
				return resetOffsets(cmd, adm, args[0], f, to)
			})
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&f.topic, "topic", "", "the topic whose offsets to reset (required)")
	fs.StringVar(&f.to, "to", "", "earliest, latest, OFFSET or @TIMESTAMP (ms or RFC 3339)")
	fs.Int64Var(&f.shiftBy, "shift-by", 0, "add N (may be negative) to the --to position or to the current commit")
	fs.BoolVar(&f.execute, "execute", false, "commit the plan (default: only print it)")
	f.out.add(cmd)
	return cmd
}

// spec validates the flags; a nil spec means "from the current commit".
func (f *resetFlags) spec() (*offsetSpec, error) {
	if f.topic == "" {
		return nil, usageErrorf("--topic is required")
	}
	if f.to == "" {
		if f.shiftBy == 0 {
			return nil, usageErrorf("give --to, --shift-by or both")
		}
		return nil, nil
	}
	s, err := parseResetSpec(f.to)
	if err != nil {
		return nil, usageError{err}
	}
	return &s, nil
}

func resetOffsets(cmd *cobra.Command, adm *kadm.Client, group string, f *resetFlags, to *offsetSpec) error {
	ctx := cmd.Context()
	if f.execute {
		if err := checkGroupEmpty(ctx, adm, group); err != nil {
			return err
		}
	}
	rows, err := planReset(ctx, adm, group, f.topic, to, f.shiftBy)
	if err != nil {
		return err
	}
	asJSON, err := f.out.json()
	if err != nil {
		return err
	}
	if err := printResetPlan(cmd.OutOrStdout(), rows, asJSON); err != nil {
		return err
	}
	if !f.execute {
		fmt.Fprintln(cmd.ErrOrStderr(), "Dry run: nothing committed. Add --execute to commit these offsets.")
		return nil
	}
	if err := commitReset(ctx, adm, group, rows); err != nil {
		return err
	}
	fmt.Fprintf(cmd.ErrOrStderr(), "Committed %d offsets for group %q.\n", len(rows), group)
	return nil
}

// checkGroupEmpty fails unless the group has no members (Empty, or not there yet).
func checkGroupEmpty(ctx context.Context, adm *kadm.Client, group string) error {
	described, err := adm.DescribeGroups(ctx, group)
	if err != nil {
		return fmt.Errorf("describe group %q: %w", group, err)
	}
	d, ok := described[group]
	if !ok || errors.Is(d.Err, kerr.GroupIDNotFound) {
		return nil
	}
	if d.Err != nil {
		return fmt.Errorf("describe group %q: %w", group, withMessage(d.Err, d.ErrMessage))
	}
	if len(d.Members) > 0 || (d.State != "Empty" && d.State != "Dead") {
		return fmt.Errorf("reset offsets: group %q %w (state %s, %d members); stop its consumers first",
			group, errGroupNotEmpty, d.State, len(d.Members))
	}
	return nil
}

// planReset computes the new offset of every partition of topic.
func planReset(ctx context.Context, adm *kadm.Client, group, topic string, to *offsetSpec, shift int64) ([]resetRow, error) {
	td, err := topicDetail(ctx, adm, topic)
	if err != nil {
		return nil, err
	}
	known, err := partitionOffsetsFor(ctx, adm, group, topic, to)
	if err != nil {
		return nil, err
	}
	rows := make([]resetRow, 0, len(td.Partitions))
	for _, p := range td.Partitions.Numbers() {
		po, ok := known[p]
		if !ok {
			return nil, fmt.Errorf("topic %q partition %d: no log offsets listed", topic, p)
		}
		at, err := resetTarget(to, shift, po)
		if err != nil {
			return nil, fmt.Errorf("group %q topic %q partition %d: %w", group, topic, p, err)
		}
		rows = append(rows, resetRow{Topic: topic, Partition: p, Current: po.Committed, New: at,
			LogStart: po.Start, LogEnd: po.End})
	}
	return rows, nil
}

// partitionOffsetsFor gathers the log bounds, the group's commits and, for a
// timestamp, the offsets at that time.
func partitionOffsetsFor(ctx context.Context, adm *kadm.Client, group, topic string, to *offsetSpec) (map[int32]partitionOffsets, error) {
	bounds, err := logBounds(ctx, adm, topic)
	if err != nil {
		return nil, err
	}
	commits, err := adm.FetchOffsetsForTopics(ctx, group, topic)
	if err == nil {
		err = commits.Error()
	}
	if err != nil {
		return nil, fmt.Errorf("committed offsets of group %q: %w", group, err)
	}
	atTime, err := offsetsAtTime(ctx, adm, topic, to)
	if err != nil {
		return nil, err
	}
	known := make(map[int32]partitionOffsets, len(bounds))
	for p, b := range bounds {
		po := partitionOffsets{Start: b.start, End: b.end, Committed: -1, AtTime: -1}
		if c, ok := commits.Lookup(topic, p); ok {
			po.Committed = c.At
		}
		if o, ok := atTime.Lookup(topic, p); ok && o.Err == nil {
			po.AtTime = o.Offset
		}
		known[p] = po
	}
	return known, nil
}

func offsetsAtTime(ctx context.Context, adm *kadm.Client, topic string, to *offsetSpec) (kadm.ListedOffsets, error) {
	if to == nil || to.kind != offsetTimestamp {
		return nil, nil
	}
	listed, err := adm.ListOffsetsAfterMilli(ctx, to.n, topic)
	if err == nil {
		err = listed.Error()
	}
	if err != nil {
		return nil, fmt.Errorf("offsets of topic %q at %d ms: %w", topic, to.n, err)
	}
	return listed, nil
}

func printResetPlan(w io.Writer, rows []resetRow, asJSON bool) error {
	if asJSON {
		return writeJSON(w, rows)
	}
	tw := newTable(w)
	fmt.Fprintln(tw, "TOPIC\tPARTITION\tCURRENT-OFFSET\tNEW-OFFSET\tLOG-START\tLOG-END")
	for _, r := range rows {
		fmt.Fprintf(tw, "%s\t%d\t%s\t%d\t%d\t%d\n", r.Topic, r.Partition, dash(r.Current), r.New, r.LogStart, r.LogEnd)
	}
	return tw.Flush()
}

func commitReset(ctx context.Context, adm *kadm.Client, group string, rows []resetRow) error {
	var offs kadm.Offsets
	for _, r := range rows {
		offs.Add(kadm.Offset{Topic: r.Topic, Partition: r.Partition, At: r.New, LeaderEpoch: -1})
	}
	resps, err := adm.CommitOffsets(ctx, group, offs)
	if err == nil {
		err = resps.Error()
	}
	if err != nil {
		return fmt.Errorf("commit offsets of group %q: %w", group, err)
	}
	return nil
}
