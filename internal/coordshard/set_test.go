package coordshard

import (
	"context"
	"sync/atomic"
	"testing"
	"testing/synctest"
)

// testShard records the context its Set created it with.
type testShard struct {
	id  int
	ctx context.Context
}

func newTestShard(id int) func(ctx context.Context) *testShard {
	return func(ctx context.Context) *testShard { return &testShard{id: id, ctx: ctx} }
}

func never(*testShard) bool { return false }

// waitDone is a load that runs until its shard is unloaded.
func waitDone(sh *testShard) { <-sh.ctx.Done() }

func TestUnloadCancelsAndRemoves(t *testing.T) {
	s := New[*testShard]()
	defer s.Close()
	if !s.Load(3, never, newTestShard(1), waitDone) {
		t.Fatal("Load on an open Set refused")
	}
	sh, ok := s.Get(3)
	if !ok || sh.id != 1 || sh.ctx.Err() != nil {
		t.Fatalf("Get(3) = %v, %v; want shard 1, not cancelled", sh, ok)
	}
	got, ok := s.Unload(3)
	if !ok || got != sh {
		t.Fatalf("Unload(3) = %v, %v; want shard 1", got, ok)
	}
	if sh.ctx.Err() == nil {
		t.Fatal("Unload did not cancel the shard's context")
	}
	if _, ok := s.Get(3); ok {
		t.Fatal("Get finds an unloaded shard")
	}
	if _, ok := s.Unload(3); ok {
		t.Fatal("a second Unload found a shard")
	}
}

func TestLoadKeepsCurrentAndReplacesStale(t *testing.T) {
	s := New[*testShard]()
	defer s.Close()
	s.Load(0, never, newTestShard(1), waitDone)
	first, _ := s.Get(0)
	keep := func(old *testShard) bool { return old.id == 1 }
	built := false
	if s.Load(0, keep, func(ctx context.Context) *testShard { built = true; return nil }, waitDone) {
		t.Fatal("Load replaced a shard current reported as current")
	}
	if built || first.ctx.Err() != nil {
		t.Fatalf("a refused Load built a shard (%v) or cancelled the current one (%v)", built, first.ctx.Err())
	}
	if !s.Load(0, never, newTestShard(2), waitDone) {
		t.Fatal("Load did not replace a stale shard")
	}
	if first.ctx.Err() == nil {
		t.Fatal("the replaced shard's context is not cancelled")
	}
	if sh, _ := s.Get(0); sh.id != 2 || sh.ctx.Err() != nil {
		t.Fatalf("Get(0) = shard %d (err %v); want shard 2, live", sh.id, sh.ctx.Err())
	}
	if n := len(s.All()); n != 1 {
		t.Fatalf("All has %d shards, want 1", n)
	}
}

func TestCloseCancelsLoadsAndWaitsForGoroutines(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := New[*testShard]()
		var loadsExited atomic.Int32
		for p := range int32(3) {
			s.Load(p, never, newTestShard(int(p)), func(sh *testShard) {
				<-sh.ctx.Done()
				loadsExited.Add(1)
			})
		}
		release := make(chan struct{})
		if !s.Go(func() { <-release }) {
			t.Fatal("Go on an open Set refused")
		}
		closed := make(chan struct{})
		go func() {
			s.Close()
			close(closed)
		}()
		synctest.Wait()
		select {
		case <-closed:
			t.Fatal("Close returned while a tracked goroutine was still running")
		default:
		}
		if n := loadsExited.Load(); n != 3 {
			t.Fatalf("%d of 3 loads saw their context end at Close", n)
		}
		select {
		case <-s.Done():
		default:
			t.Fatal("Done is not closed once Close has started")
		}
		close(release)
		<-closed
		if n := len(s.All()); n != 0 {
			t.Fatalf("%d shards left after Close", n)
		}
	})
}

func TestClosedSetRefuses(t *testing.T) {
	s := New[*testShard]()
	s.Close()
	s.Close() // idempotent: must neither panic (Done closed twice) nor block
	ran := false
	if s.Go(func() { ran = true }) {
		t.Fatal("Go after Close accepted")
	}
	if s.Load(0, never, func(ctx context.Context) *testShard { ran = true; return nil }, waitDone) {
		t.Fatal("Load after Close accepted")
	}
	if ran {
		t.Fatal("a refused Go or Load ran its function")
	}
	if _, ok := s.Get(0); ok {
		t.Fatal("a refused Load installed a shard")
	}
}
