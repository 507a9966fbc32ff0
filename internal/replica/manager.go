package replica

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/runnel-io/runnel/internal/config"
	"github.com/runnel-io/runnel/internal/log"
	"github.com/runnel-io/runnel/internal/metadata"
	"github.com/runnel-io/runnel/internal/nodenet"
	"github.com/runnel-io/runnel/internal/quota"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TopicSettings is what the replica layer needs from a topic's configuration.
type TopicSettings struct {
	Log    log.Config
	MinISR int32
	// LeaderThrottledReplicas and FollowerThrottledReplicas are the topic's
	// leader/follower.replication.throttled.replicas ("", "*" or PARTITION:BROKER,...).
	LeaderThrottledReplicas, FollowerThrottledReplicas string
}

// Options configure a Manager.
type Options struct {
	Node   metadata.NodeID
	Logs   *log.Manager
	Logger *slog.Logger
	// Network is where fetchers dial leaders; nil is the host's TCP stack. Tests give
	// a nodenet.Mem host.
	Network nodenet.Network
	// PeerClient, when set, gives the fetchers' dialer (on Network, with TLS) and SASL
	// login for the leaders' inter-broker listener (kafka.PeerClient); nil dials
	// plaintext on Network.
	PeerClient func(dialTimeout time.Duration) []kgo.Opt
	// Resolve turns a topic's overrides (and the cluster's dynamic defaults) into
	// settings. It must not fail for configs the controller accepted.
	Resolve func(im *metadata.Image, t *metadata.Topic) TopicSettings
	// HWCheckpointInterval is how often high watermarks are written to disk.
	HWCheckpointInterval time.Duration
	// OnLeadershipChange, if set, is called on the image-applying goroutine, with no
	// lock held, whenever this node starts or stops leading a partition (also when a
	// led partition is deleted). Coordinators of internal topics hook in here.
	OnLeadershipChange func(p *Partition, leader bool, leaderEpoch int32)

	// IsrChanger sends ISR changes to the controller; nil disables ISR changes (tests).
	IsrChanger IsrChanger
	// ReplicaLagTimeMax: a follower that has not caught up for this long leaves the
	// ISR (replica.lag.time.max.ms). Default 30 s.
	ReplicaLagTimeMax time.Duration
	// FetchWait, FetchMaxBytes, FetchResponseMaxBytes, FetchMinBytes configure follower
	// fetching (replica.fetch.wait.max.ms, replica.fetch.max.bytes,
	// replica.fetch.response.max.bytes, replica.fetch.min.bytes: the leader answers
	// once it has this many bytes for the fetch, or after FetchWait).
	FetchWait             time.Duration
	FetchMaxBytes         int32
	FetchResponseMaxBytes int32
	FetchMinBytes         int32
	// FetchBackoff is the pause after a failed follower fetch (replica.fetch.backoff.ms);
	// negative: none, retry at once.
	FetchBackoff time.Duration
	// Disk, if set, knows whether this node's data disk is full (DiskFull).
	Disk *DiskMonitor
	// ThrottleRates, if set, gives the replication throttles in bytes/s
	// (leader.replication.throttled.rate, follower.replication.throttled.rate; <= 0 or
	// math.MaxInt64: none) in force with an image (dynamic broker configs over the
	// node's own). ThrottleWindow is the burst they allow, in time of their rate
	// (replication.quota.window.size.seconds; 1 s when zero).
	ThrottleRates  func(im *metadata.Image) (leader, follower int64)
	ThrottleWindow time.Duration
	// CaughtUp, if set, says whether an image is at least as new as the metadata the
	// controller held when it last confirmed this node caught up (the node's current
	// registration is unfenced in it). On the first such image the manager deletes
	// the local logs the image places elsewhere (stray.go); nil: never.
	CaughtUp func(im *metadata.Image) bool
}

