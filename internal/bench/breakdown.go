package bench

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"slices"
	"sort"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/runnel-io/runnel/internal/benchfmt"
)

// stageMetric is the nodes' produce latency breakdown (internal/kafka/metrics.go);
// fetchStageMetric their fetch breakdown (internal/kafka/fetch_metrics.go), reported
// as "fetch.STAGE" for consumers' fetches and "follow.STAGE" for followers'.
const (
	stageMetric      = "runnel_produce_stage_seconds"
	fetchStageMetric = "runnel_fetch_stage_seconds"
)

// produceStages is the order a produce request goes through the stages; fetchStages a
// consumer's fetch, then a follower's; stageOrder the breakdown's rows.
var (
	produceStages = []string{"read", "schedule", "order", "append", "flush", "replicate", "respond"}
	fetchStages   = []string{"fetch.read", "fetch.schedule", "fetch.wait", "fetch.wake", "fetch.collect", "fetch.serve",
		"follow.read", "follow.schedule", "follow.wait", "follow.wake", "follow.collect", "follow.serve"}
	stageOrder = append(slices.Clone(produceStages), fetchStages...)
)

// fetchStagePrefix names a fetch stage by its fetcher label.
var fetchStagePrefix = map[string]string{"consumer": "fetch.", "follower": "follow."}

// Breakdown is --breakdown: whether to report where the time went, by stage, and the
// /metrics of every node the topic lives on (an empty URL is skipped: only the
// clients' stages, e.g. against kfake).
type Breakdown struct {
	On          bool
	MetricsURLs []string
}

// stageCounts are the breakdown histograms summed over the nodes: stage -> bucket
// upper bound -> cumulative count.
type stageCounts map[string]map[float64]uint64

// snapshot reads the histograms of every node; nil when --breakdown is off.
func (b *Breakdown) snapshot(ctx context.Context) (stageCounts, error) {
	if !b.On {
		return nil, nil
	}
	out := stageCounts{}
	for _, url := range b.MetricsURLs {
		if url == "" { // --metrics-url= : the clients' stages only (e2e), e.g. against kfake
			continue
		}
		if err := scrapeStages(ctx, url, out); err != nil {
			return nil, fmt.Errorf("--breakdown: %w", err)
		}
	}
	return out, nil
}

func scrapeStages(ctx context.Context, url string, into stageCounts) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return fmt.Errorf("metrics address %q: %w", url, err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("reading %s: %w", url, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("reading %s: %s", url, resp.Status)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		return fmt.Errorf("reading %s: %w", url, err)
	}
	fam, ok := families[stageMetric]
	if !ok {
		return fmt.Errorf("%s has no %s: is it a Runnel node's /metrics?", url, stageMetric)
	}
	addStages(fam, "", into)
	if fam, ok := families[fetchStageMetric]; ok { // older nodes have no fetch breakdown
		addStages(fam, "fetcher", into)
	}
	return nil
}

// addStages adds a stage histogram family to into; with byLabel set, each stage is
// named by that label's prefix (fetchStagePrefix).
func addStages(fam *dto.MetricFamily, byLabel string, into stageCounts) {
	for _, m := range fam.GetMetric() {
		stage := labelValue(m, "stage")
		if byLabel != "" {
			stage = fetchStagePrefix[labelValue(m, byLabel)] + stage
		}
		if into[stage] == nil {
			into[stage] = map[float64]uint64{}
		}
		sawInf := false
		for _, bk := range m.GetHistogram().GetBucket() {
			into[stage][bk.GetUpperBound()] += bk.GetCumulativeCount()
			sawInf = sawInf || math.IsInf(bk.GetUpperBound(), 1)
		}
		if !sawInf { // the +Inf bucket is the sample count
			into[stage][math.Inf(1)] += m.GetHistogram().GetSampleCount()
		}
	}
}

func labelValue(m *dto.Metric, name string) string {
	for _, l := range m.GetLabel() {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}

// around runs run between two snapshots of the nodes' stage counters and returns
// the breakdown of what happened meanwhile (nil when b is off). A failed run or
// snapshot is the error, and no breakdown.
func (b *Breakdown) around(ctx context.Context, run func() error) ([]benchfmt.StageSummary, error) {
	before, err := b.snapshot(ctx)
	if err != nil {
		return nil, err
	}
	if err := run(); err != nil {
		return nil, err
	}
	after, err := b.snapshot(ctx)
	if err != nil {
		return nil, err
	}
	return summarizeStages(before, after), nil
}

// summarizeStages is the breakdown of what happened between before and after.
func summarizeStages(before, after stageCounts) []benchfmt.StageSummary {
	if after == nil {
		return nil
	}
	var out []benchfmt.StageSummary
	for _, stage := range stageOrder {
		bounds := make([]float64, 0, len(after[stage]))
		for ub := range after[stage] {
			bounds = append(bounds, ub)
		}
		sort.Float64s(bounds)
		cum := make([]uint64, len(bounds))
		for i, ub := range bounds {
			cum[i] = after[stage][ub] - before[stage][ub]
		}
		if len(cum) == 0 || cum[len(cum)-1] == 0 {
			continue
		}
		st := benchfmt.StageSummary{Stage: stage, Count: int64(cum[len(cum)-1])}
		st.P50, st.P99, st.P999 = quantile(bounds, cum, 0.5), quantile(bounds, cum, 0.99), quantile(bounds, cum, 0.999)
		top := slices.IndexFunc(cum, func(c uint64) bool { return c == cum[len(cum)-1] })
		st.Max = 1000 * bounds[min(top, len(bounds)-2)] // +Inf is no number JSON can carry
		out = append(out, st)
	}
	return out
}

// quantile is Prometheus' histogram_quantile over cumulative counts by upper bound
// (linear within a bucket), in milliseconds; a quantile in the +Inf bucket reports the
// highest finite bound.
func quantile(bounds []float64, cum []uint64, q float64) float64 {
	total := float64(cum[len(cum)-1])
	rank := q * total
	i := sort.Search(len(cum), func(i int) bool { return float64(cum[i]) >= rank })
	if i >= len(bounds) || math.IsInf(bounds[i], 1) {
		return 1000 * bounds[max(len(bounds)-2, 0)]
	}
	lower, below := 0.0, 0.0
	if i > 0 {
		lower, below = bounds[i-1], float64(cum[i-1])
	}
	in := float64(cum[i]) - below
	if in <= 0 {
		return 1000 * bounds[i]
	}
	return 1000 * (lower + (bounds[i]-lower)*(rank-below)/in)
}
