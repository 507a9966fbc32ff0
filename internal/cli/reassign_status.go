package cli

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/runnel-io/runnel/internal/clitext"
	"github.com/runnel-io/runnel/internal/reassignprogress"
)

// moving is one partition with a reassignment in progress.
type moving struct {
	Topic     string  `json:"topic"`
	Partition int32   `json:"partition"`
	Replicas  []int32 `json:"replicas"` // every replica while it moves: the old and the new
	Adding    []int32 `json:"adding"`
	Removing  []int32 `json:"removing"`
	Leader    int32   `json:"leader"`
	// Size is the leader's log size in bytes; Copied the bytes the adding replicas
	// hold, Left what they still lack (summed over them). -1 when unknown.
	Size   int64 `json:"size_bytes"`
	Copied int64 `json:"bytes_copied"`
	Left   int64 `json:"bytes_left"`
	// Rate is the bytes per second copied between the two samples; ETA the seconds
	// left at that rate, -1 when unknown (no progress between the samples).
	Rate float64 `json:"rate_bytes_per_sec"`
	ETA  float64 `json:"eta_seconds"`
}

// reassignStatus is `reassign status --json`.
type reassignStatus struct {
	InProgress       bool     `json:"in_progress"`
	Partitions       []moving `json:"partitions"`
	Copied           int64    `json:"bytes_copied"`
	Left             int64    `json:"bytes_left"`
	Rate             float64  `json:"rate_bytes_per_sec"`
	ETA              float64  `json:"eta_seconds"`
	ThrottlesRemoved []string `json:"throttles_removed,omitempty"`
	// Warnings name what could not be measured (a node that did not answer).
	Warnings []string `json:"warnings,omitempty"`
}

// listReassignments returns the partitions of the cluster with a reassignment in
// progress, by topic and partition (ListPartitionReassignments for every partition).
func listReassignments(ctx context.Context, adm *kadm.Client, v *clusterView) ([]moving, error) {
	set := kadm.TopicsSet{}
	leaders := map[string]map[int32]int32{}
	for _, td := range v.md.Topics {
		leaders[td.Topic] = map[int32]int32{}
		for _, p := range td.Partitions {
			set.Add(td.Topic, p.Partition)
			leaders[td.Topic][p.Partition] = p.Leader
		}
	}
	resps, err := adm.ListPartitionReassignments(ctx, set)
	if err != nil {
		return nil, fmt.Errorf("list partition reassignments: %w", brokerMessage(err))
	}
	var ms []moving
	for _, r := range resps.Sorted() {
		if len(r.AddingReplicas) == 0 && len(r.RemovingReplicas) == 0 {
			continue
		}
		ms = append(ms, moving{Topic: r.Topic, Partition: r.Partition, Replicas: r.Replicas,
			Adding: r.AddingReplicas, Removing: r.RemovingReplicas, Leader: leaders[r.Topic][r.Partition],
			Size: -1, Copied: -1, Left: -1, ETA: -1})
	}
	return ms, nil
}

func describeMoving(ms []moving) string {
	var names []string
	for i, m := range ms {
		if i == 5 {
			names = append(names, fmt.Sprintf("and %d more", len(ms)-5))
			break
		}
		names = append(names, fmt.Sprintf("%s/%d", m.Topic, m.Partition))
	}
	return strings.Join(names, ", ")
}

