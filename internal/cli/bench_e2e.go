package cli

import (
	"context"
	"errors"
	"time"

	"github.com/runnel-io/runnel/internal/benchfmt"
	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kgo"
)

// e2eRun is one `bench e2e`: producers and a consumer on the same topic at once.
type e2eRun struct {
	f     *benchFlags
	topic string
	parts int
	g     *producerGroup
	c     *benchConsumer
}

func runBenchE2E(cmd *cobra.Command, conn *connFlags, f *benchFlags) error {
	if err := f.validate(true); err != nil {
		return err
	}
	if f.duration <= 0 {
		return usageErrorf("--duration must be positive")
	}
	r, err := startE2E(cmd.Context(), conn, f)
	if err != nil {
		return err
	}
	defer r.close()
	before, err := f.breakdown.snapshot(cmd.Context())
	if err != nil {
		return err
	}
	if r.c.timeline != nil {
		r.c.timeline.started = sampleRuntime()
	}
	prog := startProgress(cmd.ErrOrStderr(), "e2e",
		progressCounter{"acked", &r.g.acked}, progressCounter{"consumed", &r.c.received})
	took, err := r.run(cmd.Context(), conn)
	prog.stop()
	if err != nil {
		return err
	}
	after, err := f.breakdown.snapshot(cmd.Context())
	if err != nil {
		return err
	}
	return r.report(cmd, took, summarizeStages(before, after))
}

// startE2E creates the topic and connects the consumer, positioned at the current
// end of every partition, and the producers.
func startE2E(ctx context.Context, conn *connFlags, f *benchFlags) (*e2eRun, error) {
	topic, parts, err := prepareTopic(ctx, conn, f)
	if err != nil {
		return nil, err
	}
	_, ends, err := listOffsets(ctx, conn, topic)
	if err != nil {
		return nil, err
	}
	var tl *e2eTimeline
	var hooks []kgo.Opt
	if f.breakdown.on {
		tl = newE2ETimeline(f.producers, int64(f.producerRate()*f.duration.Seconds()))
		hooks = append(hooks, kgo.WithHooks(tl))
	}
	c, err := newBenchConsumer(conn, topic, ends, f.timeout, hooks...)
	if err != nil {
		return nil, err
	}
	c.e2e = benchfmt.NewLatencyHist()
	c.timeline = tl
	g, err := newProducerGroup(conn, f, topic)
	if err != nil {
		c.close()
		return nil, err
	}
	for _, p := range g.ps {
		p.timeline = tl
	}
	return &e2eRun{f: f, topic: topic, parts: parts, g: g, c: c}, nil
}

func (r *e2eRun) close() {
	r.g.close()
	r.c.close()
}

// run produces for --duration while consuming, then consumes up to the end offsets
// and every acknowledged record. It returns how long producing took.
func (r *e2eRun) run(ctx context.Context, conn *connFlags) (time.Duration, error) {
	ctx, stopWatch := watchStall(ctx, r.f.timeout,
		progressCount{"acknowledged", &r.g.acked}, progressCount{"consumed", &r.c.received})
	defer stopWatch()
	took, err := r.runWatched(ctx, conn)
	err = stallCause(ctx, err)
	if errors.Is(err, errStalled) {
		// A record acknowledged but never served: say which, not just "stalled".
		acked, sent := r.g.counts()
		if lerr := r.c.seqs.checkAcked(acked, sent); lerr != nil {
			return took, lerr
		}
	}
	return took, err
}

func (r *e2eRun) runWatched(ctx context.Context, conn *connFlags) (time.Duration, error) {
	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	cerr := make(chan error, 1)
	go func() { cerr <- r.c.run(cctx) }()
	timer := time.AfterFunc(r.f.duration, func() { r.g.stop.Store(true) })
	defer timer.Stop()
	start := time.Now()
	err := r.g.run(ctx, -1)
	took := time.Since(start)
	if err == nil {
		var ends map[int32]int64
		if _, ends, err = listOffsets(ctx, conn, r.topic); err == nil {
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
func (r *e2eRun) report(cmd *cobra.Command, took time.Duration, breakdown []benchfmt.StageSummary) error {
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
		tl.writeOutliers(cmd.ErrOrStderr(), 10)
		writeRuntime(cmd.ErrOrStderr(), tl.started, sampleRuntime())
	}
	rep := &benchfmt.Report{Mode: "e2e", Topic: r.topic, Partitions: r.parts, Producers: r.f.producers,
		RecordSize: r.f.recordSize, Consumed: r.c.counted(), Dropped: r.g.dropped(),
		Duplicates: r.c.seqs.duplicates, Produce: r.g.latency().Summary(), EndToEnd: r.c.e2e.Summary(),
		Breakdown: breakdown}
	total := r.g.acked.Load()
	rep.SetRate(total, total*int64(r.f.recordSize), took)
	return rep.Write(cmd.OutOrStdout(), r.f.json)
}
