package config

import (
	"sort"
	"strings"
)

// Source is where a config value comes from, numbered as Kafka's DescribeConfigs
// ConfigSource.
type Source int

// Kafka's config sources.
const (
	SourceUnknown              Source = 0
	SourceDynamicTopic         Source = 1 // a topic override (CreateTopics, AlterConfigs)
	SourceDynamicBroker        Source = 2 // set on one broker at run time
	SourceDynamicDefaultBroker Source = 3 // set for all brokers at run time
	SourceStaticBroker         Source = 4 // server.properties or --set
	SourceDefault              Source = 5 // the built-in default
	SourceDynamicBrokerLogger  Source = 6
)

var sourceNames = map[Source]string{
	SourceUnknown:              "UNKNOWN",
	SourceDynamicTopic:         "DYNAMIC_TOPIC_CONFIG",
	SourceDynamicBroker:        "DYNAMIC_BROKER_CONFIG",
	SourceDynamicDefaultBroker: "DYNAMIC_DEFAULT_BROKER_CONFIG",
	SourceStaticBroker:         "STATIC_BROKER_CONFIG",
	SourceDefault:              "DEFAULT_CONFIG",
	SourceDynamicBrokerLogger:  "DYNAMIC_BROKER_LOGGER_CONFIG",
}

// String is Kafka's name for the source, as kafka-configs.sh prints it.
func (s Source) String() string {
	if n, ok := sourceNames[s]; ok {
		return n
	}
	return "UNKNOWN"
}

// Entry is one config as DescribeConfigs reports it.
type Entry struct {
	Name  string
	Value string
	// Null is Kafka's null value: the config has no value and no default (Value is ""),
	// or it is Sensitive and hidden.
	Null      bool
	Source    Source
	ReadOnly  bool   // cannot be changed with AlterConfigs
	Sensitive bool   // a password: Value is never shown
	Type      string // Kafka's ConfigType name: BOOLEAN, STRING, INT, SHORT, LONG, DOUBLE, LIST, CLASS, PASSWORD
	Doc       string
	// Synonyms are where the value could come from, highest precedence first: the topic
	// override, then the broker properties set in the file, then the defaults. Synonyms
	// carry Name, Value, Source and Type only.
	Synonyms []Entry
}

// TypeCode is the entry's type as Kafka's numeric ConfigType, for the wire.
func (e Entry) TypeCode() int8 {
	for i, n := range typeNames {
		if n == e.Type {
			return int8(i)
		}
	}
	return 0
}

