package console

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"sort"
	"strconv"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/runnel-io/runnel/internal/auth"
	"github.com/runnel-io/runnel/internal/metadata"
)

// The console's charts (docs/console.md, "Charts"): every chartInterval the node asks
// the cluster, through its own listener as any page does, for
//   - each partition's high watermark (ListOffsets): records in;
//   - each partition's size on its leader (DescribeLogDirs): bytes in, the growth of
//     the leader's log (a retention deletion counts as no growth, never as negative);
//   - every group's committed offsets and lag (kadm's Lag): the sum over the groups of
//     each partition's committed offset's growth is records out (records consumed and
//     committed), and each group's total lag is its lag series.
// Rates are per second between two samples; a partition counts toward the node that
// leads it at the second sample. Bytes out are what this node itself sent consumers
// (runnel_topic_bytes_out_total, read in memory): a topic's bytes out on the console
// of one node of several is that node's share, and a node's chart has bytes out on
// its own console only.
//
// Memory: chartPoints slots of 4 bytes per series and at most maxChartSeries series,
// so at most 240 × 4 × 3000 ≈ 2.9 MB; the per-partition counters of the last sample
// besides (three int64 a partition). A series whose topic, node or group is gone
// leaves once its slots hold no value.

const (
	chartInterval = 15 * time.Second
	// chartPoints is an hour of chartInterval samples.
	chartPoints = 240
	// maxChartSeries bounds the store: series beyond it are not kept (ChartData says
	// how many were dropped).
	maxChartSeries = 3000
)

// The charts' kinds and metrics (the JSON's "kind" and "metric").
const (
	chartTopic = "topic"
	chartNode  = "node"
	chartGroup = "group"

	metricBytesIn    = "bytes_in"
	metricRecordsIn  = "records_in"
	metricRecordsOut = "records_out"
	metricBytesOut   = "bytes_out"
	metricLag        = "lag"
)

// chartMetrics are the metrics each kind has, in the order they are shown.
var chartMetrics = map[string][]string{
	chartTopic: {metricBytesIn, metricRecordsIn, metricBytesOut, metricRecordsOut},
	chartNode:  {metricBytesIn, metricRecordsIn, metricBytesOut, metricRecordsOut},
	chartGroup: {metricLag},
}

var chartUnits = map[string]string{metricBytesIn: "bytes/s", metricBytesOut: "bytes/s", metricRecordsIn: "records/s", metricRecordsOut: "records/s", metricLag: "records"}

type seriesKey struct{ kind, name, metric string }

// chartSample is what one tick learned: per partition its counters (absent: not
// learned this time), per group its total lag, and who leads each partition.
type chartSample struct {
	at        time.Time
	hw, size  map[metadata.TopicPartition]int64
	committed map[metadata.TopicPartition]int64 // summed over the groups
	leader    map[metadata.TopicPartition]int32
	lag       map[string]int64
	// self and bytesOut are the sampling node and what it had sent consumers, by
	// topic (nil: not known).
	self     int32
	bytesOut map[string]float64
}

// chartStore is a ring of chartPoints samples per series. Slot i of every series is
// the sample taken at times[i]; NaN is "not known then".
type chartStore struct {
	mu      sync.Mutex
	times   [chartPoints]int64 // unix ms, 0 for a slot never written
	next    int                // the slot the next sample writes
	series  map[seriesKey]*[chartPoints]float32
	dropped int // series not kept for maxChartSeries
	prev    *chartSample
}

func newChartStore() *chartStore {
	return &chartStore{series: map[seriesKey]*[chartPoints]float32{}}
}

// add records a sample: rates against the previous one, lags as they are.
func (c *chartStore) add(s *chartSample) {
	c.mu.Lock()
	defer c.mu.Unlock()
	vals := map[seriesKey]float64{}
	if p := c.prev; p != nil && s.at.After(p.at) {
		secs := s.at.Sub(p.at).Seconds()
		rate := func(metric string, now, before map[metadata.TopicPartition]int64) {
			for tp, v := range now {
				b, ok := before[tp]
				if !ok {
					continue
				}
				d := float64(max(v-b, 0)) / secs
				vals[seriesKey{chartTopic, tp.Topic, metric}] += d
				if l, ok := s.leader[tp]; ok && l >= 0 {
					vals[seriesKey{chartNode, strconv.Itoa(int(l)), metric}] += d
				}
			}
		}
		rate(metricRecordsIn, s.hw, p.hw)
		rate(metricBytesIn, s.size, p.size)
		rate(metricRecordsOut, s.committed, p.committed)
		if s.bytesOut != nil && p.bytesOut != nil {
			var node float64
			for topic, v := range s.bytesOut {
				d := max(v-p.bytesOut[topic], 0) / secs
				vals[seriesKey{chartTopic, topic, metricBytesOut}] += d
				node += d
			}
			vals[seriesKey{chartNode, strconv.Itoa(int(s.self)), metricBytesOut}] = node
		}
	}
	for g, l := range s.lag {
		vals[seriesKey{chartGroup, g, metricLag}] = float64(l)
	}
	c.prev = s
	slot := c.next
	c.times[slot] = s.at.UnixMilli()
	c.next = (c.next + 1) % chartPoints
	for k := range vals {
		if _, ok := c.series[k]; ok {
			continue
		}
		if len(c.series) >= maxChartSeries {
			c.dropped++
			continue
		}
		ring := new([chartPoints]float32)
		for i := range ring {
			ring[i] = float32(math.NaN())
		}
		c.series[k] = ring
	}
	for k, ring := range c.series {
		v, ok := vals[k]
		if !ok {
			ring[slot] = float32(math.NaN())
			if allNaN(ring) {
				delete(c.series, k)
			}
			continue
		}
		ring[slot] = float32(v)
	}
}

