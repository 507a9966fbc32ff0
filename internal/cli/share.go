package cli

// `runnel share`: KIP-932 share groups, described with ShareGroupDescribe and
// DescribeShareGroupOffsets, their start offsets set with AlterShareGroupOffsets and
// deleted with DeleteGroups once ListGroups says the group is a share group (each
// request goes to the group's coordinator).

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/runnel-io/runnel/internal/offsetspec"
)

func init() { register(newShareCommand) }

func newShareCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "share",
		Short: "Describe, reset the start offsets of and delete share groups (KIP-932)",
		Args:  cobra.ArbitraryArgs,
		RunE:  groupRunE,
	}
	conn := addConnFlags(cmd.PersistentFlags())
	cmd.AddCommand(newShareDescribe(conn), newShareResetOffsets(conn), newShareDelete(conn))
	return cmd
}

// shareDescription is `share describe`'s output.
type shareDescription struct {
	Group           string           `json:"group"`
	State           string           `json:"state"`
	Protocol        string           `json:"protocol"` // always "share"
	Assignor        string           `json:"assignor"`
	GroupEpoch      int32            `json:"group_epoch"`
	AssignmentEpoch int32            `json:"assignment_epoch"`
	Coordinator     int32            `json:"coordinator"`
	Members         []shareMember    `json:"members"`
	Partitions      []sharePartition `json:"partitions"`
	TotalLag        int64            `json:"total_lag"`
}

type shareMember struct {
	MemberID    string             `json:"member_id"`
	ClientID    string             `json:"client_id"`
	Host        string             `json:"host"`
	MemberEpoch int32              `json:"member_epoch"`
	Subscribed  []string           `json:"subscribed_topics"`
	Assignment  map[string][]int32 `json:"assignment"`
}

// sharePartition is one share partition: its start offset (every record before it is
// done), the log end offset and the lag (records from the start offset to the log end
// not yet acknowledged or archived; -1 when unknown).
type sharePartition struct {
	Topic        string `json:"topic"`
	Partition    int32  `json:"partition"`
	StartOffset  int64  `json:"start_offset"`
	LogEndOffset int64  `json:"log_end_offset"`
	Lag          int64  `json:"lag"`
	Error        string `json:"error,omitempty"`
}

func newShareDescribe(conn *connFlags) *cobra.Command {
	var out outputFlags
	cmd := &cobra.Command{
		Use:   "describe GROUP",
		Short: "Show a share group's members and, per partition, its start offset and lag",
		Long: `Show a share group: its state, group epoch, members (epochs, subscriptions and
assignments; members share partitions) and, per share partition, the start offset
(every record before it is acknowledged, rejected or past the delivery limit), the
log end offset and the lag: the records from the start offset to the log end not
yet acknowledged. When the broker cannot say (the coordinator does not lead the
partition), the lag shown is the log end offset less the start offset.`,
		Args: exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			asJSON, err := out.json()
			if err != nil {
				return err
			}
			return withAdmin(conn, func(adm *kadm.Client) error {
				d, err := describeShare(cmd.Context(), adm, args[0])
				if err != nil {
					return err
				}
				if asJSON {
					return writeJSON(cmd.OutOrStdout(), d)
				}
				return printShareDescription(cmd.OutOrStdout(), d)
			})
		},
	}
	out.add(cmd)
	return cmd
}

