package quota

import "time"

// rate is Kafka's Rate over a SampledStat: the sum of up to n samples, each covering
// window from the first value recorded in it, divided by the time they span. The span
// is taken as at least n-1 full windows, so that a first burst is measured against the
// whole window rather than against the moment it took.
type rate struct {
	samples []sample // a ring; cur is the newest
	cur     int
}

type sample struct {
	start time.Time // when the sample began; zero: never used
	value float64
}

func newRate(n int) *rate {
	return &rate{samples: make([]sample, max(n, 2))}
}

// record adds v at now, starting a new sample when the current one is window old.
func (r *rate) record(v float64, now time.Time, window time.Duration) {
	s := &r.samples[r.cur]
	switch {
	case s.start.IsZero():
		s.start = now
	case now.Sub(s.start) >= window:
		r.cur = (r.cur + 1) % len(r.samples)
		s = &r.samples[r.cur]
		*s = sample{start: now}
	}
	s.value += v
}

// purge resets the samples older than the n windows kept (Kafka resets them to now).
func (r *rate) purge(now time.Time, window time.Duration) {
	expire := time.Duration(len(r.samples)) * window
	for i := range r.samples {
		if s := &r.samples[i]; !s.start.IsZero() && now.Sub(s.start) >= expire {
			*s = sample{start: now}
		}
	}
}

// windowSize is the time the retained samples are measured over: since the oldest
// sample began, and at least n-1 full windows plus what passed of the current one.
func (r *rate) windowSize(now time.Time, window time.Duration) time.Duration {
	r.purge(now, window)
	oldest := now
	for _, s := range r.samples {
		if !s.start.IsZero() && s.start.Before(oldest) {
			oldest = s.start
		}
	}
	elapsed := now.Sub(oldest)
	full := int(elapsed / window)
	if minFull := len(r.samples) - 1; full < minFull {
		elapsed += time.Duration(minFull-full) * window
	}
	return max(elapsed, time.Millisecond)
}

// measure returns the rate per second at now and the window it is measured over.
func (r *rate) measure(now time.Time, window time.Duration) (float64, time.Duration) {
	size := r.windowSize(now, window)
	total := 0.0
	for _, s := range r.samples {
		total += s.value
	}
	return total / size.Seconds(), size
}

// maxThrottle bounds a throttle time, so that one absurd value cannot overflow it.
const maxThrottle = 24 * time.Hour

// throttle is how long no more may be recorded for the rate to come back to bound
// (Kafka's (value - bound) / bound * windowSize); 0 while it is within bound.
func (r *rate) throttle(bound float64, now time.Time, window time.Duration) time.Duration {
	v, size := r.measure(now, window)
	if v <= bound || bound <= 0 {
		return 0
	}
	d := (v - bound) / bound * float64(size)
	if d > float64(maxThrottle) {
		return maxThrottle
	}
	return time.Duration(d).Round(time.Millisecond)
}
