package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/runnel-io/runnel/internal/balance"
	"github.com/runnel-io/runnel/internal/clitext"
	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// unregisterBrokerKey is Kafka's UnregisterBroker API (KIP-631), what
// kafka-cluster.sh unregister sends.
const unregisterBrokerKey = 64

func newDecommission(conn *connFlags) *cobra.Command {
	var throttle int64
	var interval time.Duration
	var noWait, noWaitStop, noRacks bool
	cmd := &cobra.Command{
		Use:   "decommission ID",
		Short: "Move every replica off node ID (throttled), then remove it from the cluster",
		Long: `Move every replica off node ID onto the other live nodes, as 'runnel reassign plan
--drain ID' plans it (the other nodes end within one replica and one preferred
leadership of an even share), start the moves (throttled with --throttle) and show their
progress as 'runnel reassign status' does until the node holds no replica.

It refuses, changing nothing, when draining the node would leave a partition under its
replication factor (not enough other live nodes) or under its topic's
min.insync.replicas (too few other nodes, or the partition's other replicas are not in
sync now).

A drained node that is a voter of the metadata quorum then leaves the voters; when
that would leave fewer than three, a live broker that has caught up with the metadata
is promoted in its place first (and the command refuses, before moving anything, when
there is none). It then asks you to stop the node's process, waits for it to stop, and
unregisters it (UnregisterBroker), so that the node is out of the cluster with this one
command; with --no-wait it returns after starting the moves, and a later run goes on.
Against a cluster that does not serve those APIs it says what is left.
Interrupted, it can be run again: it waits for the moves in progress, then goes on.`,
		Args: exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			id, err := strconv.ParseInt(args[0], 10, 32)
			if err != nil || id < 0 {
				return usageErrorf("bad node id %q", args[0])
			}
			if throttle < 0 {
				return usageErrorf("--throttle must not be negative")
			}
			if interval <= 0 {
				return usageErrorf("--interval must be positive")
			}
			d := &decommission{node: int32(id), throttle: throttle, interval: interval, noRacks: noRacks,
				out: cmd.OutOrStdout(), term: isTerminal(cmd.OutOrStdout())}
			cl, err := conn.client()
			if err != nil {
				return err
			}
			defer cl.Close()
			d.cl, d.adm = cl, kadm.NewClient(cl)
			d.waitStop = !noWaitStop
			return d.run(cmd.Context(), !noWait)
		},
	}
	fs := cmd.Flags()
	fs.Int64Var(&throttle, "throttle", 0, "throttle the copies to this many bytes/s per node (0: no throttle)")
	fs.DurationVar(&interval, "interval", 2*time.Second, "time between progress samples")
	fs.BoolVar(&noWait, "no-wait", false, "start the moves and return; 'runnel reassign status' follows them")
	fs.BoolVar(&noWaitStop, "no-wait-stop", false, "once the node is drained (and out of the voters), return instead of waiting for its process to stop; run the command again after stopping it to unregister it")
	fs.BoolVar(&noRacks, "disable-rack-aware", false, "ignore broker.rack when planning")
	return cmd
}

// decommission drains one node.
type decommission struct {
	cl       *kgo.Client // for the requests kadm has no call for (UnregisterBroker)
	adm      *kadm.Client
	node     int32
	throttle int64
	interval time.Duration
	waitStop bool // wait for the drained node's process to stop, then unregister it
	noRacks  bool
	out      io.Writer
	term     bool // out is a terminal: progress redrawn in place, with bars
}

// maxDrainRounds bounds plan-execute-wait rounds: a second is needed only when
// partitions are created on the node during the first.
const maxDrainRounds = 3

