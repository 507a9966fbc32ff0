package mirror

import (
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// collector reads the workers' states at scrape time, so lag is as of the scrape
// (lag seconds grows while the target is paused, without any commit).
type collector struct{ m *Mirror }

var (
	labels      = []string{"name", "topic", "partition"}
	descLagRecs = prometheus.NewDesc("runnel_mirror_lag_records", "Source records not yet mirrored: source high watermark minus the next offset to mirror.", labels, nil)
	descLagSecs = prometheus.NewDesc("runnel_mirror_lag_seconds", "Age of the oldest source record not yet committed on the target (0 when caught up; an upper bound, to one fetch).", labels, nil)
	descRecords = prometheus.NewDesc("runnel_mirror_records_total", "Records committed on the target, over the partition's mirrored life.", labels, nil)
	descBytes   = prometheus.NewDesc("runnel_mirror_bytes_total", "Bytes (keys, values, headers) committed on the target.", labels, nil)
	descSkipped = prometheus.NewDesc("runnel_mirror_data_loss_records_total", "Source offsets lost before they were mirrored and skipped (--on-data-loss skip).", labels, nil)
	descLoops   = prometheus.NewDesc("runnel_mirror_loop_records_total", "Records not written because they had been on the target cluster already.", labels, nil)
	descDup     = prometheus.NewDesc("runnel_mirror_maybe_duplicated_records_total", "Records that may be on the target twice (--delivery at-least-once): written after the last committed position by an owner that then stopped, and written again.", labels, nil)
	descError   = prometheus.NewDesc("runnel_mirror_partition_error", "1 while the partition is stopped on an error (data loss, fenced), else 0.", labels, nil)
	descGroup   = prometheus.NewDesc("runnel_mirror_group_last_sync_timestamp_seconds", "When the group's offsets were last committed on the target.", []string{"name", "group"}, nil)
)

func (c *collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descLagRecs, descLagSecs, descRecords, descBytes, descSkipped, descLoops, descDup, descError, descGroup} {
		ch <- d
	}
}

func (c *collector) Collect(ch chan<- prometheus.Metric) {
	now := time.Now()
	for _, s := range c.m.Status(now) {
		lv := []string{c.m.cfg.Name, s.Topic, fmt.Sprint(s.Partition)}
		errv := 0.0
		if s.State == "error" {
			errv = 1
		}
		for _, v := range []struct {
			d *prometheus.Desc
			t prometheus.ValueType
			v float64
		}{{descLagRecs, prometheus.GaugeValue, float64(s.LagRecords)}, {descLagSecs, prometheus.GaugeValue, s.LagSeconds},
			{descRecords, prometheus.CounterValue, float64(s.Records)}, {descBytes, prometheus.CounterValue, float64(s.Bytes)},
			{descSkipped, prometheus.CounterValue, float64(s.Skipped)}, {descLoops, prometheus.CounterValue, float64(s.Loops)},
			{descDup, prometheus.CounterValue, float64(s.MaybeDuplicated)},
			{descError, prometheus.GaugeValue, errv}} {
			ch <- prometheus.MustNewConstMetric(v.d, v.t, v.v, lv...)
		}
	}
	if c.m.gsync != nil {
		for _, g := range c.m.gsync.statuses() {
			if g.LastSync > 0 {
				ch <- prometheus.MustNewConstMetric(descGroup, prometheus.GaugeValue, float64(g.LastSync)/1000, c.m.cfg.Name, g.Group)
			}
		}
	}
}

// Status returns the live state of every partition this process owns: the last
// committed state, with lag as of now.
func (m *Mirror) Status(now time.Time) []PartitionState {
	m.mu.Lock()
	ws := make([]*worker, 0, len(m.workers))
	for _, w := range m.workers {
		ws = append(ws, w)
	}
	m.mu.Unlock()
	out := make([]PartitionState, 0, len(ws))
	for _, w := range ws {
		w.mu.Lock()
		s := w.live
		s.Topic, s.Partition, s.TargetTopic = w.tp.Topic, w.tp.Partition, w.tgtTopic
		if w.hw >= 0 {
			s.SourceEnd = max(w.hw, s.Next)
			s.LagRecords = max(0, w.hw-s.Next)
			s.LagSeconds = lagSeconds(s.LagRecords, w.behindFrom, now)
		}
		w.mu.Unlock()
		out = append(out, s)
	}
	return out
}

// GroupStatuses returns the group sync state of this process.
func (m *Mirror) GroupStatuses() []GroupStatus {
	if m.gsync == nil {
		return nil
	}
	return m.gsync.statuses()
}
