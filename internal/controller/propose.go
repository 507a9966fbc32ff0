package controller

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"time"

	"github.com/hashicorp/raft"

	"github.com/runnel-io/runnel/internal/metadata"
)

// defaultProposeTimeout bounds a proposal whose context has no deadline.
const defaultProposeTimeout = 10 * time.Second

// withLeader runs fn under proposeMu with the latest image, on the leader only. fn
// proposes (or not) through proposeLocked.
func (c *Controller) withLeader(ctx context.Context, fn func(im *metadata.Image) error) error {
	select {
	case <-c.done:
		return ErrClosed
	default:
	}
	if !c.IsLeader() {
		return c.notController()
	}
	if err := c.lockPropose(ctx); err != nil {
		return err
	}
	defer c.unlockPropose()
	if err := c.ensureFreshLocked(ctx); err != nil {
		return err
	}
	return fn(c.Image())
}

// lockPropose takes proposeMu, or gives up when ctx ends or the controller closes.
func (c *Controller) lockPropose(ctx context.Context) error {
	select {
	case c.proposeMu <- struct{}{}:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("%w: waiting for the controller's earlier proposals: %w", ErrTimeout, ctx.Err())
	case <-c.done:
		return ErrClosed
	}
}

// unlockPropose releases proposeMu.
func (c *Controller) unlockPropose() { <-c.proposeMu }

func (c *Controller) notController() error {
	if id, ok := c.LeaderID(); ok {
		return fmt.Errorf("%w (the controller is node %d)", ErrNotController, id)
	}
	return fmt.Errorf("%w (no controller elected)", ErrNotController)
}

// proposeLocked commits recs as one Raft entry and waits until this node applied it.
// It returns the images just before and after the entry. On a timeout the entry may
// still commit later.
func (c *Controller) proposeLocked(ctx context.Context, recs []metadata.Record) (applyResult, error) {
	data, err := metadata.Encode(recs)
	if err != nil {
		return applyResult{}, fmt.Errorf("controller: encode records: %w", err)
	}
	f := c.raft.Apply(data, timeoutOf(ctx))
	if err := c.waitFuture(ctx, f); err != nil {
		return applyResult{}, err
	}
	res, ok := f.Response().(applyResult)
	if !ok {
		return applyResult{}, fmt.Errorf("controller: unexpected apply response %T", f.Response())
	}
	c.pushCommitIndex(ctx)
	return res, res.err
}

// pushCommitIndex makes the followers learn at once that the entry just applied is
// committed. hashicorp/raft tells a follower the leader's commit index only in its
// next AppendEntries (its heartbeats do not carry it), which an idle leader sends
// after a random 1-2x CommitTimeout; a Barrier appends an entry, so it is replicated
// at once and carries the new commit index, and every node applies the change about
// one round trip after this one. Nobody waits for the Barrier itself.
func (c *Controller) pushCommitIndex(ctx context.Context) {
	c.raft.Barrier(min(timeoutOf(ctx), commitTimeout))
}

// waitFuture waits for f, the context or Close.
//
// The helper goroutine is deliberately not in c.wg: hashicorp/raft (v1.7.3) does not
// answer every future by its shutdown. A committed entry waits in the buffered
// fsmMutateCh for runFSM, and runFSM returns on shutdown without answering what is
// still queued, and an entry still in applyCh is never answered either, so f.Error()
// can block for ever. Close must not wait for it without bound (CI hung 20 minutes in
// Close that way): it waits a while for c.futures to drain before Raft's shutdown
// (awaitFutures), and a goroutine whose future is still unanswered then is left
// behind, holding only f and errc.
func (c *Controller) waitFuture(ctx context.Context, f raft.Future) error {
	errc := make(chan error, 1)
	c.futures.Add(1)
	go func() {
		defer c.futures.Add(-1)
		errc <- f.Error()
	}()
	select {
	case err := <-errc:
		return c.raftError(err)
	case <-ctx.Done():
		return fmt.Errorf("%w: %w", ErrTimeout, ctx.Err())
	case <-c.done:
		return ErrClosed
	}
}

// raftError maps hashicorp/raft errors to this package's sentinels.
func (c *Controller) raftError(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, raft.ErrNotLeader), errors.Is(err, raft.ErrLeadershipLost),
		errors.Is(err, raft.ErrLeadershipTransferInProgress), errors.Is(err, raft.ErrAbortedByRestore):
		return fmt.Errorf("%w: %w", c.notController(), err)
	case errors.Is(err, raft.ErrRaftShutdown):
		return fmt.Errorf("%w: %w", ErrClosed, err)
	case errors.Is(err, raft.ErrEnqueueTimeout):
		return fmt.Errorf("%w: %w", ErrTimeout, err)
	}
	return fmt.Errorf("controller: %w", err)
}

// timeoutOf is the time left before ctx's deadline, or defaultProposeTimeout.
func timeoutOf(ctx context.Context) time.Duration {
	if d, ok := ctx.Deadline(); ok {
		return max(time.Until(d), time.Millisecond)
	}
	return defaultProposeTimeout
}

// newClusterID returns 16 random bytes in URL-safe base64 without padding (22
// characters), the shape of a Kafka cluster id.
func newClusterID() (string, error) {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("controller: cluster id: %w", err)
	}
	return base64.RawURLEncoding.EncodeToString(b[:]), nil
}

// newTopicID returns 16 random bytes, never all zero (Kafka's zero UUID means "none").
func newTopicID() ([16]byte, error) {
	var id [16]byte
	for id == [16]byte{} {
		if _, err := rand.Read(id[:]); err != nil {
			return id, fmt.Errorf("controller: topic id: %w", err)
		}
	}
	return id, nil
}