func allNaN(r *[chartPoints]float32) bool {
	for _, v := range r {
		if !math.IsNaN(float64(v)) {
			return false
		}
	}
	return true
}

// ChartData is GET /api/v1/charts?kind=K&name=N: the last hour of one topic's, node's
// or group's series.
type ChartData struct {
	Kind            string        `json:"kind"`
	Name            string        `json:"name"`
	IntervalSeconds int           `json:"interval_seconds"`
	Series          []ChartSeries `json:"series"`
	// Dropped counts series the node did not keep (more than it keeps in all).
	Dropped int `json:"dropped_series,omitempty"`
}

// ChartSeries is one metric's points, oldest first.
type ChartSeries struct {
	Metric string       `json:"metric"`
	Unit   string       `json:"unit"`
	Points []ChartPoint `json:"points"`
}

// ChartPoint is [unix ms, value]; the value is null when it was not known then.
type ChartPoint [2]*float64

// read returns kind/name's series, oldest point first; a metric never sampled has
// no points.
func (c *chartStore) read(kind, name string) *ChartData {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := &ChartData{Kind: kind, Name: name, IntervalSeconds: int(chartInterval / time.Second), Series: []ChartSeries{}, Dropped: c.dropped}
	for _, m := range chartMetrics[kind] {
		cs := ChartSeries{Metric: m, Unit: chartUnits[m], Points: []ChartPoint{}}
		ring := c.series[seriesKey{kind, name, m}]
		for i := range chartPoints {
			slot := (c.next + i) % chartPoints
			if c.times[slot] == 0 {
				continue
			}
			t := float64(c.times[slot])
			p := ChartPoint{&t, nil}
			if ring != nil && !math.IsNaN(float64(ring[slot])) {
				v := float64(ring[slot])
				p[1] = &v
			}
			cs.Points = append(cs.Points, p)
		}
		out.Series = append(out.Series, cs)
	}
	return out
}

// latest is each series' last known value of kind in the newest sample, by name.
func (c *chartStore) latest(kind, metric string) map[string]float64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := map[string]float64{}
	last := (c.next + chartPoints - 1) % chartPoints
	for k, ring := range c.series {
		if k.kind == kind && k.metric == metric && !math.IsNaN(float64(ring[last])) {
			out[k.name] = float64(ring[last])
		}
	}
	return out
}

// runCharts samples as soon as the node serves Kafka clients, then every
// chartInterval, until stop is closed.
func (s *source) runCharts(stop <-chan struct{}) {
	wait := time.Second // until the first sample: the node's listener may not be open yet
	for {
		select {
		case <-stop:
			return
		case <-time.After(wait):
		}
		if !s.n.Ready() {
			continue
		}
		wait = chartInterval
		ctx, cancel := context.WithTimeout(context.Background(), chartInterval-time.Second)
		go func() {
			select {
			case <-stop:
				cancel()
			case <-ctx.Done():
			}
		}()
		if smp, err := s.sampleCharts(ctx); err != nil {
			s.logger.Debug("console: chart sample failed", "node", s.n.ID(), "err", err)
		} else {
			s.charts.add(smp)
		}
		cancel()
	}
}

