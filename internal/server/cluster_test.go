package server

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/runnel-io/runnel/internal/config"
	"github.com/runnel-io/runnel/internal/metadata"
	"github.com/runnel-io/runnel/internal/testutil"
)

// syncBuffer collects a node's log for printing when a test fails.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// fastLiveness are timeouts that keep cluster tests quick.
var fastLiveness = []string{"broker.heartbeat.interval.ms=100", "broker.session.timeout.ms=1500"}

// testNode is one node of a test cluster: its configuration (to restart it) and log.
type testNode struct {
	cfg  *config.Broker
	node *Node
	logs *syncBuffer
}

// nodeConfig is node id's configuration: loopback ports, its own data directory,
// raftAddr for its Raft listener, the given voters, and sets applied last.
func nodeConfig(t *testing.T, id int, raftAddr, voters string, sets ...string) *config.Broker {
	t.Helper()
	cfg := config.Default()
	props := []string{fmt.Sprintf("node.id=%d", id), "listen=127.0.0.1:0", "http.listen=127.0.0.1:0",
		"controller.listen=" + raftAddr, "log.dirs=" + t.TempDir()}
	if voters != "" {
		props = append(props, "controllers="+voters)
	}
	for _, s := range append(append(props, fastLiveness...), sets...) {
		k, v, _ := strings.Cut(s, "=")
		testutil.NoError(t, cfg.Set(k, v), "config.Set(%q)", s)
	}
	return cfg
}

// start starts tn's node, printing its log if the test fails, and closes it at the end.
func (tn *testNode) start(t *testing.T) error {
	t.Helper()
	if tn.logs == nil {
		tn.logs = &syncBuffer{}
		t.Cleanup(func() {
			if t.Failed() {
				t.Logf("node %d log:\n%s", tn.cfg.NodeID, tn.logs)
			}
		})
	}
	logger := slog.New(slog.NewTextHandler(tn.logs, &slog.HandlerOptions{Level: slog.LevelInfo}))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	n, err := Start(ctx, tn.cfg, Options{Logger: logger})
	if err != nil {
		return err
	}
	tn.node = n
	t.Cleanup(func() { n.Close() })
	return nil
}

// startCluster starts n voters concurrently and returns them in node id order.
func startCluster(t *testing.T, n int, sets ...string) []*testNode {
	t.Helper()
	addrs := make([]string, n)
	var voters []string
	for i := range n {
		addrs[i] = testutil.FreeAddr(t)
		voters = append(voters, fmt.Sprintf("%d@%s", i+1, addrs[i]))
	}
	nodes := make([]*testNode, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		nodes[i] = &testNode{cfg: nodeConfig(t, i+1, addrs[i], strings.Join(voters, ","), sets...)}
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = nodes[i].start(t)
		}()
	}
	wg.Wait()
	// Stop together, so that no node waits for a quorum that is already gone.
	t.Cleanup(func() {
		var wg sync.WaitGroup
		for _, tn := range nodes {
			if tn.node != nil {
				wg.Add(1)
				go func() {
					defer wg.Done()
					tn.node.Close()
				}()
			}
		}
		wg.Wait()
	})
	for i, err := range errs {
		if err != nil {
			t.Fatalf("start node %d: %v", i+1, err)
		}
	}
	return nodes
}

func adminOf(t *testing.T, n *Node) *kadm.Client {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(n.KafkaAddr().String()), kgo.RetryTimeout(10*time.Second))
	testutil.NoError(t, err, "kgo.NewClient")
	t.Cleanup(cl.Close)
	return kadm.NewClient(cl)
}

// rawMetadata asks n itself (not the cluster) for a topic's metadata.
func rawMetadata(t *testing.T, n *Node, topic string) *kmsg.MetadataResponse {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(n.KafkaAddr().String()))
	testutil.NoError(t, err, "kgo.NewClient")
	defer cl.Close()
	req := kmsg.NewPtrMetadataRequest()
	rt := kmsg.NewMetadataRequestTopic()
	rt.Topic = kmsg.StringPtr(topic)
	req.Topics = append(req.Topics, rt)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	resp, err := cl.SeedBrokers()[0].Request(ctx, req)
	testutil.NoError(t, err, "metadata from node %d", n.cfg.NodeID)
	return resp.(*kmsg.MetadataResponse)
}

