package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/runnel-io/runnel/internal/balance"
	"github.com/runnel-io/runnel/internal/clitext"
	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kadm"
)

func init() { register(newReassignCommand) }

func newReassignCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "reassign",
		Short: "Move partitions onto other nodes (scale out, drain a node), throttled, with progress",
		Long: `Move partition replicas between nodes through Kafka's AlterPartitionReassignments,
as kafka-reassign-partitions.sh does, with the same reassignment JSON:

  runnel reassign plan --nodes 1,2,3,4 > plan.json   # spread replicas and leaders evenly
  runnel reassign execute --plan plan.json --throttle 10485760
  runnel reassign status                             # bytes copied, left, ETA
  runnel reassign cancel                             # roll every move in progress back

The commands work against any Kafka cluster. See docs/scale-out.md.`,
		Args: cobra.ArbitraryArgs,
		RunE: groupRunE,
	}
	conn := addConnFlags(cmd.PersistentFlags())
	cmd.AddCommand(newReassignPlan(conn), newReassignExecute(conn), newReassignStatus(conn), newReassignCancel(conn))
	return cmd
}

// reassignmentJSON is Kafka's reassignment file, as kafka-reassign-partitions.sh
// writes and reads it.
type reassignmentJSON struct {
	Version    int                 `json:"version"`
	Partitions []reassignPartition `json:"partitions"`
}

type reassignPartition struct {
	Topic     string   `json:"topic"`
	Partition int32    `json:"partition"`
	Replicas  []int32  `json:"replicas"`
	LogDirs   []string `json:"log_dirs,omitempty"`
}

// writeReassignment writes the file with one partition a line, which diffs and
// reads better than one long line and is the same JSON.
func writeReassignment(w io.Writer, ps []reassignPartition) error {
	var b bytes.Buffer
	b.WriteString(`{"version":1,"partitions":[`)
	for i, p := range ps {
		line, err := json.Marshal(p)
		if err != nil {
			return err
		}
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString("\n  ")
		b.Write(line)
	}
	if len(ps) > 0 {
		b.WriteByte('\n')
	}
	b.WriteString("]}\n")
	_, err := w.Write(b.Bytes())
	return err
}

// clusterView is what the reassign commands read from Metadata.
type clusterView struct {
	md    kadm.Metadata
	live  map[int32]kadm.BrokerDetail // the brokers Metadata lists (live ones)
	parts []balance.Partition         // every partition, by topic and partition
}

func loadClusterView(ctx context.Context, adm *kadm.Client) (*clusterView, error) {
	md, err := adm.Metadata(ctx)
	if err != nil {
		return nil, fmt.Errorf("cluster metadata: %w", err)
	}
	v := &clusterView{md: md, live: map[int32]kadm.BrokerDetail{}}
	for _, b := range md.Brokers {
		v.live[b.NodeID] = b
	}
	for _, td := range md.Topics.Sorted() {
		if td.Err != nil {
			return nil, fmt.Errorf("metadata of topic %q: %w", td.Topic, td.Err)
		}
		for _, p := range td.Partitions.Sorted() {
			v.parts = append(v.parts, balance.Partition{Topic: td.Topic, Partition: p.Partition, Replicas: slices.Clone(p.Replicas)})
		}
	}
	return v, nil
}

