package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"sort"
	"strings"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
)

// errGroupNotFound is returned when a command names a group the cluster does not know.
var errGroupNotFound = errors.New("does not exist")

func groupNotFound(group string) error {
	return fmt.Errorf("group %q %w", group, errGroupNotFound)
}

func newGroupCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "group",
		Short: "List, describe (with lag), reset the offsets of and delete consumer groups",
		Args:  cobra.ArbitraryArgs,
		RunE:  groupRunE,
	}
	conn := addConnFlags(cmd.PersistentFlags())
	cmd.AddCommand(newGroupList(conn), newGroupDescribe(conn), newGroupResetOffsets(conn), newGroupDelete(conn))
	return cmd
}

// groupRow is one group in `group list`.
type groupRow struct {
	Group string `json:"group"`
	State string `json:"state"`
	// Protocol is the group's type: classic, consumer (KIP-848) or share (KIP-932).
	Protocol     string `json:"protocol"`
	ProtocolType string `json:"protocol_type"`
	Coordinator  int32  `json:"coordinator"`
}

func newGroupList(conn *connFlags) *cobra.Command {
	var out outputFlags
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List consumer groups",
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			asJSON, err := out.json()
			if err != nil {
				return err
			}
			return withAdmin(conn, func(adm *kadm.Client) error {
				listed, err := adm.ListGroups(cmd.Context())
				if err != nil {
					return fmt.Errorf("list groups: %w", err)
				}
				rows := []groupRow{}
				for _, g := range listed.Sorted() {
					rows = append(rows, groupRow{g.Group, g.State, groupProtocol(g.GroupType), g.ProtocolType, g.Coordinator})
				}
				return printGroupList(cmd.OutOrStdout(), rows, asJSON)
			})
		},
	}
	out.add(cmd)
	return cmd
}

func printGroupList(w io.Writer, rows []groupRow, asJSON bool) error {
	if asJSON {
		return writeJSON(w, rows)
	}
	tw := newTable(w)
	fmt.Fprintln(tw, "GROUP\tSTATE\tPROTOCOL\tPROTOCOL-TYPE\tCOORDINATOR")
	for _, r := range rows {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\n", r.Group, r.State, r.Protocol, orDash(r.ProtocolType), r.Coordinator)
	}
	return tw.Flush()
}

func newGroupDelete(conn *connFlags) *cobra.Command {
	return &cobra.Command{
		Use:   "delete GROUP",
		Short: "Delete a consumer group and its committed offsets (the group must be empty)",
		Args:  exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			group := args[0]
			return withAdmin(conn, func(adm *kadm.Client) error {
				resp, err := adm.DeleteGroup(cmd.Context(), group)
				if err == nil {
					err = withMessage(resp.Err, resp.ErrMessage)
				}
				if errors.Is(err, kerr.GroupIDNotFound) {
					return fmt.Errorf("delete group: %w", groupNotFound(group))
				}
				if err != nil {
					return fmt.Errorf("delete group %q: %w", group, err)
				}
				fmt.Fprintf(cmd.OutOrStdout(), "Deleted group %q.\n", group)
				return nil
			})
		},
	}
}

// groupDescription is `group describe`'s output.
type groupDescription struct {
	Group string `json:"group"`
	State string `json:"state"`
	// Protocol is the group's type: classic, consumer (KIP-848) or share (KIP-932).
	Protocol     string `json:"protocol"`
	ProtocolType string `json:"protocol_type"`
	// Assignor is a classic group's selected assignment protocol (range, ...) or a
	// consumer group's server-side assignor (uniform, range).
	Assignor string `json:"assignor"`
	// GroupEpoch and AssignmentEpoch are a consumer group's (0 for classic groups).
	GroupEpoch      int32            `json:"group_epoch,omitempty"`
	AssignmentEpoch int32            `json:"assignment_epoch,omitempty"`
	Coordinator     int32            `json:"coordinator"`
	Members         []groupMember    `json:"members"`
	Partitions      []groupPartition `json:"partitions"`
	TotalLag        int64            `json:"total_lag"`
}

