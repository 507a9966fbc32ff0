package interop_test

import (
	"bytes"
	"context"
	"errors"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"

	"github.com/runnel-io/runnel/internal/recordbatch"
	"github.com/runnel-io/runnel/internal/testutil"
)

// Answers a client test suite expects of Kafka 4 (issue 30, items 2-5): a compacted
// topic refuses records without a key, authorized operations (KIP-430), group configs
// and per-broker dynamic configs.

// TestCompactedTopicRefusesKeylessRecords: franz-go and kcat (librdkafka) get
// INVALID_RECORD, with Kafka's message, for a record without a key on a compacted
// topic; a keyed record goes in; nothing keyless is stored.
func TestCompactedTopicRefusesKeylessRecords(t *testing.T) {
	addr := bootstrap(startNode(t, "auto.create.topics.enable=false"))
	adm := newAdmin(t, addr)
	topic := topicName(t)
	ctx := context.Background()
	resp, err := adm.CreateTopic(ctx, 1, 1, map[string]*string{"cleanup.policy": kmsg.StringPtr("compact")}, topic)
	testutil.NoError(t, errors.Join(err, resp.Err), "creating the compacted topic")

	cl := newClient(t, addr, kgo.DefaultProduceTopic(topic), kgo.RecordRetries(1))
	err = cl.ProduceSync(ctx, &kgo.Record{Value: []byte("no key")}).FirstErr()
	if !errors.Is(err, kerr.InvalidRecord) {
		t.Fatalf("franz-go keyless produce: %v, want INVALID_RECORD", err)
	}
	testutil.NoError(t, cl.ProduceSync(ctx, &kgo.Record{Key: []byte("k"), Value: []byte("v")}).FirstErr(), "keyed produce")

	// The raw answer: Kafka's message, naming the topic partition.
	bb := recordbatch.NewBuilder(1)
	bb.Add(nil, []byte("no key"), nil, time.Now().UnixMilli())
	req := kmsg.NewPtrProduceRequest()
	req.Acks, req.TimeoutMillis = -1, 5000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Records = bb.Build()
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	pr, err := req.RequestWith(ctx, cl)
	testutil.NoError(t, err, "raw produce")
	p := pr.Topics[0].Partitions[0]
	wantMsg := "One or more records have been rejected due to 1 record errors in total, and only showing the first three errors at most: " +
		"[RecordError(batchIndex=0, message='Compacted topic cannot accept message without key in topic partition " + topic + "-0.')]"
	if p.ErrorCode != kerr.InvalidRecord.Code || p.ErrorMessage == nil || *p.ErrorMessage != wantMsg {
		t.Fatalf("raw produce: code %d message %v, want INVALID_RECORD %q", p.ErrorCode, strPtr(p.ErrorMessage), wantMsg)
	}
	// Produce v8+ names the refused records (KIP-467), as Kafka does.
	if len(p.ErrorRecords) != 1 || p.ErrorRecords[0].RelativeOffset != 0 {
		t.Fatalf("raw produce: record errors %+v, want one for batch index 0", p.ErrorRecords)
	}

	if _, err := exec.LookPath("kcat"); err == nil {
		out, err := kcatProduceFails(t, addr, "no key\n", "-P", "-t", topic)
		// librdkafka's name for INVALID_RECORD.
		if err == nil || !strings.Contains(out, "Broker failed to validate record") {
			t.Fatalf("kcat keyless produce: %v, output %q; want a delivery failure with INVALID_RECORD", err, out)
		}
	}
	ends, err := adm.ListEndOffsets(ctx, topic)
	testutil.NoError(t, err, "end offsets")
	if o, _ := ends.Lookup(topic, 0); o.Offset != 1 {
		t.Fatalf("log end %d, want 1 (the keyed record only)", o.Offset)
	}
}

// kcatProduceFails runs kcat with stdin, expecting it may fail: its combined output
// and error.
func kcatProduceFails(t *testing.T, addr, stdin string, args ...string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "kcat", append([]string{"-b", addr, "-X", "message.send.max.retries=0"}, args...)...)
	cmd.Stdin = strings.NewReader(stdin)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	return out.String(), err
}

func strPtr(s *string) string {
	if s == nil {
		return "<nil>"
	}
	return *s
}

