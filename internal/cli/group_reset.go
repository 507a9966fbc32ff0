package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/runnel-io/runnel/internal/clitext"
	"github.com/runnel-io/runnel/internal/offsetspec"
)

// errGroupNotEmpty is returned by reset-offsets --execute while the group has members.
var errGroupNotEmpty = errors.New("has active members")

// resetFlags are `group reset-offsets`'s flags.
type resetFlags struct {
	topics     []string // --topic T or T:0,1 (repeatable)
	allTopics  bool
	to         string
	toEarliest bool
	toLatest   bool
	toCurrent  bool
	toOffset   int64 // -1: unset
	toDatetime string
	byDuration string
	shiftBy    int64
	execute    bool
	out        outputFlags
}

// topicSel is one --topic: a topic and its partitions (nil: all of them).
type topicSel struct {
	topic      string
	partitions []int32
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
		Use:   "reset-offsets GROUP (--topic T[:P,P...]... | --all-topics) --to earliest|latest|current|OFFSET|@TIMESTAMP|TIME [--shift-by N] [--execute]",
		Short: "Plan, and with --execute commit, new offsets for an empty group",
		Long: `Compute new committed offsets for the partitions of --topic T (all of them), of
--topic T:0,1 (partitions 0 and 1; --topic repeats), or of every topic the group
has committed offsets for (--all-topics), as kafka-consumer-groups.sh --reset-offsets:

  --to earliest | latest    the log start or end (also --to-earliest, --to-latest)
  --to current              the current commit, the log end without one (--to-current)
  --to OFFSET               that offset (--to-offset N)
  --to @MS, --to TIME       the first record at or after a time: milliseconds since
                            the epoch, or RFC 3339 (2026-01-02T15:04:05Z; without a
                            zone, local time, as --to-datetime)
  --by-duration PT10M       the first record at or after that long ago (ISO 8601:
                            PT10M, PT1H30M, P1D; or 10m)
  --shift-by N              add N (may be negative) to the position above, or to the
                            current commit when it is the only option

The result is kept within the log. Without --execute the plan is only printed; with
--execute it is committed, which Kafka allows only while the group has no members.`,
		Args: exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			to, err := f.spec()
			if err != nil {
				return err
			}
			sels, err := f.selections()
			if err != nil {
				return err
			}
			if _, err := f.out.json(); err != nil {
				return err
			}
			return withAdmin(conn, func(adm *kadm.Client) error {
				return resetOffsets(cmd, adm, args[0], f, sels, to)
			})
		},
	}
	fs := cmd.Flags()
	fs.StringArrayVar(&f.topics, "topic", nil, "a topic, or T:0,1 for some of its partitions (repeatable)")
	fs.BoolVar(&f.allTopics, "all-topics", false, "every topic the group has committed offsets for")
	fs.StringVar(&f.to, "to", "", "earliest, latest, current, OFFSET, @TIMESTAMP (ms or RFC 3339) or an RFC 3339 time")
	fs.BoolVar(&f.toEarliest, "to-earliest", false, "same as --to earliest")
	fs.BoolVar(&f.toLatest, "to-latest", false, "same as --to latest")
	fs.BoolVar(&f.toCurrent, "to-current", false, "same as --to current")
	fs.Int64Var(&f.toOffset, "to-offset", -1, "same as --to OFFSET")
	fs.StringVar(&f.toDatetime, "to-datetime", "", "same as --to TIME (RFC 3339, or YYYY-MM-DDTHH:mm:SS.sss in local time)")
	fs.StringVar(&f.byDuration, "by-duration", "", "the first record at or after this long ago (ISO 8601 such as PT10M, or 10m)")
	fs.Int64Var(&f.shiftBy, "shift-by", 0, "add N (may be negative) to the position, or to the current commit")
	fs.BoolVar(&f.execute, "execute", false, "commit the plan (default: only print it)")
	f.out.add(cmd)
	return cmd
}

// spec validates the position flags; a nil spec means "from the current commit".
func (f *resetFlags) spec() (*offsetspec.Spec, error) {
	var given []string
	var spec *offsetspec.Spec
	set := func(name string, s offsetspec.Spec) {
		given = append(given, name)
		spec = &s
	}
	if f.to != "" {
		s, err := offsetspec.ParseReset(f.to)
		if err != nil {
			return nil, usageError{err}
		}
		set("--to", s)
	}
	if f.toEarliest {
		set("--to-earliest", offsetspec.Spec{Kind: offsetspec.Earliest})
	}
	if f.toLatest {
		set("--to-latest", offsetspec.Spec{Kind: offsetspec.Latest})
	}
	if f.toCurrent {
		set("--to-current", offsetspec.Spec{Kind: offsetspec.Current})
	}
	if f.toOffset >= 0 {
		set("--to-offset", offsetspec.Spec{Kind: offsetspec.Exact, N: f.toOffset})
	}
	if f.toDatetime != "" {
		ms, err := offsetspec.ParseDatetime(f.toDatetime)
		if err != nil {
			return nil, usageErrorf("bad --to-datetime: %v", err)
		}
		set("--to-datetime", offsetspec.Spec{Kind: offsetspec.Timestamp, N: ms})
	}
	if f.byDuration != "" {
		d, err := parseISODuration(f.byDuration)
		if err != nil {
			return nil, usageError{err}
		}
		if d < 0 {
			return nil, usageErrorf("bad --by-duration %q: it must not be negative", f.byDuration)
		}
		set("--by-duration", offsetspec.Spec{Kind: offsetspec.Timestamp, N: max(time.Now().Add(-d).UnixMilli(), 0)})
	}
	switch {
	case len(given) > 1:
		return nil, usageErrorf("give only one of %s", strings.Join(given, ", "))
	case len(given) == 0 && f.shiftBy == 0:
		return nil, usageErrorf("give a position (--to, --to-earliest, --to-latest, --to-current, --to-offset, --to-datetime, --by-duration), --shift-by, or both")
	}
	return spec, nil
}

