package kafka

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// stageRecorder observes one request's latency breakdown into its API's stage
// histogram: runnel_produce_stage_seconds (S is ProduceStage) or, for a consumer's or a
// follower's fetch, runnel_fetch_stage_seconds (S is FetchStage). A handler takes one
// as it starts and passes it to the steps that time a stage.
type stageRecorder[S ProduceStage | FetchStage] struct {
	obs []prometheus.Observer // indexed by S
}

// The breakdowns share their first two stages, which started records.
var (
	_ = [1]int{}[int(StageRead)^int(FetchStageRead)]
	_ = [1]int{}[int(StageSchedule)^int(FetchStageSchedule)]
)

func (m *Metrics) produceRecorder() stageRecorder[ProduceStage] {
	return stageRecorder[ProduceStage]{obs: m.stages[:]}
}

// fetchRecorder is the recorder of a follower's fetch (follower) or a consumer's.
func (m *Metrics) fetchRecorder(follower bool) stageRecorder[FetchStage] {
	i := 0
	if follower {
		i = 1
	}
	return stageRecorder[FetchStage]{obs: m.fetch().obs[i][:]}
}

func (sr stageRecorder[S]) observe(st S, d time.Duration) { sr.obs[st].Observe(d.Seconds()) }

// started records the stages before r's handler ran, which started at start: read,
// from the request's first bytes to its frame read whole (not for a request that was
// not read from a connection), and schedule, from then to start.
func (sr stageRecorder[S]) started(r *request, start time.Time) {
	if !r.arrived.IsZero() {
		sr.obs[StageRead].Observe(r.received.Sub(r.arrived).Seconds())
	}
	sr.obs[StageSchedule].Observe(start.Sub(r.received).Seconds())
}