// describeShare describes group; groupNotFound when the cluster has no share group of
// that name (a group of another kind included).
func describeShare(ctx context.Context, adm *kadm.Client, group string) (*shareDescription, error) {
	ds, err := adm.DescribeShareGroups(ctx, group)
	if err != nil {
		return nil, fmt.Errorf("describe share group %q: %w", group, err)
	}
	sg, ok := ds[group]
	if !ok {
		return nil, fmt.Errorf("describe share group %q: no answer", group)
	}
	d := &shareDescription{Group: group, Protocol: "share", Members: []shareMember{}, Partitions: []sharePartition{}}
	switch {
	case sg.Err == nil:
		d.State, d.Assignor, d.GroupEpoch, d.AssignmentEpoch = sg.GroupState, sg.Assignor, sg.GroupEpoch, sg.AssignmentEpoch
		d.Coordinator = sg.Coordinator.NodeID
		for _, m := range sg.Members {
			d.Members = append(d.Members, shareMember{MemberID: m.MemberID, ClientID: m.ClientID, Host: m.ClientHost,
				MemberEpoch: m.MemberEpoch, Subscribed: m.SubscribedTopicNames, Assignment: topicsSetMap(m.Assignment)})
		}
	case errors.Is(sg.Err, kerr.GroupIDNotFound):
		// Membership is not kept across a coordinator move: a group known only by its
		// state is described from it below, as Empty.
		d.State = "Empty"
	default:
		return nil, fmt.Errorf("describe share group %q: %w", group, sg.Err)
	}
	offs, err := adm.DescribeShareGroupOffsets(ctx, group)
	if err != nil {
		return nil, fmt.Errorf("share offsets of group %q: %w", group, err)
	}
	o := offs[group]
	if errors.Is(o.Err, kerr.GroupIDNotFound) {
		return nil, groupNotFound(group)
	}
	if o.Err != nil {
		return nil, fmt.Errorf("share offsets of group %q: %w", group, o.Err)
	}
	ends := map[string]map[int32]int64{}
	for topic := range o.Offsets {
		bounds, err := logBounds(ctx, adm, topic)
		if err != nil {
			return nil, err
		}
		ends[topic] = map[int32]int64{}
		for p, b := range bounds {
			ends[topic][p] = b.end
		}
	}
	for topic, ps := range o.Offsets {
		for p, so := range ps {
			sp := sharePartition{Topic: topic, Partition: p, StartOffset: so.StartOffset, LogEndOffset: -1, Lag: so.Lag}
			if end, ok := ends[topic][p]; ok {
				sp.LogEndOffset = end
				if sp.Lag < 0 && so.StartOffset >= 0 {
					sp.Lag = max(end-so.StartOffset, 0)
				}
			}
			if so.Err != nil {
				sp.Error = oneLine(so.Err.Error())
			}
			if sp.Lag > 0 {
				d.TotalLag += sp.Lag
			}
			d.Partitions = append(d.Partitions, sp)
		}
	}
	sort.Slice(d.Partitions, func(i, j int) bool {
		a, b := d.Partitions[i], d.Partitions[j]
		return a.Topic < b.Topic || a.Topic == b.Topic && a.Partition < b.Partition
	})
	return d, nil
}

func printShareDescription(w io.Writer, d *shareDescription) error {
	fmt.Fprintf(w, "Group: %s  State: %s  Protocol: share  Assignor: %s  Group epoch: %d  Assignment epoch: %d  Coordinator: %d  Members: %d  Total lag: %d\n",
		d.Group, d.State, orDash(d.Assignor), d.GroupEpoch, d.AssignmentEpoch, d.Coordinator, len(d.Members), d.TotalLag)
	tw := newTable(w)
	if len(d.Members) > 0 {
		fmt.Fprintln(tw, "\nMEMBER-ID\tCLIENT-ID\tHOST\tEPOCH\tSUBSCRIBED\tASSIGNMENT")
		for _, m := range d.Members {
			sub := "-"
			if len(m.Subscribed) > 0 {
				sub = quotedList(m.Subscribed)
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\t%s\n", m.MemberID, m.ClientID, m.Host, m.MemberEpoch, sub, assignmentString(m.Assignment))
		}
	}
	fmt.Fprintln(tw, "\nTOPIC\tPARTITION\tSTART-OFFSET\tLOG-END-OFFSET\tLAG\tERROR")
	for _, p := range d.Partitions {
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\t%s\n", p.Topic, p.Partition, dash(p.StartOffset), dash(p.LogEndOffset), dash(p.Lag), p.Error)
	}
	return tw.Flush()
}

// shareResetRow is one partition of a share reset plan. Current is -1 without state.
type shareResetRow struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	Current   int64  `json:"current_start_offset"`
	New       int64  `json:"new_start_offset"`
	LogStart  int64  `json:"log_start_offset"`
	LogEnd    int64  `json:"log_end_offset"`
}

