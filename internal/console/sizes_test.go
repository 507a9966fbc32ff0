package console

import (
	"testing"
	"time"

	"github.com/runnel-io/runnel/internal/httpd"
	"github.com/runnel-io/runnel/internal/metadata"
)

// The reassignments' progress is the CLI's (runnel reassign status): copied is what
// the adding replicas hold, left what they lack of the leader's log, the rate the
// growth of copied between two samples, the ETA left at that rate; a partition whose
// leader did not answer takes its largest copy; the totals are null as soon as one
// partition's progress is unknown.
func TestMeasureReassignments(t *testing.T) {
	t0 := time.Unix(1_700_000_000, 0)
	sizes := func(m map[int32]int64) map[int32]int64 { return m }
	earlier := &reassignSample{at: t0, sizes: map[metadata.TopicPartition]map[int32]int64{
		{Topic: "a", Partition: 0}: sizes(map[int32]int64{1: 1000, 3: 200}),
		{Topic: "a", Partition: 1}: sizes(map[int32]int64{2: 500, 4: 500}),
	}}
	now := &reassignSample{at: t0.Add(2 * time.Second), sizes: map[metadata.TopicPartition]map[int32]int64{
		{Topic: "a", Partition: 0}: sizes(map[int32]int64{1: 1000, 3: 400}),
		// The leader (2) did not answer: its largest copy, 4's, is the target.
		{Topic: "a", Partition: 1}: sizes(map[int32]int64{4: 600, 5: 600}),
	}}
	out := &httpd.Reassignments{Reassignments: []httpd.Reassignment{
		{Topic: "a", Partition: 0, Leader: 1, Replicas: []int32{1, 2, 3}, Adding: []int32{3}},
		{Topic: "a", Partition: 1, Leader: 2, Replicas: []int32{2, 4, 5}, Adding: []int32{5}},
	}}
	measureReassignments(out, now, earlier)
	r0, r1 := out.Reassignments[0], out.Reassignments[1]
	if *r0.SizeBytes != 1000 || *r0.BytesCopied != 400 || *r0.BytesLeft != 600 || *r0.Rate != 100 || *r0.ETA != 6 {
		t.Errorf("a/0: size %d copied %d left %d rate %v eta %v; want 1000, 400, 600, 100/s, 6 s", *r0.SizeBytes, *r0.BytesCopied, *r0.BytesLeft, *r0.Rate, *r0.ETA)
	}
	if *r1.SizeBytes != 600 || *r1.BytesCopied != 600 || *r1.BytesLeft != 0 || *r1.Rate != 300 || *r1.ETA != 0 {
		t.Errorf("a/1: size %d copied %d left %d rate %v eta %v; want 600, 600, 0, 300/s, 0 s", *r1.SizeBytes, *r1.BytesCopied, *r1.BytesLeft, *r1.Rate, *r1.ETA)
	}
	if *out.BytesCopied != 1000 || *out.BytesLeft != 600 || *out.Rate != 400 || *out.ETA != 1.5 {
		t.Errorf("totals: copied %d left %d rate %v eta %v; want 1000, 600, 400/s, 1.5 s", *out.BytesCopied, *out.BytesLeft, *out.Rate, *out.ETA)
	}

	// One sample: no rate, so no ETA unless nothing is left; a partition nobody
	// answered for leaves the totals unknown.
	out = &httpd.Reassignments{Reassignments: []httpd.Reassignment{
		{Topic: "a", Partition: 0, Leader: 1, Replicas: []int32{1, 2, 3}, Adding: []int32{3}},
		{Topic: "b", Partition: 0, Leader: 1, Replicas: []int32{1, 2}, Adding: []int32{2}},
	}}
	measureReassignments(out, now, nil)
	if r := out.Reassignments[0]; r.Rate != nil || r.ETA != nil || *r.BytesLeft != 600 {
		t.Errorf("a/0 from one sample: rate %v eta %v left %v; want no rate, no ETA, 600 left", r.Rate, r.ETA, *r.BytesLeft)
	}
	if r := out.Reassignments[1]; r.SizeBytes != nil || out.BytesLeft != nil || out.ETA != nil {
		t.Errorf("b/0 unanswered: size %v, totals left %v eta %v; want all unknown", r.SizeBytes, out.BytesLeft, out.ETA)
	}
}
