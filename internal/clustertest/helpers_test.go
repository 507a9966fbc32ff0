package clustertest_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/runnel-io/runnel/internal/clustertest"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

func TestMain(m *testing.M) { os.Exit(clustertest.Main(m)) }

// Timeouts of the scenarios. sessionTimeout matches cluster.FastFailureDetection.
const (
	sessionTimeout = 3 * time.Second
	waitTimeout    = 60 * time.Second
	startTimeout   = 30 * time.Second
	flushTimeout   = 60 * time.Second
)

// startCluster starts n nodes that notice failures within seconds.
func startCluster(t *testing.T, n int) *clustertest.Cluster {
	t.Helper()
	return clustertest.Start(t, clustertest.Options{Nodes: n, Sets: clustertest.FastFailureDetection, StartTimeout: startTimeout})
}

// topicName is a topic name unique to the test.
func topicName(t *testing.T) string {
	return strings.NewReplacer("/", "-", "_", "-").Replace(strings.ToLower(t.Name()))
}

// createTopic creates topic with min.insync.replicas=2 (1 when rf is 1), retrying
// while the metadata quorum elects, and waits until every partition has a live leader
// and a full ISR.
func createTopic(t *testing.T, c *clustertest.Cluster, topic string, partitions int32, rf int16) {
	t.Helper()
	createTopicWith(t, c, c.Admin(t), topic, partitions, rf)
}

// createTopicWith is createTopic through adm (a client on one side of a partition).
func createTopicWith(t *testing.T, c *clustertest.Cluster, adm *kadm.Client, topic string, partitions int32, rf int16) {
	t.Helper()
	minISR := fmt.Sprint(min(2, rf))
	deadline := time.Now().Add(waitTimeout)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		resp, err := adm.CreateTopic(ctx, partitions, rf, map[string]*string{"min.insync.replicas": &minISR}, topic)
		cancel()
		if err == nil {
			err = resp.Err
		}
		if err == nil || errors.Is(err, kerr.TopicAlreadyExists) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("creating topic %s (%d partitions, RF %d): %v", topic, partitions, rf, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
	for p := range partitions {
		c.WaitISR(t, topic, p, int(rf), waitTimeout)
	}
}

// waitAcks waits until h holds at least n acknowledgements.
func waitAcks(t *testing.T, h *clustertest.History, n int, what string) {
	t.Helper()
	deadline := time.Now().Add(waitTimeout)
	for h.Len() < n {
		if time.Now().After(deadline) {
			t.Fatalf("%s: only %d of %d records acknowledged after %v (failures: %s)", what, h.Len(), n, waitTimeout, h.Failures())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// isrTimeout bounds the wait for a restarted replica to catch up and rejoin the ISR.
const isrTimeout = 30 * time.Second

// waitAllISR waits for an ISR of n on every partition. On failure it reports the error
// and returns false without stopping the test, so that the test can still check its
// history before it ends.
func waitAllISR(t *testing.T, c *clustertest.Cluster, topic string, partitions int32, n int) bool {
	t.Helper()
	for p := range partitions {
		if _, err := c.AwaitISR(topic, p, n, isrTimeout); err != nil {
			t.Errorf("ISR never back to %d members: %v", n, err)
			return false
		}
	}
	return true
}

// stopLoad stops l and fails the test if records were still pending after flushTimeout.
func stopLoad(t *testing.T, l *clustertest.Load, h *clustertest.History) {
	t.Helper()
	if err := l.Stop(flushTimeout); err != nil {
		t.Errorf("records still unacknowledged %v after the load stopped: %v", flushTimeout, err)
	}
	stall, p := l.MaxStall()
	t.Logf("load: %d acknowledged, %d skipped on a full buffer, max stall %v (partition %d); failures: %s",
		h.Len(), l.Skipped(), stall.Round(time.Millisecond), p, h.Failures())
}

// produceSync produces one record of h to topic-partition with cl and records the
// outcome in h.
func produceSync(ctx context.Context, cl *kgo.Client, h *clustertest.History, topic string, p int32) error {
	r := &kgo.Record{Topic: topic, Partition: p, Value: h.NextValue(p)}
	err := cl.ProduceSync(ctx, r).FirstErr()
	h.Record(r, err)
	return err
}

// otherReplica returns a replica of replicas that is not leader.
func otherReplica(t *testing.T, replicas []int32, leader int32) int32 {
	t.Helper()
	for _, r := range replicas {
		if r != leader {
			return r
		}
	}
	t.Fatalf("no replica other than %d in %v", leader, replicas)
	return 0
}

func skipIfShort(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-node fault scenario; skipped with -short")
	}
}

func ms(d time.Duration) string { return fmt.Sprint(d.Milliseconds()) }
