package cli

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/runnel-io/runnel/internal/clitext"
)

// errTopicNotFound is returned when a command names a topic the cluster does not have.
var errTopicNotFound = clitext.ErrTopicNotFound

func topicNotFound(topic string) error {
	return fmt.Errorf("topic %q %w", topic, errTopicNotFound)
}

func newTopicCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "topic",
		Short: "Create, list, describe, alter and delete topics",
		Args:  cobra.ArbitraryArgs,
		RunE:  groupRunE,
	}
	conn := addConnFlags(cmd.PersistentFlags())
	cmd.AddCommand(newTopicCreate(conn), newTopicList(conn), newTopicDescribe(conn),
		newTopicDelete(conn), newTopicAlter(conn), newTopicAddPartitions(conn), newTopicDeleteRecords(conn),
		newTopicRepair(conn))
	return cmd
}

// withAdmin runs fn with an admin client built from conn.
func withAdmin(conn *connFlags, fn func(*kadm.Client) error) error {
	adm, err := conn.admin()
	if err != nil {
		return err
	}
	defer adm.Close()
	return fn(adm)
}

func newTopicCreate(conn *connFlags) *cobra.Command {
	var partitions int32
	var rf int16
	var configs []string
	cmd := &cobra.Command{
		Use:   "create NAME",
		Short: "Create a topic",
		Args:  exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg, err := parseConfigs(configs)
			if err != nil {
				return err
			}
			return withAdmin(conn, func(adm *kadm.Client) error {
				return createTopic(cmd, adm, args[0], partitions, rf, cfg)
			})
		},
	}
	cmd.Flags().Int32VarP(&partitions, "partitions", "p", -1, "number of partitions (-1: the broker's num.partitions)")
	cmd.Flags().Int16VarP(&rf, "replication-factor", "r", -1, "replicas per partition (-1: the broker's default.replication.factor)")
	cmd.Flags().StringArrayVarP(&configs, "config", "c", nil, "topic config KEY=VALUE (repeatable)")
	return cmd
}

func createTopic(cmd *cobra.Command, adm *kadm.Client, topic string, p int32, rf int16, cfg map[string]*string) error {
	resp, err := adm.CreateTopic(cmd.Context(), p, rf, cfg, topic)
	if resp.Err != nil { // CreateTopic returns resp.Err as err too, without the message
		err = withMessage(resp.Err, resp.ErrMessage)
	}
	if err != nil {
		return fmt.Errorf("create topic %q: %w", topic, err)
	}
	fmt.Fprintf(cmd.OutOrStdout(), "Created topic %q (partitions %d, replication factor %d).\n",
		topic, resp.NumPartitions, resp.ReplicationFactor)
	return nil
}

// parseConfigs reads -c KEY=VALUE flags. An empty VALUE stays an empty string.
func parseConfigs(kvs []string) (map[string]*string, error) {
	m := make(map[string]*string, len(kvs))
	for _, kv := range kvs {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return nil, usageErrorf("bad --config %q: want KEY=VALUE", kv)
		}
		m[k] = &v
	}
	return m, nil
}

// topicRow is one topic in `topic list`.
type topicRow struct {
	Topic             string `json:"topic"`
	ID                string `json:"id"`
	Partitions        int    `json:"partitions"`
	ReplicationFactor int    `json:"replication_factor"`
	Internal          bool   `json:"internal"`
	Error             string `json:"error,omitempty"`
}

func newTopicList(conn *connFlags) *cobra.Command {
	var internal bool
	var out outputFlags
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List topics",
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			asJSON, err := out.json()
			if err != nil {
				return err
			}
			return withAdmin(conn, func(adm *kadm.Client) error {
				rows, err := listTopics(cmd.Context(), adm, internal)
				if err != nil {
					return err
				}
				return printTopicList(cmd, rows, asJSON)
			})
		},
	}
	out.add(cmd)
	cmd.Flags().BoolVar(&internal, "internal", false, "include internal topics such as __consumer_offsets")
	return cmd
}

func listTopics(ctx context.Context, adm *kadm.Client, internal bool) ([]topicRow, error) {
	list := adm.ListTopics
	if internal {
		list = adm.ListTopicsWithInternal
	}
	tds, err := list(ctx)
	if err != nil {
		return nil, fmt.Errorf("list topics: %w", err)
	}
	rows := []topicRow{}
	for _, td := range tds.Sorted() {
		row := topicRow{Topic: td.Topic, ID: topicID(td.ID), Partitions: len(td.Partitions),
			ReplicationFactor: td.Partitions.NumReplicas(), Internal: td.IsInternal}
		if td.Err != nil {
			row.Error = td.Err.Error()
		}
		rows = append(rows, row)
	}
	return rows, nil
}

func printTopicList(cmd *cobra.Command, rows []topicRow, asJSON bool) error {
	if asJSON {
		return writeJSON(cmd.OutOrStdout(), rows)
	}
	tw := newTable(cmd.OutOrStdout())
	fmt.Fprintln(tw, "TOPIC\tPARTITIONS\tREPLICATION-FACTOR")
	for _, r := range rows {
		if r.Error != "" {
			fmt.Fprintf(tw, "%s\t-\t-\t%s\n", r.Topic, r.Error)
			continue
		}
		fmt.Fprintf(tw, "%s\t%d\t%d\n", r.Topic, r.Partitions, r.ReplicationFactor)
	}
	return tw.Flush()
}

