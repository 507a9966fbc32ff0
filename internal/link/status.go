package link

import (
	"fmt"
	"strconv"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kerr"

	rlog "github.com/runnel-io/runnel/internal/log"
	"github.com/runnel-io/runnel/internal/metadata"
)

// list answers `link list` from the image.
func (a *Admin) list() Response {
	im := a.cfg.Image()
	var resp Response
	for _, name := range im.LinkNames() {
		l := im.Link(name)
		state := "active"
		if l.Paused {
			state = "paused"
		}
		resp.Links = append(resp.Links, LinkInfo{Link: name, Source: l.Source, State: state, MirrorTopics: len(im.MirrorsOf(name))})
	}
	return resp
}

// status answers `link status` for the mirror partitions of req.Link this node
// leads: the CLI asks every broker and merges the answers.
func (a *Admin) status(req Request) Response {
	im := a.cfg.Image()
	mirrors := im.MirrorsOf(req.Link)
	if im.Link(req.Link) == nil && len(mirrors) == 0 {
		return errorResponse(fmt.Errorf("%w: no link %q", kerr.InvalidRequest, req.Link))
	}
	live := a.cfg.Manager.stats()
	// The group offsets are synced by the active controller's node: each node answers
	// with what it synced, and the CLI keeps the latest of each.
	resp := Response{Groups: a.cfg.Manager.groupStatus(req.Link)}
	for _, m := range mirrors {
		t := im.Topics[m.Topic]
		for i, st := range t.Partitions {
			if st.Leader != a.cfg.Node {
				continue
			}
			tp := metadata.TopicPartition{Topic: m.Topic, Partition: int32(i)}
			if ps, ok := a.partitionStatus(im, m, tp, live); ok {
				resp.Partitions = append(resp.Partitions, ps)
			}
		}
	}
	return resp
}

func (a *Admin) partitionStatus(im *metadata.Image, m *metadata.MirrorTopic, tp metadata.TopicPartition, live map[metadata.TopicPartition]partStats) (PartitionStatus, bool) {
	p, err := a.cfg.Manager.replicas.Partition(tp)
	if err != nil {
		return PartitionStatus{}, false
	}
	epoch, leading, _, end, _ := p.MirrorEnds()
	if !leading {
		return PartitionStatus{}, false
	}
	ps := PartitionStatus{Topic: tp.Topic, Partition: tp.Partition, SourceEnd: -1, End: end, State: string(m.State),
		Error: m.Error, Leader: int32(a.cfg.Node), WritableFrom: -1}
	if st, ok := live[tp]; ok {
		ps.SourceEnd, ps.LagRecords, ps.LagSeconds = st.sourceEnd, st.lagRecords, st.lagSeconds
		if ps.Error == "" {
			ps.Error = st.err
		}
	}
	if promote, ok := im.PromoteEpoch(tp); ok {
		ps.WritableFrom = writableFrom(p.Log().EpochEntries(), promote, end)
		if epoch < promote {
			ps.State, ps.WritableFrom = "promoting", -1 // its leader has not taken the promote epoch yet
		}
	}
	return ps, true
}

// writableFrom is where a promoted partition's own writes start: the start of its
// first epoch at or above the promote epoch, or its log end when nothing was written
// since the promote.
func writableFrom(entries []rlog.EpochEntry, promote int32, end int64) int64 {
	for _, e := range entries {
		if e.Epoch >= promote {
			return e.StartOffset
		}
	}
	return end
}

// Collector exports the link metrics of INTERFACE.md for the partitions this node
// fetches: runnel_link_lag_records and runnel_link_lag_seconds{link,topic,partition},
// and runnel_link_bytes_total{link}, the bytes this node copied.
type Collector struct {
	m                      *Manager
	lagRecords, lagSeconds *prometheus.Desc
	bytes                  *prometheus.Desc
}

// NewCollector returns m's metrics.
func NewCollector(m *Manager) *Collector {
	labels := []string{"link", "topic", "partition"}
	return &Collector{m: m,
		lagRecords: prometheus.NewDesc("runnel_link_lag_records", "Per mirror partition led here: records on the source not yet on this cluster.", labels, nil),
		lagSeconds: prometheus.NewDesc("runnel_link_lag_seconds", "Per mirror partition led here: seconds this cluster is known behind the source (at least the time since the last successful fetch while the source is unreachable).", labels, nil),
		bytes:      prometheus.NewDesc("runnel_link_bytes_total", "Bytes of source batches this node appended to mirror partitions, per link.", []string{"link"}, nil),
	}
}

func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.lagRecords
	ch <- c.lagSeconds
	ch <- c.bytes
}

func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	for tp, st := range c.m.stats() {
		part := strconv.Itoa(int(tp.Partition))
		ch <- prometheus.MustNewConstMetric(c.lagRecords, prometheus.GaugeValue, float64(st.lagRecords), st.link, tp.Topic, part)
		ch <- prometheus.MustNewConstMetric(c.lagSeconds, prometheus.GaugeValue, st.lagSeconds, st.link, tp.Topic, part)
	}
	c.m.bytes.Range(func(k, v any) bool {
		ch <- prometheus.MustNewConstMetric(c.bytes, prometheus.CounterValue, float64(v.(interface{ Load() int64 }).Load()), k.(string))
		return true
	})
}
