package quota

import (
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/runnel-io/runnel/internal/metadata"
)

// Defaults of Config, Kafka's.
const (
	DefaultSamples = 11          // quota.window.num
	DefaultWindow  = time.Second // quota.window.size.seconds
	// sensorIdle is how long a rate nobody recorded into is kept (Kafka expires its
	// quota sensors after an hour without use).
	sensorIdle = time.Hour
	sweepEvery = time.Minute
)

// Config configures a Manager. Zero values take the defaults.
type Config struct {
	// Samples is quota.window.num, Window quota.window.size.seconds.
	Samples int
	Window  time.Duration
	// Metrics are where the per-entity metrics go (NewMetrics); nil: unregistered ones.
	Metrics *Metrics
}

// Manager keeps the rates of every quota entity in use and answers, for each request
// recorded, how long the connection must be throttled. Safe for concurrent use.
type Manager struct {
	samples int
	window  time.Duration
	metrics *Metrics

	mu sync.Mutex // guards the fields below
	// quotas is the set resolved holds answers for; a new set clears resolved.
	quotas   *metadata.ClientQuotas
	resolved map[resolveKey]resolution
	sensors  map[sensorKey]*sensor
	swept    time.Time
}

type resolveKey struct {
	t              Type
	user, clientID string
}

type resolution struct {
	m  Match
	ok bool
}

type sensorKey struct {
	t    Type
	tags Tags
}

// sensor is one entity's account and its metric children.
type sensor struct {
	bucket   bucket
	last     time.Time
	value    prometheus.Counter // bytes, or request seconds
	throttle prometheus.Counter // seconds
}

// Result is what Record found.
type Result struct {
	// Throttle is how long the connection must not be read (0: not throttled).
	Throttle time.Duration
	// Limited says a quota applies; Match is it.
	Limited bool
	Match   Match
}

// NewManager returns a Manager with cfg.
func NewManager(cfg Config) *Manager {
	if cfg.Samples <= 1 {
		cfg.Samples = DefaultSamples
	}
	if cfg.Window <= 0 {
		cfg.Window = DefaultWindow
	}
	if cfg.Metrics == nil {
		cfg.Metrics = NewMetrics(nil)
	}
	return &Manager{samples: cfg.Samples, window: cfg.Window, metrics: cfg.Metrics,
		resolved: map[resolveKey]resolution{}, sensors: map[sensorKey]*sensor{}}
}

// Burst is how much of a quota's rate a client may use at once: one window
// (quota.window.size.seconds). See bucket for why not Kafka's n-1 windows.
func (m *Manager) Burst() time.Duration { return m.window }

// maxThrottle is the longest one throttle lasts: quota.window.num windows, the cap
// Kafka puts on a request quota's throttle. A longer debt throttles the next request
// as well, so the cap shortens each mute without raising the rate.
func (m *Manager) maxThrottle() time.Duration { return time.Duration(m.samples) * m.window }

// Record adds v (bytes; for Request, seconds of handling time) to the rate of type t
// that applies to user and clientID under quotas q, and returns the throttle time.
func (m *Manager) Record(q *metadata.ClientQuotas, t Type, user, clientID string, v float64, now time.Time) Result {
	m.mu.Lock()
	defer m.mu.Unlock()
	match, ok := m.resolveLocked(q, t, user, clientID)
	if !ok {
		return Result{}
	}
	s := m.sensorLocked(t, match.Tags, now)
	if t == Request {
		v *= 100 // percent of one core
	}
	d := s.bucket.record(v, match.Bound, match.Bound*m.Burst().Seconds(), now, m.maxThrottle())
	if t != Fetch || d == 0 {
		// A throttled fetch is answered empty and unrecorded: it moved nothing.
		s.value.Add(v / t.unit())
	}
	return Result{Throttle: d, Limited: true, Match: match}
}

// unit turns a recorded value back into what its metric counts.
func (t Type) unit() float64 {
	if t == Request {
		return 100
	}
	return 1
}

// Unrecord takes back a value Record added, from the rate only (a fetch answered empty because it was
// throttled sends nothing, so it uses nothing of the quota).
func (m *Manager) Unrecord(q *metadata.ClientQuotas, t Type, user, clientID string, v float64, now time.Time) {
	m.mu.Lock()
	defer m.mu.Unlock()
	match, ok := m.resolveLocked(q, t, user, clientID)
	if !ok {
		return
	}
	if t == Request {
		v *= 100
	}
	s := m.sensorLocked(t, match.Tags, now)
	s.bucket.record(-v, match.Bound, match.Bound*m.Burst().Seconds(), now, m.maxThrottle())
}

// Throttled counts d of throttle time against the rate of t that match names.
func (m *Manager) Throttled(t Type, match Match, d time.Duration) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if s := m.sensors[sensorKey{t, match.Tags}]; s != nil {
		s.throttle.Add(d.Seconds())
	}
}

// Applies reports whether a quota of any type applies to user and clientID.
func (m *Manager) Applies(q *metadata.ClientQuotas, user, clientID string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	for t := range numTypes {
		if _, ok := m.resolveLocked(q, t, user, clientID); ok {
			return true
		}
	}
	return false
}

// MaxInWindow is the most that can be recorded for t at once without a certain
// throttle (Kafka's getMaxValueInQuotaWindow; here the bucket's capacity, one window of
// the bound), and whether a quota applies. A consumer fetch asks for no more than this.
func (m *Manager) MaxInWindow(q *metadata.ClientQuotas, t Type, user, clientID string) (float64, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	match, ok := m.resolveLocked(q, t, user, clientID)
	if !ok {
		return 0, false
	}
	return match.Bound * m.Burst().Seconds(), true
}

func (m *Manager) resolveLocked(q *metadata.ClientQuotas, t Type, user, clientID string) (Match, bool) {
	if q != m.quotas {
		m.quotas = q
		clear(m.resolved)
	}
	k := resolveKey{t, user, clientID}
	r, cached := m.resolved[k]
	if !cached {
		r.m, r.ok = Resolve(q, t, user, clientID)
		if len(m.resolved) < 100_000 { // client ids are the clients' to choose
			m.resolved[k] = r
		}
	}
	return r.m, r.ok
}

func (m *Manager) sensorLocked(t Type, tags Tags, now time.Time) *sensor {
	if now.Sub(m.swept) >= sweepEvery {
		m.sweepLocked(now)
	}
	k := sensorKey{t, tags}
	s := m.sensors[k]
	if s == nil {
		s = &sensor{}
		s.value, s.throttle = m.metrics.children(t, tags)
		m.sensors[k] = s
	}
	s.last = now
	return s
}

// sweepLocked drops the rates (and their metrics) nobody used for sensorIdle.
func (m *Manager) sweepLocked(now time.Time) {
	m.swept = now
	for k, s := range m.sensors {
		if now.Sub(s.last) >= sensorIdle {
			delete(m.sensors, k)
			m.metrics.drop(k.t, k.tags)
		}
	}
}
