package bench

import (
	"bytes"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/runnel-io/runnel/client"
	"github.com/runnel-io/runnel/internal/benchfmt"
	"github.com/runnel-io/runnel/internal/clustertest"
	"github.com/runnel-io/runnel/internal/testutil"
)

// TestTimelineAttribution: a record's time is split at its acknowledgement and its
// buffering, and the consumer's fetch at the acknowledgement is found: in flight, or
// not, with the next one.
func TestTimelineAttribution(t *testing.T) {
	tl := newE2ETimeline(1, 200)
	ms := int64(time.Millisecond)
	base := time.Now().UnixNano()
	// Fetches to broker 1: [0, 2] ms, then none in flight until [30, 31].
	tl.OnBrokerE2E(kgo.BrokerMetadata{NodeID: 1}, 1, kgo.BrokerE2E{ReadWait: 2 * time.Millisecond})
	tl.fetches[0].start, tl.fetches[0].end = base, base+2*ms
	tl.fetches = append(tl.fetches, fetchSpan{broker: 1, start: base + 30*ms, end: base + 31*ms, gap: 28 * ms})
	for seq := range 150 {
		v := make([]byte, benchfmt.HeaderSize)
		benchfmt.PutHeader(v, 0, uint64(seq), base)
		r := &kgo.Record{Value: v, Partition: 0, Offset: int64(seq)}
		ack := base + 1*ms
		buf, polled := base+2*ms, base+2*ms+ms/10
		if seq == 149 { // the outlier: acknowledged between fetches
			ack, buf, polled = base+5*ms, base+31*ms, base+32*ms
		}
		tl.buffered[recordKey{0, int64(seq)}] = buf
		tl.polled(r, polled) // before its ack is seen: resolve fills it in
		tl.acked(r, ack)
	}
	tl.resolve()
	got := map[string]benchfmt.StageSummary{}
	for _, st := range tl.stages() {
		got[st.Stage] = st
	}
	if p := got["client.produce"]; p.Count != 150 || p.P50 < 0.99 || p.P50 > 1.01 || p.Max < 4.99 {
		t.Errorf("client.produce %+v: want 150 records, p50 1 ms, max 5 ms", p)
	}
	if a := got["client.ack2buf"]; a.P50 < 0.99 || a.P50 > 1.01 || a.Max < 25.9 {
		t.Errorf("client.ack2buf %+v: want p50 1 ms, max 26 ms", a)
	}
	if g := got["client.fetchgap"]; g.Count != 2 || g.Max < 27.9 {
		t.Errorf("client.fetchgap %+v: want 2 fetches, the longest gap 28 ms", g)
	}
	if in, since := tl.fetchAt(base + 1*ms); !in || since != 1*ms {
		t.Errorf("at 1 ms: in flight %v since %v, want in flight for 1 ms", in, since)
	}
	if in, since := tl.fetchAt(base + 5*ms); in || since != 3*ms {
		t.Errorf("at 5 ms: in flight %v, %v after the last response, want none for 3 ms", in, since)
	}
	if s, e, ok := tl.nextFetch(base + 5*ms); !ok || s != base+30*ms || e != base+31*ms {
		t.Errorf("next fetch after 5 ms: %v %v %v", s-base, e-base, ok)
	}
	var out bytes.Buffer
	tl.writeOutliers(&out, 1)
	if !strings.Contains(out.String(), "none in flight, previous response read 3.00 ms before; next fetch sent +25.00 ms") {
		t.Errorf("outliers:\n%s", out.String())
	}
}

// TestBenchE2EBreakdown: E2E with a breakdown against a real node reports the clients'
// stages of every record and, when the node serves them, its fetch stages; each
// client stage's median stays within the end-to-end p99.
func TestBenchE2EBreakdown(t *testing.T) {
	httpAddr := testutil.FreeAddr(t)
	bs := clustertest.StartOne(t, "http.listen="+httpAddr)
	url := "http://" + httpAddr + "/metrics"
	cfg := testConfig(t, bs, 1)
	cfg.Rate, cfg.Duration = 2000, time.Second
	cfg.Overload = append(cfg.Overload, client.WithRate(cfg.ProducerRate()))
	cfg.Breakdown = Breakdown{On: true, MetricsURLs: []string{url}}
	rep := runJSON(t, E2E, cfg)
	if rep.EndToEnd == nil || rep.EndToEnd.Count < 1900 {
		t.Fatalf("e2e report %+v", rep)
	}
	got := map[string]benchfmt.StageSummary{}
	for _, st := range rep.Breakdown {
		got[st.Stage] = st
	}
	for _, stage := range []string{"client.produce", "client.ack2buf", "client.buf2poll", "client.fetchgap"} {
		st, ok := got[stage]
		if !ok {
			t.Errorf("stage %s missing from %+v", stage, rep.Breakdown)
			continue
		}
		if stage != "client.fetchgap" && st.Count != rep.EndToEnd.Count {
			t.Errorf("stage %s counted %d records, e2e %d", stage, st.Count, rep.EndToEnd.Count)
		}
		if st.P50 > rep.EndToEnd.P99+0.01 {
			t.Errorf("stage %s median %.3f ms above the e2e p99 %.3f", stage, st.P50, rep.EndToEnd.P99)
		}
	}
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	var body bytes.Buffer
	_, _ = body.ReadFrom(resp.Body)
	resp.Body.Close()
	if !strings.Contains(body.String(), fetchStageMetric) {
		t.Fatalf("the node serves no %s on /metrics", fetchStageMetric)
	}
	// One consumer fetching one partition: each fetch is read, scheduled and collected
	// once; a fetch woken by data is also woken and served once. The consumer keeps one
	// fetch in flight, which either snapshot may catch between its read and its
	// collect: the counts differ by at most one.
	fetches := got["fetch.read"].Count
	for _, stage := range []string{"fetch.schedule", "fetch.collect"} {
		if d := got[stage].Count - fetches; d < -1 || d > 1 || fetches == 0 {
			t.Errorf("stage %s counted %d fetches, fetch.read %d", stage, got[stage].Count, fetches)
		}
	}
	if w, s := got["fetch.wake"].Count, got["fetch.serve"].Count; w == 0 || s == 0 || s > w || w > fetches {
		t.Errorf("fetch.wake %d, fetch.serve %d, of %d fetches", w, s, fetches)
	}
}
