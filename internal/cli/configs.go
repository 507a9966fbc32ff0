package cli

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strconv"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// configEntry is one config with its effective value and where the value comes from,
// as `kafka-configs --describe --all` shows it (topic describe --all, cluster config).
type configEntry struct {
	Name string `json:"name"`
	// Value is null when the config has no value or is sensitive.
	Value *string `json:"value"`
	// Source is Kafka's DescribeConfigs source: DYNAMIC_TOPIC_CONFIG,
	// DYNAMIC_BROKER_CONFIG, DYNAMIC_DEFAULT_BROKER_CONFIG, STATIC_BROKER_CONFIG,
	// DEFAULT_CONFIG (or UNKNOWN).
	Source string `json:"source"`
	// Origin is the source in one word: topic (an override on the topic), broker (a
	// broker setting, static or dynamic) or default.
	Origin string `json:"origin"`
	// Property is the broker property the value comes from when it is not the
	// config's own name (retention.ms from log.retention.hours).
	Property  string `json:"property,omitempty"`
	Sensitive bool   `json:"sensitive,omitempty"`
}

// configEntries turns DescribeConfigs entries into configEntries, sorted by name.
func configEntries(cs []kadm.Config) []configEntry {
	out := make([]configEntry, 0, len(cs))
	for _, c := range cs {
		e := configEntry{Name: c.Key, Value: c.Value, Source: sourceName(c.Source),
			Origin: sourceOrigin(c.Source), Sensitive: c.Sensitive}
		for _, s := range c.Synonyms {
			if s.Source == c.Source {
				if s.Key != c.Key {
					e.Property = s.Key
				}
				break
			}
		}
		out = append(out, e)
	}
	slices.SortFunc(out, func(a, b configEntry) int {
		switch {
		case a.Name < b.Name:
			return -1
		case a.Name > b.Name:
			return 1
		}
		return 0
	})
	return out
}

func sourceName(s kmsg.ConfigSource) string {
	switch s {
	case kmsg.ConfigSourceDynamicTopicConfig:
		return "DYNAMIC_TOPIC_CONFIG"
	case kmsg.ConfigSourceDynamicBrokerConfig:
		return "DYNAMIC_BROKER_CONFIG"
	case kmsg.ConfigSourceDynamicDefaultBrokerConfig:
		return "DYNAMIC_DEFAULT_BROKER_CONFIG"
	case kmsg.ConfigSourceStaticBrokerConfig:
		return "STATIC_BROKER_CONFIG"
	case kmsg.ConfigSourceDefaultConfig:
		return "DEFAULT_CONFIG"
	case kmsg.ConfigSourceDynamicBrokerLoggerConfig:
		return "DYNAMIC_BROKER_LOGGER_CONFIG"
	}
	return "UNKNOWN"
}

func sourceOrigin(s kmsg.ConfigSource) string {
	switch s {
	case kmsg.ConfigSourceDynamicTopicConfig:
		return "topic"
	case kmsg.ConfigSourceDynamicBrokerConfig, kmsg.ConfigSourceDynamicDefaultBrokerConfig,
		kmsg.ConfigSourceStaticBrokerConfig, kmsg.ConfigSourceDynamicBrokerLoggerConfig:
		return "broker"
	case kmsg.ConfigSourceDefaultConfig:
		return "default"
	}
	return "unknown"
}

// sourceText is the SOURCE column: topic, broker (static), broker (dynamic),
// default, with the broker property the value comes from when it has another name:
// broker (static: log.retention.hours), default (log.cleanup.policy).
func (e configEntry) sourceText() string {
	var base, kind string
	switch e.Source {
	case "DYNAMIC_TOPIC_CONFIG":
		base = "topic"
	case "STATIC_BROKER_CONFIG":
		base, kind = "broker", "static"
	case "DYNAMIC_BROKER_CONFIG":
		base, kind = "broker", "dynamic"
	case "DYNAMIC_DEFAULT_BROKER_CONFIG":
		base, kind = "broker", "dynamic cluster default"
	case "DEFAULT_CONFIG":
		base = "default"
	default:
		base = e.Origin
	}
	switch {
	case kind != "" && e.Property != "":
		return base + " (" + kind + ": " + e.Property + ")"
	case kind != "":
		return base + " (" + kind + ")"
	case e.Property != "":
		return base + " (" + e.Property + ")"
	}
	return base
}

