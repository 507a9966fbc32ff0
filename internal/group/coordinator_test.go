package group

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/runnel-io/runnel/internal/recordbatch"
)

// memLog is an in-memory PartitionLog: appends stamp offsets like a leader, and the
// high watermark follows the log end unless held back.
type memLog struct {
	mu      sync.Mutex
	batches [][]byte
	leo     int64
	// hwLag holds the high watermark that many offsets behind the log end.
	hwLag int64
	// failNext makes the next appends fail.
	failNext []error
	appends  int
}

func (l *memLog) Append(ctx context.Context, batches []byte) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.appends++
	if len(l.failNext) > 0 {
		err := l.failNext[0]
		l.failNext = l.failNext[1:]
		return err
	}
	for len(batches) > 0 {
		b, rest, err := recordbatch.Next(batches, 0)
		if err != nil {
			return err
		}
		if err := b.Verify(); err != nil {
			return err
		}
		c := append([]byte(nil), b...)
		recordbatch.Batch(c).SetBaseOffset(l.leo)
		l.leo += int64(b.LastOffsetDelta()) + 1
		l.batches = append(l.batches, c)
		batches = rest
	}
	return nil
}

func (l *memLog) Offsets() (int64, int64, int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return 0, l.leo - l.hwLag, l.leo
}

func (l *memLog) Read(dst []byte, offset int64, maxBytes int32) ([]byte, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	hw := l.leo - l.hwLag
	for _, b := range l.batches {
		bb := recordbatch.Batch(b)
		if bb.BaseOffset() < offset || bb.NextOffset() > hw {
			continue
		}
		if len(dst) > 0 && len(dst)+len(b) > int(maxBytes) {
			break
		}
		dst = append(dst, b...)
	}
	return dst, nil
}

func (l *memLog) setHWLag(n int64) {
	l.mu.Lock()
	l.hwLag = n
	l.mu.Unlock()
}

func testCoordinator(t *testing.T) *Coordinator {
	c := NewCoordinator(Config{NumPartitions: 1, InitialRebalanceDelay: 3 * time.Second, Logger: slog.New(slog.DiscardHandler)})
	t.Cleanup(func() { c.Close() })
	return c
}

// waitLoaded waits (in the bubble's virtual time) until partition 0 serves requests.
func waitLoaded(t *testing.T, c *Coordinator) {
	t.Helper()
	for i := 0; i < 100; i++ {
		if _, err := c.shardFor("x"); err == nil {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatal("partition 0 never loaded")
}

func joinReq(client, member string) JoinRequest {
	r := consumerJoin(client)
	r.MemberID = member
	return r
}

// joinAll joins the clients concurrently and returns their results in order.
func joinAll(c *Coordinator, reqs ...JoinRequest) []JoinResult {
	out := make([]JoinResult, len(reqs))
	var wg sync.WaitGroup
	for i, r := range reqs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			out[i] = c.Join(context.Background(), r)
		}()
	}
	wg.Wait()
	return out
}

// syncAllCoord syncs every member (leader assigning "a:<id>") concurrently.
func syncAllCoord(t *testing.T, c *Coordinator, res []JoinResult) {
	t.Helper()
	var wg sync.WaitGroup
	for _, r := range res {
		req := SyncRequest{GroupID: "g", MemberID: r.MemberID, Generation: r.Generation}
		if r.LeaderID == r.MemberID {
			for _, m := range r.Members {
				req.Assignments = append(req.Assignments, Assignment{MemberID: m.MemberID, Assignment: []byte("a:" + m.MemberID)})
			}
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			s := c.Sync(context.Background(), req)
			if s.Err != nil || string(s.Assignment) != "a:"+req.MemberID {
				t.Errorf("sync of %s: %+v", req.MemberID, s)
			}
		}()
	}
	wg.Wait()
}