// logSizes returns the replica sizes per topic, partition and node.
func logSizes(ctx context.Context, adm *kadm.Client, ms []moving, warnings *[]string) (map[string]map[int32]map[int32]int64, error) {
	set := kadm.TopicsSet{}
	for _, m := range ms {
		set.Add(m.Topic, m.Partition)
	}
	dirs, err := adm.DescribeAllLogDirs(ctx, set)
	if err != nil && len(dirs) == 0 {
		return nil, fmt.Errorf("describe log dirs: %w", err)
	}
	if err != nil {
		// A node that did not answer (down, say the one receiving a replica) counts
		// as holding nothing yet; a partition it leads shows no sizes.
		*warnings = append(*warnings, "describe log dirs: "+oneLine(err.Error()))
	}
	sizes := map[string]map[int32]map[int32]int64{}
	dirs.Each(func(d kadm.DescribedLogDir) {
		d.Topics.Each(func(p kadm.DescribedLogDirPartition) {
			if sizes[p.Topic] == nil {
				sizes[p.Topic] = map[int32]map[int32]int64{}
			}
			if sizes[p.Topic][p.Partition] == nil {
				sizes[p.Topic][p.Partition] = map[int32]int64{}
			}
			sizes[p.Topic][p.Partition][p.Broker] += p.Size
		})
	})
	return sizes, nil
}

// measure fills in the bytes copied and left from a sample of log sizes, and the
// rate and ETA from an earlier sample taken dt before (nil: none).
func measure(ms []moving, now, earlier map[string]map[int32]map[int32]int64, dt time.Duration) {
	if earlier == nil {
		dt = 0
	}
	for i := range ms {
		m := &ms[i]
		p, ok := reassignprogress.Measure(m.Leader, m.Replicas, m.Adding, now[m.Topic][m.Partition], earlier[m.Topic][m.Partition], dt)
		if !ok {
			continue
		}
		m.Size, m.Copied, m.Left, m.Rate = p.Size, p.Copied, p.Left, p.Rate
		if eta, ok := reassignprogress.ETA(m.Left, m.Rate); ok {
			m.ETA = eta
		}
	}
}

func (st *reassignStatus) total() {
	st.InProgress = len(st.Partitions) > 0
	st.ETA = -1
	known := true
	for _, m := range st.Partitions {
		if m.Left < 0 {
			known = false
			continue
		}
		st.Copied += m.Copied
		st.Left += m.Left
		st.Rate += m.Rate
	}
	if eta, ok := reassignprogress.ETA(st.Left, st.Rate); known && ok {
		st.ETA = eta
	}
}

// sampleStatus lists the reassignments in progress and measures them over interval
// (two DescribeLogDirs samples that far apart; 0: one sample, no rate).
func sampleStatus(ctx context.Context, adm *kadm.Client, interval time.Duration) (*reassignStatus, error) {
	v, err := loadClusterView(ctx, adm)
	if err != nil {
		return nil, err
	}
	ms, err := listReassignments(ctx, adm, v)
	if err != nil {
		return nil, err
	}
	st := &reassignStatus{Partitions: ms}
	if len(ms) > 0 {
		if err := st.measure(ctx, adm, interval); err != nil {
			return nil, err
		}
	}
	st.total()
	return st, nil
}

func (st *reassignStatus) measure(ctx context.Context, adm *kadm.Client, interval time.Duration) error {
	first, err := logSizes(ctx, adm, st.Partitions, &st.Warnings)
	if err != nil {
		return err
	}
	if interval <= 0 {
		measure(st.Partitions, first, nil, 0)
		return nil
	}
	start := time.Now()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(interval):
	}
	second, err := logSizes(ctx, adm, st.Partitions, &st.Warnings)
	if err != nil {
		return err
	}
	measure(st.Partitions, second, first, time.Since(start))
	return nil
}

