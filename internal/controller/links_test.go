package controller

import (
	"testing"

	"github.com/runnel-io/runnel/internal/metadata"
)

// TestLinkLifecycle: a link is created with its mirror topics (the source's partition
// count and configs), pause and resume flip the mirror states, promote marks the
// topics promoted and bumps every partition's leader epoch in the same entry
// (PromoteEpochs name the new epochs), and a deleted link's mirror topics stay
// read-only, paused and still promotable.
func TestLinkLifecycle(t *testing.T) {
	c := startWithBrokers(t, 3)
	ctx := testCtx(t)
	link := metadata.Link{Name: "dr", Source: "src:9092", ReplicationFactor: 2}
	specs := []MirrorSpec{{Name: "orders", Partitions: 3, SourceTopicID: [16]byte{1}}, {Name: "payments", Partitions: 1}}
	if err := c.CreateLink(ctx, link, specs); err != nil {
		t.Fatal(err)
	}
	im := c.Image()
	if im.Link("dr") == nil || len(im.MirrorsOf("dr")) != 2 || len(im.Topics["orders"].Partitions) != 3 ||
		len(im.Topics["orders"].Partitions[0].Replicas) != 2 {
		t.Fatalf("after create: link %+v mirrors %d orders %+v", im.Link("dr"), len(im.MirrorsOf("dr")), im.Topics["orders"])
	}
	if m := im.MirrorOf("orders"); m.State != metadata.MirrorMirroring || m.SourceTopicID != [16]byte{1} || m.Writable() {
		t.Fatalf("orders mirror: %+v", m)
	}
	wantErr(t, "create again", c.CreateLink(ctx, link, nil), ErrInvalidRequest)
	wantErr(t, "internal topic", c.AddMirrorTopics(ctx, "dr", []MirrorSpec{{Name: "__consumer_offsets", Partitions: 1}}), ErrInvalidRequest)

	if err := c.SetLinkPaused(ctx, "dr", []string{"payments"}, true); err != nil {
		t.Fatal(err)
	}
	if s := c.Image().MirrorOf("payments").State; s != metadata.MirrorPaused {
		t.Fatalf("payments after pause: %s", s)
	}
	if s := c.Image().MirrorOf("orders").State; s != metadata.MirrorMirroring {
		t.Fatalf("orders after pausing payments: %s", s)
	}
	if err := c.SetLinkPaused(ctx, "dr", nil, false); err != nil {
		t.Fatal(err)
	}
	if s := c.Image().MirrorOf("payments").State; s != metadata.MirrorMirroring {
		t.Fatalf("payments after resume: %s", s)
	}

	before := c.Image().Topics["orders"].Partitions
	promoted, err := c.PromoteMirrors(ctx, "dr", []string{"orders"})
	if err != nil || len(promoted) != 1 {
		t.Fatalf("promote: %v %v", promoted, err)
	}
	im = c.Image()
	m := im.MirrorOf("orders")
	if !m.Writable() || len(m.PromoteEpochs) != 3 {
		t.Fatalf("orders after promote: %+v", m)
	}
	for i, p := range im.Topics["orders"].Partitions {
		if p.LeaderEpoch != before[i].LeaderEpoch+1 || m.PromoteEpochs[i] != p.LeaderEpoch || p.Leader != before[i].Leader {
			t.Fatalf("partition %d: %s before, %s after, promote epoch %d", i, describe(before[i]), describe(p), m.PromoteEpochs[i])
		}
		if e, ok := im.PromoteEpoch(metadata.TopicPartition{Topic: "orders", Partition: int32(i)}); !ok || e != p.LeaderEpoch {
			t.Fatalf("PromoteEpoch(orders-%d) = %d, %v", i, e, ok)
		}
	}
	if again, err := c.PromoteMirrors(ctx, "dr", []string{"orders"}); err != nil || len(again) != 0 {
		t.Fatalf("promote again: %v %v (want nothing newly promoted)", again, err)
	}

	if err := c.DeleteLink(ctx, "dr", false); err != nil {
		t.Fatal(err)
	}
	if m := c.Image().MirrorOf("payments"); c.Image().Link("dr") != nil || m.State != metadata.MirrorPaused {
		t.Fatalf("after delete: payments %+v", m)
	}
	if promoted, err := c.PromoteMirrors(ctx, "dr", nil); err != nil || len(promoted) != 1 || promoted[0] != "payments" {
		t.Fatalf("promote after delete: %v %v", promoted, err)
	}
}