func TestCoordinatorRebalanceCommitAndReload(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := testCoordinator(t)
		log := &memLog{}
		c.Load(0, log, "first", 1)
		waitLoaded(t, c)
		start := time.Now()
		res := joinAll(c, joinReq("a", ""), joinReq("b", ""))
		if took := time.Since(start); took < 3*time.Second {
			t.Fatalf("a new group's first rebalance took %v, less than the initial delay", took)
		}
		for _, r := range res {
			if r.Err != nil || r.Generation != 1 {
				t.Fatalf("join: %+v", r)
			}
		}
		syncAllCoord(t, c, res)
		errs := c.CommitOffsets(context.Background(), CommitRequest{GroupID: "g", MemberID: res[0].MemberID, Generation: 1,
			Offsets: []OffsetCommit{{Topic: "t", Partition: 0, Offset: 10}, {Topic: "t", Partition: 1, Offset: 20}}})
		if errs[0] != nil || errs[1] != nil {
			t.Fatalf("commit: %v", errs)
		}
		// Move the coordinator: unload, then load the same log as a new leader.
		c.Unload(0)
		if _, err := c.FetchOffsets(context.Background(), "g", nil); !errors.Is(err, ErrNotCoordinator) {
			t.Fatalf("fetch after unload: %v", err)
		}
		c.Load(0, log, "second", 2)
		waitLoaded(t, c)
		got, err := c.FetchOffsets(context.Background(), "g", []TopicPartition{{"t", 1}, {"t", 0}, {"t", 2}})
		if err != nil || got[0].Offset != 20 || got[1].Offset != 10 || got[2].Offset != -1 {
			t.Fatalf("offsets after reload: %+v %v", got, err)
		}
		// Members carry on in their generation without rejoining.
		for _, r := range res {
			if err := c.Heartbeat(context.Background(), HeartbeatRequest{GroupID: "g", MemberID: r.MemberID, Generation: 1}); err != nil {
				t.Fatalf("heartbeat after reload: %v", err)
			}
		}
		d, err := c.DescribeGroup(context.Background(), "g")
		if err != nil || d.State != "Stable" || len(d.Members) != 2 || d.Protocol != "range" {
			t.Fatalf("describe after reload: %+v %v", d, err)
		}
	})
}

func TestCoordinatorSessionTimeoutRebalances(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := testCoordinator(t)
		c.Load(0, &memLog{}, "l", 1)
		waitLoaded(t, c)
		res := joinAll(c, joinReq("a", ""), joinReq("b", ""))
		syncAllCoord(t, c, res)
		// a heartbeats, b crashed.
		var hbErr error
		for i := 0; i < 4 && hbErr == nil; i++ {
			time.Sleep(3 * time.Second)
			hbErr = c.Heartbeat(context.Background(), HeartbeatRequest{GroupID: "g", MemberID: res[0].MemberID, Generation: 1})
		}
		if !errors.Is(hbErr, ErrRebalanceInProgress) {
			t.Fatalf("after b's session expired, a's heartbeat: %v", hbErr)
		}
		r := c.Join(context.Background(), joinReq("a", res[0].MemberID))
		if r.Err != nil || r.Generation != 2 || len(r.Members) != 1 {
			t.Fatalf("rejoin: %+v", r)
		}
	})
}

func TestCoordinatorErrors(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := testCoordinator(t)
		if r := c.Join(context.Background(), joinReq("a", "")); !errors.Is(r.Err, ErrNotCoordinator) {
			t.Fatalf("join without the partition: %+v", r)
		}
		if r := c.Join(context.Background(), JoinRequest{}); !errors.Is(r.Err, ErrInvalidGroupID) {
			t.Fatalf("empty group id: %+v", r)
		}
		log := &memLog{}
		log.Append(context.Background(), encodeWrites([]write{{records: []kv{{key: groupMetadataKey("z")}}}}))
		log.setHWLag(1) // the previous leader's last record is not replicated yet
		c.Load(0, log, "l", 1)
		time.Sleep(time.Second)
		if err := c.Heartbeat(context.Background(), HeartbeatRequest{GroupID: "g"}); !errors.Is(err, ErrCoordinatorLoadInProgress) {
			t.Fatalf("while loading: %v", err)
		}
		if _, err := c.ListGroups(nil); !errors.Is(err, ErrCoordinatorLoadInProgress) {
			t.Fatalf("list while loading: %v", err)
		}
		log.setHWLag(0)
		waitLoaded(t, c)
		if err := c.Heartbeat(context.Background(), HeartbeatRequest{GroupID: "g", MemberID: "m"}); !errors.Is(err, ErrUnknownMemberID) {
			t.Fatalf("heartbeat to an unknown group: %v", err)
		}
		if errs := c.CommitOffsets(context.Background(), CommitRequest{GroupID: "g", MemberID: "m", Generation: 3, Offsets: []OffsetCommit{{Topic: "t"}}}); !errors.Is(errs[0], ErrIllegalGeneration) {
			t.Fatalf("member commit to an unknown group: %v", errs)
		}
		if err := c.DeleteGroup(context.Background(), "g"); !errors.Is(err, ErrGroupIDNotFound) {
			t.Fatalf("delete unknown: %v", err)
		}
		if d, err := c.DescribeGroup(context.Background(), "g"); !errors.Is(err, ErrGroupIDNotFound) || d.State != "Dead" {
			t.Fatalf("describe unknown: %+v %v", d, err)
		}
		// A join waiting in the join phase is answered NOT_COORDINATOR when the
		// partition moves away.
		done := make(chan JoinResult)
		go func() { done <- c.Join(context.Background(), joinReq("a", "")) }()
		time.Sleep(time.Second)
		c.Unload(0)
		if r := <-done; !errors.Is(r.Err, ErrNotCoordinator) {
			t.Fatalf("join during unload: %+v", r)
		}
	})
}

