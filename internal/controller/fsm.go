package controller

import (
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"

	"github.com/hashicorp/raft"

	"github.com/runnel-io/runnel/internal/metadata"
)

// fsm is the Raft state machine: the metadata image, rebuilt by applying each
// committed entry (a JSON []metadata.Record) in log order.
//
// Raft calls Apply, Snapshot and Restore from one goroutine; readers load image
// without locks.
type fsm struct {
	log *slog.Logger
	// image is the latest applied image, never nil. Its Offset only grows, except
	// when Restore installs an older snapshot (never happens in hashicorp/raft: it
	// only restores snapshots newer than the applied index).
	image atomic.Pointer[metadata.Image]

	mu sync.Mutex // guards changedCh
	// changedCh is closed and replaced each time image changes, to wake waiters.
	changedCh chan struct{}
}

// applyResult is what fsm.Apply returns to the proposer through
// ApplyFuture.Response: the images just before and just after this entry, so the
// proposer can see exactly what its records did (a record that no longer applied
// because of a concurrent change is ignored by Image.Apply).
type applyResult struct {
	prev, cur *metadata.Image
	err       error
}

func newFSM(log *slog.Logger) *fsm {
	f := &fsm{log: log, changedCh: make(chan struct{})}
	f.image.Store(metadata.Empty())
	return f
}

// changed returns a channel closed at the next image change. Load the image after
// calling it, so that no change is missed.
func (f *fsm) changed() <-chan struct{} {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.changedCh
}

func (f *fsm) publish(im *metadata.Image) {
	f.image.Store(im)
	f.mu.Lock()
	close(f.changedCh)
	f.changedCh = make(chan struct{})
	f.mu.Unlock()
}

// Apply implements raft.FSM. An entry that does not decode still advances the
// image's Offset, so that waiters on that offset return; its error goes back to the
// proposer and to the log.
func (f *fsm) Apply(l *raft.Log) any {
	prev := f.image.Load()
	recs, err := metadata.Decode(l.Data)
	if err != nil {
		f.log.Error("skipping undecodable metadata entry", "index", l.Index, "err", err)
		next := *prev
		next.Offset = l.Index
		f.publish(&next)
		return applyResult{prev: prev, cur: &next, err: err}
	}
	cur := prev
	for _, r := range recs {
		cur = cur.Apply(r, l.Index)
	}
	if len(recs) == 0 {
		next := *prev
		next.Offset = l.Index
		cur = &next
	}
	f.publish(cur)
	return applyResult{prev: prev, cur: cur}
}

// Snapshot implements raft.FSM: the image is immutable, so capturing the pointer is
// the whole snapshot.
func (f *fsm) Snapshot() (raft.FSMSnapshot, error) {
	return imageSnapshot{f.image.Load()}, nil
}

// Restore implements raft.FSM: it replaces the image with the snapshot's.
func (f *fsm) Restore(rc io.ReadCloser) error {
	defer rc.Close()
	im, err := decodeImage(rc)
	if err != nil {
		return err
	}
	f.publish(im)
	return nil
}

// decodeImage reads an image written by imageSnapshot.Persist. Maps the JSON left
// out come back empty, not nil, as in metadata.Empty.
func decodeImage(r io.Reader) (*metadata.Image, error) {
	im := metadata.Empty()
	if err := json.NewDecoder(r).Decode(im); err != nil {
		return nil, fmt.Errorf("restore metadata snapshot: %w", err)
	}
	if im.Brokers == nil {
		im.Brokers = map[metadata.NodeID]metadata.Broker{}
	}
	if im.Topics == nil {
		im.Topics = map[string]*metadata.Topic{}
	}
	if im.Configs == nil {
		im.Configs = map[string]string{}
	}
	return im, nil
}

// imageSnapshot is one image, written as JSON.
type imageSnapshot struct{ im *metadata.Image }

// Persist implements raft.FSMSnapshot.
func (s imageSnapshot) Persist(sink raft.SnapshotSink) error {
	if err := json.NewEncoder(sink).Encode(s.im); err != nil {
		sink.Cancel()
		return fmt.Errorf("persist metadata snapshot: %w", err)
	}
	return sink.Close()
}

// Release implements raft.FSMSnapshot.
func (imageSnapshot) Release() {}
