package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"sort"
	"time"

	"github.com/runnel-io/runnel/mirror"
	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kadm"
)

// mirrorTargetFlags are the flags of the commands that read a mirror's progress
// from its target cluster only (the source may be down).
type mirrorTargetFlags struct {
	target   string
	name     string
	security *securityFlags // --target-X, --target-command-config, as runnel mirror run's
}

func (f *mirrorTargetFlags) add(cmd *cobra.Command) {
	cmd.Flags().StringVar(&f.target, "target", "", "target cluster bootstrap, HOST:PORT[,...]")
	cmd.Flags().StringVar(&f.name, "name", "", "mirror name")
	f.security = addSecurityFlags(cmd.Flags(), "target-", "target cluster: ")
}

// progress reads the mirror's progress topic, and returns an admin client of the
// target (the caller closes it).
func (f *mirrorTargetFlags) progress(ctx context.Context) (*mirror.Progress, *kadm.Client, error) {
	if f.target == "" || f.name == "" {
		return nil, nil, usageErrorf("--target and --name are required")
	}
	conn := &connFlags{bootstrap: f.target, security: f.security}
	seeds, err := conn.seeds()
	if err != nil {
		return nil, nil, usageErrorf("bad --target %q: want HOST:PORT[,HOST:PORT...]", f.target)
	}
	sec, err := f.security.options()
	if err != nil {
		return nil, nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	p, err := mirror.ReadProgress(ctx, seeds, sec, f.name)
	if err != nil {
		return nil, nil, err
	}
	if len(p.States) == 0 && len(p.Checkpoint) == 0 {
		return nil, nil, fmt.Errorf("no mirror %q on the target %s (its progress topic %s is missing or empty)", f.name, f.target, mirror.ProgressTopic(f.name))
	}
	adm, err := conn.admin()
	if err != nil {
		return nil, nil, err
	}
	return p, adm, nil
}

func newMirrorStatusCommand() *cobra.Command {
	f := &mirrorTargetFlags{}
	var out outputFlags
	cmd := &cobra.Command{
		Use:   "status",
		Short: "Show each mirrored partition's lag and state, and each group's last sync",
		Long: `Show, from the target cluster alone, each mirrored partition's source end (as the
mirror last saw it), next offset, target end, lag in records and seconds and state
(running, stopped, error with its reason), and each synced group's last synced
offsets. A state not updated for more than 10 s (a mirror heartbeats every second)
is shown as stale: its process is gone, paused, or cannot reach the target.`,
		Args: noArgs,
	}
	f.add(cmd)
	out.add(cmd)
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		asJSON, err := out.json()
		if err != nil {
			return err
		}
		p, adm, err := f.progress(cmd.Context())
		if err != nil {
			return err
		}
		defer adm.Close()
		return printMirrorStatus(cmd.Context(), cmd.OutOrStdout(), p, adm, asJSON)
	}
	return cmd
}

// mirrorStatusRow is one partition in `runnel mirror status`.
type mirrorStatusRow struct {
	mirror.PartitionState
	TargetHighWatermark int64 `json:"target_high_watermark"`
	Stale               bool  `json:"stale"`
}

func printMirrorStatus(ctx context.Context, w io.Writer, p *mirror.Progress, adm *kadm.Client, asJSON bool) error {
	now := time.Now()
	var rows []mirrorStatusRow
	var topics []string
	for _, st := range p.States {
		topics = append(topics, st.TargetTopic)
	}
	ends, _ := adm.ListEndOffsets(ctx, topics...)
	for _, st := range p.States {
		r := mirrorStatusRow{PartitionState: *st, TargetHighWatermark: -1}
		if o, ok := ends.Lookup(st.TargetTopic, st.Partition); ok && o.Err == nil {
			r.TargetHighWatermark = o.Offset
		}
		r.Stale = st.State == "running" && st.Age(now) > 10*time.Second
		if r.Stale && r.LagRecords > 0 {
			r.LagSeconds += st.Age(now).Seconds() // still behind, for at least this long
		}
		rows = append(rows, r)
	}
	sort.Slice(rows, func(i, j int) bool {
		if rows[i].Topic != rows[j].Topic {
			return rows[i].Topic < rows[j].Topic
		}
		return rows[i].Partition < rows[j].Partition
	})
	var groups []mirror.Checkpoint
	for _, cps := range p.Checkpoint {
		for _, c := range cps {
			groups = append(groups, c)
		}
	}
	sort.Slice(groups, func(i, j int) bool {
		a, b := groups[i], groups[j]
		return a.Group < b.Group || (a.Group == b.Group && (a.Topic < b.Topic || (a.Topic == b.Topic && a.Partition < b.Partition)))
	})
	if asJSON {
		return writeJSON(w, struct {
			Name       string              `json:"name"`
			Partitions []mirrorStatusRow   `json:"partitions"`
			Groups     []mirror.Checkpoint `json:"groups"`
		}{p.Name, rows, groups})
	}
	tw := newTable(w)
	fmt.Fprintln(tw, "TOPIC\tPARTITION\tTARGET TOPIC\tSOURCE END\tNEXT\tTARGET END\tLAG\tLAG SECONDS\tRECORDS\tSTATE\tUPDATED")
	for _, r := range rows {
		state := r.State
		if r.Stale {
			state = "stale"
		}
		if r.Error != "" {
			state += ": " + r.Error
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\t%d\t%d\t%s\t%d\t%.1f\t%d\t%s\t%s ago\n", r.Topic, r.Partition, r.TargetTopic,
			r.SourceEnd, r.Next, dash(r.TargetHighWatermark), r.LagRecords, r.LagSeconds, r.Records, state,
			r.Age(now).Round(100*time.Millisecond))
	}
	if len(groups) > 0 {
		fmt.Fprintln(tw)
		fmt.Fprintln(tw, "GROUP\tTOPIC\tPARTITION\tSOURCE OFFSET\tTARGET TOPIC\tTARGET OFFSET\tSYNCED")
		for _, c := range groups {
			fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%s\t%d\t%s ago\n", c.Group, c.Topic, c.Partition, c.SourceOffset,
				c.TargetTopic, c.TargetOffset, now.Sub(time.UnixMilli(c.Updated)).Round(100*time.Millisecond))
		}
	}
	return tw.Flush()
}

