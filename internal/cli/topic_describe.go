package cli

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"time"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// topicDescription is `topic describe`'s output.
type topicDescription struct {
	Topic      string            `json:"topic"`
	ID         string            `json:"id"`
	Internal   bool              `json:"internal"`
	Partitions []partitionRow    `json:"partitions"`
	Configs    map[string]string `json:"configs"` // set on the topic, not defaults
	// AllConfigs (--all) is every topic config with its effective value and source.
	AllConfigs []configEntry `json:"all_configs,omitempty"`
}

// partitionRow is one partition of a described topic. Offsets are -1 when unknown.
type partitionRow struct {
	Partition       int32   `json:"partition"`
	Leader          int32   `json:"leader"`
	LeaderEpoch     int32   `json:"leader_epoch"`
	Replicas        []int32 `json:"replicas"`
	ISR             []int32 `json:"isr"`
	OfflineReplicas []int32 `json:"offline_replicas,omitempty"`
	LogStartOffset  int64   `json:"log_start_offset"`
	LogEndOffset    int64   `json:"log_end_offset"`
	Error           string  `json:"error,omitempty"`
	// Damaged are the replicas' damaged ranges (batches that failed their CRC:
	// docs/durability.md), as their nodes report them.
	Damaged []partitionDamage `json:"damaged,omitempty"`
}

// partitionDamage is one damaged range of one node's replica of a partition.
type partitionDamage struct {
	Node        int32  `json:"node"`
	FirstOffset int64  `json:"first_offset"`
	LastOffset  int64  `json:"last_offset"`
	Offsets     int64  `json:"offsets"`
	File        string `json:"file"`
	Position    int64  `json:"position"`
	Quarantine  string `json:"quarantine,omitempty"`
}

func newTopicDescribe(conn *connFlags) *cobra.Command {
	var out outputFlags
	var all bool
	cmd := &cobra.Command{
		Use:   "describe NAME...",
		Short: "Show topics' partitions (leader, replicas, ISR, epoch, offsets) and configs",
		Long: `Show each named topic's partitions (leader, epoch, replicas, ISR, log start and end
offsets) and the configs set on it. --all lists every topic config instead, with
its effective value and its source (as kafka-configs --describe --all): topic (an
override on the topic), broker (static: server.properties or --set; dynamic: set
at run time), or default; a value that comes from a broker property of another
name names it (retention.ms from log.retention.hours).

--output json (or --json) prints one object for one topic and an array of them
for several.`,
		Args: minArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			asJSON, err := out.json()
			if err != nil {
				return err
			}
			cl, err := conn.client()
			if err != nil {
				return err
			}
			defer cl.Close()
			adm := kadm.NewClient(cl)
			ds := make([]*topicDescription, 0, len(args))
			for _, topic := range args {
				d, err := describeTopic(cmd.Context(), adm, topic, all)
				if err != nil {
					return err
				}
				ds = append(ds, d)
			}
			addTopicDamage(cmd.Context(), cl, adm, ds)
			return printTopicDescriptions(cmd.OutOrStdout(), ds, asJSON)
		},
	}
	out.add(cmd)
	cmd.Flags().BoolVar(&all, "all", false, "list every config with its effective value and source (topic, broker, default)")
	return cmd
}

func printTopicDescriptions(w io.Writer, ds []*topicDescription, asJSON bool) error {
	if asJSON {
		if len(ds) == 1 {
			return writeJSON(w, ds[0])
		}
		return writeJSON(w, ds)
	}
	for i, d := range ds {
		if i > 0 {
			fmt.Fprintln(w)
		}
		if err := printTopicDescription(w, d); err != nil {
			return err
		}
	}
	return nil
}

// topicDetail loads one topic's metadata, failing with errTopicNotFound if it is missing.
func topicDetail(ctx context.Context, adm *kadm.Client, topic string) (kadm.TopicDetail, error) {
	tds, err := adm.ListTopicsWithInternal(ctx, topic)
	if err != nil {
		return kadm.TopicDetail{}, fmt.Errorf("metadata for topic %q: %w", topic, err)
	}
	td, ok := tds[topic]
	if !ok || errors.Is(td.Err, kerr.UnknownTopicOrPartition) {
		return kadm.TopicDetail{}, topicNotFound(topic)
	}
	if td.Err != nil {
		return kadm.TopicDetail{}, fmt.Errorf("metadata for topic %q: %w", topic, td.Err)
	}
	return td, nil
}

func describeTopic(ctx context.Context, adm *kadm.Client, topic string, all bool) (*topicDescription, error) {
	td, err := topicDetail(ctx, adm, topic)
	if err != nil {
		return nil, err
	}
	starts, err := adm.ListStartOffsets(ctx, topic)
	if err != nil {
		return nil, fmt.Errorf("log start offsets of topic %q: %w", topic, err)
	}
	ends, err := adm.ListEndOffsets(ctx, topic)
	if err != nil {
		return nil, fmt.Errorf("log end offsets of topic %q: %w", topic, err)
	}
	cs, err := topicConfigs(ctx, adm, topic)
	if err != nil {
		return nil, err
	}
	d := &topicDescription{Topic: topic, ID: topicID(td.ID), Internal: td.IsInternal, Configs: topicSetConfigs(cs)}
	if all {
		d.AllConfigs = configEntries(cs)
	}
	for _, p := range td.Partitions.Sorted() {
		d.Partitions = append(d.Partitions, partitionRowOf(p, starts, ends))
	}
	return d, nil
}