func newShareResetOffsets(conn *connFlags) *cobra.Command {
	var topic, to string
	var dryRun bool
	var out outputFlags
	cmd := &cobra.Command{
		Use:   "reset-offsets GROUP --topic T --to earliest|latest|OFFSET [--dry-run]",
		Short: "Set the start offset of an empty share group on every partition of a topic",
		Long: `Set where share group GROUP consumes topic T from, on every partition of T
(AlterShareGroupOffsets): --to earliest (the log start), latest (the log end) or
OFFSET (kept within each partition's log). Nothing is in flight afterwards: the
records from the new start offset are delivered again, with new delivery counts.
The group must have no members (stop its consumers first). --dry-run prints the
plan without changing anything.`,
		Args: exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			asJSON, err := out.json()
			if err != nil {
				return err
			}
			if topic == "" {
				return usageErrorf("--topic is required")
			}
			spec, err := parseShareResetSpec(to)
			if err != nil {
				return err
			}
			cl, err := conn.client()
			if err != nil {
				return err
			}
			defer cl.Close()
			return resetShareOffsets(cmd, cl, args[0], topic, spec, dryRun, asJSON)
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&topic, "topic", "", "the topic whose share partitions to reset (all its partitions)")
	fs.StringVar(&to, "to", "", "earliest, latest or an OFFSET")
	fs.BoolVar(&dryRun, "dry-run", false, "print the plan without changing the group")
	out.add(cmd)
	return cmd
}

// parseShareResetSpec parses --to: earliest, latest or an offset >= 0.
func parseShareResetSpec(to string) (offsetspec.Spec, error) {
	switch to {
	case "earliest":
		return offsetspec.Spec{Kind: offsetspec.Earliest}, nil
	case "latest":
		return offsetspec.Spec{Kind: offsetspec.Latest}, nil
	case "":
		return offsetspec.Spec{}, usageErrorf("--to is required: earliest, latest or an OFFSET")
	}
	n, err := strconv.ParseInt(to, 10, 64)
	if err != nil || n < 0 {
		return offsetspec.Spec{}, usageErrorf("bad --to %q: want earliest, latest or an offset (>= 0)", to)
	}
	return offsetspec.Spec{Kind: offsetspec.Exact, N: n}, nil
}

func resetShareOffsets(cmd *cobra.Command, cl *kgo.Client, group, topic string, spec offsetspec.Spec, dryRun, asJSON bool) error {
	ctx := cmd.Context()
	adm := kadm.NewClient(cl)
	if _, err := topicDetail(ctx, adm, topic); err != nil {
		return err
	}
	bounds, err := logBounds(ctx, adm, topic)
	if err != nil {
		return err
	}
	current := map[int32]int64{}
	if offs, err := adm.DescribeShareGroupOffsets(ctx, group); err == nil && offs[group].Err == nil {
		for p, so := range offs[group].Offsets[topic] {
			current[p] = so.StartOffset
		}
	}
	var rows []shareResetRow
	starts := map[int32]int64{}
	for p, b := range bounds {
		row := shareResetRow{Topic: topic, Partition: p, Current: -1, LogStart: b.start, LogEnd: b.end}
		if c, ok := current[p]; ok {
			row.Current = c
		}
		// Earliest, latest or an offset: no commit to shift from, so no error.
		row.New, _ = offsetspec.Target(&spec, 0, offsetspec.Partition{Start: b.start, End: b.end, Committed: -1, AtTime: -1})
		rows = append(rows, row)
		starts[p] = row.New
	}
	sort.Slice(rows, func(i, j int) bool { return rows[i].Partition < rows[j].Partition })
	if !dryRun {
		err := alterShareOffsets(ctx, cl, group, topic, starts)
		switch {
		case errors.Is(err, kerr.NonEmptyGroup):
			return fmt.Errorf("reset share group %q: the group has members; stop its consumers first: %w", group, err)
		case errors.Is(err, kerr.GroupIDNotFound):
			return fmt.Errorf("reset share group %q: %w (a group of another kind has this name)", group, err)
		case err != nil:
			return fmt.Errorf("reset share group %q on topic %q: %w", group, topic, err)
		}
	}
	if asJSON {
		return writeJSON(cmd.OutOrStdout(), rows)
	}
	tw := newTable(cmd.OutOrStdout())
	fmt.Fprintln(tw, "TOPIC\tPARTITION\tCURRENT-START-OFFSET\tNEW-START-OFFSET\tLOG-START-OFFSET\tLOG-END-OFFSET")
	for _, r := range rows {
		fmt.Fprintf(tw, "%s\t%d\t%s\t%d\t%d\t%d\n", r.Topic, r.Partition, dash(r.Current), r.New, r.LogStart, r.LogEnd)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if dryRun {
		_, err = fmt.Fprintf(cmd.OutOrStdout(), "Dry run: share group %q not changed.\n", group)
	} else {
		_, err = fmt.Fprintf(cmd.OutOrStdout(), "Reset share group %q on topic %q.\n", group, topic)
	}
	return err
}

// alterShareOffsets sets group's start offsets on topic's partitions to starts
// (AlterShareGroupOffsets, kmsg's: kadm's drops the broker's messages). A refusal of
// the whole request is returned with the broker's message; otherwise the refused
// partitions, each by number and the start offset asked, with the broker's message
// (the error wraps the first partition's).
func alterShareOffsets(ctx context.Context, cl *kgo.Client, group, topic string, starts map[int32]int64) error {
	req := kmsg.NewPtrAlterShareGroupOffsetsRequest()
	req.GroupID = group
	rt := kmsg.NewAlterShareGroupOffsetsRequestTopic()
	rt.Topic = topic
	for p, start := range starts {
		rp := kmsg.NewAlterShareGroupOffsetsRequestTopicPartition()
		rp.Partition, rp.StartOffset = p, start
		rt.Partitions = append(rt.Partitions, rp)
	}
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return err
	}
	if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
		return withMessage(err, strOrEmpty(resp.ErrorMessage))
	}
	var refused []partitionError
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			if err := kerr.ErrorForCode(p.ErrorCode); err != nil {
				refused = append(refused, partitionError{p.Partition, starts[p.Partition], withMessage(err, strOrEmpty(p.ErrorMessage))})
			}
		}
	}
	if len(refused) == 0 {
		return nil
	}
	sort.Slice(refused, func(i, j int) bool { return refused[i].partition < refused[j].partition })
	return refusedPartitions(refused)
}

