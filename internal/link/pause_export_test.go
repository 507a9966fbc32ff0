package link

import (
	"testing"

	"github.com/runnel-io/runnel/internal/metadata"
)

// HoldWrite makes every mirror partition's write (an append of a fetch answer) call
// h as it begins, before it checks whether the partition stopped; the func h returns
// (if any) is called once the write is done or dropped. Until t ends.
func HoldWrite(t *testing.T, h func(tp metadata.TopicPartition) (after func())) {
	holdWrite.Store(&h)
	t.Cleanup(func() { holdWrite.Store(nil) })
}

// HoldImage makes every link manager call h as it begins to apply an image (a node
// reports an image applied only after), until t ends.
func HoldImage(t *testing.T, h func(im *metadata.Image)) {
	holdImage.Store(&h)
	t.Cleanup(func() { holdImage.Store(nil) })
}
