package bench

import (
	"bytes"
	"context"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/runnel-io/runnel/internal/clustertest"
	"github.com/runnel-io/runnel/internal/testutil"
)

// TestBenchBreakdown: Produce with a breakdown against a real node reports every stage
// a produce with acks=all passes through, each counted once per request, and the stages
// add up to no more than what the producer measured.
func TestBenchBreakdown(t *testing.T) {
	httpAddr := testutil.FreeAddr(t)
	bs := clustertest.StartOne(t, "http.listen="+httpAddr)
	url := "http://" + httpAddr + "/metrics"
	cfg := testConfig(t, bs, 1)
	cfg.Records, cfg.Breakdown = 20000, Breakdown{On: true, MetricsURLs: []string{url}}
	rep := runJSON(t, Produce, cfg)
	if rep.Records != 20000 {
		t.Fatalf("produce report %+v", rep)
	}
	got := map[string]bool{}
	var requests int64
	for _, st := range rep.Breakdown {
		got[st.Stage] = true
		if st.Stage == "read" {
			requests = st.Count
		}
		if st.P50 < 0 || st.P50 > st.P99 || st.P99 > st.P999 || st.P999 > st.Max*1.0001 {
			t.Errorf("stage %s: percentiles out of order: %+v", st.Stage, st)
		}
	}
	for _, stage := range produceStages {
		if !got[stage] {
			t.Errorf("stage %s missing from the breakdown %+v", stage, rep.Breakdown)
		}
	}
	// One partition, so every stage sees each produce request once.
	for _, st := range rep.Breakdown {
		if !slices.Contains(produceStages, st.Stage) {
			continue // the fetch stages, when the node serves them: nothing consumes here
		}
		if st.Count != requests {
			t.Errorf("stage %s counted %d requests, read counted %d", st.Stage, st.Count, requests)
		}
	}
	if requests == 0 || requests > 20000 {
		t.Errorf("%d produce requests for 20000 records", requests)
	}
	var medians float64
	for _, st := range rep.Breakdown {
		if slices.Contains(produceStages, st.Stage) {
			medians += st.P50
		}
	}
	if rep.Produce == nil || medians > 4*rep.Produce.P99+1 {
		t.Errorf("stage medians add up to %.3f ms, far above the producer's p99 %+v", medians, rep.Produce)
	}

	// The text form prints the table.
	var out bytes.Buffer
	cfg.Records, cfg.Out = 1000, &out
	if err := Produce(context.Background(), cfg); err != nil || !strings.Contains(out.String(), "produce breakdown on the nodes") || !strings.Contains(out.String(), "replicate") {
		t.Fatalf("text report: %v, %q", err, out.String())
	}
	// A wrong address fails before producing, naming it.
	cfg.Records, cfg.Breakdown.MetricsURLs = 10, []string{"http://" + httpAddr + "/nope"}
	if err := Produce(context.Background(), cfg); err == nil || !strings.Contains(err.Error(), "/nope") {
		t.Fatalf("a wrong metrics URL: %v", err)
	}
}

// TestStageQuantile: histogram_quantile over cumulative buckets, linear within one.
func TestStageQuantile(t *testing.T) {
	bounds := []float64{0.001, 0.002, 0.004, math.Inf(1)}
	cum := []uint64{50, 90, 100, 100}
	for _, tc := range []struct{ q, want float64 }{
		{0.5, 1},   // the 50th of 100 ends the first bucket
		{0.7, 1.5}, // half-way through the second
		{0.95, 3},  // half-way through the third
		{0.999, 3.98},
	} {
		if got := quantile(bounds, cum, tc.q); math.Abs(got-tc.want) > 1e-9 {
			t.Errorf("q%.3f = %.4f ms, want %.4f", tc.q, got, tc.want)
		}
	}
	// Samples above the last finite bound report that bound.
	if got := quantile(bounds, []uint64{0, 0, 0, 10}, 0.5); got != 4 {
		t.Errorf("all in +Inf: %v ms, want 4", got)
	}
}
