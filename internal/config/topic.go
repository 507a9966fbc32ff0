package config

import (
	"fmt"
	"reflect"
	"sort"
	"strconv"
	"strings"
)

// TopicConfig is the effective configuration of one topic: the broker defaults with the
// topic's overrides on top (ResolveTopic). Durations are milliseconds and sizes bytes, as
// in Kafka; Long.MAX (math.MaxInt64) means "never".
type TopicConfig struct {
	// CleanupPolicy is "delete", "compact" or "compact,delete" (normalized).
	CleanupPolicy  string `config:"cleanup.policy"`
	RetentionMs    int64  `config:"retention.ms"`    // -1: no time limit
	RetentionBytes int64  `config:"retention.bytes"` // negative: no size limit
	SegmentBytes   int64  `config:"segment.bytes"`   // >= 14
	SegmentMs      int64  `config:"segment.ms"`      // >= 1
	// SegmentJitterMs is subtracted at random from SegmentMs, so that segments of many
	// partitions do not all roll at once.
	SegmentJitterMs    int64 `config:"segment.jitter.ms"`
	SegmentIndexBytes  int32 `config:"segment.index.bytes"`
	IndexIntervalBytes int32 `config:"index.interval.bytes"`
	// FlushMessages and FlushMs relax durability: Runnel's default FlushMessages is 1,
	// every acknowledged batch is fsynced (group commit), and FlushMs is Long.MAX.
	FlushMessages                        int64   `config:"flush.messages"`
	FlushMs                              int64   `config:"flush.ms"`
	MaxMessageBytes                      int32   `config:"max.message.bytes"`
	MinInsyncReplicas                    int32   `config:"min.insync.replicas"`
	UncleanLeaderElection                bool    `config:"unclean.leader.election.enable"`
	MessageTimestampType                 string  `config:"message.timestamp.type"` // CreateTime or LogAppendTime
	DeleteRetentionMs                    int64   `config:"delete.retention.ms"`
	MinCompactionLagMs                   int64   `config:"min.compaction.lag.ms"`
	MinCleanableDirtyRatio               float64 `config:"min.cleanable.dirty.ratio"`
	CompressionType                      string  `config:"compression.type"` // producer, gzip, snappy, lz4, zstd, uncompressed
	FileDeleteDelayMs                    int64   `config:"file.delete.delay.ms"`
	MessageTimestampBeforeMaxMs          int64   `config:"message.timestamp.before.max.ms"`
	MessageTimestampAfterMaxMs           int64   `config:"message.timestamp.after.max.ms"`
	MaxCompactionLagMs                   int64   `config:"max.compaction.lag.ms"`
	Preallocate                          bool    `config:"preallocate"`
	LeaderReplicationThrottledReplicas   string  `config:"leader.replication.throttled.replicas"`   // "", "*" or PARTITION:BROKER,...
	FollowerReplicationThrottledReplicas string  `config:"follower.replication.throttled.replicas"` // as above
}

// Compact reports whether the cleanup policy includes compaction.
func (c TopicConfig) Compact() bool { return strings.Contains(c.CleanupPolicy, "compact") }

// Delete reports whether the cleanup policy includes deletion by retention.
func (c TopicConfig) Delete() bool { return strings.Contains(c.CleanupPolicy, "delete") }

// IsTopicConfig reports whether key is a topic config name.
func IsTopicConfig(key string) bool {
	_, ok := topicByName[key]
	return ok
}

// ValidateTopicConfig checks one topic config, as CreateTopics and AlterConfigs receive
// it. An unknown key or a bad value gives an *Error naming it (ErrUnknownConfig or
// ErrInvalidConfig).
func ValidateTopicConfig(key, value string) error {
	p, ok := topicByName[key]
	if !ok {
		return unknownTopicConfig(key)
	}
	if err := p.validate(strings.TrimSpace(value)); err != nil {
		return err
	}
	return nil
}

// ValidateDynamicBrokerConfig checks one config entry of the default broker resource
// (an empty name) in AlterConfigs or IncrementalAlterConfigs: a topic config (a
// cluster-wide default for every topic), a broker property marked dynamic (the
// replication throttles' rates), or any other name Kafka takes there
// (kafka_dynamic.go), stored whether or not Runnel acts on it.
func ValidateDynamicBrokerConfig(key, value string) error {
	return validateDynamicBroker(key, value, false)
}

// validateDynamicBroker is ValidateDynamicBrokerConfig, and with perBroker
// ValidatePerBrokerConfig.
func validateDynamicBroker(key, value string, perBroker bool) error {
	// The metadata's own encodings (one broker's value, a group's config, the
	// controller's state) are never a client's config name: accepting one as a custom
	// property would let AlterConfigs overwrite them.
	for _, reserved := range []string{ControllerStatePrefix, BrokerScopePrefix, GroupScopePrefix} {
		if strings.HasPrefix(key, reserved) {
			return fmt.Errorf("%w: %s: names starting %q are reserved for Runnel's own metadata", ErrUnknownConfig, key, reserved)
		}
	}
	if p, ok := brokerByName[key]; ok && p.dynamic {
		if err := p.validate(strings.TrimSpace(value)); err != nil {
			return err
		}
		return nil
	}
	if _, ok := topicByName[key]; ok {
		return ValidateTopicConfig(key, value)
	}
	if err := CheckDynamicBrokerNames([]string{key}, perBroker); err != nil {
		return err
	}
	return validateKafkaDynamic(key, value)
}