func (d *decommission) run(ctx context.Context, wait bool) error {
	for round := 1; ; round++ {
		v, err := loadClusterView(ctx, d.adm)
		if err != nil {
			return err
		}
		if _, live := v.live[d.node]; !live && !v.holds(d.node) {
			return d.unregisterStopped(ctx, v)
		}
		ms, err := listReassignments(ctx, d.adm, v)
		if err != nil {
			return err
		}
		if len(ms) == 0 && v.holds(d.node) && round > 1 {
			// The moves are done (the controller says so) but the node answering
			// Metadata may not have applied the last of them yet.
			if v, err = d.settle(ctx, v); err != nil {
				return err
			}
		}
		if len(ms) == 0 && !v.holds(d.node) {
			fmt.Fprintf(d.out, "Node %d holds no replica.\n", d.node)
			return d.finish(ctx, v, wait)
		}
		if round > maxDrainRounds {
			return fmt.Errorf("node %d still holds replicas after %s of moves (are partitions being created on it?)", d.node, clitext.Plural(maxDrainRounds, "round", "rounds"))
		}
		if len(ms) > 0 {
			fmt.Fprintf(d.out, "%s in progress (%s); waiting for them before planning.\n", clitext.Plural(len(ms), "reassignment is", "reassignments are"), describeMoving(ms))
		} else if err := d.start(ctx, v); err != nil {
			return err
		}
		if !wait {
			return nil
		}
		if err := d.waitMoves(ctx); err != nil {
			return err
		}
	}
}

// start checks that the node can be drained, plans and starts the moves.
func (d *decommission) start(ctx context.Context, v *clusterView) error {
	var others []int32
	for _, id := range v.liveIDs() {
		if id != d.node {
			others = append(others, id)
		}
	}
	if err := d.check(ctx, v, others); err != nil {
		return err
	}
	if err := d.checkVoters(ctx, v); err != nil {
		return err
	}
	req, err := v.planRequest(others, d.node, nil, d.noRacks)
	if err != nil {
		return err
	}
	plan, err := balance.Compute(req)
	if err != nil {
		return fmt.Errorf("plan the drain of node %d: %w", d.node, err)
	}
	printPlanSummary(d.out, v, plan)
	return executePlan(ctx, d.cl, d.out, planPartitions(plan), d.throttle, false)
}

// check refuses the drain if a partition on the node would be left under its
// replication factor or its topic's min.insync.replicas.
func (d *decommission) check(ctx context.Context, v *clusterView, others []int32) error {
	var topics []string
	for _, p := range v.parts {
		if slices.Contains(p.Replicas, d.node) && !slices.Contains(topics, p.Topic) {
			topics = append(topics, p.Topic)
		}
	}
	minISR, err := minISRs(ctx, d.adm, topics)
	if err != nil {
		return fmt.Errorf("decommission node %d: %w", d.node, err)
	}
	var problems []string
	for _, p := range v.parts {
		if !slices.Contains(p.Replicas, d.node) {
			continue
		}
		if len(p.Replicas) > len(others) {
			problems = append(problems, fmt.Sprintf("topic %q partition %d has %s and only %s (%s) could hold them",
				p.Topic, p.Partition, clitext.Plural(len(p.Replicas), "replica", "replicas"), clitext.Plural(len(others), "other live node", "other live nodes"), joinInt32s(others)))
			continue
		}
		// The node's replica leaves only once its replacement is in sync, so the
		// partition ends with its in-sync replicas on other nodes plus that one.
		need := minISR[p.Topic]
		isr := slices.DeleteFunc(slices.Clone(v.md.Topics[p.Topic].Partitions[p.Partition].ISR), func(id int32) bool { return id == d.node })
		switch {
		case len(others) < need:
			problems = append(problems, fmt.Sprintf("topic %q partition %d: min.insync.replicas=%d but only %d other live nodes (%s)",
				p.Topic, p.Partition, need, len(others), joinInt32s(others)))
		case len(isr)+1 < need:
			problems = append(problems, fmt.Sprintf("topic %q partition %d: its in-sync replicas on other nodes are [%s]; with the one replacing node %d that is fewer than min.insync.replicas=%d",
				p.Topic, p.Partition, joinInt32s(isr), d.node, need))
		}
	}
	if len(problems) > 0 {
		return fmt.Errorf("refusing to decommission node %d: %s", d.node, strings.Join(problems, "\n"))
	}
	return nil
}

// settleTimeout bounds the wait for Metadata to show the completed moves.
const settleTimeout = 10 * time.Second

// settle re-reads the metadata until it shows no replica on the node or
// settleTimeout passes, and returns the last view.
func (d *decommission) settle(ctx context.Context, v *clusterView) (*clusterView, error) {
	deadline := time.Now().Add(settleTimeout)
	for v.holds(d.node) && time.Now().Before(deadline) {
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
		var err error
		if v, err = loadClusterView(ctx, d.adm); err != nil {
			return nil, err
		}
	}
	return v, nil
}