type groupMember struct {
	MemberID   string             `json:"member_id"`
	InstanceID string             `json:"instance_id,omitempty"`
	ClientID   string             `json:"client_id"`
	Host       string             `json:"host"`
	Assignment map[string][]int32 `json:"assignment"`
	// MemberEpoch and TargetAssignment are a consumer group member's (KIP-848): the
	// target is what the broker reconciles the member towards.
	MemberEpoch      *int32             `json:"member_epoch,omitempty"`
	TargetAssignment map[string][]int32 `json:"target_assignment,omitempty"`
	// Protocol is what a consumer group member speaks: consumer, or classic for a
	// classic member during an online migration (ConsumerGroupDescribe v1 MemberType).
	Protocol string `json:"protocol,omitempty"`
}

// groupPartition is the group's position in one partition. Offsets and lag are -1
// when unknown (no commit, or the offset could not be listed).
type groupPartition struct {
	Topic           string `json:"topic"`
	Partition       int32  `json:"partition"`
	CommittedOffset int64  `json:"committed_offset"`
	LogEndOffset    int64  `json:"log_end_offset"`
	Lag             int64  `json:"lag"`
	MemberID        string `json:"member_id,omitempty"`
	ClientID        string `json:"client_id,omitempty"`
	Host            string `json:"host,omitempty"`
	Error           string `json:"error,omitempty"`
}

func newGroupDescribe(conn *connFlags) *cobra.Command {
	var out outputFlags
	var w watchFlags
	cmd := &cobra.Command{
		Use:   "describe [GROUP...]",
		Short: "Show groups' members and, per partition, committed offset, log end offset and lag",
		Long: `Show each named group (every group when none is named, as kafka-consumer-groups
--describe --all-groups): its state, members and, per partition, the committed
offset, the log end offset and the lag.

--output json (or --json) prints one object for one named group, and an array for
several or for all.

--watch refreshes every --interval (2s): in place on a terminal, and otherwise one
refresh after the other, each after a line "--- TIME ---" (JSON: a stream of
documents).`,
		Args: cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			asJSON, err := out.json()
			if err != nil {
				return err
			}
			if err := w.check(); err != nil {
				return err
			}
			return withAdmin(conn, func(adm *kadm.Client) error {
				render := func(o io.Writer) error {
					ds, err := describeGroups(cmd.Context(), adm, args)
					if err != nil {
						return err
					}
					return printGroupDescriptions(o, ds, asJSON, len(args) == 1)
				}
				return runWatch(cmd.Context(), cmd.OutOrStdout(), cmd.ErrOrStderr(), &w, cmd.CommandPath(), asJSON, render)
			})
		},
	}
	out.add(cmd)
	w.add(cmd)
	return cmd
}

// describeGroups describes the named groups, or every group when names is empty.
func describeGroups(ctx context.Context, adm *kadm.Client, names []string) ([]*groupDescription, error) {
	all := len(names) == 0
	if all {
		listed, err := adm.ListGroups(ctx)
		if err != nil {
			return nil, fmt.Errorf("list groups: %w", err)
		}
		names = listed.Groups()
		sort.Strings(names)
	}
	ds := make([]*groupDescription, 0, len(names))
	for _, g := range names {
		d, err := describeGroup(ctx, adm, g)
		if all && errors.Is(err, errGroupNotFound) { // deleted since it was listed
			continue
		}
		if err != nil {
			return nil, err
		}
		ds = append(ds, d)
	}
	return ds, nil
}

func printGroupDescriptions(w io.Writer, ds []*groupDescription, asJSON, one bool) error {
	if asJSON {
		if one && len(ds) == 1 {
			return writeJSON(w, ds[0])
		}
		return writeJSON(w, ds)
	}
	if len(ds) == 0 {
		_, err := fmt.Fprintln(w, "No consumer groups.")
		return err
	}
	for i, d := range ds {
		if i > 0 {
			fmt.Fprintln(w)
		}
		if err := printGroupDescription(w, d); err != nil {
			return err
		}
	}
	return nil
}

