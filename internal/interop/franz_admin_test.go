package interop_test

import (
	"fmt"
	"math"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/runnel-io/runnel/internal/server"
	"github.com/runnel-io/runnel/internal/testutil"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestAdmin drives topic administration through kadm and raw requests on one node.
func TestAdmin(t *testing.T) {
	n := startNode(t, "auto.create.topics.enable=false")
	addr := bootstrap(n)
	t.Run("CreateTopic", func(t *testing.T) { t.Parallel(); testCreateTopic(t, addr) })
	t.Run("Configs", func(t *testing.T) { t.Parallel(); testTopicConfigs(t, addr) })
	t.Run("CreatePartitions", func(t *testing.T) { t.Parallel(); testCreatePartitions(t, addr) })
	t.Run("DeleteRecords", func(t *testing.T) { t.Parallel(); testDeleteRecords(t, addr) })
	t.Run("DeleteTopic", func(t *testing.T) { t.Parallel(); testDeleteTopic(t, addr) })
	t.Run("DescribeCluster", func(t *testing.T) { t.Parallel(); testDescribeCluster(t, n) })
	t.Run("DescribeLogDirs", func(t *testing.T) { t.Parallel(); testDescribeLogDirs(t, addr) })
	t.Run("BrokerConfigs", func(t *testing.T) { t.Parallel(); testBrokerConfigs(t, addr) })
	t.Run("ValidateOnly", func(t *testing.T) { t.Parallel(); testValidateOnly(t, addr) })
}

func testCreateTopic(t *testing.T, addr string) {
	adm := newAdmin(t, addr)
	topic := topicName(t)
	createTopic(t, adm, topic, 3, "retention.ms", "3600000", "cleanup.policy", "delete")

	// kadm's one-topic calls return the topic's error as the call's error too.
	again, err := adm.CreateTopic(ctxT(t), 1, 1, nil, topic)
	testutil.ErrorIs(t, err, kerr.TopicAlreadyExists, "creating %s a second time", topic)
	testutil.ErrorIs(t, again.Err, kerr.TopicAlreadyExists, "creating %s a second time", topic)

	for _, tc := range []struct {
		name, key, value string
		partitions       int32
		rf               int16
		want             error
	}{
		{"malformed value", "retention.ms", "soon", 1, 1, kerr.InvalidConfig},
		{"unknown key", "no.such.config", "1", 1, 1, kerr.InvalidConfig},
		{"zero partitions", "", "", 0, 1, kerr.InvalidPartitions},
		{"more replicas than nodes", "", "", 1, 3, kerr.InvalidReplicationFactor},
	} {
		configs := map[string]*string{}
		if tc.key != "" {
			configs[tc.key] = &tc.value
		}
		bad := topicName(t)
		_, err := adm.CreateTopic(ctxT(t), tc.partitions, tc.rf, configs, bad)
		testutil.ErrorIs(t, err, tc.want, "CreateTopic with %s", tc.name)
		topics, err := adm.ListTopics(ctxT(t), bad)
		testutil.NoError(t, err, "ListTopics")
		testutil.ErrorIs(t, topics[bad].Err, kerr.UnknownTopicOrPartition, "the topic refused for %s exists", tc.name)
	}

	topics, err := adm.ListTopics(ctxT(t))
	testutil.NoError(t, err, "ListTopics")
	d, ok := topics[topic]
	testutil.True(t, ok, "ListTopics does not list %s", topic)
	testutil.NoError(t, d.Err, "listing %s", topic)
	testutil.Equal(t, len(d.Partitions), 3, "partitions of %s", topic)
	for p, pd := range d.Partitions {
		testutil.Equal(t, [3]any{pd.Leader, pd.Replicas, pd.ISR}, [3]any{int32(1), []int32{1}, []int32{1}},
			"partition %d leader, replicas, ISR", p)
	}
}

// configsOf describes topic's configs as key -> (value, source).
func configsOf(t *testing.T, adm *kadm.Client, topic string) map[string]kadm.Config {
	t.Helper()
	rcs, err := adm.DescribeTopicConfigs(ctxT(t), topic)
	testutil.NoError(t, err, "DescribeTopicConfigs %s", topic)
	testutil.Equal(t, len(rcs), 1, "described resources")
	testutil.NoError(t, rcs[0].Err, "describing %s: %s", topic, rcs[0].ErrMessage)
	out := map[string]kadm.Config{}
	for _, c := range rcs[0].Configs {
		out[c.Key] = c
	}
	return out
}

func checkConfig(t *testing.T, cs map[string]kadm.Config, key, value string, source kmsg.ConfigSource) {
	t.Helper()
	c, ok := cs[key]
	testutil.True(t, ok, "config %s is not described", key)
	testutil.True(t, c.Value != nil, "config %s has a null value", key)
	testutil.Equal(t, [2]any{*c.Value, c.Source}, [2]any{value, source}, "config %s value and source", key)
}

func testTopicConfigs(t *testing.T, addr string) {
	adm := newAdmin(t, addr)
	topic := topicName(t)
	createTopic(t, adm, topic, 1, "retention.ms", "3600000", "max.message.bytes", "5000")
	cs := configsOf(t, adm, topic)
	checkConfig(t, cs, "retention.ms", "3600000", kmsg.ConfigSourceDynamicTopicConfig)
	checkConfig(t, cs, "max.message.bytes", "5000", kmsg.ConfigSourceDynamicTopicConfig)
	checkConfig(t, cs, "segment.bytes", "1073741824", kmsg.ConfigSourceDefaultConfig)
	checkConfig(t, cs, "cleanup.policy", "delete", kmsg.ConfigSourceDefaultConfig)

	rs, err := adm.AlterTopicConfigs(ctxT(t), []kadm.AlterConfig{
		{Op: kadm.SetConfig, Name: "retention.ms", Value: kmsg.StringPtr("7200000")},
		{Op: kadm.DeleteConfig, Name: "max.message.bytes"},
		{Op: kadm.SetConfig, Name: "segment.bytes", Value: kmsg.StringPtr("10485760")},
	}, topic)
	testutil.NoError(t, err, "AlterTopicConfigs")
	testutil.NoError(t, rs[0].Err, "altering %s: %s", topic, rs[0].ErrMessage)
	cs = configsOf(t, adm, topic)
	checkConfig(t, cs, "retention.ms", "7200000", kmsg.ConfigSourceDynamicTopicConfig)
	checkConfig(t, cs, "max.message.bytes", "1048588", kmsg.ConfigSourceDefaultConfig)
	checkConfig(t, cs, "segment.bytes", "10485760", kmsg.ConfigSourceDynamicTopicConfig)

	rs, err = adm.AlterTopicConfigs(ctxT(t), []kadm.AlterConfig{{Op: kadm.SetConfig, Name: "retention.ms", Value: kmsg.StringPtr("xyz")}}, topic)
	testutil.NoError(t, err, "AlterTopicConfigs (bad value)")
	testutil.ErrorIs(t, rs[0].Err, kerr.InvalidConfig, "setting retention.ms=xyz")
	checkConfig(t, configsOf(t, adm, topic), "retention.ms", "7200000", kmsg.ConfigSourceDynamicTopicConfig)

	// The altered max.message.bytes is in force: back to the broker's 1048588.
	cl := newClient(t, addr, kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerBatchCompression(kgo.NoCompression()))
	testutil.NoError(t, cl.ProduceSync(ctxT(t), &kgo.Record{Topic: topic, Value: make([]byte, 8000)}).FirstErr(),
		"producing 8000 bytes after max.message.bytes=5000 was deleted")

	rcs, err := adm.DescribeTopicConfigs(ctxT(t), topicName(t))
	testutil.NoError(t, err, "DescribeTopicConfigs of a missing topic")
	testutil.ErrorIs(t, rcs[0].Err, kerr.UnknownTopicOrPartition, "describing the configs of a missing topic")
}

func testCreatePartitions(t *testing.T, addr string) {
	adm := newAdmin(t, addr)
	topic := topicName(t)
	createTopic(t, adm, topic, 3)
	rs, err := adm.CreatePartitions(ctxT(t), 2, topic)
	testutil.NoError(t, err, "CreatePartitions")
	testutil.NoError(t, rs[topic].Err, "adding 2 partitions: %s", rs[topic].ErrMessage)
	topics, err := adm.ListTopics(ctxT(t), topic)
	testutil.NoError(t, err, "ListTopics")
	testutil.Equal(t, len(topics[topic].Partitions), 5, "partitions after adding 2")

	cl := newClient(t, addr, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	r := &kgo.Record{Topic: topic, Partition: 4, Value: []byte("on the new partition")}
	testutil.NoError(t, cl.ProduceSync(ctxT(t), r).FirstErr(), "producing to partition 4")
	testutil.Equal(t, [2]int64{int64(r.Partition), r.Offset}, [2]int64{4, 0}, "partition and offset")
	got := consumePartitions(t, addr, topic, map[int32]int{4: 1})
	testutil.Equal(t, string(got[4][0].Value), "on the new partition", "record on partition 4")

	rs, err = adm.UpdatePartitions(ctxT(t), 2, topic)
	testutil.NoError(t, err, "UpdatePartitions")
	testutil.ErrorIs(t, rs[topic].Err, kerr.InvalidPartitions, "shrinking to 2 partitions")
	rs, err = adm.CreatePartitions(ctxT(t), 1, topicName(t))
	testutil.NoError(t, err, "CreatePartitions on a missing topic")
	for _, r := range rs {
		testutil.ErrorIs(t, r.Err, kerr.UnknownTopicOrPartition, "adding partitions to a missing topic")
	}
}

func testDeleteRecords(t *testing.T, addr string) {
	adm := newAdmin(t, addr)
	topic := topicName(t)
	createTopic(t, adm, topic, 1)
	cl := newClient(t, addr, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	var values []string
	for i := range 10 {
		values = append(values, fmt.Sprintf("v%d", i))
	}
	produceValues(t, cl, topic, 0, values...)

	del := func(at int64) kadm.DeleteRecordsResponse {
		t.Helper()
		os := kadm.Offsets{}
		os.Add(kadm.Offset{Topic: topic, Partition: 0, At: at})
		rs, err := adm.DeleteRecords(ctxT(t), os)
		testutil.NoError(t, err, "DeleteRecords before %d", at)
		r, ok := rs.Lookup(topic, 0)
		testutil.True(t, ok, "no DeleteRecords answer for partition 0")
		return r
	}
	r := del(6)
	testutil.NoError(t, r.Err, "deleting records before 6")
	testutil.Equal(t, r.LowWatermark, int64(6), "low watermark after deleting before 6")
	testutil.Equal(t, startOffsets(t, adm, topic)[0], int64(6), "log start offset")
	testutil.Equal(t, endOffsets(t, adm, topic)[0], int64(10), "end offset")

	id := topicID(t, cl, topic)
	p := rawFetch(t, cl, topic, id, 0, 3, 50*time.Millisecond)
	testutil.Equal(t, [2]int64{int64(p.ErrorCode), p.LogStartOffset}, [2]int64{int64(kerr.OffsetOutOfRange.Code), 6},
		"fetch at 3 after deleting before 6: error code and log start")
	c := newClient(t, addr, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().AtStart()}}))
	testutil.Equal(t, pollValues(t, c, 4), []string{"6=v6", "7=v7", "8=v8", "9=v9"}, "consuming from the start")

	testutil.ErrorIs(t, del(11).Err, kerr.OffsetOutOfRange, "deleting records before 11 of 10")
	testutil.Equal(t, del(4).LowWatermark, int64(6), "deleting before 4 when the start is 6 (no-op)")
	r = del(-1) // -1: up to the high watermark
	testutil.NoError(t, r.Err, "deleting all records")
	testutil.Equal(t, r.LowWatermark, int64(10), "low watermark after deleting everything")
	produceValues(t, cl, topic, 10, "v10")
}

