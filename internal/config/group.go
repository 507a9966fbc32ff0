package config

import (
	"fmt"
	"maps"
	"sort"
	"strconv"
	"strings"
)

// Group configs (Kafka 4's GroupConfig, KIP-848 and KIP-932).
//
// DescribeConfigs, AlterConfigs and IncrementalAlterConfigs take a GROUP resource
// (type 32) named by a group id. Its configs override, for that group, the broker's
// group.consumer.* and group.share.* settings. Runnel stores them in the metadata
// quorum's cluster-wide configs (metadata Image.Configs) under GroupScopedKey, the
// same way per-broker configs are kept (dynamic.go), so they survive restarts and
// every node describes the same values. consumer.session.timeout.ms and
// consumer.heartbeat.interval.ms act on KIP-848 consumer groups (internal/group);
// share.auto.offset.reset, share.record.lock.duration.ms, share.session.timeout.ms and
// share.heartbeat.interval.ms and share.isolation.level act on share groups
// (internal/share).

// GroupScopePrefix starts the keys of group configs in the cluster-wide configs:
// GroupScopePrefix + property + "/" + group id. No property name has the prefix or a
// "/", so a key parses back unambiguously whatever the group id holds.
const GroupScopePrefix = "runnel.group."

// SourceGroup is Kafka's ConfigSource GROUP_CONFIG: a value set on the group.
const SourceGroup Source = 8

func init() { sourceNames[SourceGroup] = "GROUP_CONFIG" }

// groupConfig is one group config: its type, Kafka's default (the broker's
// group.consumer.* or group.share.* default, which Runnel does not let a node
// change), and the check Kafka's GroupConfig applies.
type groupConfig struct {
	name string
	typ  Type
	dflt string
	// min and max bound an INT value, as the broker's group.*.min/max settings do
	// (Kafka's defaults); minName and maxName name those settings in the refusal.
	min, max         int64
	minName, maxName string
	// atLeast is the ConfigDef lower bound checked before min (Kafka's atLeast(n)).
	atLeast int64
	values  []string // a STRING's allowed values
	doc     string
}

// groupConfigs lists Kafka's group configs in name order.
var groupConfigs = []groupConfig{
	{name: "consumer.heartbeat.interval.ms", typ: TypeInt, dflt: "5000", atLeast: 1, min: 5000, max: 15000,
		minName: "group.consumer.min.heartbeat.interval.ms", maxName: "group.consumer.max.heartbeat.interval.ms",
		doc: "The heartbeat interval given to the members of a consumer group (KIP-848)."},
	{name: "consumer.session.timeout.ms", typ: TypeInt, dflt: "45000", atLeast: 1, min: 45000, max: 60000,
		minName: "group.consumer.min.session.timeout.ms", maxName: "group.consumer.max.session.timeout.ms",
		doc: "The timeout to detect client failures when using the consumer group protocol (KIP-848)."},
	{name: "share.auto.offset.reset", typ: TypeString, dflt: "latest", values: []string{"latest", "earliest"},
		doc: "The strategy to initialize the share-partition start offset."},
	{name: "share.heartbeat.interval.ms", typ: TypeInt, dflt: "5000", atLeast: 1, min: 5000, max: 15000,
		minName: "group.share.min.heartbeat.interval.ms", maxName: "group.share.max.heartbeat.interval.ms",
		doc: "The heartbeat interval given to the members of a share group (KIP-932)."},
	{name: "share.isolation.level", typ: TypeString, dflt: "read_uncommitted", values: []string{"read_committed", "read_uncommitted"},
		doc: "Controls how a share group reads records written transactionally (Kafka 4.1)."},
	{name: "share.record.lock.duration.ms", typ: TypeInt, dflt: "30000", atLeast: 1000, min: 15000, max: 60000,
		minName: "group.share.min.record.lock.duration.ms", maxName: "group.share.max.record.lock.duration.ms",
		doc: "The record acquisition lock duration in milliseconds for share groups."},
	{name: "share.session.timeout.ms", typ: TypeInt, dflt: "45000", atLeast: 1, min: 45000, max: 60000,
		minName: "group.share.min.session.timeout.ms", maxName: "group.share.max.session.timeout.ms",
		doc: "The timeout to detect client failures when using the share group protocol (KIP-932)."},
}

func groupConfigByName(name string) *groupConfig {
	for i := range groupConfigs {
		if groupConfigs[i].name == name {
			return &groupConfigs[i]
		}
	}
	return nil
}

// GroupScopedKey is the key under which group's value of property is kept.
func GroupScopedKey(group, property string) string {
	return GroupScopePrefix + property + "/" + group
}

