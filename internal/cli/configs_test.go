package cli

import (
	"encoding/json"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/runnel-io/runnel/internal/clustertest"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
)

func entryByName(es []configEntry, name string) configEntry {
	for _, e := range es {
		if e.Name == name {
			return e
		}
	}
	return configEntry{Name: name, Source: "missing"}
}

// Against a real node: topic describe A B (several at once), --all with each config's
// effective value and source (a topic override, a static broker property, the
// default), and cluster config for the node's properties.
func TestTopicDescribeAllAndClusterConfig(t *testing.T) {
	b := clustertest.StartOne(t, "log.retention.hours=100", "message.max.bytes=2000000")
	mustRun(t, "", "topic", "create", "a", "-b", b, "-c", "cleanup.policy=compact")
	mustRun(t, "", "topic", "create", "bb", "-b", b, "-p", "2")

	var ds []topicDescription
	r := mustRun(t, "", "topic", "describe", "a", "bb", "-b", b, "--all", "--output", "json")
	if err := json.Unmarshal([]byte(r.stdout), &ds); err != nil {
		t.Fatalf("describe a bb --all --output json: %v in %q", err, r.stdout)
	}
	if len(ds) != 2 || ds[0].Topic != "a" || ds[1].Topic != "bb" || len(ds[1].Partitions) != 2 {
		t.Fatalf("describe a bb = %+v", ds)
	}
	for _, tc := range []struct {
		topic, name, value, source, origin, property string
	}{
		{"a", "cleanup.policy", "compact", "DYNAMIC_TOPIC_CONFIG", "topic", ""},
		{"bb", "cleanup.policy", "delete", "DEFAULT_CONFIG", "default", "log.cleanup.policy"},
		{"a", "retention.ms", "360000000", "STATIC_BROKER_CONFIG", "broker", "log.retention.hours"},
		{"a", "max.message.bytes", "2000000", "STATIC_BROKER_CONFIG", "broker", "message.max.bytes"},
		{"a", "retention.bytes", "-1", "DEFAULT_CONFIG", "default", "log.retention.bytes"},
	} {
		d := ds[0]
		if tc.topic == "bb" {
			d = ds[1]
		}
		e := entryByName(d.AllConfigs, tc.name)
		if e.Value == nil || *e.Value != tc.value || e.Source != tc.source || e.Origin != tc.origin || e.Property != tc.property {
			t.Errorf("topic %s config %s = %+v; want value %s, source %s (%s), property %q", tc.topic, tc.name, e, tc.value, tc.source, tc.origin, tc.property)
		}
	}
	if len(ds[0].AllConfigs) < 20 || ds[0].Configs["cleanup.policy"] != "compact" || len(ds[0].Configs) != 1 {
		t.Errorf("topic a: %d configs with --all, overrides %v", len(ds[0].AllConfigs), ds[0].Configs)
	}

	r = mustRun(t, "", "topic", "describe", "a", "bb", "-b", b, "--all")
	for _, want := range []string{"Topic: a ", "Topic: bb ", "CONFIG", "SOURCE", "\ncleanup.policy ",
		" topic\n", "broker (static: log.retention.hours)\n", "default (log.cleanup.policy)\n", "LOG-END"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("describe --all lacks %q:\n%s", want, r.stdout)
		}
	}
	r = mustRun(t, "", "topic", "describe", "a", "bb", "-b", b)
	if strings.Count(r.stdout, "Topic: ") != 2 || strings.Contains(r.stdout, "SOURCE") {
		t.Errorf("describe a bb:\n%s", r.stdout)
	}
	expectFailure(t, 1, `topic "nope" does not exist`, "topic", "describe", "a", "nope", "-b", b)

	var ncs []nodeConfig
	r = mustRun(t, "", "cluster", "config", "-b", b, "--json")
	if err := json.Unmarshal([]byte(r.stdout), &ncs); err != nil {
		t.Fatalf("cluster config --json: %v in %q", err, r.stdout)
	}
	if len(ncs) != 1 || ncs[0].Node != 1 {
		t.Fatalf("cluster config = %+v", ncs)
	}
	for _, tc := range []struct{ name, value, source string }{
		{"log.retention.hours", "100", "STATIC_BROKER_CONFIG"},
		{"num.partitions", "1", "DEFAULT_CONFIG"},
	} {
		e := entryByName(ncs[0].Configs, tc.name)
		if e.Value == nil || *e.Value != tc.value || e.Source != tc.source {
			t.Errorf("node config %s = %+v, want %s from %s", tc.name, e, tc.value, tc.source)
		}
	}
	r = mustRun(t, "", "cluster", "config", "-b", b, "--node", "1")
	for _, want := range []string{"Node: 1\n", "log.retention.hours ", "broker (static)\n", "num.partitions "} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("cluster config lacks %q:\n%s", want, r.stdout)
		}
	}
	expectFailure(t, 1, "node config: node 7 is not a live node of the cluster (live: 1)", "cluster", "config", "-b", b, "--node", "7")
	expectFailure(t, 2, `bad --output "yaml"`, "cluster", "config", "-b", b, "-o", "yaml")
}