func newReassignStatus(conn *connFlags) *cobra.Command {
	var out outputFlags
	var interval time.Duration
	var preserve bool
	var w watchFlags
	cmd := &cobra.Command{
		Use:   "status",
		Short: "Show the reassignments in progress: bytes copied, bytes left, ETA",
		Long: `Show each partition moving (ListPartitionReassignments): its replicas, those being
added and removed, the bytes the new replicas hold and still lack (DescribeLogDirs),
and an ETA from the rate between two samples --interval apart; a progress bar when the
output is a terminal. --watch refreshes until interrupted (in place on a terminal).

When nothing is in progress it says so. On Runnel it never touches the throttles: the
controller set those of a throttled 'runnel reassign execute' with the moves and
removes them when the last move ends, so a status run while a move starts cannot
leave it unthrottled. On another Kafka implementation it removes them, as
kafka-reassign-partitions.sh --verify does (the *.replication.throttled.rate of every
node and the *.replication.throttled.replicas of every topic that has them), unless
--preserve-throttles.`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			asJSON, err := out.json()
			if err != nil {
				return err
			}
			if w.count < 0 || w.count > 0 && !w.watch {
				return usageErrorf("--watch-count needs --watch and must not be negative")
			}
			// The samples pace the refreshes: each takes --interval.
			w.interval = max(interval, time.Millisecond)
			return withAdmin(conn, func(adm *kadm.Client) error {
				// A reader never removes a Runnel controller's throttles.
				clear := !preserve && !isRunnel(cmd.Context(), adm)
				render := func(o io.Writer) error {
					st, err := sampleStatus(cmd.Context(), adm, interval)
					if err != nil {
						return err
					}
					if !st.InProgress && clear {
						if st.ThrottlesRemoved, err = clearThrottles(cmd.Context(), adm); err != nil {
							return err
						}
					}
					if asJSON {
						return writeJSON(o, st)
					}
					return printReassignStatus(o, st, isTerminal(cmd.OutOrStdout()))
				}
				return runWatch(cmd.Context(), cmd.OutOrStdout(), cmd.ErrOrStderr(), &w, cmd.CommandPath(), asJSON, render)
			})
		},
	}
	out.add(cmd)
	fs := cmd.Flags()
	fs.DurationVar(&interval, "interval", time.Second, "time between the two samples the rate and ETA come from (0: no rate), and between refreshes with --watch")
	fs.BoolVar(&preserve, "preserve-throttles", false, "on another Kafka implementation, leave the throttles in place when nothing is in progress (Runnel's controller removes its own)")
	fs.BoolVarP(&w.watch, "watch", "w", false, "refresh until interrupted: in place on a terminal, one refresh after another otherwise")
	fs.IntVar(&w.count, "watch-count", 0, "with --watch, stop after this many refreshes (0: until interrupted)")
	return cmd
}

func printReassignStatus(w io.Writer, st *reassignStatus, bar bool) error {
	if !st.InProgress {
		fmt.Fprintln(w, "No reassignment in progress.")
		if len(st.ThrottlesRemoved) > 0 {
			fmt.Fprintf(w, "Removed the reassignment throttles: %s.\n", strings.Join(st.ThrottlesRemoved, "; "))
		}
		return nil
	}
	tw := newTable(w)
	header := "TOPIC\tPARTITION\tREPLICAS\tADDING\tREMOVING\tCOPIED\tLEFT\tRATE\tETA"
	if bar {
		header += "\tPROGRESS"
	}
	fmt.Fprintln(tw, header)
	for _, m := range st.Partitions {
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s", m.Topic, m.Partition, joinInt32s(m.Replicas),
			orDash(joinInt32s(m.Adding)), orDash(joinInt32s(m.Removing)), bytesOrDash(m.Copied), bytesOrDash(m.Left), rateOrDash(m.Rate), etaOrDash(m.ETA))
		if bar {
			fmt.Fprintf(tw, "\t%s", progressBar(m.Copied, m.Left))
		}
		fmt.Fprintln(tw)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(w, "\n%s moving: %s copied, %s left, %s, ETA %s\n", clitext.Plural(len(st.Partitions), "partition", "partitions"),
		bytesOrDash(st.Copied), bytesOrDash(st.Left), rateOrDash(st.Rate), etaOrDash(st.ETA))
	for _, warn := range slices.Compact(slices.Clone(st.Warnings)) {
		fmt.Fprintf(w, "warning: %s\n", warn)
	}
	return nil
}

// progressBar draws copied out of copied+left in 20 cells.
func progressBar(copied, left int64) string {
	if copied < 0 || left < 0 {
		return "-"
	}
	frac := 1.0
	if copied+left > 0 {
		frac = float64(copied) / float64(copied+left)
	}
	n := int(frac * 20)
	return fmt.Sprintf("[%s%s] %3d%%", strings.Repeat("#", n), strings.Repeat(".", 20-n), int(frac*100))
}

