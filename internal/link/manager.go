package link

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"reflect"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/runnel-io/runnel/internal/metadata"
	"github.com/runnel-io/runnel/internal/replica"
)

// Manager runs, on one node, the fetching of every mirror partition this node leads:
// one session (a kgo client of the source) per link with such partitions, and in it
// one fetcher goroutine per source broker leading some of them. It follows the
// metadata (ApplyImage, after the replicas applied the same image): a leadership that
// moves here starts a partition's fetching, one that moves away, a pause, a promote or
// a failure stops it.
type Manager struct {
	node     metadata.NodeID
	replicas *replica.Manager
	logger   *slog.Logger
	// report sends an operation to the active controller (Admin.Do): a failed mirror.
	report func(ctx context.Context, r Request) Response
	// bytes counts what each link copied (runnel_link_bytes_total{link}).
	bytes sync.Map // link name -> *atomic.Int64
	// admin is the node's Admin (NewAdmin sets it): the syncers act through it.
	admin atomic.Pointer[Admin]

	// mu guards sessions, syncers and closed. Never held across network I/O or a
	// session's own lock.
	mu       sync.Mutex
	sessions map[string]*session
	// syncers: one per link in the image (follow.go), acting while this node is the
	// active controller.
	syncers map[string]*syncer
	// startErrs: why a link with partitions to fetch here has no session (its source
	// client could not be built: a reference this node cannot resolve, a bad
	// property), by link. Tried again at each image; stats reports its partitions.
	startErrs map[string]*startFailure
	closed    bool
}

// startFailure is a link that cannot start on this node: why, since when (without a
// break), and the partitions it would fetch.
type startFailure struct {
	msg   string
	since time.Time
	parts map[metadata.TopicPartition]wanted
}

// NewManager returns a manager with no session; ApplyImage starts them.
func NewManager(node metadata.NodeID, replicas *replica.Manager, logger *slog.Logger) *Manager {
	return &Manager{node: node, replicas: replicas, logger: logger.With("component", "link"),
		sessions: map[string]*session{}, syncers: map[string]*syncer{}, startErrs: map[string]*startFailure{}}
}

// SetReporter installs how the manager reaches the active controller. Call it
// before the first ApplyImage.
func (m *Manager) SetReporter(fn func(ctx context.Context, r Request) Response) { m.report = fn }

func (m *Manager) bytesOf(link string) *atomic.Int64 {
	v, _ := m.bytes.LoadOrStore(link, new(atomic.Int64))
	return v.(*atomic.Int64)
}

// wanted is a partition a session must fetch (or, paused, follow the source end of):
// its local replica and the destination leader epoch the appends are made in.
type wanted struct {
	dest          *replica.Partition
	destEpoch     int32
	sourceTopicID [16]byte
	paused        bool
}

// ApplyImage starts and stops fetching to match im. Images come in order, on the
// image-applying goroutine.
func (m *Manager) ApplyImage(im *metadata.Image) {
	if h := holdImage.Load(); h != nil {
		(*h)(im)
	}
	want := map[string]map[metadata.TopicPartition]wanted{}
	for _, name := range im.LinkNames() {
		link := im.Link(name)
		for _, mt := range im.MirrorsOf(name) {
			if mt.State != metadata.MirrorMirroring && mt.State != metadata.MirrorPaused {
				continue
			}
			paused := link.Paused || mt.State == metadata.MirrorPaused
			t := im.Topics[mt.Topic]
			for i := range t.Partitions {
				tp := metadata.TopicPartition{Topic: mt.Topic, Partition: int32(i)}
				if t.Partitions[i].Leader != m.node {
					continue
				}
				p, err := m.replicas.Partition(tp)
				if err != nil {
					continue
				}
				epoch, leading, _, _, _ := p.MirrorEnds()
				if !leading {
					continue
				}
				if want[name] == nil {
					want[name] = map[metadata.TopicPartition]wanted{}
				}
				want[name][tp] = wanted{dest: p, destEpoch: epoch, sourceTopicID: mt.SourceTopicID, paused: paused}
			}
		}
	}
	m.reportPromotes(im)
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return
	}
	for name, s := range m.sessions {
		link := im.Link(name)
		if len(want[name]) == 0 || link == nil || !sameLink(link, s.link) {
			s.close()
			delete(m.sessions, name)
		}
	}
	m.applySyncersLocked(im)
	for name := range m.startErrs {
		if len(want[name]) == 0 {
			delete(m.startErrs, name)
		}
	}
	for name, parts := range want {
		s := m.sessions[name]
		if s == nil {
			var err error
			if s, err = newSession(m, im.Link(name)); err != nil {
				f := &startFailure{msg: fmt.Sprintf("cannot start on node %d: %v", m.node, err), since: time.Now(), parts: parts}
				if old := m.startErrs[name]; old != nil {
					f.since = old.since
				}
				if old := m.startErrs[name]; old == nil || old.msg != f.msg {
					m.logger.Error("cannot start link", "link", name, "node", m.node, "partitions", len(parts), "err", err)
				}
				m.startErrs[name] = f
				continue
			}
			delete(m.startErrs, name)
			m.sessions[name] = s
		}
		s.setParts(parts)
	}
}

func sameLink(a, b *metadata.Link) bool {
	return a.Source == b.Source && maps.Equal(a.SourceProps, b.SourceProps) && reflect.DeepEqual(a.Topics, b.Topics) &&
		a.ThrottleBytes == b.ThrottleBytes
}