// waitMoves shows the progress every interval until nothing moves, then clears
// the throttles.
func (d *decommission) waitMoves(ctx context.Context) error {
	for {
		st, err := sampleStatus(ctx, d.adm, d.interval)
		if err != nil {
			return err
		}
		if !st.InProgress {
			if isRunnel(ctx, d.adm) {
				return nil // the controller removed the throttles it set with the last move
			}
			removed, err := clearThrottles(ctx, d.adm)
			if err != nil {
				return err
			}
			if len(removed) > 0 {
				fmt.Fprintf(d.out, "Removed the reassignment throttles: %s.\n", strings.Join(removed, "; "))
			}
			return nil
		}
		if d.term {
			fmt.Fprintf(d.out, "%sDraining node %d  %s\n\n", clearScreen, d.node, time.Now().Format("2006-01-02 15:04:05"))
		} else {
			fmt.Fprintf(d.out, "--- %s ---\n", time.Now().UTC().Format(time.RFC3339))
		}
		if err := printReassignStatus(d.out, st, d.term); err != nil {
			return err
		}
	}
}

// unregister removes the drained node from the cluster where the cluster serves
// UnregisterBroker and the node is stopped, and otherwise says what is left.
func (d *decommission) unregister(ctx context.Context, v *clusterView) error {
	ok, err := brokersServe(ctx, d.adm, unregisterBrokerKey)
	if err != nil {
		return err
	}
	if !ok {
		fmt.Fprintf(d.out, "Left to do: unregistering node %d from the cluster. This cluster does not serve UnregisterBroker (API key %d), so it stays registered: stop its process; holding no replica, it serves nothing, and 'runnel cluster status' lists it as down.\n",
			d.node, unregisterBrokerKey)
		return nil
	}
	// A node this view shows live is asked about all the same: the controller
	// unregisters at once a node whose process is provably gone (killed a moment ago,
	// its session not yet expired), and otherwise says when it will be fenced.
	_, live := v.live[d.node]
	req := kmsg.NewPtrUnregisterBrokerRequest()
	req.BrokerID = d.node
	resp, err := req.RequestWith(ctx, d.cl)
	if err != nil {
		return fmt.Errorf("unregister node %d: %w", d.node, err)
	}
	if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
		msg := ""
		if resp.ErrorMessage != nil {
			msg = *resp.ErrorMessage
		}
		if live && errors.Is(err, kerr.InvalidRequest) {
			fmt.Fprintf(d.out, "Left to do: stop node %d's process, then run 'runnel cluster decommission %d' again to unregister it.\n", d.node, d.node)
			if msg != "" {
				fmt.Fprintf(d.out, "The controller says: %s\n", msg)
			}
			return nil
		}
		return fmt.Errorf("unregister node %d: %w", d.node, withMessage(err, msg))
	}
	fmt.Fprintf(d.out, "Unregistered node %d: it is no longer part of the cluster.\n", d.node)
	return nil
}

// unregisterStopped handles a node that is neither live nor holds a replica: a
// stopped node still registered (DescribeCluster v2 lists fenced brokers) is
// unregistered; one the cluster does not know is an error.
func (d *decommission) unregisterStopped(ctx context.Context, v *clusterView) error {
	req := kmsg.NewPtrDescribeClusterRequest()
	req.IncludeFencedBrokers = true
	resp, err := req.RequestWith(ctx, d.cl)
	if err == nil && resp.ErrorCode == 0 && resp.Version >= 2 &&
		!slices.ContainsFunc(resp.Brokers, func(b kmsg.DescribeClusterResponseBroker) bool { return b.NodeID == d.node }) {
		return fmt.Errorf("node %d is not a node of the cluster (live: %s)", d.node, joinInt32s(v.liveIDs()))
	}
	fmt.Fprintf(d.out, "Node %d holds no replica and is not running.\n", d.node)
	return d.finish(ctx, v, false)
}

// brokersServe reports whether every live node that answered ApiVersions lists key.
func brokersServe(ctx context.Context, adm *kadm.Client, key int16) (bool, error) {
	vs, err := adm.ApiVersions(ctx)
	if err != nil {
		return false, fmt.Errorf("api versions: %w", err)
	}
	answered := 0
	for _, v := range vs {
		if v.Err != nil {
			continue
		}
		answered++
		if _, ok := v.KeyMaxVersion(key); !ok {
			return false, nil
		}
	}
	if answered == 0 {
		return false, fmt.Errorf("api versions: no node answered")
	}
	return true, nil
}