// partitionError is one partition's refusal of a new start offset.
type partitionError struct {
	partition int32
	start     int64
	err       error
}

// refusedPartitions names every refused partition; it wraps the first one's error.
type refusedPartitions []partitionError

func (r refusedPartitions) Error() string {
	parts := make([]string, len(r))
	for i, p := range r {
		parts[i] = fmt.Sprintf("partition %d (start offset %d): %v", p.partition, p.start, p.err)
	}
	return strings.Join(parts, "; ")
}

func (r refusedPartitions) Unwrap() error { return r[0].err }

func strOrEmpty(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

func newShareDelete(conn *connFlags) *cobra.Command {
	return &cobra.Command{
		Use:   "delete GROUP",
		Short: "Delete a share group and its share-partition state (the group must be empty)",
		Long: `Delete share group GROUP and its share-partition state (DeleteGroups). The group
must have no members. A group of another kind (classic or consumer) is refused:
delete it with runnel group delete.`,
		Args: exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			group := args[0]
			return withAdmin(conn, func(adm *kadm.Client) error {
				if err := checkShareGroup(cmd.Context(), adm, group); err != nil {
					return err
				}
				resp, err := adm.DeleteGroup(cmd.Context(), group)
				if err == nil {
					err = withMessage(resp.Err, resp.ErrMessage)
				}
				switch {
				case errors.Is(err, kerr.GroupIDNotFound):
					return fmt.Errorf("delete share group: %w", groupNotFound(group))
				case errors.Is(err, kerr.NonEmptyGroup):
					return fmt.Errorf("delete share group %q: the group has members; stop its consumers first: %w", group, err)
				case err != nil:
					return fmt.Errorf("delete share group %q: %w", group, err)
				}
				fmt.Fprintf(cmd.OutOrStdout(), "Deleted share group %q.\n", group)
				return nil
			})
		},
	}
}

// checkShareGroup refuses a group ListGroups names as another kind than share:
// DeleteGroups deletes an empty group of any kind, as Kafka's kafka-share-groups
// checks first. A group ListGroups does not name is left to DeleteGroups: a share
// group whose coordinator moved is known only by its share-partition state, and an
// absent one answers GROUP_ID_NOT_FOUND.
func checkShareGroup(ctx context.Context, adm *kadm.Client, group string) error {
	listed, err := adm.ListGroupsByType(ctx, nil)
	if err != nil {
		return fmt.Errorf("delete share group %q: listing the groups to check its type: %w", group, err)
	}
	g, ok := listed[group]
	if !ok {
		return nil
	}
	kind := g.GroupType
	if kind == "" { // a broker before ListGroups v5 (KIP-848), which has no share groups
		kind = "classic"
		if g.ProtocolType == "share" {
			kind = "share"
		}
	}
	if !strings.EqualFold(kind, "share") {
		return fmt.Errorf("delete share group %q: it is a %s group, not a share group; delete it with runnel group delete", group, strings.ToLower(kind))
	}
	return nil
}