// leaders describes a topic's partitions as node n sees them: "p0:leader/isr ...".
func leaders(t *testing.T, n *Node, topic string) (string, error) {
	m := rawMetadata(t, n, topic)
	if len(m.Topics) != 1 || m.Topics[0].ErrorCode != 0 {
		return "", fmt.Errorf("node %d: topic %s not in metadata: %+v", n.cfg.NodeID, topic, m.Topics)
	}
	var b strings.Builder
	for _, p := range m.Topics[0].Partitions {
		fmt.Fprintf(&b, "p%d:%d/%v ", p.Partition, p.Leader, p.ISR)
	}
	return b.String(), nil
}

func TestSingleNodeRestart(t *testing.T) {
	tn := &testNode{cfg: nodeConfig(t, 1, "127.0.0.1:0", "")}
	testutil.NoError(t, tn.start(t), "start")
	adm := adminOf(t, tn.node)
	_, err := adm.CreateTopic(context.Background(), 2, 1, nil, "solo")
	testutil.NoError(t, err, "create topic")
	began := time.Now()
	testutil.NoError(t, tn.node.Close(), "close")
	testutil.True(t, time.Since(began) < 5*time.Second, "a lone node took %v to stop", time.Since(began))

	testutil.NoError(t, tn.start(t), "restart")
	testutil.Eventually(t, 10*time.Second, func() error {
		got, err := leaders(t, tn.node, "solo")
		if err != nil {
			return err
		}
		if got != "p0:1/[1] p1:1/[1] " {
			return fmt.Errorf("after restart: %s", got)
		}
		return nil
	})
}