func newTopicDelete(conn *connFlags) *cobra.Command {
	return &cobra.Command{
		Use:   "delete NAME",
		Short: "Delete a topic",
		Args:  exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			topic := args[0]
			return withAdmin(conn, func(adm *kadm.Client) error {
				resp, err := adm.DeleteTopic(cmd.Context(), topic)
				if resp.Err != nil { // as CreateTopic
					err = withMessage(resp.Err, resp.ErrMessage)
				}
				if errors.Is(err, kerr.UnknownTopicOrPartition) {
					return fmt.Errorf("delete topic: %w", topicNotFound(topic))
				}
				if err != nil {
					return fmt.Errorf("delete topic %q: %w", topic, err)
				}
				fmt.Fprintf(cmd.OutOrStdout(), "Deleted topic %q.\n", topic)
				return nil
			})
		},
	}
}

func newTopicAlter(conn *connFlags) *cobra.Command {
	var set, del []string
	cmd := &cobra.Command{
		Use:   "alter NAME",
		Short: "Change a topic's configs (incrementally; -c KEY= or --delete-config KEY removes one)",
		Args:  exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			alters, err := configAlters(set, del)
			if err != nil {
				return err
			}
			return withAdmin(conn, func(adm *kadm.Client) error {
				return alterTopic(cmd, adm, args[0], alters)
			})
		},
	}
	cmd.Flags().StringArrayVarP(&set, "config", "c", nil, "set KEY=VALUE, or remove KEY= (repeatable)")
	cmd.Flags().StringArrayVar(&del, "delete-config", nil, "remove KEY, back to the default (repeatable)")
	return cmd
}

// configAlters turns -c and --delete-config into incremental alterations.
func configAlters(set, del []string) ([]kadm.AlterConfig, error) {
	var alters []kadm.AlterConfig
	for _, kv := range set {
		k, v, ok := strings.Cut(kv, "=")
		switch {
		case !ok || k == "":
			return nil, usageErrorf("bad --config %q: want KEY=VALUE or KEY=", kv)
		case v == "":
			alters = append(alters, kadm.AlterConfig{Op: kadm.DeleteConfig, Name: k})
		default:
			alters = append(alters, kadm.AlterConfig{Op: kadm.SetConfig, Name: k, Value: &v})
		}
	}
	for _, k := range del {
		alters = append(alters, kadm.AlterConfig{Op: kadm.DeleteConfig, Name: k})
	}
	if len(alters) == 0 {
		return nil, usageErrorf("nothing to alter: give -c KEY=VALUE or --delete-config KEY")
	}
	return alters, nil
}

func alterTopic(cmd *cobra.Command, adm *kadm.Client, topic string, alters []kadm.AlterConfig) error {
	resps, err := adm.AlterTopicConfigs(cmd.Context(), alters, topic)
	if err == nil {
		for _, r := range resps {
			if err = withMessage(r.Err, r.ErrMessage); err != nil {
				break
			}
		}
	}
	if errors.Is(err, kerr.UnknownTopicOrPartition) {
		return fmt.Errorf("alter topic: %w", topicNotFound(topic))
	}
	if err != nil {
		return fmt.Errorf("alter topic %q: %w", topic, err)
	}
	fmt.Fprintf(cmd.OutOrStdout(), "Altered %d config(s) of topic %q.\n", len(alters), topic)
	return nil
}

func newTopicAddPartitions(conn *connFlags) *cobra.Command {
	var total int
	cmd := &cobra.Command{
		Use:   "add-partitions NAME -p N",
		Short: "Grow a topic to N partitions in total",
		Args:  exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if total <= 0 {
				return usageErrorf("-p N (the new total number of partitions) is required")
			}
			return withAdmin(conn, func(adm *kadm.Client) error {
				return addPartitions(cmd, adm, args[0], total)
			})
		},
	}
	cmd.Flags().IntVarP(&total, "partitions", "p", 0, "the new total number of partitions")
	return cmd
}

func addPartitions(cmd *cobra.Command, adm *kadm.Client, topic string, total int) error {
	resps, err := adm.UpdatePartitions(cmd.Context(), total, topic)
	if err == nil {
		var resp kadm.CreatePartitionsResponse
		resp, err = resps.On(topic, nil)
		if err == nil {
			err = withMessage(resp.Err, resp.ErrMessage)
		}
	}
	if errors.Is(err, kerr.UnknownTopicOrPartition) {
		return fmt.Errorf("add partitions: %w", topicNotFound(topic))
	}
	if err != nil {
		return fmt.Errorf("add partitions to topic %q: %w", topic, err)
	}
	fmt.Fprintf(cmd.OutOrStdout(), "Topic %q now has %d partitions.\n", topic, total)
	return nil
}
