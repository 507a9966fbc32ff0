package link_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/runnel-io/runnel/internal/clustertest"
	"github.com/runnel-io/runnel/internal/testutil"
)

// metricsText is node's /metrics page.
func metricsText(t *testing.T, c *clustertest.Cluster, node int) string {
	t.Helper()
	resp, err := http.Get("http://" + c.Node(node).HTTPAddr + "/metrics")
	if err != nil {
		t.Fatalf("GET /metrics of node %d: %v", node, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("GET /metrics of node %d: %v", node, err)
	}
	return string(body)
}

// linkMetrics returns runnel_link_lag_records and runnel_link_lag_seconds of
// link/topic/partition from node's /metrics; ok false when the node exports neither.
func linkMetrics(t *testing.T, c *clustertest.Cluster, node int, link, topic string, partition int32) (records, seconds float64, ok bool) {
	t.Helper()
	body := metricsText(t, c, node)
	labels := []string{`link="` + link + `"`, `topic="` + topic + `"`, fmt.Sprintf(`partition="%d"`, partition)}
	found := 0
	for _, line := range strings.Split(string(body), "\n") {
		name, rest, _ := strings.Cut(line, "{")
		if name != "runnel_link_lag_records" && name != "runnel_link_lag_seconds" {
			continue
		}
		lbl, val, _ := strings.Cut(rest, "} ")
		match := true
		for _, l := range labels {
			match = match && strings.Contains(lbl, l)
		}
		if !match {
			continue
		}
		v, err := strconv.ParseFloat(strings.TrimSpace(val), 64)
		if err != nil {
			t.Fatalf("metric line %q: %v", line, err)
		}
		if name == "runnel_link_lag_records" {
			records = v
		} else {
			seconds = v
		}
		found++
	}
	return records, seconds, found == 2
}

// TestLinkLagRisesAndReturns: the lag of a mirror partition, in records and seconds,
// in `link status --json` and on /metrics, rises while the link copies slower than the
// source is written (a throttled link), keeps rising in seconds while the source is
// unreachable (killed: the records known behind stay, the error names the failure),
// and returns to 0 in both once the source is back and the copy caught up.
func TestLinkLagRisesAndReturns(t *testing.T) {
	src, dst := startNode(t), startNode(t)
	const topic, name = "lagging", "slow"
	ctx := context.Background()
	if _, err := src.Admin(t).CreateTopic(ctx, 1, 1, nil, topic); err != nil {
		t.Fatal(err)
	}
	p := src.Client(t, kgo.ProducerBatchMaxBytes(4096), kgo.ProducerBatchCompression(kgo.NoCompression()))
	if err := p.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: []byte("first")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	// 64 KiB/s against 256 KB written at once: about 4 s behind.
	runCLI(t, "link", "create", name, "--source", src.Bootstrap(), "--throttle", "65536", "-b", dst.Bootstrap())
	caughtUp := func(end int64) func() error {
		return func() error {
			st := status(t, dst.Bootstrap(), name)
			if len(st.Partitions) != 1 {
				return fmt.Errorf("status: %+v", st.Partitions)
			}
			q := st.Partitions[0]
			if q.End != end || q.SourceEnd != end || q.LagRecords != 0 || q.LagSeconds != 0 || q.Error != "" {
				return fmt.Errorf("status: %+v, want end %d and no lag", q, end)
			}
			if r, s, ok := linkMetrics(t, dst, 1, name, topic, 0); !ok || r != 0 || s != 0 {
				return fmt.Errorf("metrics: lag %v records, %v s (exported: %v), want 0", r, s, ok)
			}
			return nil
		}
	}
	testutil.Eventually(t, 10*time.Second, caughtUp(1))

	const burst = 1000
	for i := range burst {
		p.Produce(ctx, &kgo.Record{Topic: topic, Value: fmt.Appendf(nil, "%04d-%s", i, strings.Repeat("x", 250))}, nil)
	}
	if err := p.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	// Behind: lag in records, and in seconds growing.
	var first float64
	testutil.Eventually(t, 10*time.Second, func() error {
		q := status(t, dst.Bootstrap(), name).Partitions[0]
		r, s, ok := linkMetrics(t, dst, 1, name, topic, 0)
		if q.LagRecords <= 0 || q.SourceEnd != 1+burst || q.LagSeconds <= 0 || !ok || r <= 0 || s <= 0 {
			return fmt.Errorf("status %+v, metrics %v records %v s: want both behind", q, r, s)
		}
		first = q.LagSeconds
		return nil
	})
	testutil.Eventually(t, 10*time.Second, func() error {
		if q := status(t, dst.Bootstrap(), name).Partitions[0]; q.LagSeconds < first+0.5 && q.LagRecords > 0 {
			return fmt.Errorf("lag_seconds %v, want it growing past %v", q.LagSeconds, first+0.5)
		}
		return nil
	})

	// The source goes away mid-copy: the records known behind stay, the seconds grow
	// from the last successful fetch, the error says why.
	src.Kill(1)
	var behind int64
	testutil.Eventually(t, 20*time.Second, func() error {
		q := status(t, dst.Bootstrap(), name).Partitions[0]
		r, s, ok := linkMetrics(t, dst, 1, name, topic, 0)
		if q.Error == "" || q.SourceEnd != 1+burst || q.LagRecords <= 0 || q.LagSeconds < 3 || !ok || r != float64(q.LagRecords) || s < 3 {
			return fmt.Errorf("source down: status %+v, metrics %v records %v s", q, r, s)
		}
		behind = q.LagRecords
		return nil
	})
	t.Logf("source down: %d records behind", behind)

	src.Restart(1)
	testutil.Eventually(t, 30*time.Second, caughtUp(1+burst))
}
