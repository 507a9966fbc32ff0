package mirror

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/runnel-io/runnel/client"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// Mirror copies the topics Config selects from the source to the target until its
// Run's context ends. Build it with New.
type Mirror struct {
	cfg    Config  // immutable after New
	topics *filter // immutable
	groups *filter // immutable; nil: no group sync
	log    *slog.Logger
	owner  string // immutable: host/pid, written in states

	srcCl, tgtCl   *kgo.Client  // admin and metadata clients; set in Run
	srcAdm, tgtAdm *kadm.Client // over srcCl, tgtCl
	srcID, tgtID   string       // cluster ids; set in Run before any worker
	alias          string       // prefix for Prefix naming; set in Run

	consumer      *kgo.Client   // the source group consumer; set in Run before consumerReady closes
	consumerReady chan struct{} // closed once consumer is set: the group callbacks wait for it

	mu      sync.Mutex                 // guards workers, seeks, topicIDs
	workers map[TopicPartition]*worker // the partitions this process owns
	seeks   map[TopicPartition]seekReq // latest request per partition, for the poll loop
	// topicIDs are the source topic ids the topic loop last saw.
	topicIDs map[string]string

	targets *targetTopics
	gsync   *groupSync
	reg     *prometheus.Registry
	wg      sync.WaitGroup // workers and loops
	ctx     context.Context
}

// seekReq asks the poll loop to start a partition at offset (or pause it), tagging
// what it fetches afterwards with gen.
type seekReq struct {
	offset int64
	gen    uint64
	pause  bool
}

// New checks cfg and builds a Mirror; nothing connects until Run.
func New(cfg Config) (*Mirror, error) {
	cfg.setDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	// The producer options are checked once here, so that a bad one fails New, not
	// every partition; the client connects lazily, so this dials nothing.
	p, err := client.NewProducer(append(cfg.Producer[:len(cfg.Producer):len(cfg.Producer)],
		client.WithClientOptions(kgo.SeedBrokers(cfg.Target...)))...)
	if err != nil {
		return nil, fmt.Errorf("mirror %s: producer options: %w", cfg.Name, err)
	}
	p.Close()
	topics, err := newFilter("topic", cfg.Topics, cfg.Exclude)
	if err != nil {
		return nil, err
	}
	m := &Mirror{cfg: cfg, topics: topics, log: cfg.Logger.With("mirror", cfg.Name),
		workers: map[TopicPartition]*worker{}, seeks: map[TopicPartition]seekReq{},
		topicIDs: map[string]string{}, reg: prometheus.NewRegistry(), consumerReady: make(chan struct{})}
	if len(cfg.Groups) > 0 {
		if m.groups, err = newFilter("group", cfg.Groups, nil); err != nil {
			return nil, err
		}
	}
	host, _ := os.Hostname()
	m.owner = fmt.Sprintf("%s/%d", host, os.Getpid())
	m.reg.MustRegister(&collector{m: m})
	return m, nil
}

// Registry is the mirror's Prometheus registry (runnel_mirror_* metrics).
func (m *Mirror) Registry() *prometheus.Registry { return m.reg }

// Run mirrors until ctx ends, then stops every partition (an open transaction is
// aborted) and leaves the group. It returns an error only if it cannot start.
func (m *Mirror) Run(ctx context.Context) error {
	m.ctx = ctx
	if err := m.connect(ctx); err != nil {
		return err
	}
	defer m.srcCl.Close()
	defer m.tgtCl.Close()
	if err := m.targets.ensureProgressTopic(ctx); err != nil {
		return err
	}
	if err := m.targets.writeMeta(ctx); err != nil {
		return err
	}
	if err := m.startConsumer(); err != nil {
		return err
	}
	m.wg.Add(1)
	go func() { defer m.wg.Done(); m.targets.loop(ctx) }()
	if m.groups != nil {
		m.gsync = newGroupSync(m)
		m.wg.Add(1)
		go func() { defer m.wg.Done(); m.gsync.loop(ctx) }()
	}
	m.pollLoop(ctx)
	m.stopWorkers(m.ownedPartitions())
	m.consumer.Close()
	m.wg.Wait()
	return nil
}