func TestCluster(t *testing.T) {
	nodes := startCluster(t, 3)
	ctrlID := nodes[0].node.admin.ControllerID()
	var plain *testNode // a node that is not the active controller
	for _, tn := range nodes {
		if tn.node.admin.ControllerID() != ctrlID {
			t.Fatalf("nodes disagree on the controller")
		}
		if int(tn.cfg.NodeID) != int(ctrlID) && plain == nil {
			plain = tn
		}
	}

	// Admin operations sent to a plain broker are forwarded to the controller, and
	// answered once the plain broker has applied them.
	create := kmsg.NewPtrCreateTopicsRequest()
	ct := kmsg.NewCreateTopicsRequestTopic()
	ct.Topic, ct.NumPartitions, ct.ReplicationFactor = "replicated", 3, 3
	create.Topics, create.TimeoutMillis = append(create.Topics, ct), 10_000
	cr := requestTo(t, plain.node, create).(*kmsg.CreateTopicsResponse)
	testutil.Equal(t, cr.Topics[0].ErrorCode, int16(0), "create topic through node %d: %v", plain.cfg.NodeID, cr.Topics[0].ErrorMessage)
	testutil.True(t, plain.node.admin.Image().Topics["replicated"] != nil, "forwarded creation applied locally")
	alter := kmsg.NewPtrIncrementalAlterConfigsRequest()
	res := kmsg.NewIncrementalAlterConfigsRequestResource()
	res.ResourceType, res.ResourceName = kmsg.ConfigResourceTypeTopic, "replicated"
	rc := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
	rc.Name, rc.Value = "retention.ms", kmsg.StringPtr("60000")
	res.Configs = append(res.Configs, rc)
	alter.Resources = append(alter.Resources, res)
	ar := requestTo(t, plain.node, alter).(*kmsg.IncrementalAlterConfigsResponse)
	testutil.Equal(t, ar.Resources[0].ErrorCode, int16(0), "alter configs through node %d", plain.cfg.NodeID)
	testutil.Equal(t, plain.node.admin.Image().Topics["replicated"].Configs["retention.ms"], "60000", "forwarded config applied locally")
	pid := requestTo(t, plain.node, kmsg.NewPtrInitProducerIDRequest()).(*kmsg.InitProducerIDResponse)
	testutil.True(t, pid.ErrorCode == 0 && pid.ProducerID >= 0, "producer id from a plain broker: %+v", pid)
	checkForwarding(t, plain.node)

	// Every node serves the same metadata: three brokers, every partition led, full ISR.
	var want string
	testutil.Eventually(t, 10*time.Second, func() error {
		for i, tn := range nodes {
			got, err := leaders(t, tn.node, "replicated")
			if err != nil {
				return err
			}
			if m := rawMetadata(t, tn.node, "replicated"); len(m.Brokers) != 3 || m.ControllerID != int32(ctrlID) {
				return fmt.Errorf("node %d: %d brokers, controller %d", tn.cfg.NodeID, len(m.Brokers), m.ControllerID)
			}
			if i == 0 {
				want = got
			} else if got != want {
				return fmt.Errorf("node %d sees %s, node 1 sees %s", tn.cfg.NodeID, got, want)
			}
		}
		return nil
	})

	checkAlterPartition(t, nodes, "replicated")

	// A node outside the voters finds the controller through a voter's Raft port,
	// joins the quorum as a non-voter, and serves the same metadata; what it is asked
	// to create is forwarded.
	extra := &testNode{cfg: nodeConfig(t, 4, testutil.FreeAddr(t), nodes[0].cfg.Raw["controllers"])}
	testutil.NoError(t, extra.start(t), "start broker-only node 4")
	t.Cleanup(func() { extra.node.Close() })
	ct.Topic, ct.NumPartitions, ct.ReplicationFactor = "wide", 1, 4
	create.Topics = []kmsg.CreateTopicsRequestTopic{ct}
	cr = requestTo(t, extra.node, create).(*kmsg.CreateTopicsResponse)
	testutil.Equal(t, cr.Topics[0].ErrorCode, int16(0), "create through the non-voter: %v", cr.Topics[0].ErrorMessage)
	m := rawMetadata(t, extra.node, "wide")
	testutil.True(t, len(m.Brokers) == 4 && len(m.Topics[0].Partitions[0].Replicas) == 4, "non-voter metadata: %d brokers, %+v", len(m.Brokers), m.Topics[0])
	// The node_add balancer (partition.autobalancing.mode) moves replicas onto the new
	// node meanwhile, so the two views are compared until they agree, each read again.
	testutil.Eventually(t, 10*time.Second, func() error {
		got, err := leaders(t, extra.node, "replicated")
		if err != nil {
			return fmt.Errorf("non-voter metadata: %w", err)
		}
		if want := mustLeaders(t, nodes[0].node, "replicated"); got != want {
			return fmt.Errorf("non-voter sees %s, node 1 sees %s", got, want)
		}
		return nil
	})
	testutil.NoError(t, extra.node.Close(), "close the non-voter")

	// A controlled shutdown of partition 0's leader moves its leadership to another
	// in-sync replica.
	m = rawMetadata(t, nodes[0].node, "replicated")
	leader := m.Topics[0].Partitions[0].Leader
	gone := nodes[leader-1]
	testutil.NoError(t, gone.node.Close(), "close node %d", leader)
	var rest []*testNode
	for _, tn := range nodes {
		if tn != gone {
			rest = append(rest, tn)
		}
	}
	for _, tn := range rest {
		testutil.Eventually(t, 10*time.Second, func() error {
			m := rawMetadata(t, tn.node, "replicated")
			for _, p := range m.Topics[0].Partitions {
				if p.Leader == leader || p.Leader < 0 || slices.Contains(p.ISR, leader) {
					return fmt.Errorf("node %d: partition %d leader %d isr %v after node %d stopped",
						tn.cfg.NodeID, p.Partition, p.Leader, p.ISR, leader)
				}
			}
			return nil
		})
	}
}

// requestTo sends req to n itself (not to the controller, as kadm would).
func requestTo(t *testing.T, n *Node, req kmsg.Request) kmsg.Response {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(n.KafkaAddr().String()))
	testutil.NoError(t, err, "kgo.NewClient")
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	resp, err := cl.SeedBrokers()[0].Request(ctx, req)
	testutil.NoError(t, err, "%s to node %d", kmsg.NameForKey(req.Key()), n.cfg.NodeID)
	return resp
}

