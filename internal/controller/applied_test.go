package controller

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/runnel-io/runnel/internal/metadata"
)

// An admin change is waited for until every unfenced broker has reported it in a
// heartbeat; a fenced broker is not waited for; a timeout names the nodes behind.
func TestWaitBrokersApplied(t *testing.T) {
	c := startController(t, testConfig(t))
	epochs := map[metadata.NodeID]int64{}
	for i := 1; i <= 3; i++ {
		epochs[metadata.NodeID(i)] = registerLive(t, c, metadata.Broker{ID: metadata.NodeID(i), Host: "localhost", Port: int32(9091 + i)})
	}
	mustCreate(t, c, topicSpec("orders", 3, 3))
	offset := c.Image().Offset
	beat := func(id metadata.NodeID, at uint64) {
		t.Helper()
		if _, err := c.BrokerHeartbeat(testCtx(t), Heartbeat{ID: id, Epoch: epochs[id], MetadataOffset: at}); err != nil {
			t.Fatalf("heartbeat of %d: %v", id, err)
		}
	}

	short := func() context.Context {
		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		t.Cleanup(cancel)
		return ctx
	}
	beat(1, offset)
	beat(2, offset-1)
	err := c.WaitBrokersApplied(short(), offset)
	wantErr(t, "wait with nodes 2 and 3 behind", err, ErrTimeout)
	if !strings.Contains(err.Error(), "nodes [2 3] have not applied metadata offset") {
		t.Fatalf("timeout error %q does not name nodes 2 and 3", err)
	}

	done := make(chan error, 1)
	go func() { done <- c.WaitBrokersApplied(testCtx(t), offset) }()
	beat(2, offset)
	select {
	case err := <-done:
		t.Fatalf("wait returned %v while node 3 had not reported offset %d", err, offset)
	case <-time.After(50 * time.Millisecond):
	}
	beat(3, offset+5)
	select {
	case err := <-done:
		wantErr(t, "wait once every node reported", err, nil)
	case <-time.After(5 * time.Second):
		t.Fatal("wait did not return after every node reported the offset")
	}

	// A fenced broker no longer holds changes back.
	next := c.Image().Offset + 1
	beat(1, next)
	beat(2, next)
	c.proposeMu <- struct{}{}
	_, err = c.fenceLocked(testCtx(t), c.Image(), 3, "test")
	<-c.proposeMu
	wantErr(t, "fence node 3", err, nil)
	wantErr(t, "wait with node 3 fenced", c.WaitBrokersApplied(short(), next), nil)
}
