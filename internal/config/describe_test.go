package config

import (
	"fmt"
	"reflect"
	"sort"
	"testing"
)

func entryByName(t *testing.T, es []Entry, name string) Entry {
	t.Helper()
	for _, e := range es {
		if e.Name == name {
			return e
		}
	}
	t.Fatalf("no entry %s", name)
	return Entry{}
}

// syn is a short form of a synonym for comparisons.
type syn struct {
	Name, Value string
	Source      Source
}

func synsOf(e Entry) []syn {
	var out []syn
	for _, s := range e.Synonyms {
		out = append(out, syn{s.Name, s.Value, s.Source})
	}
	return out
}

func TestDescribeTopicSources(t *testing.T) {
	b, err := Load(writeFile(t, "log.retention.hours=24\nlog.segment.bytes=2048\n"), []string{"log.retention.minutes=30"})
	if err != nil {
		t.Fatal(err)
	}
	es := b.DescribeTopic(map[string]string{"segment.bytes": "4096", "cleanup.policy": "compact", "no.such": "x"})
	if !sort.SliceIsSorted(es, func(i, j int) bool { return es[i].Name < es[j].Name }) || len(es) != len(topicProps) {
		t.Fatalf("DescribeTopic is not every topic config sorted by name: %d entries", len(es))
	}
	tests := []struct {
		name   string
		value  string
		source Source
		typ    string
		syns   []syn
	}{
		{"segment.bytes", "4096", SourceDynamicTopic, "INT", []syn{
			{"segment.bytes", "4096", SourceDynamicTopic},
			{"log.segment.bytes", "2048", SourceStaticBroker},
			{"log.segment.bytes", "1073741824", SourceDefault}}},
		{"retention.ms", "1800000", SourceStaticBroker, "LONG", []syn{
			{"log.retention.minutes", "30", SourceStaticBroker},
			{"log.retention.hours", "24", SourceStaticBroker},
			{"log.retention.hours", "168", SourceDefault}}},
		{"cleanup.policy", "compact", SourceDynamicTopic, "LIST", []syn{
			{"cleanup.policy", "compact", SourceDynamicTopic},
			{"log.cleanup.policy", "delete", SourceDefault}}},
		{"flush.messages", "1", SourceDefault, "LONG", []syn{
			{"log.flush.interval.messages", "1", SourceDefault}}},
		{"flush.ms", longMax, SourceDefault, "LONG", []syn{
			{"flush.ms", longMax, SourceDefault}}},
		{"leader.replication.throttled.replicas", "", SourceDefault, "LIST", []syn{
			{"leader.replication.throttled.replicas", "", SourceDefault}}},
		{"min.cleanable.dirty.ratio", "0.5", SourceDefault, "DOUBLE", []syn{
			{"log.cleaner.min.cleanable.ratio", "0.5", SourceDefault}}},
	}
	for _, tt := range tests {
		e := entryByName(t, es, tt.name)
		if e.Value != tt.value || e.Source != tt.source || e.Type != tt.typ || e.ReadOnly || e.Sensitive || e.Null || e.Doc == "" {
			t.Errorf("%s: got %q %v %s ro=%v doc=%q, want %q %v %s", tt.name, e.Value, e.Source, e.Type, e.ReadOnly, e.Doc, tt.value, tt.source, tt.typ)
		}
		if got := synsOf(e); !reflect.DeepEqual(got, tt.syns) {
			t.Errorf("%s synonyms:\n got %v\nwant %v", tt.name, got, tt.syns)
		}
	}
	if e := entryByName(t, es, "segment.bytes"); e.TypeCode() != 3 {
		t.Errorf("TypeCode of INT = %d, want 3", e.TypeCode())
	}
}