// DescribeTopic lists every topic config of a topic with the given overrides, with its
// value, source and synonyms, sorted by name. Overrides with unknown names are left out:
// they cannot have been stored.
func (b *Broker) DescribeTopic(overrides map[string]string) []Entry {
	out := make([]Entry, 0, len(topicProps))
	for i := range topicProps {
		out = append(out, b.describeTopicConfig(&topicProps[i], overrides))
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

func (b *Broker) describeTopicConfig(p *prop, overrides map[string]string) Entry {
	e := Entry{Name: p.name, Type: p.typ.String(), Doc: p.doc}
	var syns []Entry
	if v, ok := overrides[p.name]; ok {
		e.Value, e.Source = strings.TrimSpace(v), SourceDynamicTopic
		syns = append(syns, Entry{Name: p.name, Value: e.Value, Source: SourceDynamicTopic, Type: e.Type})
	} else {
		e.Value, e.Source, _ = b.topicDefault(p)
	}
	brokerSyns := synonyms[p.name]
	for _, s := range brokerSyns {
		if b.Explicit(s.name) {
			syns = append(syns, Entry{Name: s.name, Value: b.Raw[s.name], Source: SourceStaticBroker, Type: s.typ.String()})
		}
	}
	hasDefault := false
	for _, s := range brokerSyns {
		if !s.null {
			hasDefault = true
			syns = append(syns, Entry{Name: s.name, Value: s.dflt, Source: SourceDefault, Type: s.typ.String()})
		}
	}
	if !hasDefault {
		syns = append(syns, Entry{Name: p.name, Value: p.dflt, Source: SourceDefault, Type: e.Type})
	}
	e.Synonyms = syns
	return e
}

// DescribeBroker lists every broker property with its value and source, sorted by name,
// as the node's own configuration gives them (no dynamic values; see
// DescribeBrokerDynamic).
func (b *Broker) DescribeBroker() []Entry { return b.DescribeBrokerDynamic(nil) }

// DescribeBrokerDynamic lists every broker property as DescribeBroker does, with the
// values set at run time: dynamic holds the cluster-wide dynamic broker configs
// (metadata Image.Configs, set by AlterConfigs on the default broker resource or on a
// broker, which Runnel applies to every node). A dynamic property set there has that
// value, with source DYNAMIC_DEFAULT_BROKER_CONFIG first among its synonyms (Kafka's
// order: dynamic default, static, default). Only the dynamic properties are
// writable (ReadOnly false).
func (b *Broker) DescribeBrokerDynamic(dynamic map[string]string) []Entry {
	return b.DescribeBrokerScoped(dynamic, nil)
}

// DescribeBrokerScoped is DescribeBrokerDynamic for one broker with its own dynamic
// configs (own, property -> value: BrokerOwnConfigs): a dynamic property set there has
// that value with source DYNAMIC_BROKER_CONFIG, which wins over the cluster-wide
// default; the synonyms are in Kafka's order (dynamic broker, dynamic default,
// static, default).
//
// The other names stored for the broker (Kafka's dynamic configs that Runnel's table
// lacks, listener-prefixed ones, custom ones: kafka_dynamic.go) are listed too, with
// their dynamic source, as Kafka lists them.
func (b *Broker) DescribeBrokerScoped(defaults, own map[string]string) []Entry {
	out := make([]Entry, 0, len(brokerProps))
	for i := range brokerProps {
		out = append(out, b.describeBrokerConfig(&brokerProps[i], defaults, own))
	}
	for k, v := range own {
		if _, ok := brokerByName[k]; !ok {
			out = append(out, dynamicEntry(k, v, SourceDynamicBroker))
		}
	}
	for k, v := range BrokerDefaultConfigs(defaults) {
		_, inTable := brokerByName[k]
		_, topic := topicByName[k]
		_, mine := own[k]
		if !inTable && !topic && !mine {
			out = append(out, dynamicEntry(k, v, SourceDynamicDefaultBroker))
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// dynamicEntry describes a dynamic broker config that Runnel's table lacks, as Kafka
// does: with Kafka's type (a topic config's for a topic config name), and hidden, as
// Kafka hides it, when that is a password or unknown (a custom property).
func dynamicEntry(k, v string, source Source) Entry {
	t := DynamicBrokerConfigType(k)
	if p, ok := topicByName[k]; ok && t == 0 {
		t = p.typ
	}
	e := Entry{Name: k, Value: strings.TrimSpace(v), Source: source, Type: t.String(), Sensitive: t == 0 || t == TypePassword}
	e.Synonyms = []Entry{{Name: k, Value: e.Value, Source: source, Type: e.Type}}
	if e.Sensitive {
		e.Value, e.Null, e.Synonyms[0].Value = "", true, ""
	}
	return e
}

// DescribeBrokerDefaults lists the cluster-wide dynamic broker configs that are set
// (defaults: BrokerDefaultConfigs), as Kafka describes the default broker resource
// (an empty name): only those, each with source DYNAMIC_DEFAULT_BROKER_CONFIG, sorted
// by name.
func DescribeBrokerDefaults(defaults map[string]string) []Entry {
	out := make([]Entry, 0, len(defaults))
	for k, v := range defaults {
		e := Entry{Name: k, Value: strings.TrimSpace(v), Source: SourceDynamicDefaultBroker}
		if p, ok := brokerByName[k]; ok {
			e.Type, e.Doc, e.ReadOnly, e.Sensitive = p.typ.String(), p.doc, staticBrokerConfig(k), p.typ == TypePassword
		} else if p, ok := topicByName[k]; ok {
			e.Type, e.Doc = p.typ.String(), p.doc
		} else {
			e = dynamicEntry(k, v, SourceDynamicDefaultBroker)
		}
		e.Synonyms = []Entry{{Name: k, Value: e.Value, Source: SourceDynamicDefaultBroker, Type: e.Type}}
		if e.Sensitive {
			e.Value, e.Null, e.Synonyms[0].Value = "", true, ""
		}
		out = append(out, e)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

func (b *Broker) describeBrokerConfig(p *prop, defaults, own map[string]string) Entry {
	v, has := b.Raw[p.name]
	// A property Kafka reconfigures at run time may hold a dynamic value even where
	// Runnel reads it only at start-up: it is described (stored, not acted on).
	settable := !staticBrokerConfig(p.name)
	e := Entry{Name: p.name, Value: v, Null: !has, Source: SourceDefault, ReadOnly: !settable,
		Sensitive: p.typ == TypePassword, Type: p.typ.String(), Doc: p.doc}
	for _, dyn := range []struct {
		values map[string]string
		source Source
	}{{own, SourceDynamicBroker}, {defaults, SourceDynamicDefaultBroker}} {
		dv, ok := dyn.values[p.name]
		if !ok || !settable {
			continue
		}
		dv = strings.TrimSpace(dv)
		if e.Source == SourceDefault {
			e.Value, e.Null, e.Source = dv, false, dyn.source
		}
		e.Synonyms = append(e.Synonyms, Entry{Name: p.name, Value: dv, Source: dyn.source, Type: e.Type})
	}
	if b.Explicit(p.name) {
		if e.Source == SourceDefault {
			e.Source = SourceStaticBroker
		}
		e.Synonyms = append(e.Synonyms, Entry{Name: p.name, Value: v, Source: SourceStaticBroker, Type: e.Type})
	}
	if !p.null {
		e.Synonyms = append(e.Synonyms, Entry{Name: p.name, Value: p.dflt, Source: SourceDefault, Type: e.Type})
	}
	if e.Sensitive {
		e.Value, e.Null = "", true
		for i := range e.Synonyms {
			e.Synonyms[i].Value = ""
		}
	}
	return e
}
