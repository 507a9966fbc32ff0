package console

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/runnel-io/runnel/internal/httpd"
	"github.com/runnel-io/runnel/internal/metadata"
	"github.com/runnel-io/runnel/internal/reassignprogress"
)

// Sizes, record counts and reassignment progress: DescribeLogDirs and ListOffsets
// through the node's own listener, as `runnel topic list` and `runnel reassign
// status` ask them.

// topicID is a topic id as Kafka and the CLI print it: URL-safe base64, no padding.
func topicID(id [16]byte) string { return base64.RawURLEncoding.EncodeToString(id[:]) }

// fillTopicSizes sets each listed topic's sizes, records and rates; what did not
// answer stays null and out.SizesError says why.
func (s *source) fillTopicSizes(ctx context.Context, v *view, out *httpd.Topics) {
	if len(out.Topics) == 0 {
		return
	}
	names := make([]string, len(out.Topics))
	for i, t := range out.Topics {
		names[i] = t.Name
	}
	adm, err := s.kafkaAdmin()
	if err != nil {
		out.SizesError = err.Error()
		return
	}
	defer adm.Close()
	ctx, cancel := context.WithTimeout(ctx, askTimeout)
	defer cancel()
	var sizes map[metadata.TopicPartition]partitionSize
	var starts, ends kadm.ListedOffsets
	var serr, lerr, eerr error
	var wg sync.WaitGroup
	wg.Go(func() { sizes, serr = logDirSizes(ctx, adm, v.im, names) })
	wg.Go(func() { starts, lerr = adm.ListStartOffsets(ctx, names...) })
	wg.Go(func() { ends, eerr = adm.ListEndOffsets(ctx, names...) })
	wg.Wait()
	if err := errors.Join(serr, lerr, eerr); err != nil {
		out.SizesError = err.Error()
	}
	bytesIn, recIn, recOut := s.charts.latest(chartTopic, metricBytesIn), s.charts.latest(chartTopic, metricRecordsIn), s.charts.latest(chartTopic, metricRecordsOut)
	bytesOut := s.charts.latest(chartTopic, metricBytesOut)
	for i := range out.Topics {
		ts := &out.Topics[i]
		t := v.im.Topic(ts.Name)
		if t == nil {
			continue
		}
		var size, onDisk, records int64
		sizeOK, recordsOK := true, true
		for p := range t.Partitions {
			tp := metadata.TopicPartition{Topic: t.Name, Partition: int32(p)}
			sz, ok := sizes[tp]
			sizeOK = sizeOK && ok && sz.leaderOK
			size, onDisk = size+sz.leader, onDisk+sz.all
			st, sok := starts.Lookup(t.Name, int32(p))
			en, eok := ends.Lookup(t.Name, int32(p))
			recordsOK = recordsOK && sok && eok && st.Err == nil && en.Err == nil
			records += max(en.Offset-st.Offset, 0)
		}
		if sizeOK {
			ts.SizeBytes, ts.SizeOnDiskBytes = &size, &onDisk
		}
		if recordsOK {
			ts.Records = &records
		}
		ts.BytesInPerSec, ts.RecordsInPerSec, ts.RecordsOutPerSec = rateOf(bytesIn, t.Name), rateOf(recIn, t.Name), rateOf(recOut, t.Name)
		ts.BytesOutPerSec = rateOf(bytesOut, t.Name)
	}
}

func rateOf(m map[string]float64, name string) *float64 {
	if v, ok := m[name]; ok {
		return &v
	}
	return nil
}

// reassignSample is the replicas' sizes of the partitions moving, when taken.
type reassignSample struct {
	at    time.Time
	sizes map[metadata.TopicPartition]map[int32]int64
}

// reassignRateWindow is how old the previous sample of the reassignments page may be
// for its rate: older, the page takes a second sample reassignInterval after its
// first, as `runnel reassign status` does with its default --interval.
const (
	reassignRateWindow = time.Minute
	reassignInterval   = time.Second
)

// fillReassignProgress measures the reassignments of out as `runnel reassign status`
// does (both through reassignprogress): per partition, the leader's log size, what
// the adding replicas hold (copied) and lack (left), the rate at which copied grew
// since the previous sample and the ETA at that rate.
func (s *source) fillReassignProgress(ctx context.Context, out *httpd.Reassignments) {
	if len(out.Reassignments) == 0 {
		return
	}
	set := kadm.TopicsSet{}
	for _, r := range out.Reassignments {
		set.Add(r.Topic, r.Partition)
	}
	adm, err := s.kafkaAdmin()
	if err != nil {
		out.SizesError = err.Error()
		return
	}
	defer adm.Close()
	sample := func() (*reassignSample, error) {
		sctx, cancel := context.WithTimeout(ctx, askTimeout)
		defer cancel()
		sizes, err := replicaSizes(sctx, adm, set)
		return &reassignSample{at: time.Now(), sizes: sizes}, err
	}
	now, err := sample()
	s.reassignMu.Lock()
	prev := s.reassignPrev
	s.reassignMu.Unlock()
	if prev == nil || now.at.Sub(prev.at) > reassignRateWindow {
		select {
		case <-ctx.Done():
		case <-time.After(reassignInterval):
			prev = now
			now, err = sample()
		}
	}
	if err != nil {
		out.SizesError = fmt.Sprintf("describing the log dirs: %v (a node that did not answer counts as holding nothing yet)", err)
	}
	s.reassignMu.Lock()
	s.reassignPrev = now
	s.reassignMu.Unlock()
	measureReassignments(out, now, prev)
}

// measureReassignments sets each partition's progress from now and, for the rate,
// an earlier sample (nil or the same: none), then the totals.
func measureReassignments(out *httpd.Reassignments, now, earlier *reassignSample) {
	var dt time.Duration
	if earlier != nil && now.at.After(earlier.at) {
		dt = now.at.Sub(earlier.at)
	}
	var copied, left int64
	var rate float64
	known := true
	for i := range out.Reassignments {
		r := &out.Reassignments[i]
		tp := metadata.TopicPartition{Topic: r.Topic, Partition: r.Partition}
		var before map[int32]int64
		if earlier != nil {
			before = earlier.sizes[tp]
		}
		p, ok := reassignprogress.Measure(r.Leader, r.Replicas, r.Adding, now.sizes[tp], before, dt)
		if !ok {
			known = false
			continue
		}
		r.SizeBytes, r.BytesCopied, r.BytesLeft = &p.Size, &p.Copied, &p.Left
		if p.HasRate {
			r.Rate = &p.Rate
			rate += p.Rate
		}
		r.ETA = eta(p.Left, r.Rate)
		copied, left = copied+p.Copied, left+p.Left
	}
	if !known {
		return
	}
	out.BytesCopied, out.BytesLeft = &copied, &left
	if dt > 0 {
		out.Rate = &rate
	}
	out.ETA = eta(left, out.Rate)
}

// eta is left bytes at rate in seconds: 0 when nothing is left, null when no
// progress was measured.
func eta(left int64, rate *float64) *float64 {
	var r float64
	if rate != nil {
		r = *rate
	}
	e, ok := reassignprogress.ETA(left, r)
	if !ok {
		return nil
	}
	return &e
}