func mustLeaders(t *testing.T, n *Node, topic string) string {
	t.Helper()
	got, err := leaders(t, n, topic)
	testutil.NoError(t, err, "metadata")
	return got
}

// checkAlterPartition drives AlterPartition through the controller channel of a
// partition leader that is not the active controller (the remote path), and checks
// that plain brokers answer NOT_CONTROLLER.
func checkAlterPartition(t *testing.T, nodes []*testNode, topic string) {
	t.Helper()
	ctrlID := nodes[0].node.admin.ControllerID()
	im := nodes[0].node.admin.Image()
	var tp metadata.TopicPartition
	var p metadata.Partition
	for i, q := range im.Topics[topic].Partitions {
		if q.Leader != ctrlID {
			tp, p = metadata.TopicPartition{Topic: topic, Partition: int32(i)}, q
			break
		}
	}
	ch := nodes[p.Leader-1].node.admin.Channel()
	testutil.True(t, !ch.IsLocal(), "node %d is not the controller", p.Leader)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err := ch.AlterPartition(ctx, tp, p.Leader, p.LeaderEpoch-1, p.PartitionEpoch, p.ISR)
	testutil.ErrorIs(t, err, kerr.FencedLeaderEpoch, "stale leader epoch")
	shrunk := []metadata.NodeID{p.Leader}
	got, err := ch.AlterPartition(ctx, tp, p.Leader, p.LeaderEpoch, p.PartitionEpoch, shrunk)
	testutil.NoError(t, err, "shrink the ISR of %v", tp)
	testutil.True(t, got.PartitionEpoch == p.PartitionEpoch+1 && slices.Equal(got.ISR, shrunk), "after the shrink: %+v", got)
	_, err = ch.AlterPartition(ctx, tp, p.Leader, p.LeaderEpoch, p.PartitionEpoch, shrunk)
	testutil.ErrorIs(t, err, kerr.InvalidUpdateVersion, "replayed change")
	_, err = ch.AlterPartition(ctx, tp, p.Leader, p.LeaderEpoch, got.PartitionEpoch, p.ISR)
	testutil.NoError(t, err, "expand the ISR of %v back", tp)

	req := kmsg.NewPtrAlterPartitionRequest()
	req.BrokerID, req.BrokerEpoch = int32(p.Leader), -1
	rt := kmsg.NewAlterPartitionRequestTopic()
	rt.Topic, rt.TopicID = topic, im.Topics[topic].ID
	rp := kmsg.NewAlterPartitionRequestTopicPartition()
	rp.Partition, rp.LeaderEpoch, rp.PartitionEpoch = tp.Partition, p.LeaderEpoch, p.PartitionEpoch
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp := requestTo(t, nodes[p.Leader-1].node, req).(*kmsg.AlterPartitionResponse)
	testutil.Equal(t, resp.ErrorCode, kerr.NotController.Code, "AlterPartition sent to a plain broker")
}

// crash stops tn's node without a controlled shutdown, as kill -9 would: no more
// heartbeats, no Kafka listener, no Raft.
func (tn *testNode) crash() {
	if l := tn.node.lifecycle.Swap(nil); l != nil {
		l.Stop()
	}
	// Controller first: a kill -9 takes both at once, and a controller that outlives
	// its node's listener would fence peers whose heartbeats can no longer reach it.
	tn.node.ctrl.Close()
	tn.node.kafka.Close()
}