func newMirrorFailoverCommand() *cobra.Command {
	f := &mirrorTargetFlags{}
	var group string
	var all, dryRun bool
	var out outputFlags
	cmd := &cobra.Command{
		Use:   "failover",
		Short: "Set consumer groups' offsets on the target from their last synced source commits",
		Long: `Set each group's committed offsets on the target to the exact translation of its
last synced committed source offsets (read from the target: the source may be
down), so that its consumers resume on the target with no gap and without reading
again anything committed before the last sync. Prints the old and new offset per
partition. The group must have no active members on the target.`,
		Args: noArgs,
	}
	f.add(cmd)
	out.add(cmd)
	cmd.Flags().StringVar(&group, "group", "", "the group to fail over")
	cmd.Flags().BoolVar(&all, "all-groups", false, "fail over every synced group")
	cmd.Flags().BoolVar(&dryRun, "dry-run", false, "print the moves without committing them")
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		if (group == "") == !all {
			return usageErrorf("give one of --group G or --all-groups")
		}
		asJSON, err := out.json()
		if err != nil {
			return err
		}
		p, adm, err := f.progress(cmd.Context())
		if err != nil {
			return err
		}
		defer adm.Close()
		return runMirrorFailover(cmd.Context(), cmd.OutOrStdout(), p, adm, group, dryRun, asJSON)
	}
	return cmd
}

type failoverRow struct {
	Group string `json:"group"`
	mirror.OffsetMove
}

func runMirrorFailover(ctx context.Context, w io.Writer, p *mirror.Progress, adm *kadm.Client, group string, dryRun, asJSON bool) error {
	var groups []string
	for g := range p.Checkpoint {
		if group == "" || g == group {
			groups = append(groups, g)
		}
	}
	if len(groups) == 0 {
		return fmt.Errorf("mirror %s has synced no offsets of group %q (is it in --groups, and has it committed on the source?)", p.Name, group)
	}
	slices.Sort(groups)
	var rows []failoverRow
	var errs []error
	for _, g := range groups {
		moves, err := mirror.PlanCommit(ctx, adm, g, p.Checkpoint[g], true)
		if err == nil && !dryRun && len(moves) > 0 {
			err = mirror.ApplyMoves(ctx, adm, g, moves)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("group %s: %w", g, err))
			continue
		}
		for _, mv := range moves {
			rows = append(rows, failoverRow{g, mv})
		}
	}
	if asJSON {
		if err := writeJSON(w, rows); err != nil {
			return err
		}
	} else {
		tw := newTable(w)
		fmt.Fprintln(tw, "GROUP\tTOPIC\tPARTITION\tOLD OFFSET\tNEW OFFSET")
		for _, r := range rows {
			fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%d\n", r.Group, r.Topic, r.Partition, dash(r.Old), r.New)
		}
		if dryRun {
			fmt.Fprintln(tw, "(dry run: nothing committed)")
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	return errors.Join(errs...)
}

func newMirrorTranslateCommand() *cobra.Command {
	f := &mirrorTargetFlags{}
	var topic string
	var partition int32
	var offset int64
	cmd := &cobra.Command{
		Use:   "translate",
		Short: "Print the target offset that a source offset maps to",
		Long: `Print the target offset that source offset --offset of --topic/--partition maps to:
the target offset of the first mirrored record at or after it.`,
		Args: noArgs,
	}
	f.add(cmd)
	cmd.Flags().StringVar(&topic, "topic", "", "source topic")
	cmd.Flags().Int32Var(&partition, "partition", -1, "source partition")
	cmd.Flags().Int64Var(&offset, "offset", -1, "source offset")
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		if topic == "" || partition < 0 || offset < 0 {
			return usageErrorf("--topic, --partition and --offset are required")
		}
		p, adm, err := f.progress(cmd.Context())
		if err != nil {
			return err
		}
		adm.Close()
		o, tt, err := p.Translate(mirror.TopicPartition{Topic: topic, Partition: partition}, offset)
		if err != nil {
			return err
		}
		fmt.Fprintf(cmd.OutOrStdout(), "%s %d %d\n", tt, partition, o)
		return nil
	}
	return cmd
}
