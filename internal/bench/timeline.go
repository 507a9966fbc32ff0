package bench

import (
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"runtime/metrics"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/runnel-io/runnel/internal/benchfmt"
)

// e2eTimeline follows each record of a `bench e2e --breakdown` run through the clients,
// so that an end-to-end outlier can be placed: sent (the time in its header), acked (the
// producer's promise ran), buffered (the consumer's client had decoded the fetch
// response carrying it) and polled (PollFetches returned it). It also keeps every
// consumer fetch's span on the wire, to tell whether a record that became readable
// waited for the consumer's next fetch to be sent (franz-go sends a broker's next fetch
// only once the previous one's records were polled).
type e2eTimeline struct {
	// acks[producer][seq] is the Unix ns of the record's acknowledgement (0: none).
	// Written by the producers' promises, read by the consumer.
	acks [][]atomic.Int64

	mu sync.Mutex // guards buffered, fetches and lastEnd
	// buffered is when each record (partition, offset) was buffered in the consumer.
	buffered map[recordKey]int64
	// fetches are the consumer's fetch requests on the wire (one broker: in order).
	fetches []fetchSpan
	// lastEnd is when each broker's previous fetch response was read whole.
	lastEnd map[int32]int64

	// Consumer goroutine only.
	recs []recordTimes
	// started is the bench process's runtime sample at the start of the run.
	started runtimeSample
}

type recordKey struct {
	partition int32
	offset    int64
}

// fetchSpan is one consumer fetch: written at start, its response read whole at end,
// after gap with no fetch in flight to that broker (since the previous response).
type fetchSpan struct {
	broker          int32
	start, end, gap int64
}

// recordTimes are one record's times, Unix ns (buffered 0: not seen by the hook; acked
// 0: not acknowledged yet when resolve ran), and its producer and sequence.
type recordTimes struct {
	sent, acked, buffered, polled int64
	id                            uint32
	seq                           uint64
}

// maxTimelineRecords bounds the memory of the timeline (32 B a record).
const maxTimelineRecords = 4 << 20

// newE2ETimeline sizes the acknowledgement table for about expect records per producer.
func newE2ETimeline(producers int, expect int64) *e2eTimeline {
	t := &e2eTimeline{buffered: map[recordKey]int64{}, lastEnd: map[int32]int64{}}
	per := min(expect+expect/4+1000, maxTimelineRecords/int64(max(producers, 1)))
	t.acks = make([][]atomic.Int64, producers)
	for i := range t.acks {
		t.acks[i] = make([]atomic.Int64, per)
	}
	return t
}

// acked records a record's acknowledgement (a producer's promise).
func (t *e2eTimeline) acked(r *kgo.Record, now int64) {
	id, seq, _, ok := benchfmt.ParseHeader(r.Value)
	if !ok || int(id) >= len(t.acks) || seq >= uint64(len(t.acks[id])) {
		return
	}
	t.acks[id][seq].Store(now)
}

// OnFetchRecordBuffered is kgo.HookFetchRecordBuffered.
func (t *e2eTimeline) OnFetchRecordBuffered(r *kgo.Record) {
	now := time.Now().UnixNano()
	t.mu.Lock()
	t.buffered[recordKey{r.Partition, r.Offset}] = now
	t.mu.Unlock()
}

// OnBrokerE2E is kgo.HookBrokerE2E: the consumer's fetches on the wire.
func (t *e2eTimeline) OnBrokerE2E(meta kgo.BrokerMetadata, key int16, e kgo.BrokerE2E) {
	if key != 1 || e.Err() != nil {
		return
	}
	end := time.Now().UnixNano()
	start := end - int64(e.DurationE2E())
	t.mu.Lock()
	gap := int64(0)
	if prev, ok := t.lastEnd[meta.NodeID]; ok {
		gap = max(start-prev, 0)
	}
	t.lastEnd[meta.NodeID] = end
	t.fetches = append(t.fetches, fetchSpan{broker: meta.NodeID, start: start, end: end, gap: gap})
	t.mu.Unlock()
}

// polled records a record PollFetches returned at now.
func (t *e2eTimeline) polled(r *kgo.Record, now int64) {
	id, seq, sent, ok := benchfmt.ParseHeader(r.Value)
	if !ok || len(t.recs) >= maxTimelineRecords {
		return
	}
	// The acknowledgement may come after the consumer has the record (both follow the
	// same high watermark move): resolve reads it once the run is over.
	rt := recordTimes{sent: sent, polled: now, id: id, seq: seq}
	k := recordKey{r.Partition, r.Offset}
	t.mu.Lock()
	rt.buffered = t.buffered[k]
	delete(t.buffered, k)
	t.mu.Unlock()
	t.recs = append(t.recs, rt)
}