// selections parses --topic T[:P,P...] and checks it against --all-topics.
func (f *resetFlags) selections() ([]topicSel, error) {
	switch {
	case f.allTopics && len(f.topics) > 0:
		return nil, usageErrorf("--topic and --all-topics cannot be used together")
	case f.allTopics:
		return nil, nil
	case len(f.topics) == 0:
		return nil, usageErrorf("give --topic T (or T:0,1) or --all-topics")
	}
	var sels []topicSel
	for _, t := range f.topics {
		name, parts, hasParts := strings.Cut(t, ":")
		if name == "" || (hasParts && parts == "") {
			return nil, usageErrorf("bad --topic %q: want T or T:0,1", t)
		}
		sel := topicSel{topic: name}
		if hasParts {
			for p := range strings.SplitSeq(parts, ",") {
				n, err := strconv.ParseInt(strings.TrimSpace(p), 10, 32)
				if err != nil || n < 0 {
					return nil, usageErrorf("bad --topic %q: partition %q is not a number", t, p)
				}
				sel.partitions = append(sel.partitions, int32(n))
			}
		}
		sels = append(sels, sel)
	}
	return sels, nil
}

func resetOffsets(cmd *cobra.Command, adm *kadm.Client, group string, f *resetFlags, sels []topicSel, to *offsetspec.Spec) error {
	ctx := cmd.Context()
	if f.execute {
		if err := checkGroupEmpty(ctx, adm, group); err != nil {
			return err
		}
	}
	if sels == nil { // --all-topics
		var err error
		if sels, err = committedTopics(ctx, adm, group); err != nil {
			return err
		}
	}
	var rows []resetRow
	for _, sel := range sels {
		r, err := planReset(ctx, adm, group, sel, to, f.shiftBy)
		if err != nil {
			return err
		}
		rows = append(rows, r...)
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
	fmt.Fprintf(cmd.ErrOrStderr(), "Committed %s for group %q.\n", clitext.Plural(len(rows), "offset", "offsets"), group)
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
		return fmt.Errorf("reset offsets: group %q %w (state %s, %s); stop its consumers first",
			group, errGroupNotEmpty, d.State, clitext.Plural(len(d.Members), "member", "members"))
	}
	return nil
}

// committedTopics is --all-topics: every topic the group has committed offsets for.
func committedTopics(ctx context.Context, adm *kadm.Client, group string) ([]topicSel, error) {
	commits, err := adm.FetchOffsets(ctx, group)
	if err == nil {
		err = commits.Error()
	}
	if errors.Is(err, kerr.GroupIDNotFound) {
		commits, err = nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("committed offsets of group %q: %w", group, err)
	}
	var sels []topicSel
	for _, t := range slices.Sorted(maps.Keys(commits)) {
		sels = append(sels, topicSel{topic: t})
	}
	if len(sels) == 0 {
		return nil, fmt.Errorf("reset offsets: group %q has no committed offsets; name the topics with --topic", group)
	}
	return sels, nil
}

// planReset computes the new offset of the selected partitions of one topic.
func planReset(ctx context.Context, adm *kadm.Client, group string, sel topicSel, to *offsetspec.Spec, shift int64) ([]resetRow, error) {
	topic := sel.topic
	td, err := topicDetail(ctx, adm, topic)
	if err != nil {
		return nil, err
	}
	parts := td.Partitions.Numbers()
	if sel.partitions != nil {
		for _, p := range sel.partitions {
			if _, err := choosePartitions(td, p); err != nil {
				return nil, fmt.Errorf("reset offsets: %w", err)
			}
		}
		parts = sel.partitions
	}
	known, err := partitionOffsetsFor(ctx, adm, group, topic, to)
	if err != nil {
		return nil, err
	}
	rows := make([]resetRow, 0, len(parts))
	for _, p := range parts {
		po, ok := known[p]
		if !ok {
			return nil, fmt.Errorf("topic %q partition %d: no log offsets listed", topic, p)
		}
		at, err := offsetspec.Target(to, shift, po)
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
func partitionOffsetsFor(ctx context.Context, adm *kadm.Client, group, topic string, to *offsetspec.Spec) (map[int32]offsetspec.Partition, error) {
	bounds, err := logBounds(ctx, adm, topic)
	if err != nil {
		return nil, err
	}
	commits, err := adm.FetchOffsetsForTopics(ctx, group, topic)
	if err == nil {
		err = commits.Error()
	}
	if errors.Is(err, kerr.GroupIDNotFound) { // a group that never committed
		commits, err = nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("committed offsets of group %q: %w", group, err)
	}
	atTime, err := offsetsAtTime(ctx, adm, topic, to)
	if err != nil {
		return nil, err
	}
	known := make(map[int32]offsetspec.Partition, len(bounds))
	for p, b := range bounds {
		po := offsetspec.Partition{Start: b.start, End: b.end, Committed: -1, AtTime: -1}
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

func offsetsAtTime(ctx context.Context, adm *kadm.Client, topic string, to *offsetspec.Spec) (kadm.ListedOffsets, error) {
	if to == nil || to.Kind != offsetspec.Timestamp {
		return nil, nil
	}
	listed, err := adm.ListOffsetsAfterMilli(ctx, to.N, topic)
	if err == nil {
		err = listed.Error()
	}
	if err != nil {
		return nil, fmt.Errorf("offsets of topic %q at %d ms: %w", topic, to.N, err)
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
