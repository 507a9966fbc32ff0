package link_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/runnel-io/runnel/internal/link"
	"github.com/runnel-io/runnel/internal/metadata"
)

// TestLinkPauseStopsCopyAtOnce: once `link pause` answers, nothing more is copied,
// not even an answer the source gave before the pause. The destination's fetcher
// holds an answer with 5 new records until the pause is answered; the destination
// node's application of the pause is held until that answer's write is done (or 2 s
// passed). Then the pause must not answer before the node applied it (else the held
// answer lands after the pause answered), and the node must not append the held
// answer once it applied the pause. Resumed, the 5 records are copied.
func TestLinkPauseStopsCopyAtOnce(t *testing.T) {
	const topic = "held"
	var armed, imageHeld atomic.Bool
	held, release, written := make(chan struct{}), make(chan struct{}), make(chan struct{})
	link.HoldWrite(t, func(tp metadata.TopicPartition) func() {
		if tp.Topic != topic || !armed.CompareAndSwap(true, false) {
			return nil
		}
		close(held)
		<-release
		return func() { close(written) }
	})
	link.HoldImage(t, func(im *metadata.Image) {
		if l := im.Link("hp"); l == nil || !l.Paused || !imageHeld.CompareAndSwap(false, true) {
			return
		}
		select {
		case <-written:
		case <-time.After(2 * time.Second):
		}
	})

	src, dst := startNode(t), startNode(t)
	ctx := context.Background()
	sadm, dadm := src.Admin(t), dst.Admin(t)
	if _, err := sadm.CreateTopic(ctx, 1, 1, nil, topic); err != nil {
		t.Fatal(err)
	}
	p := src.Client(t, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	produceN(t, p, topic, 0, 0, 10)
	runCLI(t, "link", "create", "hp", "--source", src.Bootstrap(), "--topics", topic, "-b", dst.Bootstrap())
	awaitCaughtUp(t, sadm, dadm, topic)

	armed.Store(true)
	produceN(t, p, topic, 0, 10, 5)
	select {
	case <-held:
	case <-time.After(15 * time.Second):
		t.Fatal("the destination never fetched the 5 new records")
	}
	runCLI(t, "link", "pause", "hp", "-b", dst.Bootstrap())
	close(release)
	select {
	case <-written:
	case <-time.After(15 * time.Second):
		t.Fatal("the held write never ended")
	}
	if _, end := offsets(t, dadm, topic); end[0] != 10 {
		t.Fatalf("%s-0 on the destination ends at %d after link pause answered, want 10: records fetched before the pause were copied after it", topic, end[0])
	}
	if !imageHeld.Load() {
		t.Fatal("the destination never applied the pause")
	}

	runCLI(t, "link", "resume", "hp", "-b", dst.Bootstrap())
	awaitCaughtUp(t, sadm, dadm, topic)
}
