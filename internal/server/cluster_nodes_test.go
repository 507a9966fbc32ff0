package server_test

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/runnel-io/runnel/internal/clustertest"
	"github.com/runnel-io/runnel/internal/config"
	"github.com/runnel-io/runnel/internal/server"
	"github.com/runnel-io/runnel/internal/testutil"
)

// The multi-node tests of the server run their nodes with internal/clustertest's
// in-process mode (the same server.Start on loopback sockets); the helpers below
// only name a cluster's nodes the way these tests use them.

// fastLiveness are timeouts that keep cluster tests quick.
var fastLiveness = []string{"broker.heartbeat.interval.ms=100", "broker.session.timeout.ms=1500"}

// testNode is node id of a cluster, or a node started on its own (own).
type testNode struct {
	c   *clustertest.Cluster
	id  int32
	own *server.Node
}

// startCluster starts n in-process voters with fastLiveness and sets, and returns
// them in node id order.
func startCluster(t *testing.T, n int, sets ...string) []*testNode {
	t.Helper()
	c := clustertest.Start(t, clustertest.Options{Nodes: n, InProcess: true, StartTimeout: 30 * time.Second,
		Sets: append(append([]string{}, fastLiveness...), sets...)})
	nodes := make([]*testNode, n)
	for i := range nodes {
		nodes[i] = &testNode{c: c, id: int32(i + 1)}
	}
	return nodes
}

// addr is the node's Kafka address.
func (tn *testNode) addr() string {
	if tn.own != nil {
		return tn.own.KafkaAddr().String()
	}
	return tn.c.Node(int(tn.id)).KafkaAddr
}

// server is the node's running server.Node.
func (tn *testNode) server() *server.Node {
	if tn.own != nil {
		return tn.own
	}
	return tn.c.Server(int(tn.id))
}

// kill stops the node as kill -9 would (server.Node.Abort): no controlled shutdown.
func (tn *testNode) kill() { tn.c.Kill(int(tn.id)) }

// stop is a controlled shutdown.
func (tn *testNode) stop() error { return tn.c.Stop(int(tn.id)) }

// ownConfig is the configuration of a node started on its own (startOwn): node id,
// loopback ports, its own data directory, fastLiveness, then sets. Without a
// "controllers=" among sets it is a lone node, its own only voter.
func ownConfig(t *testing.T, id int, sets ...string) *config.Broker {
	t.Helper()
	cfg := config.Default()
	props := []string{fmt.Sprintf("node.id=%d", id), "listen=127.0.0.1:0", "http.listen=127.0.0.1:0",
		"controller.listen=" + testutil.FreeAddr(t), "log.dirs=" + t.TempDir()}
	for _, s := range append(append(props, fastLiveness...), sets...) {
		k, v, _ := strings.Cut(s, "=")
		testutil.NoError(t, cfg.Set(k, v), "config.Set(%q)", s)
	}
	return cfg
}

// startOwn starts a node of cfg with server.Start, for the tests whose subject is the
// start itself (a configuration as the binary reads it, what start-up logs) or a node
// outside a cluster's voters. Its log is returned and printed if the test fails; the
// node is closed when the test ends.
func startOwn(t *testing.T, cfg *config.Broker) (*testNode, *clustertest.LockedBuffer) {
	t.Helper()
	logs := &clustertest.LockedBuffer{}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	n, err := server.Start(ctx, cfg, server.Options{Logger: slog.New(slog.NewTextHandler(logs, nil))})
	t.Cleanup(func() {
		if n != nil {
			n.Close()
		}
		if t.Failed() {
			t.Logf("node %d log:\n%s", cfg.NodeID, logs)
		}
	})
	testutil.NoError(t, err, "start node %d", cfg.NodeID)
	return &testNode{id: cfg.NodeID, own: n}, logs
}

func adminOf(t *testing.T, tn *testNode) *kadm.Client {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(tn.addr()), kgo.RetryTimeout(10*time.Second))
	testutil.NoError(t, err, "kgo.NewClient")
	t.Cleanup(cl.Close)
	return kadm.NewClient(cl)
}

// rawMetadata asks tn itself (not the cluster) for a topic's metadata.
func rawMetadata(t *testing.T, tn *testNode, topic string) *kmsg.MetadataResponse {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(tn.addr()))
	testutil.NoError(t, err, "kgo.NewClient")
	defer cl.Close()
	req := kmsg.NewPtrMetadataRequest()
	rt := kmsg.NewMetadataRequestTopic()
	rt.Topic = kmsg.StringPtr(topic)
	req.Topics = append(req.Topics, rt)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	resp, err := cl.SeedBrokers()[0].Request(ctx, req)
	testutil.NoError(t, err, "metadata from node %d", tn.id)
	return resp.(*kmsg.MetadataResponse)
}

// leaders describes a topic's partitions as node tn sees them: "p0:leader/isr ...".
func leaders(t *testing.T, tn *testNode, topic string) (string, error) {
	m := rawMetadata(t, tn, topic)
	if len(m.Topics) != 1 || m.Topics[0].ErrorCode != 0 {
		return "", fmt.Errorf("node %d: topic %s not in metadata: %+v", tn.id, topic, m.Topics)
	}
	var b strings.Builder
	for _, p := range m.Topics[0].Partitions {
		fmt.Fprintf(&b, "p%d:%d/%v ", p.Partition, p.Leader, p.ISR)
	}
	return b.String(), nil
}

func mustLeaders(t *testing.T, tn *testNode, topic string) string {
	t.Helper()
	got, err := leaders(t, tn, topic)
	testutil.NoError(t, err, "metadata")
	return got
}

// requestTo sends req to tn itself (not to the controller, as kadm would).
func requestTo(t *testing.T, tn *testNode, req kmsg.Request) kmsg.Response {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(tn.addr()))
	testutil.NoError(t, err, "kgo.NewClient")
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	resp, err := cl.SeedBrokers()[0].Request(ctx, req)
	testutil.NoError(t, err, "%s to node %d", kmsg.NameForKey(req.Key()), tn.id)
	return resp
}
