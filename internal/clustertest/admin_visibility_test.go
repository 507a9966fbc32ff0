package clustertest_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/runnel-io/runnel/internal/clustertest"
	"github.com/segmentio/kafka-go"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Issue 11 part 1: an acknowledged admin change is visible on every node at once.
const (
	visibilityTopics = 10 // topics per client, created through nodes 1, 2, 3, 1, ...
	visibilityFirst  = 3  // partitions at creation
	visibilityLater  = 5  // partitions after CreatePartitions
	// visibilitySettle bounds the wait, after a failed check, for every node to agree,
	// so that each step starts from a state every node has.
	visibilitySettle = 10 * time.Second
	visibilityOp     = 15 * time.Second // bounds one admin request
)

// TestAdminVisibility changes topics through one node of three with franz-go (kadm),
// sarama (ClusterAdmin) and kafka-go (kafka.Client), each bound to that one node, and
// at once (no retry, no sleep) asks every node, through the same library bound to that
// node alone: after CreateTopics the topic, all its partitions and their leaders are
// in Metadata and DescribeConfigs answers its configs; after CreatePartitions the new
// count is in Metadata (and sarama's partitioner accepts the new partition); after
// AlterConfigs or IncrementalAlterConfigs DescribeConfigs answers the new value; after
// DeleteTopics Metadata no longer lists the topic. A fourth case is franz-go with its
// default settings: kadm CreateTopic then ListTopics from the same client.
//
//	go test ./internal/clustertest/ -run TestAdminVisibility -count=1 -v
func TestAdminVisibility(t *testing.T) {
	c := clustertest.Start(t, clustertest.Options{Nodes: 3, Sets: []string{"auto.create.topics.enable=false"}, StartTimeout: startTimeout})
	// A first topic through the retrying helper: the quorum has elected and every
	// node has registered before the clients start.
	createTopic(t, c, topicName(t)+"-warmup", 1, 3)
	c.WaitBrokers(t, []int32{1, 2, 3}, waitTimeout)
	for _, lib := range []visibilityClient{
		{"franz-go", openFranzNode},
		{"sarama", openSaramaNode},
		{"kafka-go", openKafkaGoNode},
	} {
		t.Run(lib.name, func(t *testing.T) {
			t.Parallel()
			testAdminVisibility(t, c, lib)
		})
	}
	t.Run("franz-go-defaults", func(t *testing.T) {
		t.Parallel()
		testFranzDefaultListTopics(t, c)
	})
}

// visibilityClient opens a nodeAdmin of one client library on one node.
type visibilityClient struct {
	name string
	open func(t *testing.T, addr string) nodeAdmin
}

// nodeAdmin is one client library bound to one node: every request it sends, whatever
// broker the library means it for, reaches that node (dialOnly), and its views are that
// node's answers.
type nodeAdmin interface {
	create(ctx context.Context, topic string, partitions int32, configs map[string]string) error
	setPartitions(ctx context.Context, topic string, count int32) error
	alterConfigs(ctx context.Context, topic string, configs map[string]string, incremental bool) error
	deleteTopic(ctx context.Context, topic string) error
	// leaders returns partition → leader as the node's Metadata answers them for topic,
	// or an error if the node does not know the topic.
	leaders(ctx context.Context, topic string) (map[int32]int32, error)
	// lists reports whether the node's Metadata of all topics lists topic.
	lists(ctx context.Context, topic string) (bool, error)
	// config returns the value of one config of topic as the node's DescribeConfigs
	// answers it.
	config(ctx context.Context, topic, name string) (string, error)
}

// producerNode is a nodeAdmin that can also produce to a chosen partition with a
// producer bootstrapped from its node alone.
type producerNode interface {
	produceTo(ctx context.Context, topic string, partition int32) error
}

// dialOnly is a dial function that connects to addr whatever address it is asked for.
func dialOnly(addr string) func(ctx context.Context, network, _ string) (net.Conn, error) {
	d := net.Dialer{Timeout: 5 * time.Second}
	return func(ctx context.Context, network, _ string) (net.Conn, error) {
		return d.DialContext(ctx, network, addr)
	}
}