// A dynamic broker setting (AlterConfigs on the broker) reads "broker (dynamic)", in
// kfake and in a Runnel node (the replication throttle rates, Runnel's dynamic broker
// properties: DescribeConfigs gives them source DYNAMIC_DEFAULT_BROKER_CONFIG).
func TestConfigSourceDynamicBroker(t *testing.T) {
	t.Run("runnel", func(t *testing.T) {
		b := clustertest.StartOne(t)
		adm := kadm.NewClient(newProducer(t, b))
		v := "1048576"
		ctx := ctxTimeout(t, 10*time.Second)
		if _, err := adm.AlterBrokerConfigs(ctx, []kadm.AlterConfig{{Name: "leader.replication.throttled.rate", Value: &v}}); err != nil {
			t.Fatal(err)
		}
		rcs, err := adm.DescribeBrokerConfigs(ctx, 1)
		if err != nil {
			t.Fatal(err)
		}
		rc, err := rcs.On("1", nil)
		if err != nil {
			t.Fatal(err)
		}
		found := false
		for _, c := range rc.Configs {
			if c.Key == "leader.replication.throttled.rate" {
				found = true
				if c.MaybeValue() != v || c.Source.String() != "DYNAMIC_DEFAULT_BROKER_CONFIG" {
					t.Errorf("leader.replication.throttled.rate described as %q from %s, want %s from DYNAMIC_DEFAULT_BROKER_CONFIG", c.MaybeValue(), c.Source, v)
				}
			}
		}
		if !found {
			t.Errorf("DescribeConfigs of broker 1 has no leader.replication.throttled.rate")
		}
		r := mustRun(t, "", "cluster", "config", "-b", b)
		if !regexp.MustCompile(`leader\.replication\.throttled\.rate +1048576 +broker \(dynamic cluster default\)`).MatchString(r.stdout) {
			t.Errorf("cluster config after a dynamic change:\n%s", r.stdout)
		}
	})

	_, b := newCluster(t, kfake.SeedTopics(1, "t"))
	adm := kadm.NewClient(newProducer(t, b))
	v := "12345"
	if _, err := adm.AlterBrokerConfigs(ctxTimeout(t, 5*time.Second), []kadm.AlterConfig{{Name: "log.retention.ms", Value: &v}}, 0); err != nil {
		t.Fatal(err)
	}
	r := mustRun(t, "", "cluster", "config", "-b", b)
	if !strings.Contains(r.stdout, "12345") || !strings.Contains(r.stdout, "broker (dynamic)") {
		t.Errorf("cluster config after a dynamic change:\n%s", r.stdout)
	}
}
