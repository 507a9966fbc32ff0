package config

import "testing"

// Broker resources take what Kafka's DynamicBrokerConfig takes and refuse, with
// Kafka's text, what it refuses.
func TestCheckDynamicBrokerNames(t *testing.T) {
	for _, tt := range []struct {
		names     []string
		perBroker bool
		want      string
	}{
		{[]string{"sasl.kerberos.min.time.before.relogin"}, true, ""},
		{[]string{"listener.name.sasl_ssl.ssl.keystore.location", "log.cleaner.threads", "my.plugin.setting"}, true, ""},
		{[]string{"log.retention.ms", "max.connections", "my.plugin.setting"}, false, ""},
		{[]string{"broker.id"}, true, "Cannot update these configs dynamically: Set(broker.id)"},
		{[]string{"node.id", "num.partitions"}, false, "Cannot update these configs dynamically: Set(node.id, num.partitions)"},
		{[]string{"ssl.keystore.location"}, true, "These security configs can be dynamically updated only per-listener using the listener prefix: Set(ssl.keystore.location)"},
		{[]string{"sasl.kerberos.min.time.before.relogin"}, false, "Cannot update these configs at default cluster level, broker id must be specified: Set(sasl.kerberos.min.time.before.relogin)"},
		{[]string{"listener.name.plain.ssl.client.auth"}, false, "Cannot update these configs at default cluster level, broker id must be specified: Set(listener.name.plain.ssl.client.auth)"},
	} {
		err := CheckDynamicBrokerNames(tt.names, tt.perBroker)
		if got := errText(err); got != tt.want {
			t.Errorf("%v per broker %v: %q, want %q", tt.names, tt.perBroker, got, tt.want)
		}
	}
	if err := ValidatePerBrokerConfig("sasl.kerberos.min.time.before.relogin", "sixty"); err == nil {
		t.Error("a LONG config took a word")
	}
	if err := ValidatePerBrokerConfig("listener.name.ssl.ssl.client.auth", "sometimes"); err == nil {
		t.Error("a listener's ssl.client.auth took a value Runnel does not know")
	}
	if DynamicBrokerConfigUsed("sasl.kerberos.min.time.before.relogin", true) || !DynamicBrokerConfigUsed("leader.replication.throttled.rate", true) {
		t.Error("DynamicBrokerConfigUsed")
	}
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// A group's configs: Kafka's names, defaults, bounds and cross checks, with Kafka's
// messages.
func TestValidateGroupConfigs(t *testing.T) {
	for _, tt := range []struct {
		cfg  map[string]string
		want string
	}{
		{map[string]string{"consumer.session.timeout.ms": "50000", "share.auto.offset.reset": "earliest"}, ""},
		{map[string]string{"consumer.session.timeout.ms": "1000"}, "consumer.session.timeout.ms must be greater than or equal to group.consumer.min.session.timeout.ms"},
		{map[string]string{"consumer.heartbeat.interval.ms": "20000"}, "consumer.heartbeat.interval.ms must be less than or equal to group.consumer.max.heartbeat.interval.ms"},
		{map[string]string{"share.record.lock.duration.ms": "abc"}, "Invalid value abc for configuration share.record.lock.duration.ms: Not a number of type INT"},
		{map[string]string{"share.auto.offset.reset": "middle"}, "Invalid value middle for configuration share.auto.offset.reset: String must be one of: latest, earliest"},
		{map[string]string{"no.such": "1"}, "Unknown group config name: no.such"},
	} {
		if got := errText(ValidateGroupConfigs(tt.cfg)); got != tt.want {
			t.Errorf("%v: %q, want %q", tt.cfg, got, tt.want)
		}
	}
	k := GroupScopedKey("a/b.c", "consumer.session.timeout.ms")
	own := GroupOwnConfigs(map[string]string{k: "50000", GroupScopedKey("a", "consumer.session.timeout.ms"): "1"}, "a/b.c")
	if len(own) != 1 || own["consumer.session.timeout.ms"] != "50000" || !IsDynamicBrokerProperty(k) {
		t.Errorf("group keys: %v", own)
	}
	for _, e := range DescribeGroup(own) {
		if e.Name == "consumer.session.timeout.ms" && (e.Value != "50000" || e.Source != SourceGroup) ||
			e.Name == "share.record.lock.duration.ms" && (e.Value != "30000" || e.Source != SourceDefault) {
			t.Errorf("described %+v", e)
		}
	}
}