// Kafka's bit fields with ACLs off (AclEntry.supportedOperations): every operation of
// the resource type.
const (
	allTopicOps   = 1<<3 | 1<<4 | 1<<5 | 1<<6 | 1<<7 | 1<<8 | 1<<10 | 1<<11 // 8 operations
	allClusterOps = 1<<5 | 1<<7 | 1<<8 | 1<<9 | 1<<10 | 1<<11 | 1<<12       // 7 operations
	allGroupOps   = 1<<3 | 1<<6 | 1<<8 | 1<<10 | 1<<11                      // 5 operations
)

// TestAuthorizedOperations: Metadata, DescribeCluster and DescribeGroups answer the
// operations the principal may perform when asked (KIP-430), Int32.MinValue when not.
func TestAuthorizedOperations(t *testing.T) {
	t.Run("ACLsOff", func(t *testing.T) {
		addr := bootstrap(startNode(t))
		topic := topicName(t)
		createTopic(t, newAdmin(t, addr), topic, 1)
		cl := newClient(t, addr, pinMetadataV10)
		topicOps, clusterOps := metadataOps(t, cl, topic, true)
		if topicOps != allTopicOps || clusterOps != allClusterOps {
			t.Errorf("Metadata: topic %d cluster %d, want %d and %d", topicOps, clusterOps, allTopicOps, allClusterOps)
		}
		if topicOps, clusterOps = metadataOps(t, cl, topic, false); topicOps != -2147483648 || clusterOps != -2147483648 {
			t.Errorf("Metadata not asked: topic %d cluster %d, want -2147483648", topicOps, clusterOps)
		}
		if got := describeClusterOps(t, newClient(t, addr)); got != allClusterOps {
			t.Errorf("DescribeCluster: %d, want %d", got, allClusterOps)
		}
		// A group with committed offsets and no member (Empty).
		adm := newAdmin(t, addr)
		var offs kadm.Offsets
		offs.Add(kadm.Offset{Topic: topic, Partition: 0, At: 0, LeaderEpoch: -1})
		_, err := adm.CommitOffsets(context.Background(), "g-"+topic, offs)
		testutil.NoError(t, err, "CommitOffsets")
		groups, err := adm.DescribeGroups(context.Background(), "g-"+topic)
		testutil.NoError(t, err, "DescribeGroups")
		if got := kadm.DecodeACLOperations(allGroupOps); !slices.Equal(groups["g-"+topic].AuthorizedOperations, got) {
			t.Errorf("DescribeGroups: %v, want %v", groups["g-"+topic].AuthorizedOperations, got)
		}
	})
	t.Run("ACLs", func(t *testing.T) {
		// Everyone may do what no ACL covers; one ACL lets ANONYMOUS read the topic.
		addr := bootstrap(startNode(t, "authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer",
			"allow.everyone.if.no.acl.found=true"))
		adm := newAdmin(t, addr)
		topic := topicName(t)
		createTopic(t, adm, topic, 1)
		acl := kadm.NewACLs().Allow("User:ANONYMOUS").Topics(topic).Operations(kadm.OpRead).ResourcePatternType(kadm.ACLPatternLiteral)
		res, err := adm.CreateACLs(context.Background(), acl)
		testutil.NoError(t, err, "CreateACLs")
		for _, r := range res {
			testutil.NoError(t, r.Err, "CreateACLs result")
		}
		cl := newClient(t, addr, pinMetadataV10)
		// READ implies DESCRIBE; nothing else on the topic is granted.
		if topicOps, clusterOps := metadataOps(t, cl, topic, true); topicOps != 1<<3|1<<8 || clusterOps != allClusterOps {
			t.Errorf("Metadata: topic %d cluster %d, want %d and %d", topicOps, clusterOps, 1<<3|1<<8, allClusterOps)
		}
	})
}

// pinMetadataV10 keeps a client at Kafka 2.7's versions: Metadata v10, the last with
// the cluster's authorized operations.
var pinMetadataV10 = kgo.MaxVersions(kversion.V2_7_0())

// metadataOps asks Metadata v10 for topic, with the authorized operations when ask.
func metadataOps(t *testing.T, cl *kgo.Client, topic string, ask bool) (topicOps, clusterOps int32) {
	t.Helper()
	req := kmsg.NewPtrMetadataRequest()
	rt := kmsg.NewMetadataRequestTopic()
	rt.Topic = kmsg.StringPtr(topic)
	req.Topics = append(req.Topics, rt)
	req.IncludeTopicAuthorizedOperations, req.IncludeClusterAuthorizedOperations = ask, ask
	resp, err := req.RequestWith(context.Background(), cl)
	testutil.NoError(t, err, "Metadata")
	if len(resp.Topics) != 1 || resp.Topics[0].ErrorCode != 0 {
		t.Fatalf("Metadata of %s: %+v", topic, resp.Topics)
	}
	return resp.Topics[0].AuthorizedOperations, resp.AuthorizedOperations
}