// resolve fills in the acknowledgement times; call it once producing is over.
func (t *e2eTimeline) resolve() {
	for i := range t.recs {
		r := &t.recs[i]
		if int(r.id) < len(t.acks) && r.seq < uint64(len(t.acks[r.id])) {
			r.acked = t.acks[r.id][r.seq].Load()
		}
	}
}

// stages summarises the client-side stages, as breakdown rows: client.produce (sent to
// acked), client.ack2buf (acked to buffered: the fetch side, 0 when the consumer had it
// first), client.buf2poll (buffered to polled) and client.fetchgap (per fetch: how long
// no fetch was in flight to its broker before it was sent).
func (t *e2eTimeline) stages() []benchfmt.StageSummary {
	hs := map[string]*benchfmt.LatencyHist{}
	for _, name := range []string{"client.produce", "client.ack2buf", "client.buf2poll", "client.fetchgap"} {
		hs[name] = benchfmt.NewLatencyHist()
	}
	for _, r := range t.recs {
		if r.acked == 0 || r.buffered == 0 {
			continue
		}
		hs["client.produce"].Record(time.Duration(r.acked - r.sent))
		hs["client.ack2buf"].Record(time.Duration(max(r.buffered-r.acked, 0)))
		hs["client.buf2poll"].Record(time.Duration(r.polled - r.buffered))
	}
	t.mu.Lock()
	for _, f := range t.fetches {
		hs["client.fetchgap"].Record(time.Duration(f.gap))
	}
	t.mu.Unlock()
	var out []benchfmt.StageSummary
	for _, name := range []string{"client.produce", "client.ack2buf", "client.buf2poll", "client.fetchgap"} {
		s := hs[name].Summary()
		if s == nil || s.Count == 0 {
			continue
		}
		out = append(out, benchfmt.StageSummary{Stage: name, Count: s.Count, P50: s.P50, P99: s.P99, P999: s.P999, Max: s.Max})
	}
	return out
}

// writeOutliers prints where the records at or above the run's e2e p99 spent their
// time, and the slowest few one by one, with the consumer's fetch at their ack: in
// flight (sent how long before) or not (the previous response read how long before).
func (t *e2eTimeline) writeOutliers(w io.Writer, top int) {
	recs := slices.Clone(t.recs)
	if len(recs) < 100 {
		return
	}
	e2e := func(r recordTimes) int64 { return r.polled - r.sent }
	sort.Slice(recs, func(i, j int) bool { return e2e(recs[i]) > e2e(recs[j]) })
	n := max(len(recs)/100, 1)
	tail := recs[:n]
	ms := func(d int64) float64 { return float64(d) / 1e6 }
	var prod, a2b, b2p []int64
	inFlight := 0
	for _, r := range tail {
		if r.acked == 0 || r.buffered == 0 {
			continue
		}
		prod, a2b, b2p = append(prod, r.acked-r.sent), append(a2b, max(r.buffered-r.acked, 0)), append(b2p, r.polled-r.buffered)
		if f, _ := t.fetchAt(r.acked); f {
			inFlight++
		}
	}
	med := func(v []int64) float64 {
		if len(v) == 0 {
			return 0
		}
		slices.Sort(v)
		return ms(v[len(v)/2])
	}
	fmt.Fprintf(w, "e2e tail (the %d records at or above p99, %.2f ms): median sent->acked %.2f ms, acked->buffered %.2f ms, buffered->polled %.2f ms; a consumer fetch in flight at the ack for %d of %d\n",
		n, ms(e2e(tail[n-1])), med(prod), med(a2b), med(b2p), inFlight, len(prod))
	fmt.Fprintf(w, "%10s %10s %10s %10s  %s\n", "e2e ms", "sent->ack", "ack->buf", "buf->poll", "consumer fetch at the ack")
	for _, r := range recs[:min(top, len(recs))] {
		state := "?"
		if r.acked != 0 {
			if f, since := t.fetchAt(r.acked); f {
				state = fmt.Sprintf("in flight, sent %.2f ms before", ms(since))
			} else if since >= 0 {
				state = fmt.Sprintf("none in flight, previous response read %.2f ms before", ms(since))
			}
		}
		if s, e, ok := t.nextFetch(r.acked); ok {
			state += fmt.Sprintf("; next fetch sent %+.2f ms, read %+.2f ms after the ack", ms(s-r.acked), ms(e-r.acked))
		}
		fmt.Fprintf(w, "%10.2f %10.2f %10.2f %10.2f  %s\n", ms(e2e(r)), ms(r.acked-r.sent), ms(r.buffered-r.acked), ms(r.polled-r.buffered), state)
	}
}