// applySyncersLocked runs one syncer per link of im. Caller holds m.mu.
func (m *Manager) applySyncersLocked(im *metadata.Image) {
	for name, s := range m.syncers {
		if l := im.Link(name); l == nil || !sameSyncer(l, s.link) {
			s.close()
			delete(m.syncers, name)
		}
	}
	for _, name := range im.LinkNames() {
		if m.syncers[name] == nil {
			m.syncers[name] = newSyncer(m, im.Link(name))
		}
	}
}

// groupStatus returns the group offsets this node synced for link.
func (m *Manager) groupStatus(link string) []GroupStatus {
	m.mu.Lock()
	s := m.syncers[link]
	m.mu.Unlock()
	if s == nil {
		return nil
	}
	return s.groupStatus()
}

// Close stops every session and syncer and waits for their goroutines.
func (m *Manager) Close() {
	m.mu.Lock()
	m.closed = true
	ss, sy := m.sessions, m.syncers
	m.sessions, m.syncers = map[string]*session{}, map[string]*syncer{}
	m.mu.Unlock()
	for _, s := range ss {
		s.close()
	}
	for _, s := range sy {
		s.close()
	}
}

// stats returns the live state of the partitions this node fetches, by partition.
func (m *Manager) stats() map[metadata.TopicPartition]partStats {
	out := map[metadata.TopicPartition]partStats{}
	now := time.Now()
	m.mu.Lock()
	ss := make([]*session, 0, len(m.sessions))
	for _, s := range m.sessions {
		ss = append(ss, s)
	}
	failed := maps.Clone(m.startErrs) // each *startFailure is replaced, never changed
	m.mu.Unlock()
	// A link that cannot start here copies nothing: the source's end is unknown (-1)
	// and the destination is behind, as far as this node knows, since it first failed.
	for name, f := range failed {
		for tp, w := range f.parts {
			_, _, _, end, _ := w.dest.MirrorEnds()
			out[tp] = partStats{link: name, sourceEnd: -1, end: end, lagSeconds: now.Sub(f.since).Seconds(), err: f.msg}
		}
	}
	for _, s := range ss {
		s.mu.Lock()
		for tp, p := range s.parts {
			st := p.stats(now)
			st.link = s.link.Name
			out[tp] = st
		}
		s.mu.Unlock()
	}
	return out
}

// session is one link's fetching on this node.
type session struct {
	m    *Manager
	link *metadata.Link
	cl   *kgo.Client
	// bytes is the link's copied-bytes counter (shared across sessions of the link).
	bytes *atomic.Int64
	// throttle bounds what the session's fetchers copy (--throttle); nil: no bound.
	throttle *throttle

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
	// refresh wakes the router: some partition needs its source leader looked up.
	refresh chan struct{}
	// pausedWake wakes watchPaused: a paused partition was added.
	pausedWake chan struct{}

	// mu guards parts and fetchers, and every mpart's routing fields.
	mu       sync.Mutex
	parts    map[metadata.TopicPartition]*mpart
	fetchers map[int32]*fetcher // by source broker id
}

func newSession(m *Manager, link *metadata.Link) (*session, error) {
	opts, err := sourceOptions(link)
	if err != nil {
		return nil, err
	}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return nil, err
	}
	s := &session{m: m, link: link, cl: cl, bytes: m.bytesOf(link.Name), throttle: newThrottle(link.ThrottleBytes), refresh: make(chan struct{}, 1),
		pausedWake: make(chan struct{}, 1), parts: map[metadata.TopicPartition]*mpart{}, fetchers: map[int32]*fetcher{}}
	s.ctx, s.cancel = context.WithCancel(context.Background())
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		s.route()
	}()
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		s.watchPaused()
	}()
	return s, nil
}

// setParts makes the session fetch exactly parts. A partition whose destination
// epoch changed starts over (its old fetch state belonged to another leadership); one
// paused or resumed starts over too, keeping what it knew of the source's end, so
// that its lag carries across. It returns once the partitions it stopped write
// nothing more (pause.go): the image that paused them counts as applied only then.
func (s *session) setParts(parts map[metadata.TopicPartition]wanted) {
	s.mu.Lock()
	kept := map[metadata.TopicPartition]*mpart{}
	var dropped []*mpart
	for tp, p := range s.parts {
		w, ok := parts[tp]
		if !ok || w.dest != p.dest || w.destEpoch != p.destEpoch || w.paused != p.paused {
			s.dropLocked(p)
			dropped = append(dropped, p)
			if ok && w.dest == p.dest && w.destEpoch == p.destEpoch {
				kept[tp] = p
			}
		}
	}
	added, paused := false, false
	for tp, w := range parts {
		if s.parts[tp] == nil {
			np := newMpart(tp, w)
			if old := kept[tp]; old != nil {
				np.sourceEnd.Store(old.sourceEnd.Load())
				np.behindSince.Store(old.behindSince.Load())
			}
			s.parts[tp] = np
			added, paused = true, paused || w.paused
		}
	}
	s.mu.Unlock()
	for _, p := range dropped {
		p.stop()
	}
	if added {
		s.wakeRouter()
	}
	if paused {
		s.wakePaused()
	}
}

// dropLocked stops fetching p; a write of it in progress may still end (stop waits
// for it). Caller holds s.mu.
func (s *session) dropLocked(p *mpart) {
	p.removed.Store(true)
	if f := s.fetchers[p.sourceLeader]; f != nil {
		f.remove(p.tp)
	}
	delete(s.parts, p.tp)
}

func (s *session) wakeRouter() {
	select {
	case s.refresh <- struct{}{}:
	default:
	}
}

func (s *session) close() {
	s.cancel()
	s.wg.Wait()
	s.cl.Close()
}