func (o *Options) setDefaults() {
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.HWCheckpointInterval <= 0 {
		o.HWCheckpointInterval = 5 * time.Second
	}
	if o.ReplicaLagTimeMax <= 0 {
		o.ReplicaLagTimeMax = 30 * time.Second
	}
	if o.FetchWait <= 0 {
		o.FetchWait = 500 * time.Millisecond
	}
	if o.FetchMaxBytes <= 0 {
		o.FetchMaxBytes = 1 << 20
	}
	if o.FetchResponseMaxBytes <= 0 {
		o.FetchResponseMaxBytes = 10 << 20
	}
	// Zero values take the defaults of the config table.
	if o.FetchBackoff == 0 {
		o.FetchBackoff = time.Duration(config.Default().ReplicaFetchBackoffMs) * time.Millisecond
	}
	if o.FetchMinBytes <= 0 {
		o.FetchMinBytes = config.Default().ReplicaFetchMinBytes
	}
	if o.ThrottleWindow <= 0 {
		o.ThrottleWindow = throttleWindowDefault
	}
}

// DiskFull reports whether this node's data disk is full, and since when.
func (m *Manager) DiskFull() (since time.Time, full bool) { return m.opts.Disk.State() }

// Stats are counters for metrics.
type Stats struct {
	IsrShrinks, IsrExpands int64
}

type managerMetrics struct {
	isrShrinks, isrExpands atomic.Int64
}