func describeClusterOps(t *testing.T, cl *kgo.Client) int32 {
	t.Helper()
	req := kmsg.NewPtrDescribeClusterRequest()
	req.IncludeClusterAuthorizedOperations = true
	resp, err := req.RequestWith(context.Background(), cl)
	testutil.NoError(t, err, "DescribeCluster")
	return resp.ClusterAuthorizedOperations
}

// TestGroupConfigs: a GROUP resource describes Kafka 4's group configs with their
// defaults, stores what IncrementalAlterConfigs and AlterConfigs set, and refuses
// what Kafka's GroupConfig refuses, with Kafka's message.
func TestGroupConfigs(t *testing.T) {
	addr := bootstrap(startNode(t))
	cl := newClient(t, addr)
	ctx := context.Background()
	group := "g-" + topicName(t)

	got := describeGroupConfigs(t, cl, group)
	for name, want := range map[string]string{"consumer.session.timeout.ms": "45000 DEFAULT_CONFIG",
		"consumer.heartbeat.interval.ms": "5000 DEFAULT_CONFIG", "share.session.timeout.ms": "45000 DEFAULT_CONFIG",
		"share.heartbeat.interval.ms": "5000 DEFAULT_CONFIG", "share.record.lock.duration.ms": "30000 DEFAULT_CONFIG",
		"share.auto.offset.reset": "latest DEFAULT_CONFIG", "share.isolation.level": "read_uncommitted DEFAULT_CONFIG"} {
		if got[name] != want {
			t.Errorf("default %s = %q, want %q", name, got[name], want)
		}
	}

	code, msg := incrementalAlterGroup(t, cl, group, map[string]string{"consumer.session.timeout.ms": "50000", "share.auto.offset.reset": "earliest"})
	if code != 0 {
		t.Fatalf("IncrementalAlterConfigs: code %d %s", code, msg)
	}
	got = describeGroupConfigs(t, cl, group)
	if got["consumer.session.timeout.ms"] != "50000 GROUP_CONFIG" || got["share.auto.offset.reset"] != "earliest GROUP_CONFIG" ||
		got["consumer.heartbeat.interval.ms"] != "5000 DEFAULT_CONFIG" {
		t.Errorf("after the change: %v", got)
	}
	for _, tt := range []struct {
		set  map[string]string
		code int16
		msg  string
	}{
		{map[string]string{"consumer.session.timeout.ms": "1000"}, kerr.InvalidConfig.Code, "consumer.session.timeout.ms must be greater than or equal to group.consumer.min.session.timeout.ms"},
		{map[string]string{"no.such.config": "1"}, kerr.InvalidConfig.Code, "Unknown group config name: no.such.config"},
	} {
		if code, msg := incrementalAlterGroup(t, cl, group, tt.set); code != tt.code || msg != tt.msg {
			t.Errorf("%v: code %d %q, want %d %q", tt.set, code, msg, tt.code, tt.msg)
		}
	}
	// The legacy AlterConfigs replaces the group's set.
	alt := kmsg.NewPtrAlterConfigsRequest()
	ar := kmsg.NewAlterConfigsRequestResource()
	ar.ResourceType, ar.ResourceName = kmsg.ConfigResourceTypeGroupConfig, group
	c := kmsg.NewAlterConfigsRequestResourceConfig()
	c.Name, c.Value = "share.record.lock.duration.ms", kmsg.StringPtr("20000")
	ar.Configs = append(ar.Configs, c)
	alt.Resources = append(alt.Resources, ar)
	aresp, err := alt.RequestWith(ctx, cl)
	testutil.NoError(t, err, "AlterConfigs")
	if aresp.Resources[0].ErrorCode != 0 {
		t.Fatalf("AlterConfigs: code %d", aresp.Resources[0].ErrorCode)
	}
	got = describeGroupConfigs(t, cl, group)
	if got["share.record.lock.duration.ms"] != "20000 GROUP_CONFIG" || got["consumer.session.timeout.ms"] != "45000 DEFAULT_CONFIG" {
		t.Errorf("after AlterConfigs: %v", got)
	}
}

