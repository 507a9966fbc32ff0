package cli

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// topicDescription is `topic describe`'s output.
type topicDescription struct {
	Topic      string            `json:"topic"`
	ID         string            `json:"id"`
	Internal   bool              `json:"internal"`
	Partitions []partitionRow    `json:"partitions"`
	Configs    map[string]string `json:"configs"` // set on the topic, not defaults
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
}

func newTopicDescribe(conn *connFlags) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "describe NAME",
		Short: "Show a topic's partitions (leader, replicas, ISR, epoch, offsets) and configs",
		Args:  exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return withAdmin(conn, func(adm *kadm.Client) error {
				d, err := describeTopic(cmd.Context(), adm, args[0])
				if err != nil {
					return err
				}
				if asJSON {
					return writeJSON(cmd.OutOrStdout(), d)
				}
				return printTopicDescription(cmd.OutOrStdout(), d)
			})
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
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

func describeTopic(ctx context.Context, adm *kadm.Client, topic string) (*topicDescription, error) {
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
	configs, err := topicConfigs(ctx, adm, topic)
	if err != nil {
		return nil, err
	}
	d := &topicDescription{Topic: topic, ID: topicID(td.ID), Internal: td.IsInternal, Configs: configs}
	for _, p := range td.Partitions.Sorted() {
		d.Partitions = append(d.Partitions, partitionRowOf(p, starts, ends))
	}
	return d, nil
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

// topicConfigs returns the configs set on the topic itself (not broker or default ones).
func topicConfigs(ctx context.Context, adm *kadm.Client, topic string) (map[string]string, error) {
	rcs, err := adm.DescribeTopicConfigs(ctx, topic)
	if err == nil {
		var rc kadm.ResourceConfig
		rc, err = rcs.On(topic, nil)
		if err == nil {
			err = withMessage(rc.Err, rc.ErrMessage)
		}
		if err == nil {
			return topicSetConfigs(rc.Configs), nil
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
	fmt.Fprint(w, "Configs:")
	if len(d.Configs) == 0 {
		fmt.Fprint(w, " (none set on the topic)")
	}
	for _, k := range sortedKeys(d.Configs) {
		fmt.Fprintf(w, " %s=%s", k, d.Configs[k])
	}
	fmt.Fprintln(w)
	tw := newTable(w)
	fmt.Fprintln(tw, "PARTITION\tLEADER\tEPOCH\tREPLICAS\tISR\tLOG-START\tLOG-END\tERROR")
	for _, p := range d.Partitions {
		fmt.Fprintf(tw, "%d\t%s\t%d\t%s\t%s\t%s\t%s\t%s\n", p.Partition, dash(int64(p.Leader)), p.LeaderEpoch,
			joinInt32s(p.Replicas), joinInt32s(p.ISR), dash(p.LogStartOffset), dash(p.LogEndOffset), p.Error)
	}
	return tw.Flush()
}

// topicID renders a topic ID as Kafka does (URL-safe base64, no padding).
func topicID(id kadm.TopicID) string {
	if id == (kadm.TopicID{}) {
		return "-"
	}
	return base64.RawURLEncoding.EncodeToString(id[:])
}