// Manager hosts every local replica (Kafka's ReplicaManager).
type Manager struct {
	opts   Options
	logger *slog.Logger

	// checkpointHW holds the high watermarks read at start-up, used when a partition
	// first becomes leader after a restart. Read-only after NewManager.
	checkpointHW map[metadata.TopicPartition]int64

	metrics managerMetrics

	// mu guards partitions, image and fetchers. Lock order: mu -> Partition locks.
	mu         sync.RWMutex
	partitions map[metadata.TopicPartition]*Partition
	image      *metadata.Image
	// fetchers has one Fetcher per broker this node follows partitions from.
	fetchers map[metadata.NodeID]*Fetcher
	// view is what followers should fetch from this node (see leaderView).
	view *leaderView

	// leaderQuota and followerQuota are the replication throttles (throttle.go).
	// Immutable pointers; their rates follow the image.
	leaderQuota, followerQuota *quota.Replication

	// hwCheckpointFailing is set while writing the high watermark checkpoint fails
	// (a full disk), so that the failure is logged once rather than at every interval.
	hwCheckpointFailing atomic.Bool

	// strayChecked is set once the stray sweep ran (stray.go). Only ApplyImage's
	// goroutine uses it.
	strayChecked bool

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// NewManager creates the manager; ApplyImage populates it.
func NewManager(o Options) (*Manager, error) {
	o.setDefaults()
	hw, err := o.Logs.ReadHighWatermarks()
	if err != nil {
		return nil, fmt.Errorf("read high watermark checkpoint: %w", err)
	}
	m := &Manager{
		opts: o, logger: o.Logger, checkpointHW: hw,
		partitions:    map[metadata.TopicPartition]*Partition{},
		image:         metadata.Empty(),
		fetchers:      map[metadata.NodeID]*Fetcher{},
		view:          newLeaderView(),
		leaderQuota:   quota.NewReplication(o.ThrottleWindow),
		followerQuota: quota.NewReplication(o.ThrottleWindow),
	}
	m.ctx, m.cancel = context.WithCancel(context.Background())
	m.goTracked(m.checkpointLoop)
	m.goTracked(m.isrLoop)
	return m, nil
}

// goTracked runs fn on a goroutine that Close waits for; fn must return when ctx ends.
func (m *Manager) goTracked(fn func(ctx context.Context)) {
	m.wg.Add(1)
	go func() {
		defer m.wg.Done()
		fn(m.ctx)
	}()
}

// Stats returns the manager's counters.
func (m *Manager) Stats() Stats {
	return Stats{IsrShrinks: m.metrics.isrShrinks.Load(), IsrExpands: m.metrics.isrExpands.Load()}
}

// ApplyImage makes the local replicas match im: creates logs for new partitions, changes
// roles, applies config changes and deletes partitions no longer hosted here. Images
// must be applied in order; the caller serialises calls.
func (m *Manager) ApplyImage(im *metadata.Image) error {
	m.mu.Lock()
	prev := m.image
	m.image = im
	m.mu.Unlock()
	m.applyThrottleRates(im)
	lc := im.LocalChanges(prev, m.opts.Node)
	var firstErr error
	apply := func(tp metadata.TopicPartition, st metadata.Partition) {
		if err := m.applyPartition(im, tp, st); err != nil {
			m.logger.Error("cannot host partition", "topic", tp.Topic, "partition", tp.Partition, "err", err)
			if firstErr == nil {
				firstErr = err
			}
		}
	}
	// Deletions first: a partition both deleted and hosted in one step is a topic
	// deleted and re-created under the same name (LocalChanges compares topic ids),
	// whose old log must go before the new partition is opened, not after (which
	// deleted the partition just applied, leaving the node hosting nothing).
	for _, tp := range lc.Deleted {
		m.deletePartition(tp)
	}
	for tp, st := range lc.Leaders {
		apply(tp, st)
	}
	for tp, st := range lc.Followers {
		apply(tp, st)
	}
	m.maybeDeleteStrayLogs(im)
	m.view.update(m.opts.Node, m.Partitions(), len(lc.Leaders) > 0)
	return firstErr
}

func (m *Manager) applyPartition(im *metadata.Image, tp metadata.TopicPartition, st metadata.Partition) error {
	settings := m.opts.Resolve(im, im.Topics[tp.Topic])
	m.mu.RLock()
	p := m.partitions[tp]
	m.mu.RUnlock()
	if p != nil {
		p.log.UpdateConfig(settings.Log)
		p.setThrottled(settings)
	} else {
		// Creating a log makes directories and files: never under m.mu, which every
		// produce and fetch takes to find its partition. ApplyImage's calls are
		// serialised, so no one else adds tp meanwhile.
		l, err := m.opts.Logs.GetOrCreate(tp, settings.Log)
		if err != nil {
			return err
		}
		if m.strayChecked {
			if l, err = m.checkTopicID(im, tp, l, settings.Log); err != nil {
				return err
			}
		}
		p = newPartition(tp, m.opts.Node, l, m.opts.ReplicaLagTimeMax, m.logger)
		p.onFollowerFetch = m.maybeExpandIsr
		p.setThrottled(settings)
		m.mu.Lock()
		m.partitions[tp] = p
		m.mu.Unlock()
	}
	hw, ok := m.checkpointHW[tp]
	if !ok {
		hw = -1
	}
	wasLeader := p.IsLeader()
	p.setPromoteEpoch(im.PromoteEpoch(tp))
	p.setFailbackCut(im.FailbackCut(tp))
	if p.applyState(st, settings.MinISR, settings.Log.FlushMessages <= 1, hw) {
		m.logger.Info("became leader", "topic", tp.Topic, "partition", tp.Partition,
			"leader_epoch", st.LeaderEpoch, "log_end_offset", p.log.LogEndOffset(), "high_watermark", p.HighWatermark())
	}
	isLeader := st.Leader == m.opts.Node
	if isLeader || st.Leader == metadata.NoLeader {
		m.unfollow(tp)
	} else {
		m.follow(im, p, st)
	}
	if m.opts.OnLeadershipChange != nil && (isLeader != wasLeader || isLeader) {
		m.opts.OnLeadershipChange(p, isLeader, st.LeaderEpoch)
	}
	return nil
}

func (m *Manager) deletePartition(tp metadata.TopicPartition) {
	m.unfollow(tp)
	m.mu.Lock()
	p := m.partitions[tp]
	delete(m.partitions, tp)
	m.mu.Unlock()
	if p != nil {
		p.leaderIsrLock.Lock()
		wasLeader, epoch := p.rs.isLeader(), p.rs.leaderEpoch
		p.rs.leader = metadata.NoLeader
		p.leaderIsrLock.Unlock()
		p.notifyWaiters()
		if wasLeader && m.opts.OnLeadershipChange != nil {
			m.opts.OnLeadershipChange(p, false, epoch)
		}
	}
	if err := m.opts.Logs.Delete(tp); err != nil {
		m.logger.Error("delete partition log", "topic", tp.Topic, "partition", tp.Partition, "err", err)
	}
}

// Partition returns the local replica of tp. Errors: ErrUnknownTopicOrPartition when the
// metadata has no such partition, ErrNotLeader when it exists but is not hosted here.
func (m *Manager) Partition(tp metadata.TopicPartition) (*Partition, error) {
	m.mu.RLock()
	p := m.partitions[tp]
	im := m.image
	m.mu.RUnlock()
	if p != nil {
		return p, nil
	}
	if _, ok := im.Partition(tp); ok {
		return nil, ErrNotLeader
	}
	return nil, ErrUnknownTopicOrPartition
}

// Partitions returns a snapshot of every local replica.
func (m *Manager) Partitions() []*Partition {
	m.mu.RLock()
	defer m.mu.RUnlock()
	ps := make([]*Partition, 0, len(m.partitions))
	for _, p := range m.partitions {
		ps = append(ps, p)
	}
	return ps
}

// Watch returns a channel signalled when the high watermark of any of parts moves, and a
// function that stops watching. Fetch long polls use it.
func Watch(parts []*Partition) (<-chan struct{}, func()) {
	ch := make(chan struct{}, 1)
	for _, p := range parts {
		p.addWaiter(ch)
	}
	return ch, func() {
		for _, p := range parts {
			p.removeWaiter(ch)
		}
	}
}

func (m *Manager) checkpointLoop(ctx context.Context) {
	t := time.NewTicker(m.opts.HWCheckpointInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			m.checkpointHighWatermarks()
		}
	}
}