// addTopicDamage adds the damaged ranges the live nodes report (DescribeLogDirs with
// Runnel's DamagedRangesTag) to the partitions of ds. Best effort: a node that does
// not answer in time adds nothing.
func addTopicDamage(ctx context.Context, cl *kgo.Client, adm *kadm.Client, ds []*topicDescription) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	nodes, err := liveNodes(ctx, adm)
	if err != nil {
		return
	}
	for _, a := range describeNodeLogDirs(ctx, cl, nodes, nil) {
		for _, dmg := range a.Damaged {
			if dmg.Offsets == 0 {
				continue // bytes between batches: no record is unreadable
			}
			for _, d := range ds {
				if d.Topic != dmg.Topic {
					continue
				}
				for i := range d.Partitions {
					if p := &d.Partitions[i]; p.Partition == dmg.Partition {
						p.Damaged = append(p.Damaged, partitionDamage{Node: a.Node, FirstOffset: dmg.FirstOffset,
							LastOffset: dmg.LastOffset, Offsets: dmg.Offsets, File: dmg.File, Position: dmg.Position,
							Quarantine: dmg.Quarantine})
					}
				}
			}
		}
	}
}

func partitionRowOf(p kadm.PartitionDetail, starts, ends kadm.ListedOffsets) partitionRow {
	row := partitionRow{Partition: p.Partition, Leader: p.Leader, LeaderEpoch: p.LeaderEpoch,
		Replicas: p.Replicas, ISR: p.ISR, OfflineReplicas: p.OfflineReplicas,
		LogStartOffset: -1, LogEndOffset: -1}
	errs := []error{p.Err}
	if o, ok := starts.Lookup(p.Topic, p.Partition); ok {
		row.LogStartOffset = listedOffset(o, &errs)
	}
	if o, ok := ends.Lookup(p.Topic, p.Partition); ok {
		row.LogEndOffset = listedOffset(o, &errs)
	}
	if err := errors.Join(errs...); err != nil {
		row.Error = oneLine(err.Error())
	}
	return row
}

func listedOffset(o kadm.ListedOffset, errs *[]error) int64 {
	if o.Err != nil {
		*errs = append(*errs, o.Err)
		return -1
	}
	return o.Offset
}

// topicConfigs returns every config of the topic, with its source.
func topicConfigs(ctx context.Context, adm *kadm.Client, topic string) ([]kadm.Config, error) {
	rcs, err := adm.DescribeTopicConfigs(ctx, topic)
	if err == nil {
		var rc kadm.ResourceConfig
		rc, err = rcs.On(topic, nil)
		if err == nil {
			err = withMessage(rc.Err, rc.ErrMessage)
		}
		if err == nil {
			return rc.Configs, nil
		}
	}
	return nil, fmt.Errorf("configs of topic %q: %w", topic, err)
}

func topicSetConfigs(cs []kadm.Config) map[string]string {
	m := map[string]string{}
	for _, c := range cs {
		if c.Source != kmsg.ConfigSourceDynamicTopicConfig {
			continue
		}
		v := c.MaybeValue()
		if c.Sensitive {
			v = "(sensitive)"
		}
		m[c.Key] = v
	}
	return m
}

func printTopicDescription(w io.Writer, d *topicDescription) error {
	fmt.Fprintf(w, "Topic: %s  ID: %s  Partitions: %d\n", d.Topic, d.ID, len(d.Partitions))
	if d.AllConfigs != nil {
		if err := printConfigEntries(w, d.AllConfigs); err != nil {
			return err
		}
		fmt.Fprintln(w)
		return printPartitionTable(w, d)
	}
	fmt.Fprint(w, "Configs:")
	if len(d.Configs) == 0 {
		fmt.Fprint(w, " (none set on the topic)")
	}
	for _, k := range slices.Sorted(maps.Keys(d.Configs)) {
		fmt.Fprintf(w, " %s=%s", k, d.Configs[k])
	}
	fmt.Fprintln(w)
	return printPartitionTable(w, d)
}

func printPartitionTable(w io.Writer, d *topicDescription) error {
	tw := newTable(w)
	fmt.Fprintln(tw, "PARTITION\tLEADER\tEPOCH\tREPLICAS\tISR\tLOG-START\tLOG-END\tERROR")
	for _, p := range d.Partitions {
		fmt.Fprintf(tw, "%d\t%s\t%d\t%s\t%s\t%s\t%s\t%s\n", p.Partition, dash(int64(p.Leader)), p.LeaderEpoch,
			joinInt32s(p.Replicas), joinInt32s(p.ISR), dash(p.LogStartOffset), dash(p.LogEndOffset), p.Error)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, p := range d.Partitions {
		for _, dmg := range p.Damaged {
			q := "no quarantined copy"
			if dmg.Quarantine != "" {
				q = "quarantined copy " + dmg.Quarantine
			}
			fmt.Fprintf(w, "Damaged: partition %d on node %d: offsets %d-%d (%d offsets) corrupt in %s at byte %d; %s\n",
				p.Partition, dmg.Node, dmg.FirstOffset, dmg.LastOffset, dmg.Offsets, dmg.File, dmg.Position, q)
		}
	}
	return nil
}

// topicID renders a topic ID as Kafka does (URL-safe base64, no padding).
func topicID(id kadm.TopicID) string {
	if id == (kadm.TopicID{}) {
		return "-"
	}
	return base64.RawURLEncoding.EncodeToString(id[:])
}
