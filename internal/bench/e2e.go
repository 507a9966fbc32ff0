package bench

import (
	"context"
	"errors"
	"time"

	"github.com/runnel-io/runnel/internal/benchfmt"
	"github.com/twmb/franz-go/pkg/kgo"
)

// e2eRun is one `bench e2e`: producers and a consumer on the same topic at once.
type e2eRun struct {
	cfg *Config
	g   *producerGroup
	c   *consumer
}

// E2E produces at cfg.Rate for cfg.Duration while consuming, checks that every
// acknowledged record came back (ErrLostRecords otherwise), and prints the report:
// throughput, produce and end-to-end latency.
func E2E(ctx context.Context, cfg Config) error {
	return cfg.withGCFloor(func() error { return e2e(ctx, &cfg) })
}

func e2e(ctx context.Context, cfg *Config) error {
	r, err := startE2E(ctx, cfg)
	if err != nil {
		return err
	}
	defer r.close()
	var took time.Duration
	stages, err := cfg.Breakdown.around(ctx, func() error {
		if r.c.timeline != nil {
			r.c.timeline.started = sampleRuntime()
		}
		prog := startProgress(cfg.Log, "e2e",
			progressCounter{"acked", &r.g.acked}, progressCounter{"consumed", &r.c.received})
		defer prog.stop()
		var err error
		took, err = r.run(ctx)
		return err
	})
	if err != nil {
		return err
	}
	return r.report(took, stages)
}

// startE2E connects the consumer, positioned at the current end of every
// partition, and the producers.
func startE2E(ctx context.Context, cfg *Config) (*e2eRun, error) {
	_, ends, err := listOffsets(ctx, cfg)
	if err != nil {
		return nil, err
	}
	var tl *e2eTimeline
	var hooks []kgo.Opt
	if cfg.Breakdown.On {
		tl = newE2ETimeline(cfg.Producers, int64(cfg.ProducerRate()*cfg.Duration.Seconds()))
		hooks = append(hooks, kgo.WithHooks(tl))
	}
	c, err := newConsumer(cfg, ends, hooks...)
	if err != nil {
		return nil, err
	}
	c.e2e = benchfmt.NewLatencyHist()
	c.timeline = tl
	g, err := newProducerGroup(cfg)
	if err != nil {
		c.cl.Close()
		return nil, err
	}
	for _, p := range g.ps {
		p.timeline = tl
	}
	return &e2eRun{cfg: cfg, g: g, c: c}, nil
}

func (r *e2eRun) close() {
	r.g.close()
	r.c.cl.Close()
}

// run produces for --duration while consuming, then consumes up to the end offsets
// and every acknowledged record. It returns how long producing took.
func (r *e2eRun) run(ctx context.Context) (time.Duration, error) {
	ctx, stopWatch := watchStall(ctx, r.cfg.Timeout,
		progressCount{"acknowledged", &r.g.acked}, progressCount{"consumed", &r.c.received})
	defer stopWatch()
	took, err := r.runWatched(ctx)
	err = stallCause(ctx, err)
	if errors.Is(err, ErrStalled) {
		// A record acknowledged but never served: say which, not just "stalled".
		acked, sent := r.g.counts()
		if lerr := r.c.seqs.checkAcked(acked, sent); lerr != nil {
			return took, lerr
		}
	}
	return took, err
}

func (r *e2eRun) runWatched(ctx context.Context) (time.Duration, error) {
	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	cerr := make(chan error, 1)
	go func() { cerr <- r.c.run(cctx) }()
	timer := time.AfterFunc(r.cfg.Duration, func() { r.g.stop.Store(true) })
	defer timer.Stop()
	start := time.Now()
	err := r.g.run(ctx, -1)
	took := time.Since(start)
	if err == nil {
		var ends map[int32]int64
		if _, ends, err = listOffsets(ctx, r.cfg); err == nil {
			r.c.target <- consumeTarget{ends: ends, want: r.g.acked.Load()}
		}
	}
	if err != nil {
		cancel()
		<-cerr
		return took, err
	}
	return took, <-cerr
}

// report checks that every acknowledged record came back and prints the result.
func (r *e2eRun) report(took time.Duration, breakdown []benchfmt.StageSummary) error {
	if err := checkPartitions(r.c.parts); err != nil {
		return err
	}
	acked, sent := r.g.counts()
	if err := r.c.seqs.checkAcked(acked, sent); err != nil {
		return err
	}
	if tl := r.c.timeline; tl != nil {
		tl.resolve()
		breakdown = append(breakdown, tl.stages()...)
		tl.writeOutliers(r.cfg.Log, 10)
		writeRuntime(r.cfg.Log, tl.started, sampleRuntime())
	}
	rep := &benchfmt.Report{Mode: "e2e", Topic: r.cfg.Topic, Partitions: r.cfg.Partitions, Producers: r.cfg.Producers,
		RecordSize: r.cfg.RecordSize, Consumed: r.c.counted(), Dropped: r.g.dropped(),
		Duplicates: r.c.seqs.duplicates, Produce: r.g.latency().Summary(), EndToEnd: r.c.e2e.Summary(),
		Breakdown: breakdown}
	total := r.g.acked.Load()
	rep.SetRate(total, total*int64(r.cfg.RecordSize), took)
	return rep.Write(r.cfg.Out, r.cfg.JSON)
}
