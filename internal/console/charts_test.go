package console

import (
	"testing"
	"time"

	"github.com/runnel-io/runnel/internal/metadata"
)

func tp(t string, p int32) metadata.TopicPartition {
	return metadata.TopicPartition{Topic: t, Partition: p}
}

// values are a series' points' values, nil for a gap.
func values(t *testing.T, d *ChartData, metric string) []*float64 {
	t.Helper()
	for _, s := range d.Series {
		if s.Metric == metric {
			out := make([]*float64, len(s.Points))
			for i, p := range s.Points {
				out[i] = p[1]
			}
			return out
		}
	}
	t.Fatalf("%s %s has no series %s: %+v", d.Kind, d.Name, metric, d.Series)
	return nil
}

func want(t *testing.T, what string, got []*float64, w ...any) {
	t.Helper()
	if len(got) != len(w) {
		t.Fatalf("%s: %d points, want %d", what, len(got), len(w))
	}
	for i := range w {
		switch x := w[i].(type) {
		case nil:
			if got[i] != nil {
				t.Errorf("%s[%d] = %v, want a gap", what, i, *got[i])
			}
		case float64:
			if got[i] == nil || *got[i] != x {
				t.Errorf("%s[%d] = %v, want %v", what, i, got[i], x)
			}
		}
	}
}

// Rates are per second between samples, summed over a topic's partitions and over
// the partitions each node leads; a counter that went down (retention, a reset back)
// counts as no growth; lag is a gauge; what a sample lacks is a gap.
func TestChartStoreRates(t *testing.T) {
	c := newChartStore()
	t0 := time.Unix(1_700_000_000, 0)
	c.add(&chartSample{at: t0, hw: map[metadata.TopicPartition]int64{tp("a", 0): 100, tp("a", 1): 50},
		size:      map[metadata.TopicPartition]int64{tp("a", 0): 1000, tp("a", 1): 500},
		committed: map[metadata.TopicPartition]int64{tp("a", 0): 10},
		leader:    map[metadata.TopicPartition]int32{tp("a", 0): 1, tp("a", 1): 2}, lag: map[string]int64{"g": 90}})
	c.add(&chartSample{at: t0.Add(10 * time.Second), hw: map[metadata.TopicPartition]int64{tp("a", 0): 200, tp("a", 1): 100},
		size:      map[metadata.TopicPartition]int64{tp("a", 0): 3000, tp("a", 1): 100}, // partition 1 lost a segment
		committed: map[metadata.TopicPartition]int64{tp("a", 0): 60},
		leader:    map[metadata.TopicPartition]int32{tp("a", 0): 1, tp("a", 1): 2}, lag: map[string]int64{"g": 140}})
	// The third sample did not learn the sizes nor the groups.
	c.add(&chartSample{at: t0.Add(20 * time.Second), hw: map[metadata.TopicPartition]int64{tp("a", 0): 300, tp("a", 1): 100},
		leader: map[metadata.TopicPartition]int32{tp("a", 0): 2, tp("a", 1): 2}})

	topic := c.read(chartTopic, "a")
	want(t, "topic records_in", values(t, topic, metricRecordsIn), nil, 15.0, 10.0)
	want(t, "topic bytes_in", values(t, topic, metricBytesIn), nil, 200.0, nil)
	want(t, "topic records_out", values(t, topic, metricRecordsOut), nil, 5.0, nil)
	want(t, "node 1 records_in", values(t, c.read(chartNode, "1"), metricRecordsIn), nil, 10.0, nil)
	want(t, "node 2 records_in", values(t, c.read(chartNode, "2"), metricRecordsIn), nil, 5.0, 10.0)
	want(t, "group lag", values(t, c.read(chartGroup, "g"), metricLag), 90.0, 140.0, nil)
	if pts := topic.Series[0].Points; *pts[0][0] != float64(t0.UnixMilli()) || *pts[2][0] != float64(t0.Add(20*time.Second).UnixMilli()) {
		t.Errorf("times %v..%v, want the samples' times oldest first", *pts[0][0], *pts[2][0])
	}
	if got := c.latest(chartTopic, metricRecordsIn)["a"]; got != 10 {
		t.Errorf("latest records_in of a = %v, want 10", got)
	}
}

// The store keeps chartPoints samples, drops a series once its slots hold no value,
// and keeps at most maxChartSeries series.
func TestChartStoreBounded(t *testing.T) {
	c := newChartStore()
	t0 := time.Unix(1_700_000_000, 0)
	for i := range chartPoints + 10 {
		lag := map[string]int64{"g": int64(i)}
		if i == 0 {
			lag["gone"] = 1
		}
		c.add(&chartSample{at: t0.Add(time.Duration(i) * chartInterval), lag: lag})
	}
	got := values(t, c.read(chartGroup, "g"), metricLag)
	if len(got) != chartPoints || *got[0] != 10 || *got[chartPoints-1] != chartPoints+9 {
		t.Fatalf("%d points from %v to %v, want %d from 10 to %d", len(got), *got[0], *got[len(got)-1], chartPoints, chartPoints+9)
	}
	if _, ok := c.series[seriesKey{chartGroup, "gone", metricLag}]; ok {
		t.Errorf("the series of a group gone for an hour is still kept")
	}
	many := map[string]int64{}
	for i := range maxChartSeries + 5 {
		many[string(rune('a'+i%26))+string(rune(i))] = 1
	}
	c.add(&chartSample{at: t0.Add(time.Hour * 2), lag: many})
	if len(c.series) != maxChartSeries || c.dropped == 0 {
		t.Errorf("%d series kept, %d dropped; want at most %d kept", len(c.series), c.dropped, maxChartSeries)
	}
}

// Bytes out are this node's counter per topic: a rate per topic, their sum on the
// sampling node's chart, a topic first seen counted from zero, a gap while the node
// did not say (not serving clients).
func TestChartStoreBytesOut(t *testing.T) {
	c := newChartStore()
	t0 := time.Unix(1_700_000_000, 0)
	c.add(&chartSample{at: t0, self: 2, bytesOut: map[string]float64{"a": 1000}})
	c.add(&chartSample{at: t0.Add(10 * time.Second), self: 2, bytesOut: map[string]float64{"a": 3000, "b": 500}})
	c.add(&chartSample{at: t0.Add(20 * time.Second), self: 2})
	c.add(&chartSample{at: t0.Add(30 * time.Second), self: 2, bytesOut: map[string]float64{"a": 3000, "b": 500}})
	c.add(&chartSample{at: t0.Add(40 * time.Second), self: 2, bytesOut: map[string]float64{"a": 4000, "b": 500}})
	want(t, "a's bytes out", values(t, c.read(chartTopic, "a"), metricBytesOut), nil, 200.0, nil, nil, 100.0)
	want(t, "b's bytes out", values(t, c.read(chartTopic, "b"), metricBytesOut), nil, 50.0, nil, nil, 0.0)
	want(t, "node 2's bytes out", values(t, c.read(chartNode, "2"), metricBytesOut), nil, 250.0, nil, nil, 100.0)
	want(t, "node 1's bytes out", values(t, c.read(chartNode, "1"), metricBytesOut), nil, nil, nil, nil, nil)
}
