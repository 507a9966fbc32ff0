package interop_test

import (
	"context"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/runnel-io/runnel/internal/testutil"
)

// TestConsumerGroupLagMetric: runnel_consumer_group_lag{group,topic,partition} on the
// group's coordinator equals kadm's lag for a group that stopped consuming while
// records kept coming, and follows the new records; runnel_at_min_isr_partitions and
// runnel_offline_partitions are exported (INTERFACE.md's metrics).
func TestConsumerGroupLagMetric(t *testing.T) {
	n := startNode(t)
	addr := bootstrap(n)
	adm := newAdmin(t, addr)
	topic := topicName(t)
	createTopic(t, adm, topic, 1)
	cl := newClient(t, addr, kgo.DefaultProduceTopic(topic))
	produce := func(count int) {
		t.Helper()
		for i := range count {
			cl.Produce(context.Background(), &kgo.Record{Value: []byte(fmt.Sprint(i))}, nil)
		}
		testutil.NoError(t, cl.Flush(ctxT(t)), "produce")
	}
	produce(100)
	group := topic + "-g"
	offs := kadm.Offsets{}
	offs.Add(kadm.Offset{Topic: topic, Partition: 0, At: 40, LeaderEpoch: -1})
	resps, err := adm.CommitOffsets(ctxT(t), group, offs)
	testutil.NoError(t, err, "commit")
	testutil.NoError(t, resps.Error(), "commit")

	series := regexp.MustCompile(`runnel_consumer_group_lag\{group="` + regexp.QuoteMeta(group) + `",partition="0",topic="` + regexp.QuoteMeta(topic) + `"\} (\S+)`)
	lagMetric := func() (int64, string) {
		code, body, err := httpGet(n.HTTPAddr().String() + "/metrics")
		if err != nil || code != 200 {
			t.Fatalf("GET /metrics: %d %v", code, err)
		}
		m := series.FindStringSubmatch(body)
		if m == nil {
			return -1, body
		}
		v, err := strconv.ParseFloat(m[1], 64)
		if err != nil {
			t.Fatalf("runnel_consumer_group_lag of group %s on %s-0 is %q: %v", group, topic, m[1], err)
		}
		return int64(v), body
	}
	kadmLag := func() int64 {
		lags, err := adm.Lag(ctxT(t), group)
		testutil.NoError(t, err, "kadm lag")
		return lags[group].Lag.TotalByTopic()[topic].Lag
	}
	got, body := lagMetric()
	if want := kadmLag(); got != want || want != 60 {
		t.Fatalf("runnel_consumer_group_lag = %d, kadm's lag %d, want 60:\n%s", got, want, grepLines(body, "runnel_consumer_group_lag"))
	}
	// One node leads every partition with an ISR of one, which is min.insync.replicas
	// (1): all are at min ISR, none offline, and this node is the active controller.
	gauge := func(name string) float64 {
		m := regexp.MustCompile(`(?m)^` + name + ` (\S+)$`).FindStringSubmatch(body)
		if m == nil {
			t.Fatalf("/metrics has no %s", name)
		}
		v, err := strconv.ParseFloat(m[1], 64)
		if err != nil {
			t.Fatalf("%s is %q: %v", name, m[1], err)
		}
		return v
	}
	if v := gauge("runnel_at_min_isr_partitions"); v < 1 {
		t.Errorf("runnel_at_min_isr_partitions = %v, want every partition (at least %s-0)", v, topic)
	}
	if v := gauge("runnel_offline_partitions"); v != 0 {
		t.Errorf("runnel_offline_partitions = %v on a node leading every partition", v)
	}
	// The group stopped; records keep coming: the lag follows (the metric is
	// recomputed at most every 5 s).
	produce(50)
	want := kadmLag()
	deadline := time.Now().Add(15 * time.Second)
	for {
		got, body = lagMetric()
		if got == want {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("runnel_consumer_group_lag = %d after 50 more records, kadm's lag %d:\n%s", got, want, grepLines(body, "runnel_consumer_group_lag"))
		}
		time.Sleep(500 * time.Millisecond)
	}
	if want != 110 {
		t.Fatalf("kadm's lag %d, want 110", want)
	}
}

// grepLines returns the lines of s that contain sub.
func grepLines(s, sub string) string {
	var out strings.Builder
	for l := range strings.Lines(s) {
		if strings.Contains(l, sub) {
			out.WriteString(l)
		}
	}
	return out.String()
}