func describeGroup(ctx context.Context, adm *kadm.Client, group string) (*groupDescription, error) {
	if d, ok, err := describeConsumerGroup(ctx, adm, group); ok || err != nil {
		return d, err
	}
	if d, ok, err := describeShareAsGroup(ctx, adm, group); ok || err != nil {
		return d, err
	}
	lags, err := adm.Lag(ctx, group)
	if err != nil {
		return nil, fmt.Errorf("describe group %q: %w", group, err)
	}
	l, ok := lags[group]
	if !ok || errors.Is(l.Error(), kerr.GroupIDNotFound) || (l.State == "Dead" && len(l.Lag) == 0) {
		return nil, groupNotFound(group)
	}
	if err := l.Error(); err != nil {
		return nil, fmt.Errorf("describe group %q: %w", group, err)
	}
	d := &groupDescription{Group: group, State: l.State, Protocol: "classic", ProtocolType: l.ProtocolType,
		Assignor: l.Protocol, Coordinator: l.Coordinator.NodeID, Members: []groupMember{},
		Partitions: []groupPartition{}, TotalLag: l.Lag.Total()}
	for _, m := range l.Members {
		d.Members = append(d.Members, memberOf(m))
	}
	for _, pl := range l.Lag.Sorted() {
		d.Partitions = append(d.Partitions, partitionLagOf(pl))
	}
	return d, nil
}

func memberOf(m kadm.DescribedGroupMember) groupMember {
	gm := groupMember{MemberID: m.MemberID, ClientID: m.ClientID, Host: m.ClientHost,
		Assignment: map[string][]int32{}}
	if m.InstanceID != nil {
		gm.InstanceID = *m.InstanceID
	}
	if c, ok := m.Assigned.AsConsumer(); ok {
		for _, t := range c.Topics {
			ps := append([]int32(nil), t.Partitions...)
			sort.Slice(ps, func(i, j int) bool { return ps[i] < ps[j] })
			gm.Assignment[t.Topic] = ps
		}
	}
	return gm
}

func partitionLagOf(pl kadm.GroupMemberLag) groupPartition {
	gp := groupPartition{Topic: pl.Topic, Partition: pl.Partition, CommittedOffset: pl.Commit.At,
		LogEndOffset: pl.End.Offset, Lag: pl.Lag}
	if pl.End.Err != nil {
		gp.LogEndOffset = -1
	}
	if pl.Member != nil {
		gp.MemberID, gp.ClientID, gp.Host = pl.Member.MemberID, pl.Member.ClientID, pl.Member.ClientHost
	}
	if pl.Err != nil {
		gp.Error = oneLine(pl.Err.Error())
	}
	return gp
}

func printGroupDescription(w io.Writer, d *groupDescription) error {
	epochs := ""
	if d.Protocol == "consumer" || d.Protocol == "share" {
		epochs = fmt.Sprintf("  Group epoch: %d  Assignment epoch: %d", d.GroupEpoch, d.AssignmentEpoch)
	}
	fmt.Fprintf(w, "Group: %s  State: %s  Protocol: %s  Assignor: %s%s  Coordinator: %d  Members: %d  Total lag: %d\n",
		d.Group, d.State, d.Protocol, orDash(d.Assignor), epochs, d.Coordinator, len(d.Members), d.TotalLag)
	tw := newTable(w)
	if len(d.Members) > 0 && (d.Protocol == "consumer" || d.Protocol == "share") {
		fmt.Fprintln(tw, "\nMEMBER-ID\tCLIENT-ID\tHOST\tEPOCH\tASSIGNMENT\tTARGET\tPROTOCOL")
		for _, m := range d.Members {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\t%s\t%s\n", m.MemberID, m.ClientID, m.Host, *m.MemberEpoch,
				assignmentString(m.Assignment), assignmentString(m.TargetAssignment), orDash(m.Protocol))
		}
	} else if len(d.Members) > 0 {
		fmt.Fprintln(tw, "\nMEMBER-ID\tCLIENT-ID\tHOST\tASSIGNMENT")
		for _, m := range d.Members {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", m.MemberID, m.ClientID, m.Host, assignmentString(m.Assignment))
		}
	}
	fmt.Fprintln(tw, "\nTOPIC\tPARTITION\tCURRENT-OFFSET\tLOG-END-OFFSET\tLAG\tMEMBER-ID\tCLIENT-ID\tHOST\tERROR")
	for _, p := range d.Partitions {
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", p.Topic, p.Partition, dash(p.CommittedOffset),
			dash(p.LogEndOffset), dash(p.Lag), orDash(p.MemberID), orDash(p.ClientID), orDash(p.Host), p.Error)
	}
	return tw.Flush()
}

// assignmentString renders an assignment as topic:0,1 other:2.
func assignmentString(a map[string][]int32) string {
	var parts []string
	for _, t := range slices.Sorted(maps.Keys(a)) {
		parts = append(parts, t+":"+joinInt32s(a[t]))
	}
	if len(parts) == 0 {
		return "-"
	}
	return strings.Join(parts, " ")
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