func testDeleteTopic(t *testing.T, addr string) {
	adm := newAdmin(t, addr)
	topic := topicName(t)
	createTopic(t, adm, topic, 2)
	cl := newClient(t, addr, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	produceValues(t, cl, topic, 0, "old-0", "old-1")

	r, err := adm.DeleteTopic(ctxT(t), topic)
	testutil.NoError(t, err, "DeleteTopic")
	testutil.NoError(t, r.Err, "deleting %s: %s", topic, r.ErrMessage)
	testutil.Eventually(t, 10*time.Second, func() error {
		topics, err := adm.ListTopics(ctxT(t))
		if err != nil {
			return err
		}
		if topics.Has(topic) {
			return fmt.Errorf("%s is still listed after DeleteTopic", topic)
		}
		return nil
	})
	md, err := adm.Metadata(ctxT(t), topic)
	testutil.NoError(t, err, "Metadata")
	testutil.ErrorIs(t, md.Topics[topic].Err, kerr.UnknownTopicOrPartition, "metadata of the deleted topic")
	_, err = adm.DeleteTopic(ctxT(t), topic)
	testutil.ErrorIs(t, err, kerr.UnknownTopicOrPartition, "deleting %s a second time", topic)

	// The name can be used again, for a new, empty topic.
	createTopic(t, adm, topic, 1)
	fresh := newClient(t, addr, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	produceValues(t, fresh, topic, 0, "new-0")
	got := consumePartitions(t, addr, topic, map[int32]int{0: 1})
	testutil.Equal(t, string(got[0][0].Value), "new-0", "the only record of the re-created topic")
	// A fresh client: adm may still have the topic cached as unknown.
	testutil.Equal(t, endOffsets(t, newAdmin(t, addr), topic), map[int32]int64{0: 1}, "end offsets of the re-created topic")
}

func testDescribeCluster(t *testing.T, n *server.Node) {
	cl := newClient(t, bootstrap(n))
	req := kmsg.NewPtrDescribeClusterRequest()
	resp := request[*kmsg.DescribeClusterResponse](t, cl, req)
	testutil.Equal(t, resp.ErrorCode, int16(0), "DescribeCluster error code")
	testutil.True(t, resp.ClusterID != "", "DescribeCluster: empty cluster id")
	testutil.Equal(t, resp.ControllerID, int32(1), "DescribeCluster controller")
	testutil.Equal(t, len(resp.Brokers), 1, "DescribeCluster brokers")
	b := resp.Brokers[0]
	testutil.Equal(t, fmt.Sprintf("%d %s:%d", b.NodeID, b.Host, b.Port), "1 "+bootstrap(n), "DescribeCluster broker")

	md := request[*kmsg.MetadataResponse](t, cl, kmsg.NewPtrMetadataRequest())
	testutil.Equal(t, md.ClusterID, &resp.ClusterID, "Metadata and DescribeCluster cluster ids")
}

func testDescribeLogDirs(t *testing.T, addr string) {
	adm := newAdmin(t, addr)
	topic := topicName(t)
	createTopic(t, adm, topic, 2)
	cl := newClient(t, addr, kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerBatchCompression(kgo.NoCompression()))
	testutil.NoError(t, cl.ProduceSync(ctxT(t), &kgo.Record{Topic: topic, Partition: 1, Value: make([]byte, 5000)}).FirstErr(), "produce")

	all, err := adm.DescribeAllLogDirs(ctxT(t), kadm.TopicsSet{topic: {0: {}, 1: {}}})
	testutil.NoError(t, err, "DescribeAllLogDirs")
	dirs := all[1]
	testutil.Equal(t, len(dirs), 1, "log dirs of node 1")
	for name, d := range dirs {
		testutil.NoError(t, d.Err, "log dir %s", name)
		testutil.True(t, filepath.IsAbs(d.Dir), "log dir %q is not an absolute path", d.Dir)
		parts := d.Topics[topic]
		testutil.Equal(t, len(parts), 2, "partitions of %s in %s", topic, name)
		testutil.Equal(t, parts[0].Size, int64(0), "size of the empty partition 0")
		testutil.True(t, parts[1].Size >= 5000 && parts[1].Size < 6000, "size of partition 1 is %d, want about 5000", parts[1].Size)
		// KIP-827's sizes: (Total - Usable) / Total is the share df reports used (its
		// Use%), so that the balancer's max.disk.usage.percent means what df shows.
		testutil.True(t, d.TotalBytes > 0 && d.UsableBytes >= 0 && d.UsableBytes <= d.TotalBytes,
			"log dir %s: TotalBytes %d, UsableBytes %d", name, d.TotalBytes, d.UsableBytes)
		out, err := exec.Command("df", "--output=pcent", d.Dir).Output()
		testutil.NoError(t, err, "df %s", d.Dir)
		lines := strings.Fields(string(out))
		dfPercent, err := strconv.Atoi(strings.TrimSuffix(lines[len(lines)-1], "%"))
		testutil.NoError(t, err, "df output %q", out)
		used := 100 * float64(d.TotalBytes-d.UsableBytes) / float64(d.TotalBytes)
		testutil.True(t, math.Abs(used-float64(dfPercent)) <= 1.5, "log dir %s: %.1f%% used by TotalBytes/UsableBytes, df says %d%%", name, used, dfPercent)
	}
}

// testBrokerConfigs describes node 1's configuration: a property set at start-up is a
// static broker config, one left alone is a default.
func testBrokerConfigs(t *testing.T, addr string) {
	rcs, err := newAdmin(t, addr).DescribeBrokerConfigs(ctxT(t), 1)
	testutil.NoError(t, err, "DescribeBrokerConfigs")
	testutil.Equal(t, len(rcs), 1, "described brokers")
	testutil.NoError(t, rcs[0].Err, "describing broker 1: %s", rcs[0].ErrMessage)
	cs := map[string]kadm.Config{}
	for _, c := range rcs[0].Configs {
		cs[c.Key] = c
	}
	checkConfig(t, cs, "auto.create.topics.enable", "false", kmsg.ConfigSourceStaticBrokerConfig)
	checkConfig(t, cs, "message.max.bytes", "1048588", kmsg.ConfigSourceDefaultConfig)
	checkConfig(t, cs, "num.partitions", "1", kmsg.ConfigSourceDefaultConfig)
}

// testValidateOnly asks for topics and partitions with validate_only: the answers are
// those a real request would get, and nothing changes.
func testValidateOnly(t *testing.T, addr string) {
	adm := newAdmin(t, addr)
	topic := topicName(t)
	rs, err := adm.ValidateCreateTopics(ctxT(t), 3, 1, nil, topic)
	testutil.NoError(t, err, "ValidateCreateTopics")
	testutil.NoError(t, rs[topic].Err, "validating the creation of %s: %s", topic, rs[topic].ErrMessage)
	testutil.Equal(t, rs[topic].NumPartitions, int32(3), "validated partitions")
	topics, err := adm.ListTopics(ctxT(t), topic)
	testutil.NoError(t, err, "ListTopics")
	testutil.ErrorIs(t, topics[topic].Err, kerr.UnknownTopicOrPartition, "the topic a validate-only request named exists")

	createTopic(t, adm, topic, 1)
	// A fresh client: adm has just cached the topic as unknown (for MetadataMinAge).
	adm = newAdmin(t, addr)
	prs, err := adm.ValidateCreatePartitions(ctxT(t), 2, topic)
	testutil.NoError(t, err, "ValidateCreatePartitions")
	testutil.NoError(t, prs[topic].Err, "validating 2 more partitions: %s", prs[topic].ErrMessage)
	topics, err = adm.ListTopics(ctxT(t), topic)
	testutil.NoError(t, err, "ListTopics")
	testutil.Equal(t, len(topics[topic].Partitions), 1, "partitions after a validate-only CreatePartitions")
}