func (m *Manager) checkpointHighWatermarks() {
	hws := map[metadata.TopicPartition]int64{}
	for _, p := range m.Partitions() {
		hws[p.tp] = p.HighWatermark()
	}
	err := m.opts.Logs.WriteHighWatermarks(hws)
	switch {
	case err != nil && !m.hwCheckpointFailing.Swap(true):
		m.logger.Error("write high watermark checkpoint; retrying at every interval, logged again once it works",
			"interval", m.opts.HWCheckpointInterval, "err", err)
	case err == nil && m.hwCheckpointFailing.Swap(false):
		m.logger.Info("high watermark checkpoint written again")
	}
}

// Close stops background work and writes a last high watermark checkpoint. Logs are
// closed by their log.Manager.
func (m *Manager) Close(ctx context.Context) error {
	m.mu.Lock()
	fetchers := m.fetchers
	m.fetchers = map[metadata.NodeID]*Fetcher{}
	m.mu.Unlock()
	for _, f := range fetchers {
		f.close()
	}
	m.cancel()
	m.wg.Wait()
	m.checkpointHighWatermarks()
	return nil
}

// follow makes p fetch from st.Leader, moving it off any other fetcher.
func (m *Manager) follow(im *metadata.Image, p *Partition, st metadata.Partition) {
	b, ok := im.Brokers[st.Leader]
	if !ok {
		m.logger.Warn("leader of followed partition is not registered", "topic", p.tp.Topic, "partition", p.tp.Partition, "leader", st.Leader)
		return
	}
	var topicID [16]byte
	if t := im.Topics[p.tp.Topic]; t != nil {
		topicID = t.ID
	}
	m.unfollowExcept(p.tp, st.Leader)
	m.mu.Lock()
	f := m.fetchers[st.Leader]
	if f == nil {
		var err error
		f, err = newFetcher(m, st.Leader, net.JoinHostPort(b.Host, strconv.Itoa(int(b.Port))))
		if err != nil {
			m.mu.Unlock()
			m.logger.Error("cannot start replica fetcher", "source", st.Leader, "err", err)
			return
		}
		m.fetchers[st.Leader] = f
	}
	m.mu.Unlock()
	f.add(p, st.LeaderEpoch, topicID)
}

func (m *Manager) unfollow(tp metadata.TopicPartition) { m.unfollowExcept(tp, metadata.NoLeader) }

// unfollowExcept removes tp from every fetcher but keep's, closing fetchers left empty.
func (m *Manager) unfollowExcept(tp metadata.TopicPartition, keep metadata.NodeID) {
	var idle []*Fetcher
	m.mu.Lock()
	for id, f := range m.fetchers {
		if id == keep {
			continue
		}
		if f.remove(tp) {
			delete(m.fetchers, id)
			idle = append(idle, f)
		}
	}
	m.mu.Unlock()
	for _, f := range idle {
		f.close()
	}
}