func bytesOrDash(b int64) string {
	switch {
	case b < 0:
		return "-"
	case b < 1<<10:
		return fmt.Sprintf("%d B", b)
	case b < 1<<20:
		return fmt.Sprintf("%.1f KiB", float64(b)/(1<<10))
	case b < 1<<30:
		return mib(b)
	}
	return fmt.Sprintf("%.2f GiB", float64(b)/(1<<30))
}

func rateOrDash(r float64) string {
	if r <= 0 {
		return "-"
	}
	return bytesOrDash(int64(r)) + "/s"
}

func etaOrDash(s float64) string {
	if s < 0 {
		return "-"
	}
	return (time.Duration(s*float64(time.Second)) + time.Second/2).Truncate(time.Second).String()
}

func newReassignCancel(conn *connFlags) *cobra.Command {
	var preserve bool
	cmd := &cobra.Command{
		Use:   "cancel",
		Short: "Cancel every reassignment in progress: the partitions go back to their replicas before the move",
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return withAdmin(conn, func(adm *kadm.Client) error {
				return cancelAll(cmd.Context(), adm, cmd.OutOrStdout(), preserve)
			})
		},
	}
	cmd.Flags().BoolVar(&preserve, "preserve-throttles", false, "on another Kafka implementation, leave the reassignment throttles in place (Runnel's controller removes its own)")
	return cmd
}

// cancelAll cancels every reassignment in progress (AlterPartitionReassignments with
// null replicas) and, on another Kafka implementation, clears the throttles (Runnel's
// controller removes its own with the last move).
func cancelAll(ctx context.Context, adm *kadm.Client, out io.Writer, preserve bool) error {
	v, err := loadClusterView(ctx, adm)
	if err != nil {
		return err
	}
	ms, err := listReassignments(ctx, adm, v)
	if err != nil {
		return err
	}
	failed := 0
	if len(ms) == 0 {
		fmt.Fprintln(out, "No reassignment in progress.")
	} else {
		var req kadm.AlterPartitionAssignmentsReq
		for _, m := range ms {
			req.CancelAssign(m.Topic, m.Partition)
		}
		resps, err := adm.AlterPartitionAssignments(ctx, req)
		if err != nil {
			return fmt.Errorf("cancel partition reassignments: %w", brokerMessage(err))
		}
		for _, m := range ms {
			back := slices.DeleteFunc(slices.Clone(m.Replicas), func(id int32) bool { return slices.Contains(m.Adding, id) })
			r, ok := resps[m.Topic][m.Partition]
			switch {
			case !ok:
				failed++
				fmt.Fprintf(out, "topic %q partition %d: no answer from the cluster\n", m.Topic, m.Partition)
			case r.Err != nil:
				failed++
				fmt.Fprintf(out, "topic %q partition %d: %v\n", m.Topic, m.Partition, withMessage(r.Err, r.ErrMessage))
			default:
				fmt.Fprintf(out, "Cancelled %s/%d (adding %s, removing %s): back to %s\n", m.Topic, m.Partition,
					orDash(joinInt32s(m.Adding)), orDash(joinInt32s(m.Removing)), joinInt32s(back))
			}
		}
	}
	if !preserve && !isRunnel(ctx, adm) {
		removed, err := clearThrottles(ctx, adm)
		if err != nil {
			return err
		}
		if len(removed) > 0 {
			fmt.Fprintf(out, "Removed the reassignment throttles: %s.\n", strings.Join(removed, "; "))
		}
	}
	if failed > 0 {
		return fmt.Errorf("%d of %s failed (see above)", failed, clitext.Plural(len(ms), "cancellation", "cancellations"))
	}
	return nil
}