// fetchAt reports whether a consumer fetch was in flight at the instant at, and how
// long before at it was sent; or, if none was, how long before at the latest response
// had been read (-1: no fetch before at).
func (t *e2eTimeline) fetchAt(at int64) (bool, int64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	lastEnd := int64(-1)
	// Fetch spans end in order per broker; a binary search on end finds the first
	// ending at or after at, then the spans around it are checked.
	i := sort.Search(len(t.fetches), func(i int) bool { return t.fetches[i].end >= at })
	for j := max(i-8, 0); j < min(i+8, len(t.fetches)); j++ {
		f := t.fetches[j]
		if f.start <= at && at <= f.end {
			return true, at - f.start
		}
		if f.end < at && f.end > lastEnd {
			lastEnd = f.end
		}
	}
	if lastEnd < 0 {
		return false, -1
	}
	return false, at - lastEnd
}

// nextFetch is the first consumer fetch sent after at: when it was sent and read.
func (t *e2eTimeline) nextFetch(at int64) (start, end int64, ok bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	i := sort.Search(len(t.fetches), func(i int) bool { return t.fetches[i].end >= at })
	for j := max(i-8, 0); j < len(t.fetches) && j < i+64; j++ {
		if f := t.fetches[j]; f.start >= at {
			return f.start, f.end, true
		}
	}
	return 0, 0, false
}

// runtimeSample is the bench process's own scheduling and GC histograms (runtime/
// metrics), to tell a client-side stall from the broker's: a goroutine runnable but not
// running (the OS or the Go scheduler), or stopped by the collector.
type runtimeSample struct {
	sched, gc *metrics.Float64Histogram
	runq      int64 // ns the process's threads waited on a CPU run queue (/proc/self/task/*/schedstat)
}

func sampleRuntime() runtimeSample {
	s := []metrics.Sample{{Name: "/sched/latencies:seconds"}, {Name: "/sched/pauses/total/gc:seconds"}}
	metrics.Read(s)
	var rs runtimeSample
	if s[0].Value.Kind() == metrics.KindFloat64Histogram {
		rs.sched = s[0].Value.Float64Histogram()
	}
	if s[1].Value.Kind() == metrics.KindFloat64Histogram {
		rs.gc = s[1].Value.Float64Histogram()
	}
	tasks, _ := filepath.Glob("/proc/self/task/*/schedstat")
	for _, path := range tasks {
		b, err := os.ReadFile(path)
		if err != nil {
			continue
		}
		if f := strings.Fields(string(b)); len(f) >= 2 {
			n, _ := strconv.ParseInt(f[1], 10, 64)
			rs.runq += n
		}
	}
	return rs
}

// histDiff summarises after - before of a runtime histogram: count, p99 and the upper
// bound of the highest bucket hit, in ms.
func histDiff(before, after *metrics.Float64Histogram) (n uint64, p99, top float64) {
	if before == nil || after == nil || len(before.Counts) != len(after.Counts) {
		return 0, 0, 0
	}
	counts := make([]uint64, len(after.Counts))
	for i := range counts {
		counts[i] = after.Counts[i] - before.Counts[i]
		n += counts[i]
	}
	bound := func(i int) float64 { // bucket i is [Buckets[i], Buckets[i+1])
		b := after.Buckets[i+1]
		if math.IsInf(b, 1) {
			b = after.Buckets[i]
		}
		return 1000 * b
	}
	var cum uint64
	for i, c := range counts {
		if c == 0 {
			continue
		}
		cum += c
		if p99 == 0 && float64(cum) >= 0.99*float64(n) {
			p99 = bound(i)
		}
		top = bound(i)
	}
	return n, p99, top
}

// writeRuntime prints the bench process's GC pauses and scheduling latencies between
// two samples.
func writeRuntime(w io.Writer, before, after runtimeSample) {
	gcN, _, gcTop := histDiff(before.gc, after.gc)
	schedN, schedP99, schedTop := histDiff(before.sched, after.sched)
	fmt.Fprintf(w, "bench process: %d GC pauses (longest < %.2f ms); goroutine scheduling latency p99 < %.2f ms, longest < %.2f ms (%d); threads waited %.0f ms on a CPU run queue\n",
		gcN, gcTop, schedP99, schedTop, schedN, float64(after.runq-before.runq)/1e6)
}