// GroupOwnConfigs returns group's configs (property -> value) held in configs (metadata
// Image.Configs); nil when it has none.
func GroupOwnConfigs(configs map[string]string, group string) map[string]string {
	var out map[string]string
	for k, v := range configs {
		rest, ok := strings.CutPrefix(k, GroupScopePrefix)
		if !ok {
			continue
		}
		property, g, ok := strings.Cut(rest, "/")
		if !ok || g != group {
			continue
		}
		if out == nil {
			out = map[string]string{}
		}
		out[property] = v
	}
	return out
}

// GroupConfigError is a refused group config change: Kafka's message, which clients
// show as it is (INVALID_CONFIG).
type GroupConfigError struct{ Msg string }

func (e *GroupConfigError) Error() string { return e.Msg }

// ValidateGroupConfigs checks a group's whole set of configs after a change, as Kafka's
// GroupConfig.validate does: every name known, every value of its type and within
// the broker's bounds, and each session timeout above its heartbeat interval (unset
// configs count at their defaults). Errors are *GroupConfigError with Kafka's text.
func ValidateGroupConfigs(configs map[string]string) error {
	names := make([]string, 0, len(configs))
	for k := range configs {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		if groupConfigByName(k) == nil {
			return &GroupConfigError{"Unknown group config name: " + k}
		}
	}
	ints := map[string]int64{}
	for i := range groupConfigs {
		c := &groupConfigs[i]
		v, set := configs[c.name]
		if !set {
			v = c.dflt
		}
		v = strings.TrimSpace(v)
		if err := c.parse(v, ints); err != nil {
			return err
		}
	}
	for i := range groupConfigs {
		c := &groupConfigs[i]
		if c.typ != TypeInt {
			continue
		}
		if n := ints[c.name]; n < c.min {
			return &GroupConfigError{c.name + " must be greater than or equal to " + c.minName}
		} else if n > c.max {
			return &GroupConfigError{c.name + " must be less than or equal to " + c.maxName}
		}
	}
	for _, p := range []string{"consumer", "share"} {
		if ints[p+".session.timeout.ms"] <= ints[p+".heartbeat.interval.ms"] {
			return &GroupConfigError{p + ".session.timeout.ms must be greater than " + p + ".heartbeat.interval.ms"}
		}
	}
	return nil
}

// parse checks v as Kafka's ConfigDef would, recording an INT in ints.
func (c *groupConfig) parse(v string, ints map[string]int64) error {
	switch c.typ {
	case TypeInt:
		n, err := strconv.ParseInt(v, 10, 32)
		if err != nil {
			return &GroupConfigError{fmt.Sprintf("Invalid value %s for configuration %s: Not a number of type INT", v, c.name)}
		}
		if n < c.atLeast {
			return &GroupConfigError{fmt.Sprintf("Invalid value %d for configuration %s: Value must be at least %d", n, c.name, c.atLeast)}
		}
		ints[c.name] = n
	case TypeString:
		for _, a := range c.values {
			if v == a {
				return nil
			}
		}
		return &GroupConfigError{fmt.Sprintf("Invalid value %s for configuration %s: String must be one of: %s", v, c.name, strings.Join(c.values, ", "))}
	}
	return nil
}

// DescribeGroup lists every group config of a group whose own configs are own
// (GroupOwnConfigs), sorted by name, as Kafka describes a GROUP resource: a value set
// on the group has source GROUP_CONFIG (and is its one synonym), any other the
// broker's default with source DEFAULT_CONFIG (no synonyms: Kafka has no broker
// property of the same name). None is read-only.
func DescribeGroup(own map[string]string) []Entry {
	out := make([]Entry, 0, len(groupConfigs))
	for i := range groupConfigs {
		c := &groupConfigs[i]
		e := Entry{Name: c.name, Value: c.dflt, Source: SourceDefault, Type: c.typ.String(), Doc: c.doc}
		if v, ok := own[c.name]; ok {
			e.Value, e.Source = strings.TrimSpace(v), SourceGroup
			e.Synonyms = []Entry{{Name: c.name, Value: e.Value, Source: SourceGroup, Type: e.Type}}
		}
		out = append(out, e)
	}
	return out
}

// GroupConfigDefaults is every group config's default, by name (the base an
// IncrementalAlterConfigs APPEND or SUBTRACT would start from).
func GroupConfigDefaults() map[string]string {
	out := make(map[string]string, len(groupConfigs))
	for _, c := range groupConfigs {
		out[c.name] = c.dflt
	}
	return out
}

// MergeConfigs is current after set: nil values delete, and with replaceAll (legacy
// AlterConfigs) only set's non-nil entries remain.
func MergeConfigs(current map[string]string, set map[string]*string, replaceAll bool) map[string]string {
	out := map[string]string{}
	if !replaceAll {
		maps.Copy(out, current)
	}
	for k, v := range set {
		if v == nil {
			delete(out, k)
		} else {
			out[k] = *v
		}
	}
	return out
}