func describeGroupConfigs(t *testing.T, cl *kgo.Client, group string) map[string]string {
	t.Helper()
	req := kmsg.NewPtrDescribeConfigsRequest()
	r := kmsg.NewDescribeConfigsRequestResource()
	r.ResourceType, r.ResourceName = kmsg.ConfigResourceTypeGroupConfig, group
	req.Resources = append(req.Resources, r)
	resp, err := req.RequestWith(context.Background(), cl)
	testutil.NoError(t, err, "DescribeConfigs")
	if len(resp.Resources) != 1 || resp.Resources[0].ErrorCode != 0 {
		t.Fatalf("DescribeConfigs of group %s: %+v", group, resp.Resources)
	}
	out := map[string]string{}
	for _, c := range resp.Resources[0].Configs {
		out[c.Name] = strPtr(c.Value) + " " + c.Source.String()
	}
	return out
}

func incrementalAlterGroup(t *testing.T, cl *kgo.Client, group string, set map[string]string) (int16, string) {
	t.Helper()
	req := kmsg.NewPtrIncrementalAlterConfigsRequest()
	r := kmsg.NewIncrementalAlterConfigsRequestResource()
	r.ResourceType, r.ResourceName = kmsg.ConfigResourceTypeGroupConfig, group
	for k, v := range set {
		c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
		c.Name, c.Value, c.Op = k, kmsg.StringPtr(v), kmsg.IncrementalAlterConfigOpSet
		r.Configs = append(r.Configs, c)
	}
	req.Resources = append(req.Resources, r)
	resp, err := req.RequestWith(context.Background(), cl)
	testutil.NoError(t, err, "IncrementalAlterConfigs")
	return resp.Resources[0].ErrorCode, strPtr(resp.Resources[0].ErrorMessage)
}

// TestDynamicBrokerConfigs: a broker resource takes what Kafka takes per broker
// (sasl.kerberos.min.time.before.relogin, listener-prefixed keystores, custom
// properties), stores and describes it; it refuses what Kafka refuses, with Kafka's
// INVALID_REQUEST and text.
func TestDynamicBrokerConfigs(t *testing.T) {
	addr := bootstrap(startNode(t))
	adm := newAdmin(t, addr)
	ctx := context.Background()
	set := func(k, v string) kadm.AlterConfig {
		return kadm.AlterConfig{Op: kadm.SetConfig, Name: k, Value: kmsg.StringPtr(v)}
	}
	resps, err := adm.AlterBrokerConfigs(ctx, []kadm.AlterConfig{set("sasl.kerberos.min.time.before.relogin", "120000"),
		set("listener.name.plaintext.ssl.client.auth", "required"), set("log.cleaner.threads", "2")}, 1)
	testutil.NoError(t, errors.Join(err, resps[0].Err), "per-broker configs Kafka takes")
	described, err := adm.DescribeBrokerConfigs(ctx, 1)
	testutil.NoError(t, err, "DescribeBrokerConfigs")
	rc, err := described.On("1", nil)
	testutil.NoError(t, errors.Join(err, rc.Err), "broker 1")
	values := map[string]string{}
	for _, c := range rc.Configs {
		values[c.Key] = c.MaybeValue() + " " + c.Source.String()
	}
	for k, want := range map[string]string{"sasl.kerberos.min.time.before.relogin": "120000 DYNAMIC_BROKER_CONFIG",
		"listener.name.plaintext.ssl.client.auth": "required DYNAMIC_BROKER_CONFIG", "log.cleaner.threads": "2 DYNAMIC_BROKER_CONFIG"} {
		if values[k] != want {
			t.Errorf("described %s = %q, want %q", k, values[k], want)
		}
	}
	for _, tt := range []struct {
		cfg     kadm.AlterConfig
		brokers []int32
		msg     string
	}{
		{set("broker.id", "7"), []int32{1}, "Cannot update these configs dynamically: Set(broker.id)"},
		{set("ssl.keystore.location", "/k.pem"), []int32{1}, "These security configs can be dynamically updated only per-listener using the listener prefix: Set(ssl.keystore.location)"},
		{set("sasl.kerberos.min.time.before.relogin", "1"), nil, "Cannot update these configs at default cluster level, broker id must be specified: Set(sasl.kerberos.min.time.before.relogin)"},
	} {
		resps, err := adm.AlterBrokerConfigs(ctx, []kadm.AlterConfig{tt.cfg}, tt.brokers...)
		testutil.NoError(t, err, "AlterBrokerConfigs")
		if !errors.Is(resps[0].Err, kerr.InvalidRequest) || resps[0].ErrMessage != tt.msg {
			t.Errorf("%s on %v: %v %q, want INVALID_REQUEST %q", tt.cfg.Name, tt.brokers, resps[0].Err, resps[0].ErrMessage, tt.msg)
		}
	}
}