// clearThrottles deletes the reassignment throttles, as kafka-reassign-partitions.sh
// --verify and --cancel do: the two replica lists on every topic that has them, and
// the two rates on every live node (all of them, as Kafka's tool does: a cluster may
// apply a rate without describing it per node). It does nothing when no topic has
// throttled replicas and no node describes a rate, so that a status with nothing to
// clear writes nothing. It returns what it removed, one entry per kind.
func clearThrottles(ctx context.Context, adm *kadm.Client) ([]string, error) {
	v, err := loadClusterView(ctx, adm)
	if err != nil {
		return nil, err
	}
	nodes, err := configsSet(ctx, adm, kmsg.ConfigResourceTypeBroker, v.liveIDs(), nil, leaderRateKey, followerRateKey)
	if err != nil {
		return nil, err
	}
	topics, err := configsSet(ctx, adm, kmsg.ConfigResourceTypeTopic, nil, v.md.Topics.Names(), leaderReplicasKey, followerReplicaKey)
	if err != nil {
		return nil, err
	}
	if len(nodes) == 0 && len(topics) == 0 {
		return nil, nil
	}
	var removed []string
	for _, t := range topics {
		resps, err := adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{
			{Op: kadm.DeleteConfig, Name: leaderReplicasKey}, {Op: kadm.DeleteConfig, Name: followerReplicaKey}}, t)
		if err = alterConfigsErr(resps, err, "topic"); err != nil {
			return nil, fmt.Errorf("remove the throttled replicas: %w", err)
		}
	}
	if len(topics) > 0 {
		removed = append(removed, "throttled replicas on topics "+strings.Join(topics, ","))
	}
	resps, err := adm.AlterBrokerConfigs(ctx, []kadm.AlterConfig{
		{Op: kadm.DeleteConfig, Name: leaderRateKey}, {Op: kadm.DeleteConfig, Name: followerRateKey}}, v.liveIDs()...)
	if err = alterConfigsErr(resps, err, "node"); err != nil {
		return nil, fmt.Errorf("remove the throttle rates: %w", err)
	}
	return append(removed, "rates on nodes "+joinInt32s(v.liveIDs())), nil
}

// configsSet returns the resources (nodes by id, or topics) on which any of keys is
// set at run time (a dynamic source), sorted.
func configsSet(ctx context.Context, adm *kadm.Client, kind kmsg.ConfigResourceType, nodes []int32, topics []string, keys ...string) ([]string, error) {
	var rcs kadm.ResourceConfigs
	var err error
	if kind == kmsg.ConfigResourceTypeBroker {
		if len(nodes) == 0 {
			return nil, nil
		}
		rcs, err = adm.DescribeBrokerConfigs(ctx, nodes...)
	} else {
		rcs, err = adm.DescribeTopicConfigs(ctx, topics...)
	}
	if err != nil && len(rcs) == 0 {
		return nil, fmt.Errorf("describe configs: %w", brokerMessage(err))
	}
	// A node that did not answer (down) is left out: it holds no throttle of ours
	// that matters while it is down, and a later status clears it.
	var names []string
	for _, rc := range rcs {
		if rc.Err != nil {
			return nil, fmt.Errorf("configs of %s: %w", rc.Name, withMessage(rc.Err, rc.ErrMessage))
		}
		if slices.ContainsFunc(rc.Configs, func(c kadm.Config) bool {
			return slices.Contains(keys, c.Key) && dynamicSource(c.Source) && c.MaybeValue() != ""
		}) {
			names = append(names, rc.Name)
		}
	}
	slices.Sort(names)
	if kind == kmsg.ConfigResourceTypeBroker {
		slices.SortFunc(names, func(a, b string) int { // node ids as numbers
			return cmp.Or(cmp.Compare(len(a), len(b)), cmp.Compare(a, b))
		})
	}
	return names, nil
}

func dynamicSource(s kmsg.ConfigSource) bool {
	return s == kmsg.ConfigSourceDynamicTopicConfig || s == kmsg.ConfigSourceDynamicBrokerConfig ||
		s == kmsg.ConfigSourceDynamicDefaultBrokerConfig
}
