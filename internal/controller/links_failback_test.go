package controller

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"testing"

	"github.com/runnel-io/runnel/internal/metadata"
)

// TestFailbackRecords: fence makes a primary's topic a mirror topic of a new link
// that follows that topic only, read-only and failing back, its quarantine named;
// fenced again it stays as it was (same quarantine); a mirror topic still mirroring
// is refused; the cut records the divergence points, bumps every leader epoch in the
// same entry and makes the topic mirroring, and cut again changes nothing; a paused
// link is resumed by a fence. RecordPromoted keeps the first report of the current
// promote epoch only.
func TestFailbackRecords(t *testing.T) {
	c := startWithBrokers(t, 3)
	ctx := testCtx(t)
	for _, name := range []string{"orders", "other"} {
		if err := c.CreateTopics(ctx, []TopicSpec{{Name: name, NumPartitions: 2, ReplicationFactor: 2}}, false)[0]; err != nil {
			t.Fatal(err)
		}
	}
	newPrimary := metadata.Link{Name: "dr", Source: "b:9092"}
	ms, err := c.FenceFailback(ctx, newPrimary, []FailbackTopic{{Name: "orders", SourceTopicID: [16]byte{9}}})
	if err != nil || len(ms) != 1 {
		t.Fatalf("fence: %v %v", ms, err)
	}
	im := c.Image()
	m := im.MirrorOf("orders")
	if l := im.Link("dr"); l == nil || l.Source != "b:9092" || !slices.Equal(l.Topics, []string{"orders"}) {
		t.Fatalf("the link a fence creates: %+v, want source b:9092 following orders only", l)
	}
	if m == nil || m.State != metadata.MirrorFailingBack || m.Writable() || m.SourceTopicID != [16]byte{9} ||
		!regexp.MustCompile(`^orders\.quarantine\.[0-9]+$`).MatchString(m.Failback.Quarantine) || m.Failback.Cut() {
		t.Fatalf("fenced: %+v %+v", m, m.Failback)
	}
	quarantine := m.Failback.Quarantine
	if again, err := c.FenceFailback(ctx, newPrimary, []FailbackTopic{{Name: "orders"}}); err != nil || again[0].Failback.Quarantine != quarantine {
		t.Fatalf("fence again: %+v %v, want the same quarantine %s", again, err, quarantine)
	}
	before := c.Image().Topics["orders"].Partitions
	wantErr(t, "cut with too few partitions", cutErr(ctx, c, "dr", FailbackCutSpec{Topic: "orders", CutTo: []int64{5}, Quarantined: []int64{1}}), ErrInvalidRequest)
	cut := FailbackCutSpec{Topic: "orders", CutTo: []int64{5, 7}, Quarantined: []int64{1, 0}}
	if err := cutErr(ctx, c, "dr", cut); err != nil {
		t.Fatal(err)
	}
	im = c.Image()
	m = im.MirrorOf("orders")
	if m.State != metadata.MirrorMirroring || !m.Failback.Cut() {
		t.Fatalf("cut: %+v %+v", m, m.Failback)
	}
	for i, p := range im.Topics["orders"].Partitions {
		to, epoch, ok := im.FailbackCut(metadata.TopicPartition{Topic: "orders", Partition: int32(i)})
		if !ok || to != cut.CutTo[i] || epoch != p.LeaderEpoch || p.LeaderEpoch != before[i].LeaderEpoch+1 || p.Leader != before[i].Leader {
			t.Fatalf("partition %d after the cut: %+v (before %+v), cut (%d, %d, %v)", i, p, before[i], to, epoch, ok)
		}
	}
	if err := cutErr(ctx, c, "dr", FailbackCutSpec{Topic: "orders", CutTo: []int64{1, 1}, Quarantined: []int64{0, 0}}); err != nil ||
		c.Image().MirrorOf("orders").Failback.CutTo[0] != 5 {
		t.Fatalf("cut again: %v, cut to %v", err, c.Image().MirrorOf("orders").Failback.CutTo)
	}
	// A topic cut already is left as it is; another one widens the link's filters.
	_, err = c.FenceFailback(ctx, newPrimary, []FailbackTopic{{Name: "orders"}, {Name: "other"}})
	if err != nil {
		t.Fatalf("fence of a cut topic again: %v", err)
	}
	if l := c.Image().Link("dr"); !slices.Equal(l.Topics, []string{"orders", "other"}) || c.Image().MirrorOf("orders").State != metadata.MirrorMirroring {
		t.Fatalf("a second topic fenced: link filters %v (want widened to other), orders %s (want left mirroring)", l.Topics, c.Image().MirrorOf("orders").State)
	}
	// A topic mirroring is not a primary's: refused.
	if err := c.CreateLink(ctx, metadata.Link{Name: "up", Source: "c:9092", ReplicationFactor: 2}, []MirrorSpec{{Name: "mirrored", Partitions: 1}}); err != nil {
		t.Fatal(err)
	}
	_, err = c.FenceFailback(ctx, metadata.Link{Name: "up", Source: "c:9092"}, []FailbackTopic{{Name: "mirrored"}})
	wantErr(t, "fence of a mirroring topic", err, ErrInvalidRequest)
	// A paused link is resumed by a fence.
	if err := c.SetLinkPaused(ctx, "up", nil, true); err != nil {
		t.Fatal(err)
	}
	if _, err := c.PromoteMirrors(ctx, "up", nil); err != nil {
		t.Fatal(err)
	}
	if _, err := c.FenceFailback(ctx, metadata.Link{Name: "up", Source: "c:9092"}, []FailbackTopic{{Name: "mirrored"}}); err != nil {
		t.Fatal(err)
	}
	if l := c.Image().Link("up"); l.Paused {
		t.Fatalf("a paused link after a fence: %+v", l)
	}

	// RecordPromoted: only the current promote epoch, first report wins.
	if err := c.CreateLink(ctx, metadata.Link{Name: "rec", Source: "d:9092", ReplicationFactor: 2}, []MirrorSpec{{Name: "ledger", Partitions: 2}}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.PromoteMirrors(ctx, "rec", nil); err != nil {
		t.Fatal(err)
	}
	pe := c.Image().MirrorOf("ledger").PromoteEpochs
	reports := []PromotedPartition{
		{Partition: 0, PromoteEpoch: pe[0] - 1, MirroredEnd: 99, SourceEpoch: 9}, // stale
		{Partition: 1, PromoteEpoch: pe[1], MirroredEnd: 40, SourceEpoch: 3},
	}
	if err := c.RecordPromoted(ctx, "ledger", reports); err != nil {
		t.Fatal(err)
	}
	if err := c.RecordPromoted(ctx, "ledger", []PromotedPartition{{Partition: 1, PromoteEpoch: pe[1], MirroredEnd: 41, SourceEpoch: 4}}); err != nil {
		t.Fatal(err)
	}
	m = c.Image().MirrorOf("ledger")
	e0, _, ok0 := m.PromoteRecord(0)
	e1, s1, ok1 := m.PromoteRecord(1)
	if ok0 || !ok1 || e1 != 40 || s1 != 3 {
		t.Fatalf("promote records: partition 0 (%d, %v), partition 1 (%d, %d, %v); want none, then (40, 3)", e0, ok0, e1, s1, ok1)
	}
}

func cutErr(ctx context.Context, c *Controller, link string, cs FailbackCutSpec) error {
	_, err := c.CutFailback(ctx, link, []FailbackCutSpec{cs})
	if err != nil {
		return fmt.Errorf("cut of %s: %w", cs.Topic, err)
	}
	return nil
}