// IsDynamicBrokerProperty reports whether key, one of the cluster-wide configs, is
// anything but a topic config (which those configs give the default of): a broker
// property set at run time (Runnel's or Kafka's, kafka_dynamic.go), one broker's own
// value of one (BrokerScopePrefix), a group's config (GroupScopePrefix) or the
// controller's own state (ControllerStatePrefix). A topic's settings leave these out.
func IsDynamicBrokerProperty(key string) bool {
	_, topic := topicByName[key]
	return !topic
}

// ControllerStatePrefix names the keys of the cluster-wide configs (metadata
// Image.Configs) that hold the controller's own state rather than a config: the
// balancer's record of the throttles it set (controller/balance_throttle.go), so that
// a controller that takes over clears them and nothing an operator set. No property
// has the prefix: AlterConfigs refuses such a key (ValidateDynamicBrokerConfig), the
// topics' settings leave it out (IsDynamicBrokerProperty) and DescribeConfigs does not
// list it.
const ControllerStatePrefix = "runnel.controller."

// DynamicBrokerLong is the value of dynamic broker property key: the metadata's
// (dynamic, from AlterConfigs) when it holds a valid one, else fallback (the node's
// own).
func DynamicBrokerLong(dynamic map[string]string, key string, fallback int64) int64 {
	v, ok := dynamic[key]
	if !ok {
		return fallback
	}
	n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
	if err != nil {
		return fallback
	}
	return n
}

// TopicDefaults maps every topic config to its effective broker default: the first
// broker synonym that was set (log.retention.ms, then .minutes, then .hours), else the
// first synonym's default, else the topic config's own default.
func (b *Broker) TopicDefaults() map[string]string {
	out := make(map[string]string, len(topicProps))
	for i := range topicProps {
		v, _, _ := b.topicDefault(&topicProps[i])
		out[topicProps[i].name] = v
	}
	return out
}

// topicDefault gives p's broker default, its source and the broker property it came
// from ("" when it is p's own default).
func (b *Broker) topicDefault(p *prop) (value string, src Source, from string) {
	syns := synonyms[p.name]
	for _, s := range syns {
		if b.Explicit(s.name) {
			return scaled(s, b.Raw[s.name]), SourceStaticBroker, s.name
		}
	}
	for _, s := range syns {
		if !s.null {
			return scaled(s, s.dflt), SourceDefault, s.name
		}
	}
	return p.dflt, SourceDefault, ""
}

// scaled converts a broker synonym's value to the topic's unit (hours to ms). As in
// Kafka, a negative retention in any unit means no limit, -1.
func scaled(s *prop, v string) string {
	if s.scale == 0 {
		return v
	}
	n, _ := strconv.ParseInt(v, 10, 64)
	if n < 0 {
		return "-1"
	}
	return strconv.FormatInt(n*s.scale, 10)
}

// ResolveTopic gives a topic's effective configuration: TopicDefaults with overrides on
// top. Every override is validated; the first bad one in name order is the error.
func (b *Broker) ResolveTopic(overrides map[string]string) (TopicConfig, error) {
	keys := make([]string, 0, len(overrides))
	for k := range overrides {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	values := b.TopicDefaults()
	for _, k := range keys {
		if err := ValidateTopicConfig(k, overrides[k]); err != nil {
			return TopicConfig{}, err
		}
		values[k] = strings.TrimSpace(overrides[k])
	}
	var c TopicConfig
	v := reflect.ValueOf(&c).Elem()
	for name, i := range topicFields {
		if err := setField(v.Field(i), values[name]); err != nil {
			return TopicConfig{}, invalid(name, values[name], err.Error())
		}
	}
	c.CleanupPolicy = normalizePolicy(c.CleanupPolicy)
	return c, nil
}

// normalizePolicy sorts and dedupes a cleanup.policy list: "delete,compact" is
// "compact,delete".
func normalizePolicy(v string) string {
	elems := splitList(v)
	sort.Strings(elems)
	out := elems[:0]
	for i, e := range elems {
		if i == 0 || e != elems[i-1] {
			out = append(out, e)
		}
	}
	return strings.Join(out, ",")
}

// topicFields maps a topic config name to the index of the TopicConfig field tagged with
// it. Topic configs without a field (the compression levels) are validated and
// described but not resolved.
var topicFields = func() map[string]int {
	m := map[string]int{}
	t := reflect.TypeOf(TopicConfig{})
	for i := 0; i < t.NumField(); i++ {
		m[t.Field(i).Tag.Get("config")] = i
	}
	return m
}()