func (e configEntry) valueText() string {
	switch {
	case e.Sensitive:
		return "(sensitive)"
	case e.Value == nil:
		return "(null)"
	}
	return *e.Value
}

func printConfigEntries(w io.Writer, es []configEntry) error {
	tw := newTable(w)
	fmt.Fprintln(tw, "CONFIG\tVALUE\tSOURCE")
	for _, e := range es {
		fmt.Fprintf(tw, "%s\t%s\t%s\n", e.Name, e.valueText(), e.sourceText())
	}
	return tw.Flush()
}

// nodeConfig is one node's properties in `cluster config`.
type nodeConfig struct {
	Node    int32         `json:"node"`
	Configs []configEntry `json:"configs"`
}

func newClusterConfig(conn *connFlags) *cobra.Command {
	var nodes []int32
	var out outputFlags
	cmd := &cobra.Command{
		Use:   "config",
		Short: "Show each node's properties: value and source (server.properties/--set, or the default)",
		Long: `Show every property of each node (or of --node ID) with its effective value and its
source: broker (static) for one set in server.properties or with --set, broker
(dynamic) for one set at run time, default otherwise (DescribeConfigs of the broker
resource, as kafka-configs --describe --entity-type brokers --all).`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			asJSON, err := out.json()
			if err != nil {
				return err
			}
			return withAdmin(conn, func(adm *kadm.Client) error {
				ncs, err := describeNodeConfigs(cmd.Context(), adm, nodes)
				if err != nil {
					return err
				}
				if asJSON {
					return writeJSON(cmd.OutOrStdout(), ncs)
				}
				w := cmd.OutOrStdout()
				for i, nc := range ncs {
					if i > 0 {
						fmt.Fprintln(w)
					}
					fmt.Fprintf(w, "Node: %d\n", nc.Node)
					if err := printConfigEntries(w, nc.Configs); err != nil {
						return err
					}
				}
				return nil
			})
		},
	}
	cmd.Flags().Int32SliceVar(&nodes, "node", nil, "only these node ids (default: every live node)")
	out.add(cmd)
	return cmd
}

func describeNodeConfigs(ctx context.Context, adm *kadm.Client, nodes []int32) ([]nodeConfig, error) {
	md, err := adm.BrokerMetadata(ctx)
	if err != nil {
		return nil, fmt.Errorf("cluster metadata: %w", err)
	}
	live := md.Brokers.NodeIDs()
	for _, n := range nodes {
		if !slices.Contains(live, n) {
			return nil, fmt.Errorf("node config: node %d is not a live node of the cluster (live: %s)", n, joinInt32s(live))
		}
	}
	if len(nodes) == 0 {
		nodes = live
	}
	slices.Sort(nodes)
	rcs, err := adm.DescribeBrokerConfigs(ctx, nodes...)
	if err != nil {
		return nil, fmt.Errorf("node config: %w", err)
	}
	byNode := map[string]kadm.ResourceConfig{}
	for _, rc := range rcs {
		byNode[rc.Name] = rc
	}
	out := make([]nodeConfig, 0, len(nodes))
	for _, n := range nodes {
		rc, ok := byNode[strconv.Itoa(int(n))]
		if !ok {
			return nil, fmt.Errorf("node config: node %d did not answer", n)
		}
		if err := withMessage(rc.Err, rc.ErrMessage); err != nil {
			return nil, fmt.Errorf("config of node %d: %w", n, err)
		}
		out = append(out, nodeConfig{Node: n, Configs: configEntries(rc.Configs)})
	}
	return out, nil
}