func testAdminVisibility(t *testing.T, c *clustertest.Cluster, lib visibilityClient) {
	nodes := make([]nodeAdmin, c.Size()) // nodes[i] talks to node i+1 alone
	for i := range nodes {
		nodes[i] = lib.open(t, c.Node(i+1).KafkaAddr)
	}
	for i := range visibilityTopics {
		topic := fmt.Sprintf("%s-%d", topicName(t), i)
		s := visibilityStep{t: t, nodes: nodes, a: i % len(nodes), topic: topic}
		first := map[string]string{"min.insync.replicas": "2", "retention.ms": "3600000"}
		s.run("CreateTopics", func(ctx context.Context, n nodeAdmin) error {
			return n.create(ctx, topic, visibilityFirst, first)
		}, func(ctx context.Context, _ int, n nodeAdmin) error {
			return joinErrs(hasPartitions(ctx, n, topic, visibilityFirst), hasConfig(ctx, n, topic, "retention.ms", "3600000"))
		})
		s.run("CreatePartitions", func(ctx context.Context, n nodeAdmin) error {
			return n.setPartitions(ctx, topic, visibilityLater)
		}, func(ctx context.Context, _ int, n nodeAdmin) error {
			err := hasPartitions(ctx, n, topic, visibilityLater)
			if p, ok := n.(producerNode); ok {
				if perr := p.produceTo(ctx, topic, visibilityLater-1); perr != nil {
					err = joinErrs(err, fmt.Errorf("producing to partition %d: %w", visibilityLater-1, perr))
				}
			}
			return err
		})
		incremental := i%2 == 1
		api := map[bool]string{false: "AlterConfigs", true: "IncrementalAlterConfigs"}[incremental]
		later := map[string]string{"min.insync.replicas": "2", "retention.ms": "7200000"}
		s.run(api, func(ctx context.Context, n nodeAdmin) error {
			return n.alterConfigs(ctx, topic, later, incremental)
		}, func(ctx context.Context, _ int, n nodeAdmin) error {
			return hasConfig(ctx, n, topic, "retention.ms", "7200000")
		})
		s.run("DeleteTopics", func(ctx context.Context, n nodeAdmin) error {
			return n.deleteTopic(ctx, topic)
		}, func(ctx context.Context, _ int, n nodeAdmin) error {
			listed, err := n.lists(ctx, topic)
			if err == nil && listed {
				err = errors.New("Metadata still lists the topic")
			}
			return err
		})
	}
}

// visibilityStep is one topic's sequence of changes through node a+1.
type visibilityStep struct {
	t     *testing.T
	nodes []nodeAdmin
	a     int
	topic string
}

// run makes a change through node a+1 and, as soon as it is acknowledged, checks
// every node (the others first). A node that fails the check fails the test; run then
// waits until every node passes it, and says how long that took.
func (s visibilityStep) run(what string, change func(context.Context, nodeAdmin) error,
	check func(context.Context, int, nodeAdmin) error) {
	t := s.t
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), visibilityOp)
	defer cancel()
	if err := change(ctx, s.nodes[s.a]); err != nil {
		t.Fatalf("topic %s: %s through node %d: %v", s.topic, what, s.a+1, err)
	}
	acked := time.Now()
	order := make([]int, 0, len(s.nodes))
	for i := 1; i <= len(s.nodes); i++ {
		order = append(order, (s.a+i)%len(s.nodes)) // node a+1 last
	}
	var stale []string
	for _, i := range order {
		if err := check(ctx, i, s.nodes[i]); err != nil {
			stale = append(stale, fmt.Sprintf("node %d: %v", i+1, err))
		}
	}
	if len(stale) == 0 {
		return
	}
	took, err := s.settle(check, acked)
	if err != nil {
		t.Fatalf("topic %s: %s acknowledged through node %d, but at once %s; after %v still: %v",
			s.topic, what, s.a+1, strings.Join(stale, "; "), visibilitySettle, err)
	}
	t.Errorf("topic %s: %s acknowledged through node %d, but at once %s (every node agreed %s ms after the acknowledgement)",
		s.topic, what, s.a+1, strings.Join(stale, "; "), ms(took))
}