// connect builds the admin clients and learns both cluster ids.
func (m *Mirror) connect(ctx context.Context) error {
	var err error
	if m.srcCl, err = kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(m.cfg.Source...)}, m.cfg.SourceOptions...)...); err != nil {
		return fmt.Errorf("mirror %s: source client: %w", m.cfg.Name, err)
	}
	if m.tgtCl, err = kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(m.cfg.Target...)}, m.cfg.TargetOptions...)...); err != nil {
		m.srcCl.Close()
		return fmt.Errorf("mirror %s: target client: %w", m.cfg.Name, err)
	}
	m.srcAdm, m.tgtAdm = kadm.NewClient(m.srcCl), kadm.NewClient(m.tgtCl)
	for _, side := range []struct {
		name string
		adm  *kadm.Client
		id   *string
		addr []string
	}{{"source", m.srcAdm, &m.srcID, m.cfg.Source}, {"target", m.tgtAdm, &m.tgtID, m.cfg.Target}} {
		md, err := side.adm.BrokerMetadata(ctx)
		if err != nil {
			m.srcCl.Close()
			m.tgtCl.Close()
			return fmt.Errorf("mirror %s: %s cluster %v: %w", m.cfg.Name, side.name, side.addr, err)
		}
		*side.id = md.Cluster
	}
	if m.srcID == m.tgtID {
		m.srcCl.Close()
		m.tgtCl.Close()
		return fmt.Errorf("mirror %s: source and target are the same cluster (id %s)", m.cfg.Name, m.srcID)
	}
	m.alias = m.cfg.SourceAlias
	if m.alias == "" {
		m.alias = m.srcID
	}
	m.targets = newTargetTopics(m)
	m.log.Info("mirror connected", "source_cluster", m.srcID, "target_cluster", m.tgtID, "delivery", m.cfg.Delivery)
	return nil
}

// targetName is the target topic of source topic t (the ReplicationPolicy).
func (m *Mirror) targetName(t string) string {
	if m.cfg.Naming == Identity {
		return t
	}
	return m.alias + "." + t
}

// startConsumer joins the membership group on the source. The group commits
// nothing; AdjustFetchOffsetsFn pauses every new partition until its worker has
// read its position from the target and asked for a seek.
func (m *Mirror) startConsumer() error {
	var includes, excludes []string
	for _, re := range m.topics.include {
		includes = append(includes, re.String())
	}
	excludes = append(excludes, "^__.*$")
	for _, re := range m.topics.exclude {
		excludes = append(excludes, re.String())
	}
	opts := append([]kgo.Opt{kgo.SeedBrokers(m.cfg.Source...)}, m.cfg.SourceOptions...)
	opts = append(opts,
		kgo.ConsumerGroup(membershipGroup(m.cfg.Name)),
		kgo.ConsumeRegex(), kgo.ConsumeTopics(includes...), kgo.ConsumeExcludeTopics(excludes...),
		kgo.Balancers(kgo.CooperativeStickyBalancer()),
		kgo.DisableAutoCommit(), kgo.BlockRebalanceOnPoll(),
		kgo.SessionTimeout(m.cfg.SessionTimeout), kgo.HeartbeatInterval(m.cfg.SessionTimeout/6),
		kgo.RebalanceTimeout(30*time.Second),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.KeepControlRecords(),
		kgo.ConsumeResetOffset(kgo.NoResetOffset()),
		kgo.MetadataMaxAge(m.cfg.TopicRefresh), kgo.MetadataMinAge(min(time.Second, m.cfg.TopicRefresh)),
		kgo.AdjustFetchOffsetsFn(m.onAssigned),
		kgo.OnPartitionsRevoked(m.onRevoked), kgo.OnPartitionsLost(m.onRevoked),
	)
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return fmt.Errorf("mirror %s: source consumer: %w", m.cfg.Name, err)
	}
	m.consumer = cl
	close(m.consumerReady)
	return nil
}

