package config

import (
	"strconv"
	"strings"
)

// Per-broker dynamic configs (Kafka's DYNAMIC_BROKER_CONFIG).
//
// AlterConfigs and IncrementalAlterConfigs on a broker resource set a dynamic broker
// config: with an empty resource name for every broker (the cluster-wide default,
// DYNAMIC_DEFAULT_BROKER_CONFIG), with a broker id for that broker alone, where it
// wins over the default. Both live in the metadata quorum's cluster-wide configs
// (metadata Image.Configs), so they survive restarts and every node sees them: the
// defaults under the property's own name, a broker's own under BrokerScopedKey(id,
// name). No property name has BrokerScopePrefix, so the two cannot collide, and the
// topics' settings leave the scoped keys out (IsDynamicBrokerProperty).
//
// A broker resource takes what Kafka takes on it (kafka_dynamic.go). Runnel acts on
// the properties marked dynamic in the table (the replication throttles' rates) and,
// on the default resource only, on topic config names (the cluster-wide topic
// defaults, which must not differ between the replicas of a partition); it stores
// and describes the rest without acting on them.

// BrokerScopePrefix starts the keys of per-broker dynamic configs in the cluster-wide
// configs: BrokerScopePrefix + "<id>." + property.
const BrokerScopePrefix = "runnel.broker."

// BrokerScopedKey is the key under which broker id's own value of property is kept.
func BrokerScopedKey(id int32, property string) string {
	return BrokerScopePrefix + strconv.Itoa(int(id)) + "." + property
}

// ParseBrokerScopedKey splits a key made by BrokerScopedKey; ok is false for any
// other key.
func ParseBrokerScopedKey(key string) (id int32, property string, ok bool) {
	rest, found := strings.CutPrefix(key, BrokerScopePrefix)
	if !found {
		return 0, "", false
	}
	ids, property, found := strings.Cut(rest, ".")
	if !found || property == "" {
		return 0, "", false
	}
	n, err := strconv.ParseInt(ids, 10, 32)
	if err != nil || n < 0 {
		return 0, "", false
	}
	return int32(n), property, true
}

// BrokerOwnConfigs returns broker id's own dynamic configs (property -> value) held in
// configs (metadata Image.Configs); nil when it has none.
func BrokerOwnConfigs(configs map[string]string, id int32) map[string]string {
	var out map[string]string
	prefix := BrokerScopePrefix + strconv.Itoa(int(id)) + "."
	for k, v := range configs {
		if p, ok := strings.CutPrefix(k, prefix); ok && p != "" {
			if out == nil {
				out = map[string]string{}
			}
			out[p] = v
		}
	}
	return out
}

// BrokerDefaultConfigs returns the cluster-wide dynamic broker configs held in configs:
// every key but the per-broker ones, the groups' and the controller's state.
func BrokerDefaultConfigs(configs map[string]string) map[string]string {
	out := make(map[string]string, len(configs))
	for k, v := range configs {
		if strings.HasPrefix(k, BrokerScopePrefix) || strings.HasPrefix(k, ControllerStatePrefix) || strings.HasPrefix(k, GroupScopePrefix) {
			continue
		}
		out[k] = v
	}
	return out
}

// ValidatePerBrokerConfig checks one config entry of a broker resource named by a
// broker id: what Kafka takes for one broker (kafka_dynamic.go). A topic config name
// is stored there but sets no topic default (those are cluster-wide: set them on the
// default broker resource, an empty name).
func ValidatePerBrokerConfig(key, value string) error {
	return validateDynamicBroker(key, value, true)
}

// DynamicBrokerProperties lists the broker properties settable at run time, in table
// order.
func DynamicBrokerProperties() []string {
	var out []string
	for i := range brokerProps {
		if brokerProps[i].dynamic {
			out = append(out, brokerProps[i].name)
		}
	}
	return out
}

// DynamicBrokerLongFor is the value of dynamic broker property key on broker id:
// the broker's own dynamic value, else the cluster-wide dynamic default, else
// fallback (the node's static configuration), each only when it is a valid integer.
func DynamicBrokerLongFor(configs map[string]string, id int32, key string, fallback int64) int64 {
	return DynamicBrokerLong(configs, BrokerScopedKey(id, key), DynamicBrokerLong(configs, key, fallback))
}
