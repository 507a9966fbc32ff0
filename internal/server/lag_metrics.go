package server

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/runnel-io/runnel/internal/group"
	"github.com/runnel-io/runnel/internal/metadata"
)

// lagTTL bounds how often a scrape recomputes the lags: each computation asks the
// leaders of partitions led elsewhere for their end offsets.
const lagTTL = 5 * time.Second

// lagTimeout bounds one computation (a scrape waits for it).
const lagTimeout = 5 * time.Second

// groupLagCollector is runnel_consumer_group_lag{group,topic,partition}: for every
// group this node coordinates (it holds the group's __consumer_offsets partition, so
// over the cluster each group is exported once), how far each committed offset is
// behind its partition's end offset (the high watermark, where a read_uncommitted
// consumer ends), as kafka-consumer-groups.sh --describe computes LAG. The end offset
// of a partition led here is the replica's; the others come from their leaders
// (ListOffsets through this node's listener, as the console asks), at most every
// lagTTL.
type groupLagCollector struct {
	n    *Node
	desc *prometheus.Desc

	mu      sync.Mutex
	at      time.Time
	samples []lagSample
}

type lagSample struct {
	group, topic string
	partition    int32
	lag          int64
}

func newGroupLagCollector(n *Node) *groupLagCollector {
	return &groupLagCollector{n: n, desc: prometheus.NewDesc("runnel_consumer_group_lag",
		"Offsets a consumer group's committed offset is behind its partition's end offset (high watermark), exported by the group's coordinator.",
		[]string{"group", "topic", "partition"}, nil)}
}

func (c *groupLagCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }

func (c *groupLagCollector) Collect(ch chan<- prometheus.Metric) {
	for _, s := range c.current() {
		ch <- prometheus.MustNewConstMetric(c.desc, prometheus.GaugeValue, float64(s.lag), s.group, s.topic, fmt.Sprint(s.partition))
	}
}

// current returns the lags, recomputed when older than lagTTL.
func (c *groupLagCollector) current() []lagSample {
	c.mu.Lock()
	defer c.mu.Unlock()
	if time.Since(c.at) < lagTTL {
		return c.samples
	}
	ctx, cancel := context.WithTimeout(context.Background(), lagTimeout)
	defer cancel()
	c.samples, c.at = c.compute(ctx), time.Now()
	return c.samples
}

func (c *groupLagCollector) compute(ctx context.Context) []lagSample {
	gc := c.n.groups
	if gc == nil {
		return nil
	}
	listed, err := gc.ListGroups(nil)
	if err != nil {
		return nil // loading: the next scrape
	}
	committed := map[string][]group.CommittedOffset{}
	remote := map[string]bool{} // topics with a partition led elsewhere
	ends := map[metadata.TopicPartition]int64{}
	for _, l := range listed {
		offs, err := gc.FetchOffsets(ctx, l.GroupID, nil)
		if err != nil {
			continue
		}
		for _, o := range offs {
			if o.Offset < 0 {
				continue
			}
			committed[l.GroupID] = append(committed[l.GroupID], o)
			tp := metadata.TopicPartition{Topic: o.Topic, Partition: o.Partition}
			if _, ok := ends[tp]; ok {
				continue
			}
			if p, err := c.n.replicas.Partition(tp); err == nil && p.IsLeader() {
				ends[tp] = p.HighWatermark()
			} else {
				remote[o.Topic] = true
			}
		}
	}
	if len(remote) > 0 {
		topics := make([]string, 0, len(remote))
		for t := range remote {
			topics = append(topics, t)
		}
		if adm, err := c.n.ownKafkaAdmin(); err == nil {
			listedEnds, _ := adm.ListEndOffsets(ctx, topics...)
			adm.Close()
			listedEnds.Each(func(o kadm.ListedOffset) {
				tp := metadata.TopicPartition{Topic: o.Topic, Partition: o.Partition}
				if _, ok := ends[tp]; !ok && o.Err == nil {
					ends[tp] = o.Offset
				}
			})
		}
	}
	var out []lagSample
	for g, offs := range committed {
		for _, o := range offs {
			end, ok := ends[metadata.TopicPartition{Topic: o.Topic, Partition: o.Partition}]
			if !ok {
				continue // its leader did not answer: no sample rather than a wrong one
			}
			out = append(out, lagSample{group: g, topic: o.Topic, partition: o.Partition, lag: max(end-o.Offset, 0)})
		}
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i], out[j]
		return a.group < b.group || a.group == b.group && (a.topic < b.topic || a.topic == b.topic && a.partition < b.partition)
	})
	return out
}