// liveIDs returns the live brokers' ids, ascending.
func (v *clusterView) liveIDs() []int32 {
	ids := make([]int32, 0, len(v.live))
	for id := range v.live {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

// holds reports whether node id holds a replica of any partition.
func (v *clusterView) holds(id int32) bool {
	return slices.ContainsFunc(v.parts, func(p balance.Partition) bool { return slices.Contains(p.Replicas, id) })
}

// balanceNodes turns ids into the planner's nodes with their racks; every id must
// be a live broker.
func (v *clusterView) balanceNodes(ids []int32) ([]balance.Node, error) {
	var ns []balance.Node
	for _, id := range ids {
		b, ok := v.live[id]
		if !ok {
			return nil, fmt.Errorf("node %d is not a live node of the cluster (live: %s)", id, joinInt32s(v.liveIDs()))
		}
		n := balance.Node{ID: id}
		if b.Rack != nil {
			n.Rack = *b.Rack
		}
		ns = append(ns, n)
	}
	return ns, nil
}

func newReassignPlan(conn *connFlags) *cobra.Command {
	var nodes, topics string
	var drain int32
	var noRacks bool
	cmd := &cobra.Command{
		Use:   "plan",
		Short: "Print a reassignment plan (Kafka's JSON) spreading replicas and leaders evenly, moving as little as possible",
		Long: `Print a reassignment plan: Kafka's reassignment JSON, with the partitions that change
only, ready for 'runnel reassign execute --plan' or kafka-reassign-partitions.sh
--execute. A summary goes to stderr: replicas and preferred leaders per node before and
after, and the replicas moved.

The plan puts every node of --nodes within one replica of an even share and within one
preferred leadership of an even share, keeps each partition's replication factor,
spreads each partition over racks when the nodes have broker.rack, and moves a replica
only when the balance needs it. --drain ID moves every replica off node ID.
--topics RE plans only the topics whose whole name matches RE; the others stay and are
not counted in the shares.`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ids, err := parseNodeList(nodes)
			if err != nil {
				return err
			}
			include, err := topicFilter(topics)
			if err != nil {
				return err
			}
			return withAdmin(conn, func(adm *kadm.Client) error {
				v, err := loadClusterView(cmd.Context(), adm)
				if err != nil {
					return err
				}
				req, err := v.planRequest(ids, drain, include, noRacks)
				if err != nil {
					return err
				}
				plan, err := balance.Compute(req)
				if errors.Is(err, balance.ErrMixedRacks) {
					return fmt.Errorf("plan: %w (--disable-rack-aware plans without racks)", err)
				}
				if err != nil {
					return fmt.Errorf("plan: %w", err)
				}
				printPlanSummary(cmd.ErrOrStderr(), v, plan)
				return writeReassignment(cmd.OutOrStdout(), planPartitions(plan))
			})
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&nodes, "nodes", "", "nodes to place replicas on, ID,ID,... (default: every live node)")
	fs.StringVar(&topics, "topics", "", "plan only the topics whose name matches this regular expression (default: every topic)")
	fs.Int32Var(&drain, "drain", -1, "move every replica off this node")
	fs.BoolVar(&noRacks, "disable-rack-aware", false, "ignore broker.rack (as kafka-reassign-partitions.sh --disable-rack-aware)")
	return cmd
}

// planRequest builds the planner's request: ids (every live node if empty) minus
// drain, over the partitions include picks.
func (v *clusterView) planRequest(ids []int32, drain int32, include func(string) bool, noRacks bool) (balance.Request, error) {
	if len(ids) == 0 {
		ids = v.liveIDs()
	}
	req := balance.Request{Current: v.parts, Include: include, IgnoreRacks: noRacks}
	if drain >= 0 {
		if _, live := v.live[drain]; !live && !v.holds(drain) {
			return req, fmt.Errorf("--drain %d: node %d is not a live node and holds no replica", drain, drain)
		}
		req.Drain = []int32{drain}
		ids = slices.DeleteFunc(slices.Clone(ids), func(id int32) bool { return id == drain })
		if len(ids) == 0 {
			return req, fmt.Errorf("--drain %d: no other node to move its replicas to", drain)
		}
	}
	ns, err := v.balanceNodes(ids)
	if err != nil {
		return req, err
	}
	req.Nodes = ns
	if include != nil && !slices.ContainsFunc(v.parts, func(p balance.Partition) bool { return include(p.Topic) }) {
		return req, usageErrorf("--topics matches no topic of the cluster")
	}
	return req, nil
}

// parseNodeList reads --nodes ID,ID,...; empty is every live node.
func parseNodeList(s string) ([]int32, error) {
	var ids []int32
	for f := range strings.SplitSeq(s, ",") {
		if f = strings.TrimSpace(f); f == "" {
			continue
		}
		id, err := strconv.ParseInt(f, 10, 32)
		if err != nil || id < 0 {
			return nil, usageErrorf("bad --nodes %q: %q is not a node id", s, f)
		}
		if slices.Contains(ids, int32(id)) {
			return nil, usageErrorf("bad --nodes %q: node %d is listed twice", s, id)
		}
		ids = append(ids, int32(id))
	}
	return ids, nil
}

// topicFilter compiles --topics as a match of the whole topic name.
func topicFilter(re string) (func(string) bool, error) {
	if re == "" {
		return nil, nil
	}
	rx, err := regexp.Compile(`^(?:` + re + `)$`)
	if err != nil {
		return nil, usageErrorf("bad --topics %q: %v", re, err)
	}
	return rx.MatchString, nil
}

// planPartitions is the plan's changed partitions in the reassignment JSON.
func planPartitions(plan *balance.Plan) []reassignPartition {
	ps := []reassignPartition{}
	for _, c := range plan.Changes {
		ps = append(ps, reassignPartition{Topic: c.Topic, Partition: c.Partition, Replicas: c.To})
	}
	return ps
}

// printPlanSummary writes the loads per node before and after, and what moves.
func printPlanSummary(w io.Writer, v *clusterView, plan *balance.Plan) {
	ids := map[int32]bool{}
	for id := range plan.Before {
		ids[id] = true
	}
	for id := range plan.After {
		ids[id] = true
	}
	sorted := make([]int32, 0, len(ids))
	for id := range ids {
		sorted = append(sorted, id)
	}
	slices.Sort(sorted)
	tw := newTable(w)
	fmt.Fprintln(tw, "NODE\tRACK\tREPLICAS\tLEADERS")
	for _, id := range sorted {
		rack := "-"
		if b, ok := v.live[id]; ok && b.Rack != nil {
			rack = *b.Rack
		}
		b, a := plan.Before[id], plan.After[id]
		fmt.Fprintf(tw, "%d\t%s\t%d -> %d\t%d -> %d\n", id, rack, b.Replicas, a.Replicas, b.Leaders, a.Leaders)
	}
	tw.Flush()
	for _, id := range sorted {
		if _, target := plan.After[id]; !target && plan.Before[id].Replicas > 0 {
			if _, live := v.live[id]; !live {
				fmt.Fprintf(w, "warning: node %d is not live (down or fenced) and holds %s: the plan moves them off it.\n", id, clitext.Plural(plan.Before[id].Replicas, "replica", "replicas"))
			}
		}
	}
	if len(plan.Changes) == 0 {
		fmt.Fprintln(w, "The assignment is already balanced: nothing to move.")
		return
	}
	fmt.Fprintf(w, "%s (the excess over the even share is %d), %s, %s.\n",
		clitext.Plural(plan.Moves, "replica moves", "replicas move"), plan.Excess, clitext.Plural(len(plan.Changes), "partition changes", "partitions change"),
		clitext.Plural(plan.LeaderChanges, "preferred leader changes", "preferred leaders change"))
	if plan.Chains > 0 {
		fmt.Fprintf(w, "%s room: a replica leaving a drained node had only full nodes to go to.\n", clitext.Plural(plan.Chains, "of the moves makes", "of the moves make"))
	}
	if plan.RackRepairs > 0 {
		fmt.Fprintf(w, "%s partitions over more racks.\n", clitext.Plural(plan.RackRepairs, "of the moves spreads", "of the moves spread"))
	}
	if plan.RackViolations > 0 {
		fmt.Fprintf(w, "warning: %s a rack with another replica of their partition beyond an even spread (racks of unequal sizes).\n", clitext.Plural(plan.RackViolations, "replica shares", "replicas share"))
	}
	if !plan.LeadersBalanced {
		fmt.Fprintln(w, "warning: the replica sets do not allow every node an even share of preferred leaders (mixed replication factors).")
	}
}