// A crashed node that was both the active controller and a partition leader: the
// quorum elects a new controller, which fences the node once its session expired
// (the grace period) and moves its partitions to other in-sync replicas.
func TestCrashedControllerFailover(t *testing.T) {
	nodes := startCluster(t, 3)
	adm := adminOf(t, nodes[0].node)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	_, err := adm.CreateTopic(ctx, 3, 3, nil, "failover")
	testutil.NoError(t, err, "create topic")
	ctrlID := nodes[0].node.admin.ControllerID()
	victim := nodes[ctrlID-1]
	var survivor *testNode
	for _, tn := range nodes {
		if tn != victim {
			survivor = tn
		}
	}
	testutil.Eventually(t, 10*time.Second, func() error {
		got, err := leaders(t, survivor.node, "failover")
		if err == nil && !strings.Contains(got, fmt.Sprintf(":%d/", ctrlID)) {
			return fmt.Errorf("node %d leads nothing yet: %s", ctrlID, got)
		}
		return err
	})
	crashed := time.Now()
	victim.crash()
	testutil.Eventually(t, 15*time.Second, func() error {
		m := rawMetadata(t, survivor.node, "failover")
		if m.ControllerID == int32(ctrlID) || m.ControllerID < 0 {
			return fmt.Errorf("controller is still %d", m.ControllerID)
		}
		for _, p := range m.Topics[0].Partitions {
			if p.Leader == int32(ctrlID) || p.Leader < 0 || slices.Contains(p.ISR, int32(ctrlID)) {
				return fmt.Errorf("partition %d: leader %d isr %v", p.Partition, p.Leader, p.ISR)
			}
		}
		return nil
	})
	t.Logf("partitions of the crashed controller node led elsewhere after %v", time.Since(crashed))
}

// checkForwarding sends the remaining forwarded admin operations to n, a node that is
// not the controller: CreatePartitions, AlterConfigs, DeleteTopics, and an error.
func checkForwarding(t *testing.T, n *Node) {
	t.Helper()
	create := kmsg.NewPtrCreateTopicsRequest()
	for _, name := range []string{"scratch", "bad name!"} {
		ct := kmsg.NewCreateTopicsRequestTopic()
		ct.Topic, ct.NumPartitions, ct.ReplicationFactor = name, 1, 2
		create.Topics = append(create.Topics, ct)
	}
	cr := requestTo(t, n, create).(*kmsg.CreateTopicsResponse)
	testutil.Equal(t, cr.Topics[0].ErrorCode, int16(0), "create scratch")
	testutil.Equal(t, cr.Topics[1].ErrorCode, kerr.InvalidTopicException.Code, "create with a bad name")
	testutil.True(t, cr.Topics[1].ErrorMessage != nil && strings.Contains(*cr.Topics[1].ErrorMessage, "bad name!"),
		"the controller's message is kept: %v", cr.Topics[1].ErrorMessage)

	cp := kmsg.NewPtrCreatePartitionsRequest()
	cpt := kmsg.NewCreatePartitionsRequestTopic()
	cpt.Topic, cpt.Count = "scratch", 3
	cp.Topics, cp.TimeoutMillis = append(cp.Topics, cpt), 10_000
	cpr := requestTo(t, n, cp).(*kmsg.CreatePartitionsResponse)
	testutil.Equal(t, cpr.Topics[0].ErrorCode, int16(0), "create partitions")
	testutil.Equal(t, len(n.admin.Image().Topics["scratch"].Partitions), 3, "partitions applied locally")

	ac := kmsg.NewPtrAlterConfigsRequest()
	res := kmsg.NewAlterConfigsRequestResource()
	res.ResourceType, res.ResourceName = kmsg.ConfigResourceTypeTopic, "scratch"
	c := kmsg.NewAlterConfigsRequestResourceConfig()
	c.Name, c.Value = "cleanup.policy", kmsg.StringPtr("compact")
	res.Configs = append(res.Configs, c)
	ac.Resources = append(ac.Resources, res)
	acr := requestTo(t, n, ac).(*kmsg.AlterConfigsResponse)
	testutil.Equal(t, acr.Resources[0].ErrorCode, int16(0), "alter configs")
	testutil.Equal(t, n.admin.Image().Topics["scratch"].Configs["cleanup.policy"], "compact", "configs applied locally")

	dt := kmsg.NewPtrDeleteTopicsRequest()
	dtt := kmsg.NewDeleteTopicsRequestTopic()
	dtt.Topic = kmsg.StringPtr("scratch")
	dt.Topics, dt.TopicNames, dt.TimeoutMillis = append(dt.Topics, dtt), []string{"scratch"}, 10_000
	dtr := requestTo(t, n, dt).(*kmsg.DeleteTopicsResponse)
	testutil.Equal(t, dtr.Topics[0].ErrorCode, int16(0), "delete topic")
	testutil.True(t, n.admin.Image().Topics["scratch"] == nil, "deletion applied locally")
}
