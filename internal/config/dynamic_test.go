package config

import (
	"fmt"
	"testing"
)

// TestBrokerScopedKeys: the scoped key round-trips, other keys do not parse, and
// the topics' settings leave scoped keys out.
func TestBrokerScopedKeys(t *testing.T) {
	k := BrokerScopedKey(12, "leader.replication.throttled.rate")
	id, p, ok := ParseBrokerScopedKey(k)
	if !ok || id != 12 || p != "leader.replication.throttled.rate" {
		t.Errorf("ParseBrokerScopedKey(%q) = %d %q %v", k, id, p, ok)
	}
	for _, bad := range []string{"leader.replication.throttled.rate", BrokerScopePrefix + "x.y", BrokerScopePrefix + "3", BrokerScopePrefix + "-1.a"} {
		if _, _, ok := ParseBrokerScopedKey(bad); ok {
			t.Errorf("ParseBrokerScopedKey(%q) parsed", bad)
		}
	}
	if !IsDynamicBrokerProperty(k) {
		t.Errorf("%q is taken for a topic config", k)
	}
	cfgs := map[string]string{"follower.replication.throttled.rate": "10", BrokerScopedKey(2, "follower.replication.throttled.rate"): "2",
		BrokerScopedKey(3, "follower.replication.throttled.rate"): "3", "retention.ms": "5", ControllerStatePrefix + "x": "{}"}
	for id, want := range map[int32]int64{1: 10, 2: 2, 3: 3} {
		if got := DynamicBrokerLongFor(cfgs, id, "follower.replication.throttled.rate", -1); got != want {
			t.Errorf("node %d: rate %d, want %d", id, got, want)
		}
	}
	if got := DynamicBrokerLongFor(cfgs, 1, "leader.replication.throttled.rate", 42); got != 42 {
		t.Errorf("unset rate %d, want the static 42", got)
	}
	if got := fmt.Sprint(BrokerDefaultConfigs(cfgs)); got != "map[follower.replication.throttled.rate:10 retention.ms:5]" {
		t.Errorf("defaults %s", got)
	}
	// Kafka takes a topic config name on one broker (a custom property there); Runnel
	// stores it and sets no topic default with it.
	if err := ValidatePerBrokerConfig("retention.ms", "5"); err != nil || DynamicBrokerConfigUsed("retention.ms", true) {
		t.Errorf("a topic config name for one broker: %v, used %v; want stored, not used", err, DynamicBrokerConfigUsed("retention.ms", true))
	}
	if err := ValidatePerBrokerConfig("num.partitions", "5"); err == nil {
		t.Errorf("a static property accepted for one broker")
	}
	if err := ValidatePerBrokerConfig("leader.replication.throttled.rate", "-3"); err == nil {
		t.Errorf("a negative rate accepted")
	}
	if err := ValidatePerBrokerConfig("leader.replication.throttled.rate", "1000"); err != nil {
		t.Errorf("a valid rate refused: %v", err)
	}
}

// TestDescribeBrokerScoped: a broker's own dynamic value wins over the default, with
// Kafka's synonym order; the default resource lists only the dynamic defaults set.
func TestDescribeBrokerScoped(t *testing.T) {
	b, err := Load("", []string{"leader.replication.throttled.rate=5000"})
	if err != nil {
		t.Fatal(err)
	}
	defaults := map[string]string{"leader.replication.throttled.rate": "1000", "retention.ms": "7"}
	own := map[string]string{"leader.replication.throttled.rate": "200", "follower.replication.throttled.rate": "300"}
	got := map[string]Entry{}
	for _, e := range b.DescribeBrokerScoped(defaults, own) {
		got[e.Name] = e
	}
	l := got["leader.replication.throttled.rate"]
	var syns []string
	for _, s := range l.Synonyms {
		syns = append(syns, fmt.Sprintf("%s=%s", sourceNames[s.Source], s.Value))
	}
	if l.Value != "200" || l.Source != SourceDynamicBroker || fmt.Sprint(syns) !=
		"[DYNAMIC_BROKER_CONFIG=200 DYNAMIC_DEFAULT_BROKER_CONFIG=1000 STATIC_BROKER_CONFIG=5000 DEFAULT_CONFIG=9223372036854775807]" {
		t.Errorf("leader rate %q from %v, synonyms %v", l.Value, l.Source, syns)
	}
	if f := got["follower.replication.throttled.rate"]; f.Value != "300" || f.Source != SourceDynamicBroker {
		t.Errorf("follower rate %q from %v, want 300 DYNAMIC_BROKER_CONFIG", f.Value, f.Source)
	}
	ds := DescribeBrokerDefaults(defaults)
	if len(ds) != 2 || ds[0].Name != "leader.replication.throttled.rate" || ds[0].Source != SourceDynamicDefaultBroker ||
		ds[1].Name != "retention.ms" || ds[1].Value != "7" {
		t.Errorf("default resource %+v", ds)
	}
}