func TestCoordinatorCommitFailuresAndEmptyGroupRemoval(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := testCoordinator(t)
		log := &memLog{}
		c.Load(0, log, "l", 1)
		waitLoaded(t, c)
		log.mu.Lock()
		log.failNext = []error{context.DeadlineExceeded}
		log.mu.Unlock()
		errs := c.CommitOffsets(context.Background(), CommitRequest{GroupID: "s", Generation: -1, Offsets: []OffsetCommit{{Topic: "t", Offset: 1}}})
		if !errors.Is(errs[0], ErrCoordinatorNotAvailable) {
			t.Fatalf("failed append: %v", errs)
		}
		errs = c.CommitOffsets(context.Background(), CommitRequest{GroupID: "s", Generation: -1, Offsets: []OffsetCommit{{Topic: "t", Offset: 2}}})
		if errs[0] != nil {
			t.Fatal(errs)
		}
		r := c.Join(context.Background(), joinReq("a", ""))
		syncAllCoord(t, c, []JoinResult{r})
		if l, err := c.ListGroups([]string{"stable"}); err != nil || len(l) != 1 || l[0].GroupID != "g" {
			t.Fatalf("list stable: %+v %v", l, err)
		}
		if l, _ := c.ListGroups(nil); len(l) != 2 {
			t.Fatalf("list all: %+v", l)
		}
		if errs, err := c.Leave(context.Background(), "g", []LeaveMember{{MemberID: r.MemberID}}); err != nil || errs[0] != nil {
			t.Fatalf("leave: %v %v", errs, err)
		}
		// g is empty, has no offsets: it is tombstoned and dropped.
		time.Sleep(time.Second)
		if l, _ := c.ListGroups(nil); len(l) != 1 || l[0].GroupID != "s" {
			t.Fatalf("after g emptied: %+v", l)
		}
		if err := c.DeleteGroup(context.Background(), "s"); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Second)
		// Reload: both groups are gone for good.
		c.Unload(0)
		c.Load(0, log, "again", 2)
		waitLoaded(t, c)
		if l, _ := c.ListGroups(nil); len(l) != 0 {
			t.Fatalf("after reload: %+v", l)
		}
		if o, _ := c.FetchOffsets(context.Background(), "s", []TopicPartition{{"t", 0}}); o[0].Offset != -1 {
			t.Fatalf("deleted group's offsets came back: %+v", o)
		}
	})
}

func TestCoordinatorStaticRestartAcrossReload(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := testCoordinator(t)
		log := &memLog{}
		c.Load(0, log, "l", 1)
		waitLoaded(t, c)
		a, b := staticJoin("a", "ia"), staticJoin("b", "ib")
		res := joinAll(c, a, b)
		syncAllCoord(t, c, res)
		c.Unload(0)
		c.Load(0, log, "l2", 2)
		waitLoaded(t, c)
		r := c.Join(context.Background(), b) // b restarts after the coordinator moved
		if r.Err != nil || r.Generation != 1 || r.MemberID == res[1].MemberID {
			t.Fatalf("static restart: %+v", r)
		}
		s := c.Sync(context.Background(), SyncRequest{GroupID: "g", MemberID: r.MemberID, InstanceID: b.InstanceID, Generation: 1})
		if s.Err != nil || string(s.Assignment) != "a:"+res[1].MemberID {
			t.Fatalf("static member keeps its assignment: %+v", s)
		}
		if err := c.Heartbeat(context.Background(), HeartbeatRequest{GroupID: "g", MemberID: res[1].MemberID, InstanceID: b.InstanceID, Generation: 1}); !errors.Is(err, ErrFencedInstanceID) {
			t.Fatalf("old instance: %v", err)
		}
	})
}

func TestCoordinatorCloseStopsEverything(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := NewCoordinator(Config{NumPartitions: 4, Logger: slog.New(slog.DiscardHandler)})
		for p := int32(0); p < 4; p++ {
			c.Load(p, &memLog{}, p, 1)
		}
		time.Sleep(100 * time.Millisecond)
		var wg sync.WaitGroup
		for _, id := range []string{"g1", "g2", "g3", "g4", "g5"} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				r := consumerJoin("c")
				r.GroupID = id
				c.Join(context.Background(), r)
			}()
		}
		time.Sleep(time.Second) // in their initial delay
		c.Close()
		wg.Wait()
		// synctest.Test fails if any goroutine of the coordinator is left.
	})
}