// settle polls every node until all pass check, and returns the time since acked.
func (s visibilityStep) settle(check func(context.Context, int, nodeAdmin) error, acked time.Time) (time.Duration, error) {
	for {
		ctx, cancel := context.WithTimeout(context.Background(), visibilityOp)
		var err error
		for i, n := range s.nodes {
			if e := check(ctx, i, n); e != nil {
				err = fmt.Errorf("node %d: %w", i+1, e)
				break
			}
		}
		cancel()
		took := time.Since(acked)
		if err == nil || took > visibilitySettle {
			return took, err
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// joinErrs joins the non-nil errors of errs on one line.
func joinErrs(errs ...error) error {
	var msgs []string
	for _, err := range errs {
		if err != nil {
			msgs = append(msgs, err.Error())
		}
	}
	if len(msgs) == 0 {
		return nil
	}
	return errors.New(strings.Join(msgs, ", "))
}

// hasPartitions checks that n's Metadata has topic with partitions 0..want-1, each
// with a leader.
func hasPartitions(ctx context.Context, n nodeAdmin, topic string, want int32) error {
	leaders, err := n.leaders(ctx, topic)
	if err != nil {
		return fmt.Errorf("Metadata: %w", err)
	}
	var bad []string
	for p := range want {
		if l, ok := leaders[p]; !ok || l < 0 {
			bad = append(bad, fmt.Sprint(p))
		}
	}
	if len(bad) > 0 || len(leaders) != int(want) {
		return fmt.Errorf("Metadata: %d partitions (want %d), without a leader: [%s]", len(leaders), want, strings.Join(bad, " "))
	}
	return nil
}

// hasConfig checks that n's DescribeConfigs answers value for topic's config name.
func hasConfig(ctx context.Context, n nodeAdmin, topic, name, value string) error {
	got, err := n.config(ctx, topic, name)
	if err != nil {
		return fmt.Errorf("DescribeConfigs: %w", err)
	}
	if got != value {
		return fmt.Errorf("DescribeConfigs: %s=%s, want %s", name, got, value)
	}
	return nil
}

// testFranzDefaultListTopics creates each topic with kadm over a new franz-go client
// with default settings (seeded with every node) and lists the topics at once from the
// same client. The first time a topic is missing it also measures how long the client
// keeps reporting it missing.
func testFranzDefaultListTopics(t *testing.T, c *clustertest.Cluster) {
	addrs := strings.Split(c.Bootstrap(), ",")
	measured := false
	for i := range visibilityTopics {
		topic := fmt.Sprintf("%s-%d", topicName(t), i)
		cl, err := kgo.NewClient(kgo.SeedBrokers(slices.Concat(addrs[i%len(addrs):], addrs[:i%len(addrs)])...))
		if err != nil {
			t.Fatal(err)
		}
		adm := kadm.NewClient(cl)
		ctx, cancel := context.WithTimeout(context.Background(), visibilityOp)
		resp, err := adm.CreateTopic(ctx, visibilityFirst, 3, nil, topic)
		if err == nil {
			err = resp.Err
		}
		if err != nil {
			t.Fatalf("kadm CreateTopic %s: %v", topic, err)
		}
		acked := time.Now()
		if err := kadmListed(ctx, adm, topic); err != nil {
			msg := fmt.Sprintf("topic %s: kadm CreateTopic acknowledged, then ListTopics from the same default client: %v", topic, err)
			if !measured {
				measured = true
				msg += kadmListedAfter(ctx, adm, topic, acked)
			}
			t.Error(msg)
		}
		described, err := adm.DescribeTopicConfigs(ctx, topic)
		if err == nil {
			var rc kadm.ResourceConfig
			rc, err = described.On(topic, nil)
			if err == nil {
				err = rc.Err
			}
		}
		if err != nil {
			t.Errorf("topic %s: kadm CreateTopic acknowledged, then DescribeTopicConfigs from the same default client: %v", topic, err)
		}
		cancel()
		cl.Close()
	}
}

// kadmListed checks that adm's ListTopics has topic with all its partitions.
func kadmListed(ctx context.Context, adm *kadm.Client, topic string) error {
	listed, err := adm.ListTopics(ctx)
	if err != nil {
		return err
	}
	d, ok := listed[topic]
	switch {
	case !ok:
		return fmt.Errorf("missing (%d topics listed)", len(listed))
	case d.Err != nil:
		return d.Err
	case len(d.Partitions) != visibilityFirst:
		return fmt.Errorf("%d partitions, want %d", len(d.Partitions), visibilityFirst)
	}
	return nil
}

// kadmListedAfter polls adm's ListTopics until it has topic (at most 10 s), and says
// when that was.
func kadmListedAfter(ctx context.Context, adm *kadm.Client, topic string, acked time.Time) string {
	for time.Since(acked) < 10*time.Second {
		time.Sleep(50 * time.Millisecond)
		if kadmListed(ctx, adm, topic) == nil {
			return fmt.Sprintf(" (the client lists it %s ms after the acknowledgement)", ms(time.Since(acked)))
		}
	}
	return " (still missing 10 s after the acknowledgement)"
}

// ---- franz-go: kadm for the changes; for the views, kmsg requests sent to the one
// broker of the client, which every dial reaches.

type franzNode struct {
	adm  *kadm.Client
	seed *kgo.Broker
}

func openFranzNode(t *testing.T, addr string) nodeAdmin {
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.Dialer(dialOnly(addr)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return &franzNode{adm: kadm.NewClient(cl), seed: cl.SeedBrokers()[0]}
}

func (f *franzNode) create(ctx context.Context, topic string, partitions int32, configs map[string]string) error {
	resp, err := f.adm.CreateTopic(ctx, partitions, 3, ptrs(configs), topic)
	if err != nil {
		return err
	}
	return resp.Err
}

func (f *franzNode) setPartitions(ctx context.Context, topic string, count int32) error {
	resps, err := f.adm.UpdatePartitions(ctx, int(count), topic)
	if err != nil {
		return err
	}
	return resps.Error()
}

func (f *franzNode) alterConfigs(ctx context.Context, topic string, configs map[string]string, incremental bool) error {
	var alter []kadm.AlterConfig
	for k, v := range configs {
		alter = append(alter, kadm.AlterConfig{Op: kadm.SetConfig, Name: k, Value: &v})
	}
	var resps kadm.AlterConfigsResponses
	var err error
	if incremental {
		resps, err = f.adm.AlterTopicConfigs(ctx, alter, topic)
	} else {
		resps, err = f.adm.AlterTopicConfigsState(ctx, alter, topic)
	}
	if err != nil {
		return err
	}
	for _, r := range resps {
		if r.Err != nil {
			return fmt.Errorf("%w: %s", r.Err, r.ErrMessage)
		}
	}
	return nil
}

func (f *franzNode) deleteTopic(ctx context.Context, topic string) error {
	resp, err := f.adm.DeleteTopic(ctx, topic)
	if err != nil {
		return err
	}
	return resp.Err
}

func (f *franzNode) metadata(ctx context.Context, topics ...string) (*kmsg.MetadataResponse, error) {
	req := kmsg.NewPtrMetadataRequest()
	for _, topic := range topics {
		rt := kmsg.NewMetadataRequestTopic()
		rt.Topic = kmsg.StringPtr(topic)
		req.Topics = append(req.Topics, rt)
	}
	return req.RequestWith(ctx, f.seed)
}

func (f *franzNode) leaders(ctx context.Context, topic string) (map[int32]int32, error) {
	resp, err := f.metadata(ctx, topic)
	if err != nil {
		return nil, err
	}
	for _, rt := range resp.Topics {
		if rt.Topic == nil || *rt.Topic != topic {
			continue
		}
		if err := kerr.ErrorForCode(rt.ErrorCode); err != nil {
			return nil, err
		}
		out := map[int32]int32{}
		for _, p := range rt.Partitions {
			out[p.Partition] = p.Leader
		}
		return out, nil
	}
	return nil, errors.New("topic missing from the answer")
}

func (f *franzNode) lists(ctx context.Context, topic string) (bool, error) {
	resp, err := f.metadata(ctx)
	if err != nil {
		return false, err
	}
	for _, rt := range resp.Topics {
		if rt.Topic != nil && *rt.Topic == topic {
			return true, nil
		}
	}
	return false, nil
}

func (f *franzNode) config(ctx context.Context, topic, name string) (string, error) {
	req := kmsg.NewPtrDescribeConfigsRequest()
	res := kmsg.NewDescribeConfigsRequestResource()
	res.ResourceType, res.ResourceName, res.ConfigNames = kmsg.ConfigResourceTypeTopic, topic, []string{name}
	req.Resources = append(req.Resources, res)
	resp, err := req.RequestWith(ctx, f.seed)
	if err != nil {
		return "", err
	}
	for _, r := range resp.Resources {
		if err := kerr.ErrorForCode(r.ErrorCode); err != nil {
			return "", err
		}
		for _, c := range r.Configs {
			if c.Name == name && c.Value != nil {
				return *c.Value, nil
			}
		}
	}
	return "", fmt.Errorf("no %s in the answer", name)
}

func ptrs(m map[string]string) map[string]*string {
	out := make(map[string]*string, len(m))
	for k, v := range m {
		out[k] = &v
	}
	return out
}

// ---- sarama: a ClusterAdmin whose every connection goes to its node, and a
// SyncProducer bootstrapped from that node alone.

type saramaNode struct {
	addr string
	adm  sarama.ClusterAdmin
}

// onlyDialer is a sarama proxy dialer that reaches one address.
type onlyDialer struct{ addr string }

func (d onlyDialer) Dial(network, _ string) (net.Conn, error) {
	return net.DialTimeout(network, d.addr, 5*time.Second)
}

func saramaNodeConfig() *sarama.Config {
	cfg := sarama.NewConfig()
	cfg.Version = sarama.V3_6_0_0
	cfg.Admin.Timeout = visibilityOp
	return cfg
}

func openSaramaNode(t *testing.T, addr string) nodeAdmin {
	cfg := saramaNodeConfig()
	cfg.Net.Proxy.Enable, cfg.Net.Proxy.Dialer = true, onlyDialer{addr}
	adm, err := sarama.NewClusterAdmin([]string{addr}, cfg)
	if err != nil {
		t.Fatalf("sarama.NewClusterAdmin(%s): %v", addr, err)
	}
	t.Cleanup(func() { adm.Close() })
	return &saramaNode{addr: addr, adm: adm}
}

func (s *saramaNode) create(_ context.Context, topic string, partitions int32, configs map[string]string) error {
	return s.adm.CreateTopic(topic, &sarama.TopicDetail{NumPartitions: partitions, ReplicationFactor: 3, ConfigEntries: ptrs(configs)}, false)
}

func (s *saramaNode) setPartitions(_ context.Context, topic string, count int32) error {
	return s.adm.CreatePartitions(topic, count, nil, false)
}

func (s *saramaNode) alterConfigs(_ context.Context, topic string, configs map[string]string, incremental bool) error {
	if !incremental {
		return s.adm.AlterConfig(sarama.TopicResource, topic, ptrs(configs), false)
	}
	entries := map[string]sarama.IncrementalAlterConfigsEntry{}
	for k, v := range configs {
		entries[k] = sarama.IncrementalAlterConfigsEntry{Operation: sarama.IncrementalAlterConfigsOperationSet, Value: &v}
	}
	return s.adm.IncrementalAlterConfig(sarama.TopicResource, topic, entries, false)
}

func (s *saramaNode) deleteTopic(_ context.Context, topic string) error {
	return s.adm.DeleteTopic(topic)
}

func (s *saramaNode) leaders(_ context.Context, topic string) (map[int32]int32, error) {
	mds, err := s.adm.DescribeTopics([]string{topic})
	if err != nil {
		return nil, err
	}
	for _, md := range mds {
		if md.Name != topic {
			continue
		}
		if md.Err != sarama.ErrNoError {
			return nil, md.Err
		}
		out := map[int32]int32{}
		for _, p := range md.Partitions {
			out[p.ID] = p.Leader
		}
		return out, nil
	}
	return nil, errors.New("topic missing from the answer")
}

func (s *saramaNode) lists(_ context.Context, topic string) (bool, error) {
	mds, err := s.adm.DescribeTopics(nil)
	if err != nil {
		return false, err
	}
	return slices.ContainsFunc(mds, func(md *sarama.TopicMetadata) bool { return md.Name == topic }), nil
}

func (s *saramaNode) config(_ context.Context, topic, name string) (string, error) {
	entries, err := s.adm.DescribeConfig(sarama.ConfigResource{Type: sarama.TopicResource, Name: topic, ConfigNames: []string{name}})
	if err != nil {
		return "", err
	}
	for _, e := range entries {
		if e.Name == name {
			return e.Value, nil
		}
	}
	return "", fmt.Errorf("no %s in the answer", name)
}

// produceTo sends one message to topic-partition with a new SyncProducer whose only
// address is the node, placed by sarama's manual partitioner, which checks the
// partition against the metadata the producer got from the node.
func (s *saramaNode) produceTo(_ context.Context, topic string, partition int32) error {
	cfg := saramaNodeConfig()
	cfg.Producer.Return.Successes = true
	cfg.Producer.Partitioner = sarama.NewManualPartitioner
	p, err := sarama.NewSyncProducer([]string{s.addr}, cfg)
	if err != nil {
		return err
	}
	defer p.Close()
	_, _, err = p.SendMessage(&sarama.ProducerMessage{Topic: topic, Partition: partition, Value: sarama.StringEncoder("visible")})
	return err
}

// ---- kafka-go: a kafka.Client whose transport dials only its node. Its Metadata is
// served from the transport's cache, so each view uses a new transport, whose first
// metadata comes from the node.

type kafkaGoNode struct {
	addr string
	cl   *kafka.Client
}

func newKafkaGoClient(addr string) *kafka.Client {
	return &kafka.Client{Addr: kafka.TCP(addr), Timeout: visibilityOp, Transport: &kafka.Transport{Dial: dialOnly(addr)}}
}

func openKafkaGoNode(t *testing.T, addr string) nodeAdmin {
	cl := newKafkaGoClient(addr)
	t.Cleanup(cl.Transport.(*kafka.Transport).CloseIdleConnections)
	return &kafkaGoNode{addr: addr, cl: cl}
}

func (k *kafkaGoNode) create(ctx context.Context, topic string, partitions int32, configs map[string]string) error {
	tc := kafka.TopicConfig{Topic: topic, NumPartitions: int(partitions), ReplicationFactor: 3}
	for name, v := range configs {
		tc.ConfigEntries = append(tc.ConfigEntries, kafka.ConfigEntry{ConfigName: name, ConfigValue: v})
	}
	resp, err := k.cl.CreateTopics(ctx, &kafka.CreateTopicsRequest{Topics: []kafka.TopicConfig{tc}})
	if err != nil {
		return err
	}
	return resp.Errors[topic]
}

func (k *kafkaGoNode) setPartitions(ctx context.Context, topic string, count int32) error {
	resp, err := k.cl.CreatePartitions(ctx, &kafka.CreatePartitionsRequest{Topics: []kafka.TopicPartitionsConfig{{Name: topic, Count: count}}})
	if err != nil {
		return err
	}
	return resp.Errors[topic]
}

func (k *kafkaGoNode) alterConfigs(ctx context.Context, topic string, configs map[string]string, incremental bool) error {
	if incremental {
		res := kafka.IncrementalAlterConfigsRequestResource{ResourceType: kafka.ResourceTypeTopic, ResourceName: topic}
		for name, v := range configs {
			res.Configs = append(res.Configs, kafka.IncrementalAlterConfigsRequestConfig{Name: name, Value: v, ConfigOperation: kafka.ConfigOperationSet})
		}
		resp, err := k.cl.IncrementalAlterConfigs(ctx, &kafka.IncrementalAlterConfigsRequest{Resources: []kafka.IncrementalAlterConfigsRequestResource{res}})
		if err != nil {
			return err
		}
		for _, r := range resp.Resources {
			if r.Error != nil {
				return r.Error
			}
		}
		return nil
	}
	res := kafka.AlterConfigRequestResource{ResourceType: kafka.ResourceTypeTopic, ResourceName: topic}
	for name, v := range configs {
		res.Configs = append(res.Configs, kafka.AlterConfigRequestConfig{Name: name, Value: v})
	}
	resp, err := k.cl.AlterConfigs(ctx, &kafka.AlterConfigsRequest{Resources: []kafka.AlterConfigRequestResource{res}})
	if err != nil {
		return err
	}
	for _, e := range resp.Errors {
		if e != nil {
			return e
		}
	}
	return nil
}

func (k *kafkaGoNode) deleteTopic(ctx context.Context, topic string) error {
	resp, err := k.cl.DeleteTopics(ctx, &kafka.DeleteTopicsRequest{Topics: []string{topic}})
	if err != nil {
		return err
	}
	return resp.Errors[topic]
}

// metadata asks a new client of the node, so that the answer is the node's and not a
// cached one.
func (k *kafkaGoNode) metadata(ctx context.Context, topics []string) (*kafka.MetadataResponse, error) {
	fresh := newKafkaGoClient(k.addr)
	defer fresh.Transport.(*kafka.Transport).CloseIdleConnections()
	return fresh.Metadata(ctx, &kafka.MetadataRequest{Topics: topics})
}

func (k *kafkaGoNode) leaders(ctx context.Context, topic string) (map[int32]int32, error) {
	resp, err := k.metadata(ctx, []string{topic})
	if err != nil {
		return nil, err
	}
	for _, rt := range resp.Topics {
		if rt.Name != topic {
			continue
		}
		if rt.Error != nil {
			return nil, rt.Error
		}
		out := map[int32]int32{}
		for _, p := range rt.Partitions {
			out[int32(p.ID)] = int32(p.Leader.ID)
		}
		return out, nil
	}
	return nil, errors.New("topic missing from the answer")
}

func (k *kafkaGoNode) lists(ctx context.Context, topic string) (bool, error) {
	resp, err := k.metadata(ctx, nil)
	if err != nil {
		return false, err
	}
	return slices.ContainsFunc(resp.Topics, func(rt kafka.Topic) bool { return rt.Name == topic && rt.Error == nil }), nil
}

func (k *kafkaGoNode) config(ctx context.Context, topic, name string) (string, error) {
	resp, err := k.cl.DescribeConfigs(ctx, &kafka.DescribeConfigsRequest{Resources: []kafka.DescribeConfigRequestResource{{
		ResourceType: kafka.ResourceTypeTopic, ResourceName: topic, ConfigNames: []string{name}}}})
	if err != nil {
		return "", err
	}
	for _, r := range resp.Resources {
		if r.Error != nil {
			return "", r.Error
		}
		for _, e := range r.ConfigEntries {
			if e.ConfigName == name {
				return e.ConfigValue, nil
			}
		}
	}
	return "", fmt.Errorf("no %s in the answer", name)
}
