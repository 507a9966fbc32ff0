package server_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/runnel-io/runnel/internal/testutil"
)

// scrapeSums sums, over the /metrics of nodes, each series whose line starts with
// one of prefixes (a metric name with its labels up to the value).
func scrapeSums(t *testing.T, nodes []*testNode, prefixes ...string) map[string]float64 {
	t.Helper()
	out := map[string]float64{}
	for _, tn := range nodes {
		resp, err := http.Get("http://" + tn.server().HTTPAddr().String() + "/metrics")
		testutil.NoError(t, err, "GET node %d's /metrics", tn.id)
		b, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		testutil.NoError(t, err, "read node %d's /metrics", tn.id)
		for _, line := range strings.Split(string(b), "\n") {
			for _, p := range prefixes {
				if v, ok := strings.CutPrefix(line, p+" "); ok {
					f, err := strconv.ParseFloat(v, 64)
					testutil.NoError(t, err, "node %d: %s", tn.id, line)
					out[p] += f
				}
			}
		}
	}
	return out
}

// runnel_topic_bytes_out_total{topic} counts what consumers read of each topic, on
// the node that sent it, and not what followers replicate: on three nodes, a topic
// replicated three times but never consumed has no series; one read once by a
// consumer adds up, over the nodes, to every byte runnel_consumer_fetch_bytes_total
// counted.
func TestTopicBytesOut(t *testing.T) {
	nodes := startCluster(t, 3)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cl := nodes[0].c.Client(t, kgo.RequiredAcks(kgo.AllISRAcks()), kgo.RetryTimeout(20*time.Second))
	adm := kadm.NewClient(cl)
	for _, topic := range []string{"replicated-only", "read"} {
		_, err := adm.CreateTopic(ctx, 2, 3, nil, topic)
		testutil.NoError(t, err, "create %s", topic)
	}
	const n = 200
	for _, topic := range []string{"replicated-only", "read"} {
		for i := range n {
			testutil.NoError(t, cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: []byte(strings.Repeat("v", 100) + strconv.Itoa(i))}).FirstErr(), "produce to %s", topic)
		}
	}
	cons := nodes[0].c.Client(t, kgo.ConsumeTopics("read"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	got := 0
	for got < n {
		fs := cons.PollFetches(ctx)
		testutil.NoError(t, fs.Err0(), "consume read")
		got += fs.NumRecords()
	}
	cons.Close() // no fetch after the counts are read

	const read, replicatedOnly = `runnel_topic_bytes_out_total{topic="read"}`, `runnel_topic_bytes_out_total{topic="replicated-only"}`
	leader, follower := `runnel_consumer_fetch_bytes_total{replica="leader"}`, `runnel_consumer_fetch_bytes_total{replica="follower"}`
	sums := scrapeSums(t, nodes, read, replicatedOnly, leader, follower)
	testutil.True(t, sums[read] > 0, "bytes out of read: %v, want the batches the consumer read", sums[read])
	testutil.Equal(t, fmt.Sprint(sums[read]), fmt.Sprint(sums[leader]+sums[follower]), "bytes out of read against runnel_consumer_fetch_bytes_total")
	_, ok := sums[replicatedOnly]
	testutil.True(t, !ok, "replicated-only, never consumed, has bytes out %v: the followers' fetches were counted", sums[replicatedOnly])
}
