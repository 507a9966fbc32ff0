package replica

import (
	"context"
	"log/slog"
	"testing"
	"testing/synctest"
	"time"

	"github.com/runnel-io/runnel/internal/liveness"
	"github.com/runnel-io/runnel/internal/metadata"
)

// leadershipImage is a cluster of nodes 1-3 (self is 1) whose one partition t-0 is
// led by leader at epoch 5; fenced lists fenced nodes.
func leadershipImage(leader metadata.NodeID, epoch int32, fenced ...metadata.NodeID) *metadata.Image {
	im := metadata.Empty()
	for id := metadata.NodeID(1); id <= 3; id++ {
		im.Brokers[id] = metadata.Broker{ID: id, Host: "node", Port: 9000 + int32(id), Epoch: 10}
	}
	for _, id := range fenced {
		b := im.Brokers[id]
		b.Fenced = true
		im.Brokers[id] = b
	}
	im.Topics["t"] = &metadata.Topic{Name: "t", Partitions: []metadata.Partition{
		{Replicas: []metadata.NodeID{1, 2, 3}, ISR: []metadata.NodeID{1, 2, 3}, Leader: leader, LeaderEpoch: epoch},
	}}
	return im
}

var t0 = metadata.TopicPartition{Topic: "t", Partition: 0}

