package controller

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/runnel-io/runnel/internal/config"
	"github.com/runnel-io/runnel/internal/metadata"
)

// AlterTopicConfigs changes topic's config overrides. A nil value deletes the key.
// With replaceAll (Kafka AlterConfigs) the non-nil entries of set become the whole
// set of overrides; without it (IncrementalAlterConfigs) only the named keys change.
// Values are checked with Config.ValidateTopicConfig (ErrInvalidConfig).
func (c *Controller) AlterTopicConfigs(ctx context.Context, topic string, set map[string]*string, replaceAll bool, validateOnly bool) error {
	return c.withLeader(ctx, func(im *metadata.Image) error {
		t := im.Topics[topic]
		if t == nil {
			return fmt.Errorf("%w: %q", ErrUnknownTopic, topic)
		}
		return c.alterConfigsLocked(ctx, c.cfg.ValidateTopicConfig, topic, t.Configs, set, replaceAll, validateOnly)
	})
}

// AlterBrokerConfigs changes the dynamic cluster-wide defaults (Image.Configs), the
// way IncrementalAlterConfigs on the default broker resource does: a nil value
// deletes the key. Values are checked with Config.ValidateBrokerConfig.
func (c *Controller) AlterBrokerConfigs(ctx context.Context, set map[string]*string, validateOnly bool) error {
	if err := refuseReservedKeys(set); err != nil {
		return err
	}
	return c.withLeader(ctx, func(im *metadata.Image) error {
		return c.alterConfigsLocked(ctx, c.cfg.ValidateBrokerConfig, "", im.Configs, set, false, validateOnly)
	})
}

// AlterNodeConfigs changes broker node's own dynamic configs, the way
// IncrementalAlterConfigs on the broker resource named by its id does (Kafka's
// DYNAMIC_BROKER_CONFIG): they apply on that node alone and win over the cluster-wide
// defaults there. They are kept among the cluster-wide configs under
// config.BrokerScopedKey, so they survive restarts. A nil value deletes the key.
// Values are checked with Config.ValidateNodeConfig. The node need not be
// registered (Kafka accepts configs for a broker before it first starts).
func (c *Controller) AlterNodeConfigs(ctx context.Context, node metadata.NodeID, set map[string]*string, validateOnly bool) error {
	if err := refuseReservedKeys(set); err != nil {
		return err
	}
	for k, v := range set {
		if err := validateConfig(c.cfg.ValidateNodeConfig, k, v); err != nil {
			return err
		}
	}
	scoped := make(map[string]*string, len(set))
	for k, v := range set {
		scoped[config.BrokerScopedKey(int32(node), k)] = v
	}
	return c.withLeader(ctx, func(im *metadata.Image) error {
		return c.alterConfigsLocked(ctx, nil, "", im.Configs, scoped, false, validateOnly)
	})
}

// refuseReservedKeys refuses keys of the controller's state, of per-broker configs and
// of group configs given by name (a deletion too, which is not validated otherwise): only the
// controller writes them.
func refuseReservedKeys(set map[string]*string) error {
	for k := range set {
		if strings.HasPrefix(k, config.ControllerStatePrefix) || strings.HasPrefix(k, config.BrokerScopePrefix) ||
			strings.HasPrefix(k, config.GroupScopePrefix) {
			return fmt.Errorf("%w: %s: no such config (the prefix is reserved)", ErrInvalidConfig, k)
		}
	}
	return nil
}

func (c *Controller) alterConfigsLocked(ctx context.Context, validate func(k, v string) error, topic string,
	current map[string]string, set map[string]*string, replaceAll, validateOnly bool) error {
	for k, v := range set {
		if err := validateConfig(validate, k, v); err != nil {
			return err
		}
	}
	recs := configRecords(topic, current, set, replaceAll)
	if validateOnly || len(recs) == 0 {
		return nil
	}
	_, err := c.proposeLocked(ctx, recs)
	return err
}

// validateConfig checks one entry; a nil value (a deletion) only needs a key.
func validateConfig(validate func(k, v string) error, key string, value *string) error {
	if key == "" {
		return fmt.Errorf("%w: empty config name", ErrInvalidConfig)
	}
	if value == nil || validate == nil {
		return nil
	}
	if err := validate(key, *value); err != nil {
		return &invalidConfigError{key: key, value: *value, err: err}
	}
	return nil
}

// invalidConfigError is ErrInvalidConfig wrapping the validator's error. It reads
// `invalid config: retention.ms: "abc" is not an integer`: the validator's text, which
// names the key, without config's own "config: " prefix; the key and value are added
// when the validator's text does not name the key.
type invalidConfigError struct {
	key, value string
	err        error
}

func (e *invalidConfigError) Error() string {
	reason := strings.TrimPrefix(e.err.Error(), "config: ")
	if !strings.Contains(reason, e.key) {
		reason = fmt.Sprintf("%s=%s: %s", e.key, e.value, reason)
	}
	return ErrInvalidConfig.Error() + ": " + reason
}

func (e *invalidConfigError) Unwrap() []error { return []error{ErrInvalidConfig, e.err} }

// configRecords returns the ConfigType records that turn current into the result of
// set (see AlterTopicConfigs), one per changed key in key order; none if nothing
// changes.
func configRecords(topic string, current map[string]string, set map[string]*string, replaceAll bool) []metadata.Record {
	want := map[string]*string{}
	if replaceAll {
		for k := range current {
			want[k] = nil
		}
	}
	for k, v := range set {
		want[k] = v
	}
	keys := make([]string, 0, len(want))
	for k := range want {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var recs []metadata.Record
	for _, k := range keys {
		v := want[k]
		old, had := current[k]
		if (v == nil && !had) || (v != nil && had && old == *v) {
			continue
		}
		recs = append(recs, metadata.Record{Type: metadata.ConfigType, TopicName: topic, ConfigKey: k, ConfigValue: v})
	}
	return recs
}