// sampleCharts asks the cluster for one chartSample. What did not answer is left
// out of the sample (a gap in its series), never counted as zero.
func (s *source) sampleCharts(ctx context.Context) (*chartSample, error) {
	im := s.n.Image()
	if im == nil {
		return nil, fmt.Errorf("node %d has no metadata image yet", s.n.ID())
	}
	smp := &chartSample{at: time.Now(), hw: map[metadata.TopicPartition]int64{}, size: map[metadata.TopicPartition]int64{},
		committed: map[metadata.TopicPartition]int64{}, leader: map[metadata.TopicPartition]int32{}, lag: map[string]int64{},
		self: s.n.ID(), bytesOut: s.n.TopicBytesOut()}
	var topics []string
	for _, t := range sortedTopics(im) {
		if isInternalTopic(t) {
			continue
		}
		topics = append(topics, t.Name)
		for i, p := range t.Partitions {
			smp.leader[metadata.TopicPartition{Topic: t.Name, Partition: int32(i)}] = int32(p.Leader)
		}
	}
	adm, err := s.kafkaAdmin()
	if err != nil {
		return nil, err
	}
	defer adm.Close()
	var wg sync.WaitGroup
	if len(topics) > 0 {
		wg.Go(func() {
			ends, _ := adm.ListEndOffsets(ctx, topics...)
			ends.Each(func(o kadm.ListedOffset) {
				if o.Err == nil {
					smp.hw[metadata.TopicPartition{Topic: o.Topic, Partition: o.Partition}] = o.Offset
				}
			})
		})
		wg.Go(func() {
			sizes, _ := logDirSizes(ctx, adm, im, topics)
			for tp, sz := range sizes {
				if sz.leaderOK {
					smp.size[tp] = sz.leader
				}
			}
		})
	}
	wg.Go(func() {
		lags, _ := s.groupLags(ctx)
		for id, l := range lags {
			if l.Error() != nil {
				continue
			}
			var total int64
			for _, ps := range l.Lag {
				for _, ml := range ps {
					if ml.Err != nil {
						continue
					}
					total += max(ml.Lag, 0)
					if ml.Commit.At >= 0 {
						smp.committed[metadata.TopicPartition{Topic: ml.Commit.Topic, Partition: ml.Commit.Partition}] += ml.Commit.At
					}
				}
			}
			smp.lag[id] = total
		}
	})
	wg.Wait()
	return smp, nil
}

// partitionSize is a partition's bytes on its leader and on all its replicas.
type partitionSize struct {
	leader, all int64
	leaderOK    bool
}

// logDirSizes asks every broker for its replicas' sizes (DescribeLogDirs) of topics,
// summed per partition over its leader and over all its replicas.
func logDirSizes(ctx context.Context, adm *kadm.Client, im *metadata.Image, topics []string) (map[metadata.TopicPartition]partitionSize, error) {
	set := kadm.TopicsSet{}
	for _, t := range topics {
		if tt := im.Topic(t); tt != nil {
			set.Add(t, partitionsOf(tt)...)
		}
	}
	sizes, err := replicaSizes(ctx, adm, set)
	out := map[metadata.TopicPartition]partitionSize{}
	for tp, byNode := range sizes {
		var ps partitionSize
		for node, sz := range byNode {
			ps.all += sz
			if t := im.Topic(tp.Topic); t != nil && int(tp.Partition) < len(t.Partitions) && int32(t.Partitions[tp.Partition].Leader) == node {
				ps.leader, ps.leaderOK = sz, true
			}
		}
		out[tp] = ps
	}
	return out, err
}

// replicaSizes are the sizes of set's replicas, by partition and node, from every
// broker that answered DescribeLogDirs (err names those that did not).
func replicaSizes(ctx context.Context, adm *kadm.Client, set kadm.TopicsSet) (map[metadata.TopicPartition]map[int32]int64, error) {
	dirs, err := adm.DescribeAllLogDirs(ctx, set)
	out := map[metadata.TopicPartition]map[int32]int64{}
	dirs.Each(func(d kadm.DescribedLogDir) {
		if d.Err != nil {
			return
		}
		d.Topics.Each(func(p kadm.DescribedLogDirPartition) {
			tp := metadata.TopicPartition{Topic: p.Topic, Partition: p.Partition}
			if out[tp] == nil {
				out[tp] = map[int32]int64{}
			}
			out[tp][p.Broker] += p.Size
		})
	})
	return out, err
}

func partitionsOf(t *metadata.Topic) []int32 {
	out := make([]int32, len(t.Partitions))
	for i := range out {
		out[i] = int32(i)
	}
	return out
}

// readCharts serves GET /api/v1/charts: DESCRIBE on the topic or group, as the
// page it is drawn on; a node's charts need nothing, as the nodes page.
func (s *source) readCharts(ctx context.Context, r *http.Request) (any, error) {
	kind, name := r.URL.Query().Get("kind"), r.URL.Query().Get("name")
	if _, ok := chartMetrics[kind]; !ok {
		kinds := make([]string, 0, len(chartMetrics))
		for k := range chartMetrics {
			kinds = append(kinds, k)
		}
		sort.Strings(kinds)
		return nil, fmt.Errorf("%w: kind %q: the charts' kinds are %v", ErrBadRequest, kind, kinds)
	}
	if name == "" {
		return nil, fmt.Errorf("%w: the chart of a %s needs its name (name=...)", ErrBadRequest, kind)
	}
	v, err := s.snapshot()
	if err != nil {
		return nil, err
	}
	switch kind {
	case chartTopic:
		err = s.acl.check(ctx, v.im, metadata.ACLOpDescribe, auth.Topic(name))
	case chartGroup:
		err = s.acl.check(ctx, v.im, metadata.ACLOpDescribe, auth.Group(name))
	}
	if err != nil {
		return nil, err
	}
	return s.charts.read(kind, name), nil
}
