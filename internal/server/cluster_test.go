package server_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/runnel-io/runnel/internal/controlplane"
	"github.com/runnel-io/runnel/internal/metadata"
	"github.com/runnel-io/runnel/internal/server"
	"github.com/runnel-io/runnel/internal/testutil"
)

// nodeAdmin is tn's controlplane.Admin (server.AdminOf), for the checks of what the
// node holds inside.
func nodeAdmin(tn *testNode) *controlplane.Admin { return server.AdminOf(tn.server()) }

// startNonVoter starts node id outside the cluster of nodes, a broker that is not
// among the voters (cluster.AddNode needs process nodes).
func startNonVoter(t *testing.T, nodes []*testNode, id int) *testNode {
	t.Helper()
	var voters []string
	for _, tn := range nodes {
		voters = append(voters, fmt.Sprintf("%d@%s", tn.id, tn.c.Node(int(tn.id)).ControllerAddr))
	}
	tn, _ := startOwn(t, ownConfig(t, id, "controllers="+strings.Join(voters, ",")))
	return tn
}

func TestSingleNodeRestart(t *testing.T) {
	tn := startCluster(t, 1)[0]
	adm := adminOf(t, tn)
	_, err := adm.CreateTopic(context.Background(), 2, 1, nil, "solo")
	testutil.NoError(t, err, "create topic")
	began := time.Now()
	testutil.NoError(t, tn.stop(), "close")
	testutil.True(t, time.Since(began) < 5*time.Second, "a lone node took %v to stop", time.Since(began))

	tn.c.Restart(int(tn.id))
	testutil.Eventually(t, 10*time.Second, func() error {
		got, err := leaders(t, tn, "solo")
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
	ctrlID := nodeAdmin(nodes[0]).ControllerID()
	var plain *testNode // a node that is not the active controller
	for _, tn := range nodes {
		if nodeAdmin(tn).ControllerID() != ctrlID {
			t.Fatalf("nodes disagree on the controller")
		}
		if tn.id != int32(ctrlID) && plain == nil {
			plain = tn
		}
	}

	// Admin operations sent to a plain broker are forwarded to the controller, and
	// answered once the plain broker has applied them.
	create := kmsg.NewPtrCreateTopicsRequest()
	ct := kmsg.NewCreateTopicsRequestTopic()
	ct.Topic, ct.NumPartitions, ct.ReplicationFactor = "replicated", 3, 3
	create.Topics, create.TimeoutMillis = append(create.Topics, ct), 10_000
	cr := requestTo(t, plain, create).(*kmsg.CreateTopicsResponse)
	testutil.Equal(t, cr.Topics[0].ErrorCode, int16(0), "create topic through node %d: %v", plain.id, cr.Topics[0].ErrorMessage)
	testutil.True(t, server.ImageOf(plain.server()).Topics["replicated"] != nil, "forwarded creation applied locally")
	alter := kmsg.NewPtrIncrementalAlterConfigsRequest()
	res := kmsg.NewIncrementalAlterConfigsRequestResource()
	res.ResourceType, res.ResourceName = kmsg.ConfigResourceTypeTopic, "replicated"
	rc := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
	rc.Name, rc.Value = "retention.ms", kmsg.StringPtr("60000")
	res.Configs = append(res.Configs, rc)
	alter.Resources = append(alter.Resources, res)
	ar := requestTo(t, plain, alter).(*kmsg.IncrementalAlterConfigsResponse)
	testutil.Equal(t, ar.Resources[0].ErrorCode, int16(0), "alter configs through node %d", plain.id)
	testutil.Equal(t, server.ImageOf(plain.server()).Topics["replicated"].Configs["retention.ms"], "60000", "forwarded config applied locally")
	pid := requestTo(t, plain, kmsg.NewPtrInitProducerIDRequest()).(*kmsg.InitProducerIDResponse)
	testutil.True(t, pid.ErrorCode == 0 && pid.ProducerID >= 0, "producer id from a plain broker: %+v", pid)
	checkForwarding(t, plain)

	// Every node serves the same metadata: three brokers, every partition led, full ISR.
	var want string
	testutil.Eventually(t, 10*time.Second, func() error {
		for i, tn := range nodes {
			got, err := leaders(t, tn, "replicated")
			if err != nil {
				return err
			}
			if m := rawMetadata(t, tn, "replicated"); len(m.Brokers) != 3 || m.ControllerID != int32(ctrlID) {
				return fmt.Errorf("node %d: %d brokers, controller %d", tn.id, len(m.Brokers), m.ControllerID)
			}
			if i == 0 {
				want = got
			} else if got != want {
				return fmt.Errorf("node %d sees %s, node 1 sees %s", tn.id, got, want)
			}
		}
		return nil
	})

	checkAlterPartition(t, nodes, "replicated")

	// A node outside the voters finds the controller through a voter's Raft port,
	// joins the quorum as a non-voter, and serves the same metadata; what it is asked
	// to create is forwarded.
	extra := startNonVoter(t, nodes, 4)
	ct.Topic, ct.NumPartitions, ct.ReplicationFactor = "wide", 1, 4
	create.Topics = []kmsg.CreateTopicsRequestTopic{ct}
	cr = requestTo(t, extra, create).(*kmsg.CreateTopicsResponse)
	testutil.Equal(t, cr.Topics[0].ErrorCode, int16(0), "create through the non-voter: %v", cr.Topics[0].ErrorMessage)
	m := rawMetadata(t, extra, "wide")
	testutil.True(t, len(m.Brokers) == 4 && len(m.Topics[0].Partitions[0].Replicas) == 4, "non-voter metadata: %d brokers, %+v", len(m.Brokers), m.Topics[0])
	// The node_add balancer (partition.autobalancing.mode) moves replicas onto the new
	// node meanwhile, so the two views are compared until they agree, each read again.
	testutil.Eventually(t, 10*time.Second, func() error {
		got, err := leaders(t, extra, "replicated")
		if err != nil {
			return fmt.Errorf("non-voter metadata: %w", err)
		}
		if want := mustLeaders(t, nodes[0], "replicated"); got != want {
			return fmt.Errorf("non-voter sees %s, node 1 sees %s", got, want)
		}
		return nil
	})
	testutil.NoError(t, extra.own.Close(), "close the non-voter")

	// A controlled shutdown of partition 0's leader moves its leadership to another
	// in-sync replica.
	m = rawMetadata(t, nodes[0], "replicated")
	leader := m.Topics[0].Partitions[0].Leader
	gone := nodes[leader-1]
	testutil.NoError(t, gone.stop(), "close node %d", leader)
	var rest []*testNode
	for _, tn := range nodes {
		if tn != gone {
			rest = append(rest, tn)
		}
	}
	for _, tn := range rest {
		testutil.Eventually(t, 10*time.Second, func() error {
			m := rawMetadata(t, tn, "replicated")
			for _, p := range m.Topics[0].Partitions {
				if p.Leader == leader || p.Leader < 0 || slices.Contains(p.ISR, leader) {
					return fmt.Errorf("node %d: partition %d leader %d isr %v after node %d stopped",
						tn.id, p.Partition, p.Leader, p.ISR, leader)
				}
			}
			return nil
		})
	}
}

// checkAlterPartition drives AlterPartition through the controller channel of a
// partition leader that is not the active controller (the remote path), and checks
// that plain brokers answer NOT_CONTROLLER.
func checkAlterPartition(t *testing.T, nodes []*testNode, topic string) {
	t.Helper()
	ctrlID := nodeAdmin(nodes[0]).ControllerID()
	im := server.ImageOf(nodes[0].server())
	var tp metadata.TopicPartition
	var p metadata.Partition
	for i, q := range im.Topics[topic].Partitions {
		if q.Leader != ctrlID {
			tp, p = metadata.TopicPartition{Topic: topic, Partition: int32(i)}, q
			break
		}
	}
	ch := nodeAdmin(nodes[p.Leader-1]).Channel()
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
	resp := requestTo(t, nodes[p.Leader-1], req).(*kmsg.AlterPartitionResponse)
	testutil.Equal(t, resp.ErrorCode, kerr.NotController.Code, "AlterPartition sent to a plain broker")
}

// A crashed node that was both the active controller and a partition leader: the
// quorum elects a new controller, which fences the node once its session expired
// (the grace period) and moves its partitions to other in-sync replicas.
func TestCrashedControllerFailover(t *testing.T) {
	nodes := startCluster(t, 3)
	adm := adminOf(t, nodes[0])
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	_, err := adm.CreateTopic(ctx, 3, 3, nil, "failover")
	testutil.NoError(t, err, "create topic")
	ctrlID := nodeAdmin(nodes[0]).ControllerID()
	victim := nodes[ctrlID-1]
	var survivor *testNode
	for _, tn := range nodes {
		if tn != victim {
			survivor = tn
		}
	}
	testutil.Eventually(t, 10*time.Second, func() error {
		got, err := leaders(t, survivor, "failover")
		if err == nil && !strings.Contains(got, fmt.Sprintf(":%d/", ctrlID)) {
			return fmt.Errorf("node %d leads nothing yet: %s", ctrlID, got)
		}
		return err
	})
	crashed := time.Now()
	victim.kill()
	testutil.Eventually(t, 15*time.Second, func() error {
		m := rawMetadata(t, survivor, "failover")
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
func checkForwarding(t *testing.T, n *testNode) {
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
	testutil.Equal(t, len(server.ImageOf(n.server()).Topics["scratch"].Partitions), 3, "partitions applied locally")

	ac := kmsg.NewPtrAlterConfigsRequest()
	res := kmsg.NewAlterConfigsRequestResource()
	res.ResourceType, res.ResourceName = kmsg.ConfigResourceTypeTopic, "scratch"
	c := kmsg.NewAlterConfigsRequestResourceConfig()
	c.Name, c.Value = "cleanup.policy", kmsg.StringPtr("compact")
	res.Configs = append(res.Configs, c)
	ac.Resources = append(ac.Resources, res)
	acr := requestTo(t, n, ac).(*kmsg.AlterConfigsResponse)
	testutil.Equal(t, acr.Resources[0].ErrorCode, int16(0), "alter configs")
	testutil.Equal(t, server.ImageOf(n.server()).Topics["scratch"].Configs["cleanup.policy"], "compact", "configs applied locally")

	dt := kmsg.NewPtrDeleteTopicsRequest()
	dtt := kmsg.NewDeleteTopicsRequestTopic()
	dtt.Topic = kmsg.StringPtr("scratch")
	dt.Topics, dt.TopicNames, dt.TimeoutMillis = append(dt.Topics, dtt), []string{"scratch"}, 10_000
	dtr := requestTo(t, n, dt).(*kmsg.DeleteTopicsResponse)
	testutil.Equal(t, dtr.Topics[0].ErrorCode, int16(0), "delete topic")
	testutil.True(t, server.ImageOf(n.server()).Topics["scratch"] == nil, "deletion applied locally")
}