// TestLeadershipRule is the rule every leadership wait follows, in one table: which
// leader is probed, which verdicts start a wait, and which image ends it. Each case
// applies `then` 100 ms after the call (nil: never) and checks how long the call took
// in virtual time and what it answered: the new leader's image when it came, the
// starting one, or (after the session timeout of 30 s) whatever is applied then.
func TestLeadershipRule(t *testing.T) {
	const session = 30 * time.Second
	type call func(ctx context.Context, l *Leadership, im *metadata.Image) (moved bool)
	liveLeaders := func(ctx context.Context, l *Leadership, im *metadata.Image) bool {
		p, _ := im.Partition(t0)
		return l.LiveLeaders(ctx, im, []metadata.NodeID{p.Leader}) != im
	}
	answering := func(ctx context.Context, l *Leadership, im *metadata.Image) bool {
		return l.AnsweringLeader(ctx, im, t0) != im
	}
	leaderMove := func(ctx context.Context, l *Leadership, _ *metadata.Image) bool { return l.LeaderMove(ctx, t0) }
	partitionChange := func(ctx context.Context, l *Leadership, _ *metadata.Image) bool {
		return l.PartitionChange(ctx, t0, time.Second)
	}
	for _, tc := range []struct {
		name    string
		call    call
		noProbe bool
		verdict liveness.Verdict // of node 2, the leader in most cases
		start   *metadata.Image
		then    *metadata.Image
		moved   bool
		took    time.Duration
		probes  int
	}{
		// Metadata: a leader whose process is gone is held until fenced.
		{name: "metadata/leader answers", call: liveLeaders, verdict: liveness.Answered, start: leadershipImage(2, 5), probes: 1},
		{name: "metadata/leader silent is not gone", call: liveLeaders, verdict: liveness.Silent, start: leadershipImage(2, 5), probes: 1},
		{name: "metadata/leader gone, then fenced", call: liveLeaders, verdict: liveness.Gone, start: leadershipImage(2, 5),
			then: leadershipImage(3, 6, 2), moved: true, took: 100 * time.Millisecond, probes: 1},
		{name: "metadata/leader gone, never fenced", call: liveLeaders, verdict: liveness.Gone, start: leadershipImage(2, 5),
			took: session, probes: 1},
		{name: "metadata/leader is this node", call: liveLeaders, verdict: liveness.Gone, start: leadershipImage(1, 5)},
		{name: "metadata/leader fenced already", call: liveLeaders, verdict: liveness.Gone, start: leadershipImage(2, 5, 2)},
		{name: "metadata/no probe", call: liveLeaders, noProbe: true, start: leadershipImage(2, 5)},

		// FindCoordinator: a silent coordinator is held too.
		{name: "coordinator/answers", call: answering, verdict: liveness.Answered, start: leadershipImage(2, 5), probes: 1},
		{name: "coordinator/silent, then moved", call: answering, verdict: liveness.Silent, start: leadershipImage(2, 5),
			then: leadershipImage(3, 6), moved: true, took: 100 * time.Millisecond, probes: 1},
		{name: "coordinator/gone, never moved", call: answering, verdict: liveness.Gone, start: leadershipImage(2, 5),
			took: session, probes: 1},
		{name: "coordinator/offline partition", call: answering, verdict: liveness.Gone, start: leadershipImage(metadata.NoLeader, 5)},

		// Produce refused NOT_LEADER: wait for a new leader while the old one is gone.
		{name: "produce/leader answers", call: leaderMove, verdict: liveness.Answered, start: leadershipImage(2, 5), probes: 1},
		{name: "produce/leader gone, then moved", call: leaderMove, verdict: liveness.Gone, start: leadershipImage(2, 5),
			then: leadershipImage(1, 6), moved: true, took: 100 * time.Millisecond, probes: 1},
		{name: "produce/leader fenced, not probed", call: leaderMove, verdict: liveness.Answered, start: leadershipImage(2, 5, 2),
			then: leadershipImage(1, 6, 2), moved: true, took: 100 * time.Millisecond},
		{name: "produce/no leader, then one", call: leaderMove, verdict: liveness.Answered, start: leadershipImage(metadata.NoLeader, 5),
			then: leadershipImage(3, 6), moved: true, took: 100 * time.Millisecond},
		{name: "produce/no leader, still none", call: leaderMove, verdict: liveness.Answered, start: leadershipImage(metadata.NoLeader, 5),
			then: leadershipImage(metadata.NoLeader, 6), took: session},
		{name: "produce/this node leads", call: leaderMove, verdict: liveness.Gone, start: leadershipImage(1, 5)},
		{name: "produce/no probe", call: leaderMove, noProbe: true, start: leadershipImage(2, 5, 2)},

		// A leader hint: no probe, bounded by the caller's d (1 s here).
		{name: "hint/epoch moves", call: partitionChange, start: leadershipImage(2, 5), then: leadershipImage(2, 6),
			moved: true, took: 100 * time.Millisecond},
		{name: "hint/nothing moves", call: partitionChange, start: leadershipImage(2, 5), took: time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				probes := 0
				o := LeadershipOptions{Self: 1, SessionTimeout: session, Logger: slog.New(slog.DiscardHandler)}
				if !tc.noProbe {
					o.Probe = func(_ context.Context, b metadata.Broker) liveness.Verdict {
						probes++
						if b.ID != 2 {
							return liveness.Answered
						}
						return tc.verdict
					}
				}
				l := NewLeadership(o)
				l.SetApplied(tc.start)
				if tc.then != nil {
					go func() {
						time.Sleep(100 * time.Millisecond)
						l.SetApplied(tc.then)
					}()
				}
				start := time.Now()
				moved := tc.call(context.Background(), l, tc.start)
				if took := time.Since(start); took != tc.took {
					t.Errorf("took %v, want %v", took, tc.took)
				}
				if moved != tc.moved {
					t.Errorf("moved on: %v, want %v", moved, tc.moved)
				}
				if probes != tc.probes {
					t.Errorf("%d probes, want %d", probes, tc.probes)
				}
				synctest.Wait()
			})
		})
	}
}

// A wait ends with the request's context, before the session timeout.
func TestLeadershipWaitEndsWithTheRequest(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := NewLeadership(LeadershipOptions{Self: 1, SessionTimeout: time.Minute, Logger: slog.New(slog.DiscardHandler),
			Probe: func(context.Context, metadata.Broker) liveness.Verdict { return liveness.Gone }})
		im := leadershipImage(2, 5)
		l.SetApplied(im)
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		start := time.Now()
		if l.LeaderMove(ctx, t0) {
			t.Error("the leader moved, but no image moved it")
		}
		if took := time.Since(start); took != 2*time.Second {
			t.Errorf("took %v, want the request's 2s", took)
		}
	})
}