// onAssigned starts a worker for every newly assigned partition and pauses it: the
// worker fences the previous owner and reads the position from the target before
// anything is fetched for it.
func (m *Mirror) onAssigned(ctx context.Context, offsets map[string]map[int32]kgo.Offset) (map[string]map[int32]kgo.Offset, error) {
	select {
	case <-m.consumerReady:
	case <-ctx.Done():
		return offsets, ctx.Err()
	}
	// Decided before m.mu is taken: isCopy may read the source. Undecided (an
	// error) starts a worker: its init asks again before creating anything.
	var topics []string
	for t := range offsets {
		topics = append(topics, t)
	}
	copies, _ := m.targets.copies(ctx, topics)
	pause := map[string][]int32{}
	m.mu.Lock()
	for t, ps := range offsets {
		for p := range ps {
			tp := TopicPartition{t, p}
			if m.workers[tp] != nil {
				continue
			}
			pause[t] = append(pause[t], p)
			if copies[t] {
				continue // owned, never fetched: see targetTopics.isCopy
			}
			w := newWorker(m, tp)
			m.workers[tp] = w
			m.wg.Add(1)
			go func() { defer m.wg.Done(); w.run(m.ctx) }()
		}
	}
	m.mu.Unlock()
	m.consumer.PauseFetchPartitions(pause)
	m.log.Info("partitions assigned", "partitions", pause)
	return offsets, nil
}

// onRevoked stops the workers of partitions this process no longer owns; each
// finishes or aborts its transaction before the group moves the partition.
func (m *Mirror) onRevoked(_ context.Context, _ *kgo.Client, revoked map[string][]int32) {
	var tps []TopicPartition
	for t, ps := range revoked {
		for _, p := range ps {
			tps = append(tps, TopicPartition{t, p})
		}
	}
	m.log.Info("partitions revoked", "partitions", revoked)
	m.stopWorkers(tps)
}

func (m *Mirror) ownedPartitions() []TopicPartition {
	m.mu.Lock()
	defer m.mu.Unlock()
	tps := make([]TopicPartition, 0, len(m.workers))
	for tp := range m.workers {
		tps = append(tps, tp)
	}
	return tps
}

func (m *Mirror) stopWorkers(tps []TopicPartition) {
	var stopped []*worker
	m.mu.Lock()
	for _, tp := range tps {
		if w := m.workers[tp]; w != nil {
			delete(m.workers, tp)
			delete(m.seeks, tp)
			close(w.stop)
			stopped = append(stopped, w)
		}
	}
	m.mu.Unlock()
	for _, w := range stopped {
		<-w.done
	}
}

func (m *Mirror) worker(tp TopicPartition) *worker {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.workers[tp]
}

// requestSeek asks the poll loop to (re)start tp at offset, or to pause it. It never
// blocks: a later request replaces an earlier one not yet carried out.
func (m *Mirror) requestSeek(tp TopicPartition, r seekReq) {
	m.mu.Lock()
	m.seeks[tp] = r
	m.mu.Unlock()
}

// pollLoop fetches from the source and hands each partition's records to its
// worker, tagged with the partition's seek generation, so that a worker can tell
// records fetched before its last seek (which it drops) from those after.
func (m *Mirror) pollLoop(ctx context.Context) {
	for ctx.Err() == nil {
		pctx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
		fs := m.consumer.PollFetches(pctx)
		cancel()
		// From here to AllowRebalance no rebalance callback runs.
		m.applySeeks()
		fs.EachPartition(func(p kgo.FetchTopicPartition) {
			if p.Topic == "" || errors.Is(p.Err, context.DeadlineExceeded) || errors.Is(p.Err, context.Canceled) {
				return
			}
			if w := m.worker(TopicPartition{p.Topic, p.Partition}); w != nil {
				w.deliver(ctx, p.FetchPartition)
			}
		})
		m.consumer.AllowRebalance()
	}
}

// applySeeks carries out the workers' seek and pause requests, on the polling
// goroutine, while no rebalance can run (BlockRebalanceOnPoll).
func (m *Mirror) applySeeks() {
	m.mu.Lock()
	seeks := m.seeks
	m.seeks = map[TopicPartition]seekReq{}
	m.mu.Unlock()
	for tp, r := range seeks {
		w := m.worker(tp)
		if w == nil {
			continue
		}
		tps := map[string][]int32{tp.Topic: {tp.Partition}}
		if r.pause {
			m.consumer.PauseFetchPartitions(tps)
		} else {
			m.consumer.SetOffsets(map[string]map[int32]kgo.EpochOffset{tp.Topic: {tp.Partition: {Epoch: -1, Offset: r.offset}}})
			m.consumer.ResumeFetchPartitions(tps)
		}
		w.setPollGen(r.gen)
	}
}
