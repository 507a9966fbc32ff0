package replica

import (
	"context"
	"testing"
	"time"

	"github.com/runnel-io/runnel/internal/log/logtest"
	"github.com/runnel-io/runnel/internal/metadata"
)

// An append to a partition with followers wakes the followers' long polls
// (WatchLogEnd) and not the consumers' (Watch), whose high watermark has not moved;
// the high watermark moving wakes both, and NotifiedAt says when.
func TestAppendWakesOnlyFollowers(t *testing.T) {
	_, p := newTestPartition(t, []metadata.NodeID{1, 2}, 1)
	consumer, stopC := Watch([]*Partition{p})
	defer stopC()
	follower, stopF := WatchLogEnd([]*Partition{p})
	defer stopF()
	done := make(chan error, 1)
	go func() {
		_, err := p.AppendToLeader(context.Background(), logtest.Batch(5, 10), 1)
		done <- err
	}()
	select {
	case <-follower:
	case <-time.After(5 * time.Second):
		t.Fatal("a follower's long poll was not woken by the append")
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	select {
	case <-consumer:
		t.Fatalf("a consumer's long poll was woken by an append that left the high watermark at %d", p.HighWatermark())
	default:
	}
	before := time.Now().UnixNano()
	if err := p.RecordFollowerFetch(2, 5, -1, -1, time.Now()); err != nil {
		t.Fatal(err)
	}
	if hw := p.HighWatermark(); hw != 5 {
		t.Fatalf("high watermark %d after follower 2 fetched at 5", hw)
	}
	for name, ch := range map[string]<-chan struct{}{"consumer": consumer, "follower": follower} {
		select {
		case <-ch:
		default:
			t.Errorf("the %s's long poll was not woken by the high watermark moving", name)
		}
	}
	if at := p.NotifiedAt(); at < before {
		t.Errorf("NotifiedAt %d before the high watermark moved at %d", at, before)
	}
}