func TestDescribeBroker(t *testing.T) {
	b, err := Load("", []string{"num.partitions=6", "broker.rack=r"})
	if err != nil {
		t.Fatal(err)
	}
	es := b.DescribeBroker()
	if len(es) != len(brokerProps) || !sort.SliceIsSorted(es, func(i, j int) bool { return es[i].Name < es[j].Name }) {
		t.Fatalf("DescribeBroker is not every broker property sorted by name")
	}
	tests := []struct {
		name   string
		value  string
		null   bool
		source Source
		typ    string
		syns   []syn
		ro     bool
	}{
		{"num.partitions", "6", false, SourceStaticBroker, "INT", []syn{{"num.partitions", "6", SourceStaticBroker}, {"num.partitions", "1", SourceDefault}}, true},
		{"broker.rack", "r", false, SourceStaticBroker, "STRING", []syn{{"broker.rack", "r", SourceStaticBroker}}, true},
		// Kafka reconfigures these at run time (DynamicLogConfig): not read-only.
		{"log.retention.ms", "", true, SourceDefault, "LONG", nil, false},
		{"log.flush.interval.messages", "1", false, SourceDefault, "LONG", []syn{{"log.flush.interval.messages", "1", SourceDefault}}, false},
		{"offsets.topic.replication.factor", "3", false, SourceDefault, "SHORT", []syn{{"offsets.topic.replication.factor", "3", SourceDefault}}, true},
		{"advertise", "localhost:9092", false, SourceDefault, "STRING", nil, true},
	}
	for _, tt := range tests {
		e := entryByName(t, es, tt.name)
		if e.Value != tt.value || e.Null != tt.null || e.Source != tt.source || e.Type != tt.typ || e.ReadOnly != tt.ro {
			t.Errorf("%s: got %q null=%v %v %s read-only %v, want %q null=%v %v %s read-only %v", tt.name, e.Value, e.Null, e.Source, e.Type, e.ReadOnly, tt.value, tt.null, tt.source, tt.typ, tt.ro)
		}
		if got := synsOf(e); !reflect.DeepEqual(got, tt.syns) {
			t.Errorf("%s synonyms: got %v, want %v", tt.name, got, tt.syns)
		}
	}
}

func TestSourceAndTypeNames(t *testing.T) {
	if SourceDynamicTopic.String() != "DYNAMIC_TOPIC_CONFIG" || SourceDefault.String() != "DEFAULT_CONFIG" || Source(42).String() != "UNKNOWN" {
		t.Error("Source names are not Kafka's")
	}
	for typ, name := range map[Type]string{TypeBoolean: "BOOLEAN", TypeLong: "LONG", TypePassword: "PASSWORD", Type(-1): "UNKNOWN"} {
		if typ.String() != name || (name != "UNKNOWN" && (Entry{Type: name}).TypeCode() != int8(typ)) {
			t.Errorf("Type %d: %s / %d, want %s", typ, typ, Entry{Type: name}.TypeCode(), name)
		}
	}
}

// A throttle rate set at run time is reported with its dynamic value and source
// (DYNAMIC_DEFAULT_BROKER_CONFIG), the static value and the default after it among the
// synonyms; a property that is not dynamic ignores a dynamic value, and stays
// read-only.
func TestDescribeBrokerDynamic(t *testing.T) {
	b, err := Load("", []string{"leader.replication.throttled.rate=5000"})
	if err != nil {
		t.Fatal(err)
	}
	dyn := map[string]string{"leader.replication.throttled.rate": "1000", "follower.replication.throttled.rate": "2000",
		"num.partitions": "7", ControllerStatePrefix + "x": "{}"}
	got := map[string]Entry{}
	for _, e := range b.DescribeBrokerDynamic(dyn) {
		got[e.Name] = e
	}
	if _, ok := got[ControllerStatePrefix+"x"]; ok {
		t.Errorf("the controller's state key is listed")
	}
	l := got["leader.replication.throttled.rate"]
	if l.Value != "1000" || l.Source != SourceDynamicDefaultBroker || l.ReadOnly {
		t.Errorf("leader rate: value %q source %v read-only %v, want 1000 DYNAMIC_DEFAULT_BROKER_CONFIG writable", l.Value, l.Source, l.ReadOnly)
	}
	var srcs []Source
	for _, s := range l.Synonyms {
		srcs = append(srcs, s.Source)
	}
	if want := []Source{SourceDynamicDefaultBroker, SourceStaticBroker, SourceDefault}; fmt.Sprint(srcs) != fmt.Sprint(want) {
		t.Errorf("leader rate synonyms %v, want %v", srcs, want)
	}
	if f := got["follower.replication.throttled.rate"]; f.Value != "2000" || f.Source != SourceDynamicDefaultBroker {
		t.Errorf("follower rate: value %q source %v, want 2000 DYNAMIC_DEFAULT_BROKER_CONFIG", f.Value, f.Source)
	}
	if n := got["num.partitions"]; n.Value != "1" || n.Source != SourceDefault || !n.ReadOnly {
		t.Errorf("num.partitions: value %q source %v read-only %v, want the default 1, read-only", n.Value, n.Source, n.ReadOnly)
	}
	if l := b.DescribeBroker(); len(l) != len(b.DescribeBrokerDynamic(dyn)) {
		t.Errorf("DescribeBroker lists %d entries, DescribeBrokerDynamic %d", len(l), len(b.DescribeBrokerDynamic(dyn)))
	}
}
