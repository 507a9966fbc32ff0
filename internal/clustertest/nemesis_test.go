package clustertest_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/runnel-io/runnel/internal/clustertest"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Environment variables of TestNemesis.
const (
	// nemesisSeedEnv replays a run: the seed of the fault sequence (logged by every run).
	nemesisSeedEnv = "RUNNEL_NEMESIS_SEED"
	// nemesisDurationEnv is how long faults are injected (a time.ParseDuration string).
	nemesisDurationEnv = "RUNNEL_NEMESIS_DURATION"
)

const (
	nemesisDefaultDuration = 25 * time.Second
	nemesisParts           = 6
	// nemesisVoters is how many nodes the cluster starts with, all metadata voters; a
	// node that joins later is a broker only (nemesis_member_test.go).
	nemesisVoters = 3
	// nemesisMinISR is the topic's min.insync.replicas (createTopic): an
	// acknowledgement needs that many in-sync replicas.
	nemesisMinISR = 2
	// maxMajorityStall is the longest a partition may go without an acknowledgement
	// while a majority of the nodes runs and reaches each other. One faulty node costs
	// a partition at most a short fault (up to nemesisMaxHold: an isolated leader keeps
	// stale clients) or the failure detection (3 s) and a produce request timeout (5+3
	// s, LoadDefaults), plus an election; 20 s is well above that.
	maxMajorityStall = 20 * time.Second
	// nemesisMaxHold bounds how long a short fault lasts before it is undone: most are
	// shorter than the failure detection (3 s), some longer.
	nemesisMaxHold = 6 * time.Second
	// A long fault (a kill or a pause, at least one per run) lasts longLo to longHi,
	// long enough that the majority must acknowledge writes while it lasts: the ISR
	// drops the node after replica.lag.time.max.ms (3 s), a dead or paused leader is
	// fenced after the session timeout (3 s), and a produce request stuck on a paused
	// leader is given up after 5+3 s (LoadDefaults). Isolations stay short: an isolated
	// leader keeps answering the test's clients, which reach it, with its stale
	// metadata, so how soon they find the new leader is the client's luck.
	longLo, longHi = 12 * time.Second, 16 * time.Second
	// forceLongWithin: when no long fault has happened yet and less than this is left,
	// the next single fault is long.
	forceLongWithin = 20 * time.Second
	// redundancyTimeout bounds the wait, before each fault, for every partition to have
	// an ISR of two: a node that stays out of the ISR that long with every node up is a
	// replica that never rejoins.
	redundancyTimeout = 60 * time.Second
	// inFlightGrace is how long after two nodes became faulty an acknowledgement may
	// still arrive: the answer to a request the leader had completed before (and the
	// client's promise running late on a busy machine).
	inFlightGrace = time.Second
)

// TestNemesis mixes the faults of DESIGN.md's failure model at random under an acks=all
// idempotent load: kill -9 and restart, SIGSTOP and SIGCONT, isolating a node, each of
// a random node, the leader of a random partition or the active controller, every 1-4
// s, one faulty node at a time (so that a majority always remains), and rarely two at
// once, undone before the next step. Most faults last 0.5-6 s, around the failure
// detection time (3 s); some kills and pauses, at least one per run, last 12-16 s, and
// the majority must acknowledge writes meanwhile. A partition move takes a node's
// replica of one partition away and back. And a fourth node joins as a broker (the
// first step of every run, a single fault right after it): the balancer must give it
// its share of replicas, in sync, within shareTimeout; once it has, it leaves (`runnel
// cluster decommission`, again with a single fault right after the drain starts, or
// after the last fault), must be drained within drainTimeout, and is stopped for good
// and unregistered. While it is in, the faults hit it as any other node
// (nemesis_member_test.go). The sequence comes from a seeded math/rand: the seed is
// logged, and $RUNNEL_NEMESIS_SEED replays it ($RUNNEL_NEMESIS_DURATION sets how long
// faults go on, 25 s by default). Only the choices are replayed, not the nodes'
// timing, and a target named by its role (the leader of a partition, the controller)
// may be another node on a replay.
//
// Afterwards every fault is undone and every partition must have a full ISR; then
// every acknowledged record must be at its offset, once, in every ISR replica's files
// (History.Check), a consumer that read along must have read every offset below the
// high watermark in order, holding every acknowledged value, records must have been
// acknowledged while faults were in force, none of a partition while fewer of its
// replicas than min.insync.replicas were up, and no partition may have gone
// maxMajorityStall without an acknowledgement while a majority of its replicas and of
// the metadata voters was up; and a group's committed offsets, committed and read back
// all along, must never have gone backwards.
func TestNemesis(t *testing.T) {
	skipIfShort(t)
	seed, duration := nemesisParams(t)
	t.Logf("nemesis seed %d (replay with %s=%d), duration %v", seed, nemesisSeedEnv, seed, duration)
	c := startNetns(t, nemesisVoters)
	topic := topicName(t)
	createTopic(t, c, topic, nemesisParts, 3)
	h := clustertest.NewHistory()
	load := c.StartLoad(t, h, clustertest.LoadOptions{Topic: topic, Partitions: nemesisParts, Rate: 300})
	reader := startReadAlong(t, c, topic, nemesisParts)
	offsets := startOffsetChecker(t, c, topic)
	waitAcks(t, h, 300, "before the first fault")

	n := &nemesis{t: t, c: c, adm: c.Admin(t), topic: topic, rng: rand.New(rand.NewPCG(uint64(seed), 0)), start: time.Now()}
	load.ResetStalls()
	n.run(duration)

	n.restoreAll()
	n.checkNoCrash()
	n.finishMembership()
	n.checkNoCrash()
	healed := time.Now()
	n.logf("every fault undone; waiting for full ISRs")
	full := n.waitISR(3, redundancyTimeout)
	if full {
		n.logf("every ISR full again %v after the last fault was undone", time.Since(healed).Round(time.Millisecond))
		waitAcks(t, h, h.Len()+300, "after the last fault was undone")
		waitEveryPartitionAcked(t, h, nemesisParts, healed)
	}
	loadEnd := time.Now()
	stopLoad(t, load, h)
	h.Check(t, c, topic)
	reader.check(t, c, h, topic)
	offsets.check(t)
	n.checkProgress(h, loadEnd)
}

// nemesisParams reads the seed and the duration from the environment.
func nemesisParams(t *testing.T) (int64, time.Duration) {
	t.Helper()
	seed := time.Now().UnixNano()
	if s := os.Getenv(nemesisSeedEnv); s != "" {
		var err error
		if seed, err = strconv.ParseInt(s, 10, 64); err != nil {
			t.Fatalf("%s=%q: %v", nemesisSeedEnv, s, err)
		}
	}
	duration := nemesisDefaultDuration
	if s := os.Getenv(nemesisDurationEnv); s != "" {
		d, err := time.ParseDuration(s)
		if err != nil || d <= 0 {
			t.Fatalf("%s=%q: want a positive duration such as 90s (%v)", nemesisDurationEnv, s, err)
		}
		duration = d
	}
	return seed, duration
}

// faultKind is one fault of a node, as an entry of the faults table: how to put it in
// force and how to undo it.
type faultKind struct {
	name   string
	inject func(n *nemesis, node int)
	heal   func(n *nemesis, node int)
	// mayBeLong: the fault may last longLo to longHi. An isolation stays short: an
	// isolated leader's producers fail over only after their request timeouts.
	mayBeLong bool
	// healLast: undone after the faults without it, so that a restarted node finds a
	// majority of running, connected nodes to join.
	healLast bool
	// partitionOnly: the fault takes one partition's replica off the node, not the
	// node: the node goes on serving every other partition, so it does not count as
	// a faulty node towards a lost majority.
	partitionOnly bool
}

func (k *faultKind) String() string { return k.name }

// faults is every fault the nemesis injects. A new kind of fault is one more entry.
var faults = []*faultKind{
	{name: "kill -9", mayBeLong: true, healLast: true,
		inject: func(n *nemesis, i int) { n.c.Kill(i) },
		heal:   func(n *nemesis, i int) { n.c.Restart(i) }},
	{name: "pause", mayBeLong: true,
		inject: func(n *nemesis, i int) { n.c.Pause(i) },
		heal:   func(n *nemesis, i int) { n.c.Resume(i) }},
	{name: "isolate",
		inject: func(n *nemesis, i int) { n.c.Isolate(i) },
		heal:   func(n *nemesis, _ int) { n.c.Heal() }}, // heals every isolation: idempotent
	// A partition move (issue 14): the node's replica of a partition is reassigned
	// away (the replication factor drops to 2), and back when the fault is undone, so
	// that the node copies the partition again from scratch while other faults go on.
	// Bit rot on a stopped node's disk (issue 29): the node stops cleanly, two bytes
	// of one of its partition files flip at a random place (the head, the middle or
	// the tail of a segment, or of an offset or time index), and it starts again when
	// the fault is undone. Nothing acknowledged may be lost: a damaged replica is kept
	// out of the ISR and repaired from an intact one, an index is rebuilt. A clean
	// stop, not a kill: after a crash, damage above the recovery point looks like a
	// torn tail, which recovery cuts (the known limit, docs/durability.md), and an
	// acknowledgement counts on the other replicas' copies, which a kill of another
	// node in a double fault would also take down.
	{name: "corrupt", mayBeLong: true, healLast: true,
		inject: func(n *nemesis, i int) { n.corrupt(i) },
		heal:   func(n *nemesis, i int) { n.c.Restart(i) }},
	{name: "move a replica off", partitionOnly: true,
		inject: func(n *nemesis, i int) { n.moveOff(int32(i)) },
		heal:   func(n *nemesis, i int) { n.moveBack(int32(i)) }},
}

// longFaults are the entries of faults that may last long.
var longFaults = slices.DeleteFunc(slices.Clone(faults), func(k *faultKind) bool { return !k.mayBeLong })

type fault struct {
	kind *faultKind
	node int32
	why  string // how the node was chosen
}

// window is a span of time.
type window struct{ from, to time.Time }

// overlap is how much of [from, to) w covers.
func (w window) overlap(from, to time.Time) time.Duration {
	s, e := maxTime(w.from, from), minTime(w.to, to)
	if e.After(s) {
		return e.Sub(s)
	}
	return 0
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

func minTime(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}

// step is one nemesis step: faults put in force together and undone together.
type step struct {
	faults []fault
	// change is the membership change the step began with ("node 4 joins"), if any.
	change string
	// injected is when the first fault began, inForce when every fault was in force,
	// restoring when the first was being undone, undone when every node was back.
	injected, inForce, restoring, undone time.Time
	// faulty are the nodes the step's node faults hit (a partition move hits no node).
	faulty []int32
	// replicas holds, per partition, every replica the live nodes named at injected,
	// inForce or restoring: a superset of the replicas the partition had while the
	// faults were in force (a move adds its new replicas before it removes the old).
	replicas map[int32][]int32
	// long: one node was faulty for longLo or more, and the majority must have
	// acknowledged writes meanwhile.
	long bool
	// acks counts the acknowledgements between injected and restoring.
	acks int
}

// quorumLost reports whether the step had a majority of the metadata voters faulty:
// no controller then, so no ISR can shrink and every partition may stall.
func (s *step) quorumLost() bool {
	down := 0
	for _, id := range s.faulty {
		if id <= nemesisVoters {
			down++
		}
	}
	return 2*down > nemesisVoters
}

// upReplicas returns the replicas of partition p not hit by the step's faults: those
// that could have been in sync while the faults were in force.
func (s *step) upReplicas(p int32) []int32 {
	return slices.DeleteFunc(slices.Clone(s.replicas[p]), func(id int32) bool { return slices.Contains(s.faulty, id) })
}

// lost reports whether partition p could not acknowledge while the step's faults were
// in force: fewer of its replicas than min.insync.replicas were up. With three nodes
// and RF 3 that is two faulty nodes; with a fourth node in, two faulty nodes may leave
// a partition two replicas, and a partition being moved has more than three.
func (s *step) lost(p int32) bool { return len(s.upReplicas(p)) < nemesisMinISR }

// outage reports whether partition p may stall during the step without a fault of
// the server: it lost its majority, or the metadata quorum was lost.
func (s *step) outage(p int32) bool { return s.quorumLost() || s.lost(p) }

// anyOutage reports whether the step put some partition, or the quorum, out.
func (s *step) anyOutage() bool {
	for p := range int32(nemesisParts) {
		if s.outage(p) {
			return true
		}
	}
	return false
}

// nemesis injects random faults into a cluster. Its methods run on the test
// goroutine.
type nemesis struct {
	t     *testing.T
	c     *clustertest.Cluster
	adm   *kadm.Client
	topic string
	rng   *rand.Rand
	start time.Time

	steps   []*step
	hadLong bool // a long fault has been injected
	// active are the faults in force, undone by restoreAll should the loop stop early.
	active []fault
	// moved are, per node, the partitions a move fault took off it, until undone.
	moved map[int32][]int32
	// member is the node that joined last (nemesis_member_test.go); nil before the
	// first join.
	member *member
}

func (n *nemesis) logf(format string, args ...any) {
	n.t.Helper()
	n.t.Logf("nemesis +%7.3fs: %s", time.Since(n.start).Seconds(), fmt.Sprintf(format, args...))
}

// between returns a random duration in [lo, hi).
func (n *nemesis) between(lo, hi time.Duration) time.Duration {
	return lo + time.Duration(n.rng.Int64N(int64(hi-lo)))
}

// run injects faults until duration has passed.
func (n *nemesis) run(duration time.Duration) {
	deadline := n.start.Add(duration)
	for time.Now().Before(deadline) && !n.t.Failed() {
		time.Sleep(n.between(time.Second, 4*time.Second))
		n.checkNoCrash()
		if !n.waitRedundant() {
			return
		}
		n.advanceMembership()
		switch r := n.rng.IntN(10); {
		case n.membershipDue(deadline, r == 2, duration):
			n.membershipStep()
		case r == 0:
			n.doubleFault()
		case r == 1 || !n.hadLong && time.Until(deadline) < forceLongWithin:
			n.longFault()
		default:
			n.singleFault("")
		}
	}
}

// singleFault puts one node at fault for a while and undoes it; change names the
// membership change the step began with, if any.
func (n *nemesis) singleFault(change string) {
	kind := n.pick(faults)
	node, why := n.target()
	n.inject(&step{change: change, faults: []fault{{kind: kind, node: node, why: why}}}, n.between(500*time.Millisecond, nemesisMaxHold))
}

// longFault kills or pauses one node for longLo to longHi.
func (n *nemesis) longFault() {
	kind := n.pick(longFaults)
	node, why := n.target()
	n.hadLong = true
	n.inject(&step{long: true, faults: []fault{{kind: kind, node: node, why: why}}}, n.between(longLo, longHi))
}

// doubleFault puts two nodes at fault at once for a short while, and undoes both.
// With the three voters only, two node faults lose the majority; with a fourth node
// in, they lose it for the partitions with two replicas among them, and the metadata
// quorum if both are voters (step.lost, step.quorumLost). When one of the two faults
// is a partition move, the node it moves a replica off still serves every other
// partition, and only the moved partition may have a single live replica left.
func (n *nemesis) doubleFault() {
	ids := n.nodeIDs()
	i := n.rng.IntN(len(ids))
	j := n.rng.IntN(len(ids) - 1)
	if j >= i {
		j++
	}
	s := &step{faults: []fault{
		{kind: n.pick(faults), node: ids[i], why: "two faults"},
		{kind: n.pick(faults), node: ids[j], why: "two faults"},
	}}
	n.inject(s, n.between(time.Second, 3*time.Second))
}

// target picks the node to fault: the leader of a random partition, the active
// controller, or a random node.
func (n *nemesis) target() (int32, string) {
	switch r := n.rng.IntN(10); {
	case r < 3:
		p := int32(n.rng.IntN(nemesisParts))
		if st, err := leaderView(n.c, n.topic, p); err == nil {
			return st.Leader, fmt.Sprintf("leader of %s-%d", n.topic, p)
		}
	case r < 5:
		if id, err := controllerOf(n.c); err == nil {
			return id, "the active controller"
		}
	}
	ids := n.nodeIDs()
	return ids[n.rng.IntN(len(ids))], "a random node"
}

// inject puts the faults of s in force, holds them for hold, and undoes them.
func (n *nemesis) inject(s *step, hold time.Duration) {
	if s.change == "" {
		n.logf("state: %s", n.snapshot())
	}
	s.replicas = map[int32][]int32{}
	n.addReplicas(s)
	s.injected = time.Now()
	for _, f := range s.faults {
		n.logf("%s node %d (%s), for %v", f.kind, f.node, f.why, hold.Round(time.Millisecond))
		f.kind.inject(n, int(f.node))
		n.active = append(n.active, f)
		if !f.kind.partitionOnly && !slices.Contains(s.faulty, f.node) {
			s.faulty = append(s.faulty, f.node)
		}
	}
	s.inForce = time.Now()
	n.addReplicas(s)
	n.steps = append(n.steps, s)
	time.Sleep(hold)
	s.restoring = time.Now()
	n.addReplicas(s)
	n.restoreAll()
	s.undone = time.Now()
	for p := range int32(nemesisParts) {
		if len(s.replicas[p]) == 0 {
			// No live node answered: every node in is a superset of its replicas.
			s.replicas[p] = n.nodeIDs()
		}
	}
}

// addReplicas adds to s.replicas every replica of the topic's partitions that a live
// node names now.
func (n *nemesis) addReplicas(s *step) {
	views, err := n.replicaViews()
	if err != nil {
		n.logf("replicas of %s: %v", n.topic, err)
	}
	for _, v := range views {
		for tp, st := range v.parts {
			if tp.topic != n.topic {
				continue
			}
			for _, id := range st.Replicas {
				if !slices.Contains(s.replicas[tp.p], id) {
					s.replicas[tp.p] = append(s.replicas[tp.p], id)
				}
			}
		}
	}
}

// restoreAll undoes every fault in force: the instant ones first, then those marked
// healLast (restarts), so that a restarted node finds a majority to join.
func (n *nemesis) restoreAll() {
	for _, last := range []bool{false, true} {
		for _, f := range n.active {
			if f.kind.healLast != last {
				continue
			}
			start := time.Now()
			f.kind.heal(n, int(f.node))
			n.logf("undid %s of node %d (in %v)", f.kind, f.node, time.Since(start).Round(time.Millisecond))
		}
	}
	n.active = nil
}

// moveOff reassigns node's replica of a random partition away. The move may be
// refused (no quorum during a double fault, or no other replica in sync to lead): then
// there is nothing to undo. It starts from the replicas the partition is heading for
// (the balancer's or a decommission's move may be in progress: the move off replaces
// it, keeping its other replicas), and moves nothing that would leave fewer than
// min.insync.replicas (a second move off the same partition in a double fault), nor
// a replica a move in progress removes already.
func (n *nemesis) moveOff(node int32) {
	p := int32(n.rng.IntN(nemesisParts))
	current, err := n.targetOf(p)
	target := slices.DeleteFunc(slices.Clone(current), func(r int32) bool { return r == node })
	if err != nil || len(target) == len(current) || len(target) < nemesisMinISR {
		n.logf("move: skipped (%s-%d heading for replicas %v: %v)", n.topic, p, current, err)
		return
	}
	if err := n.reassign(p, target); err != nil {
		n.logf("move of %s-%d off node %d refused: %v", n.topic, p, node, err)
		return
	}
	if n.moved == nil {
		n.moved = map[int32][]int32{}
	}
	n.moved[node] = append(n.moved[node], p)
	n.logf("moved %s-%d off node %d (replicas %v)", n.topic, p, node, target)
}

// moveBack gives node its replicas back: it copies them again from their leaders.
// The move off may still be in progress (a replica set in the metadata that still
// names node, with node among the replicas being removed): the new target is the one
// in progress plus node, which replaces the move off as a reassignment does in Kafka.
func (n *nemesis) moveBack(node int32) {
	for _, p := range n.moved[node] {
		deadline := time.Now().Add(redundancyTimeout)
		for {
			target, err := n.targetOf(p)
			if err == nil {
				if slices.Contains(target, node) {
					break
				}
				if err = n.reassign(p, append(target, node)); err == nil {
					n.logf("moving %s-%d back onto node %d (replicas %v)", n.topic, p, node, append(target, node))
					break
				}
			}
			if time.Now().After(deadline) {
				n.t.Errorf("nemesis: could not move %s-%d back onto node %d: %v", n.topic, p, node, err)
				break
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
	delete(n.moved, node)
}

// targetOf returns the replica set topic-p is heading for: its replicas less those
// an ongoing reassignment removes.
func (n *nemesis) targetOf(p int32) ([]int32, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	resp, err := n.adm.ListPartitionReassignments(ctx, kadm.TopicsSet{n.topic: {p: struct{}{}}})
	if err != nil {
		return nil, err
	}
	if r, ok := resp[n.topic][p]; ok {
		return slices.DeleteFunc(slices.Clone(r.Replicas), func(id int32) bool { return slices.Contains(r.RemovingReplicas, id) }), nil
	}
	st, err := leaderView(n.c, n.topic, p)
	if err != nil {
		return nil, err
	}
	return slices.Clone(st.Replicas), nil
}

// reassign asks for topic-p to move to target.
func (n *nemesis) reassign(p int32, target []int32) error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	req := kadm.AlterPartitionAssignmentsReq{}
	req.Assign(n.topic, p, target)
	resp, err := n.adm.AlterPartitionAssignments(ctx, req)
	if err != nil {
		return err
	}
	return resp.Error()
}

// pick returns a random entry of kinds.
func (n *nemesis) pick(kinds []*faultKind) *faultKind { return kinds[n.rng.IntN(len(kinds))] }

// checkNoCrash fails the test for a node that exited without being killed (a panic,
// a fatal error), and starts it again so that the run goes on: the next kill would
// otherwise hide the exit from the harness.
func (n *nemesis) checkNoCrash() {
	for _, id := range n.nodeIDs() {
		i := int(id)
		if n.c.Node(i).Running() {
			continue
		}
		exited, err := n.c.WaitExit(i, 100*time.Millisecond)
		n.t.Errorf("nemesis +%.3fs: node %d exited on its own (exited %v: %v); its output is printed at the end",
			time.Since(n.start).Seconds(), i, exited, err)
		n.c.Restart(i)
	}
}

// waitRedundant waits until every partition has an ISR of at least two, so that the
// next single fault leaves every partition an in-sync replica to lead it. It fails the
// test and returns false if that takes redundancyTimeout.
func (n *nemesis) waitRedundant() bool {
	start := time.Now()
	if !n.waitISR(2, redundancyTimeout) {
		return false
	}
	if d := time.Since(start); d > time.Second {
		n.logf("waited %v for an ISR of two on every partition", d.Round(time.Millisecond))
	}
	return true
}

// waitISR waits until every partition's leader reports an ISR of at least want
// members; after timeout it fails the test naming the partitions that had fewer.
func (n *nemesis) waitISR(want int, timeout time.Duration) bool {
	deadline := time.Now().Add(timeout)
	for {
		var short []string
		for p := range int32(nemesisParts) {
			st, err := leaderView(n.c, n.topic, p)
			switch {
			case err != nil:
				short = append(short, err.Error())
			case len(st.ISR) < want:
				short = append(short, fmt.Sprintf("%s-%d: leader %d epoch %d reports ISR %v", n.topic, p, st.Leader, st.LeaderEpoch, st.ISR))
			}
		}
		if len(short) == 0 {
			return true
		}
		if time.Now().After(deadline) {
			n.t.Errorf("nemesis +%.3fs: no ISR of %d members after %v with every node up: %s",
				time.Since(n.start).Seconds(), want, timeout, strings.Join(short, "; "))
			return false
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// snapshot describes the leaders, ISRs and controller as one live node sees them.
func (n *nemesis) snapshot() string {
	for _, id := range n.c.LiveIDs() {
		resp, err := n.c.MetadataFrom(context.Background(), int(id), n.topic)
		if err != nil || len(resp.Topics) != 1 {
			continue
		}
		parts := resp.Topics[0].Partitions
		slices.SortFunc(parts, func(a, b kmsg.MetadataResponseTopicPartition) int { return int(a.Partition - b.Partition) })
		var ps []string
		for _, p := range parts {
			ps = append(ps, fmt.Sprintf("p%d:%d@%d%v", p.Partition, p.Leader, p.LeaderEpoch, p.ISR))
		}
		return fmt.Sprintf("node %d sees controller %d, leader@epoch[ISR] %s", id, resp.ControllerID, strings.Join(ps, " "))
	}
	return "no live node answered Metadata"
}

// checkProgress demands acknowledgements while faults were in force, none of a
// partition while a step left it fewer replicas up than min.insync.replicas (past
// inFlightGrace), and that no partition stalled maxMajorityStall while its majority
// and the metadata quorum were up, from the first fault to end.
func (n *nemesis) checkProgress(h *clustertest.History, end time.Time) {
	acks := h.Acks()
	during := 0
	var summary []string
	outages := map[int32][]window{}
	lostSteps := 0
	for i, s := range n.steps {
		var lone []clustertest.Ack
		for _, a := range acks {
			if !a.At.Before(s.injected) && a.At.Before(s.restoring) {
				s.acks++
			}
			if s.lost(a.Partition) && a.At.After(s.inForce.Add(inFlightGrace)) && a.At.Before(s.restoring) {
				lone = append(lone, a)
			}
		}
		for p := range int32(nemesisParts) {
			if s.outage(p) {
				outages[p] = append(outages[p], window{s.injected, s.undone})
			}
		}
		if s.anyOutage() {
			lostSteps++
		}
		during += s.acks
		if s.long && s.acks == 0 {
			n.t.Errorf("nemesis step %d: nothing acknowledged in the %v from +%.3fs that one node (%s %d) was faulty and a majority up",
				i+1, s.restoring.Sub(s.injected).Round(time.Millisecond), s.injected.Sub(n.start).Seconds(), s.faults[0].kind, s.faults[0].node)
		}
		var fs []string
		if s.change != "" {
			fs = append(fs, s.change)
		}
		for _, f := range s.faults {
			fs = append(fs, fmt.Sprintf("%s %d", f.kind, f.node))
		}
		long := ""
		if s.long {
			long = " long"
		}
		summary = append(summary, fmt.Sprintf("%d:[%s]%s %v, %d acks", i+1, strings.Join(fs, ", "), long, s.restoring.Sub(s.injected).Round(100*time.Millisecond), s.acks))
		for j, a := range lone {
			if j == 5 {
				n.t.Errorf("... and %d more", len(lone)-j)
				break
			}
			n.t.Errorf("%s-%d offset %d %q acknowledged at nemesis +%.3fs, while step %d (%s) since +%.3fs left only %v of its replicas %v up: fewer than min.insync.replicas=%d",
				n.topic, a.Partition, a.Offset, a.Value, a.At.Sub(n.start).Seconds(), i+1, strings.Join(fs, ", "), s.inForce.Sub(n.start).Seconds(),
				s.upReplicas(a.Partition), s.replicas[a.Partition], nemesisMinISR)
		}
	}
	n.t.Logf("nemesis: %d steps (%d with a partition's majority or the quorum lost), %d acks while faults were in force: %s",
		len(n.steps), lostSteps, during, strings.Join(summary, "; "))
	if len(n.steps) == 0 {
		n.t.Errorf("nemesis: no fault was injected")
	}
	if during == 0 {
		n.t.Errorf("nemesis: nothing was acknowledged while a fault was in force (%d steps)", len(n.steps))
	}
	times := map[int32][]time.Time{}
	for _, a := range acks {
		times[a.Partition] = append(times[a.Partition], a.At)
	}
	for p := range int32(nemesisParts) {
		stall, from := majorityStall(times[p], n.start, end, outages[p])
		n.t.Logf("%s-%d: longest stall with a majority up %v, from +%.3fs", n.topic, p, stall.Round(time.Millisecond), from.Sub(n.start).Seconds())
		if stall > maxMajorityStall {
			n.t.Errorf("%s-%d: no acknowledgement for %v (not counting lost-majority windows) from nemesis +%.3fs, with a majority of nodes up: more than %v",
				n.topic, p, stall.Round(time.Millisecond), from.Sub(n.start).Seconds(), maxMajorityStall)
		}
	}
}

// majorityStall returns the longest gap between acknowledgements in times (from start
// to end, which bound the gaps at both sides), less the parts of it in outages, and
// where it began.
func majorityStall(times []time.Time, start, end time.Time, outages []window) (time.Duration, time.Time) {
	points := []time.Time{start}
	for _, at := range times {
		if at.After(start) && at.Before(end) {
			points = append(points, at)
		}
	}
	points = append(points, end)
	slices.SortFunc(points, func(a, b time.Time) int { return a.Compare(b) })
	var worst time.Duration
	var from time.Time
	for i := 1; i < len(points); i++ {
		gap := points[i].Sub(points[i-1])
		for _, w := range outages {
			gap -= w.overlap(points[i-1], points[i])
		}
		if gap > worst {
			worst, from = gap, points[i-1]
		}
	}
	return worst, from
}

// waitEveryPartitionAcked waits until every partition has an acknowledgement after
// since: the load made progress everywhere once the faults were undone.
func waitEveryPartitionAcked(t *testing.T, h *clustertest.History, parts int32, since time.Time) {
	t.Helper()
	deadline := time.Now().Add(waitTimeout)
	for {
		acked := map[int32]bool{}
		for _, a := range h.Acks() {
			if a.At.After(since) {
				acked[a.Partition] = true
			}
		}
		var missing []int32
		for p := range parts {
			if !acked[p] {
				missing = append(missing, p)
			}
		}
		if len(missing) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Errorf("partitions %v acknowledged nothing in the %v after every fault was undone (failures: %s)", missing, waitTimeout, h.Failures())
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// leaderView returns the partition's state as its leader reports it: the newest view
// among the live nodes names the leader (a healed, isolated former leader names
// itself at its old epoch until it catches up), and that leader must agree.
func leaderView(c *clustertest.Cluster, topic string, p int32) (clustertest.PartitionState, error) {
	return c.LeaderState(topic, p)
}

// controllerOf returns the active controller as a live node names it.
func controllerOf(c *clustertest.Cluster) (int32, error) {
	for _, id := range c.LiveIDs() {
		resp, err := c.MetadataFrom(context.Background(), int(id))
		if err == nil && resp.ControllerID > 0 {
			return resp.ControllerID, nil
		}
	}
	return 0, fmt.Errorf("no live node names a controller")
}

// readAlong is a consumer reading every partition of a topic from offset 0 while the
// faults go on. It keeps what it read by offset and notes every record out of order
// (a gap), every offset read twice with different values and every value read at two
// offsets.
type readAlong struct {
	cl     *kgo.Client
	cancel context.CancelFunc
	done   chan struct{}

	mu       sync.Mutex // guards the fields below
	read     map[int32]map[int64]string
	next     map[int32]int64 // the offset after the highest read
	where    map[string]string
	problems []string
	rereads  int
	errs     map[string]int
}

func startReadAlong(t *testing.T, c *clustertest.Cluster, topic string, parts int32) *readAlong {
	t.Helper()
	offsets := map[int32]kgo.Offset{}
	for p := range parts {
		offsets[p] = kgo.NewOffset().AtStart()
	}
	r := &readAlong{done: make(chan struct{}), read: map[int32]map[int64]string{}, next: map[int32]int64{},
		where: map[string]string{}, errs: map[string]int{}}
	for p := range parts {
		r.read[p] = map[int64]string{}
	}
	r.cl = c.Client(t, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: offsets}),
		kgo.FetchMaxWait(500*time.Millisecond))
	ctx, cancel := context.WithCancel(context.Background())
	r.cancel = cancel
	go r.run(ctx)
	t.Cleanup(r.stop)
	return r
}

func (r *readAlong) run(ctx context.Context) {
	defer close(r.done)
	for ctx.Err() == nil {
		fs := r.cl.PollFetches(ctx)
		r.mu.Lock()
		fs.EachError(func(topic string, p int32, err error) {
			if ctx.Err() == nil {
				r.errs[fmt.Sprintf("%s-%d: %v", topic, p, err)]++
			}
		})
		fs.EachRecord(r.add)
		r.mu.Unlock()
	}
}

// add notes one record; r.mu is held.
func (r *readAlong) add(rec *kgo.Record) {
	p, o, v := rec.Partition, rec.Offset, string(rec.Value)
	if prev, ok := r.read[p][o]; ok {
		r.rereads++
		if prev != v {
			r.problems = append(r.problems, fmt.Sprintf("%s-%d offset %d read as %q, later as %q", rec.Topic, p, o, prev, v))
		}
		return
	}
	if o != r.next[p] {
		r.problems = append(r.problems, fmt.Sprintf("%s-%d: read offset %d after offset %d (offsets [%d,%d) skipped)", rec.Topic, p, o, r.next[p]-1, r.next[p], o))
	}
	loc := fmt.Sprintf("%s-%d offset %d", rec.Topic, p, o)
	if other, ok := r.where[v]; ok {
		r.problems = append(r.problems, fmt.Sprintf("value %q read at %s and at %s", v, other, loc))
	}
	r.where[v] = loc
	r.read[p][o] = v
	r.next[p] = max(r.next[p], o+1)
}

func (r *readAlong) stop() {
	r.cancel()
	<-r.done
}

// check waits until the consumer has read up to every partition's high watermark and
// demands that it read every offset below it, in order, with every acknowledged value
// at its offset.
func (r *readAlong) check(t *testing.T, c *clustertest.Cluster, h *clustertest.History, topic string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	ends, err := c.Admin(t).ListEndOffsets(ctx, topic)
	if err == nil {
		err = ends.Error()
	}
	if err != nil {
		t.Errorf("consumer: listing the high watermarks of %s: %v", topic, err)
		return
	}
	hw := map[int32]int64{}
	ends.Each(func(lo kadm.ListedOffset) { hw[lo.Partition] = lo.Offset })
	deadline := time.Now().Add(waitTimeout)
	for !r.caughtUp(hw) && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	r.stop()
	r.mu.Lock()
	defer r.mu.Unlock()
	var errs []string
	for e, k := range r.errs {
		errs = append(errs, fmt.Sprintf("%d× %s", k, e))
	}
	slices.Sort(errs)
	t.Logf("consumer: %d records read, %d read again after a reset; fetch errors: %v", len(r.where), r.rereads, errs)
	problems := slices.Clone(r.problems)
	for p := range int32(len(r.read)) {
		if r.next[p] != hw[p] || int64(len(r.read[p])) != hw[p] {
			problems = append(problems, fmt.Sprintf("%s-%d: read %d records up to offset %d, high watermark %d", topic, p, len(r.read[p]), r.next[p], hw[p]))
		}
	}
	for _, a := range h.Acks() {
		got, ok := r.read[a.Partition][a.Offset]
		switch {
		case a.Offset >= hw[a.Partition]:
			problems = append(problems, fmt.Sprintf("%s-%d: acknowledged %q at offset %d, at or above the high watermark %d", topic, a.Partition, a.Value, a.Offset, hw[a.Partition]))
		case !ok:
			problems = append(problems, fmt.Sprintf("%s-%d: acknowledged %q at offset %d never read", topic, a.Partition, a.Value, a.Offset))
		case got != a.Value:
			at := r.where[a.Value]
			if at == "" {
				at = "nowhere"
			}
			problems = append(problems, fmt.Sprintf("%s-%d: offset %d read as %q, acknowledged was %q (read at %s)", topic, a.Partition, a.Offset, got, a.Value, at))
		}
	}
	for i, s := range problems {
		if i == 20 {
			t.Errorf("consumer: ... and %d more problems", len(problems)-i)
			break
		}
		t.Errorf("consumer: %s", s)
	}
}

// caughtUp reports whether the consumer has read up to hw on every partition.
func (r *readAlong) caughtUp(hw map[int32]int64) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	for p, end := range hw {
		if r.next[p] < end {
			return false
		}
	}
	return true
}

// corrupt stops node i cleanly and flips two bytes of one of its files of a random
// partition (a segment or an index; at its head, middle or tail): the "corrupt"
// fault. Restart undoes it.
func (n *nemesis) corrupt(i int) {
	if err := n.c.Stop(i); err != nil {
		n.t.Errorf("nemesis: stopping node %d to corrupt its files: %v", i, err)
	}
	p := int32(n.rng.IntN(nemesisParts))
	dir := n.c.Node(i).PartitionDir(n.topic, p)
	var files []string
	for _, ext := range []string{"*.log", "*.index", "*.timeindex"} {
		m, _ := filepath.Glob(filepath.Join(dir, ext))
		files = append(files, m...)
	}
	slices.Sort(files)
	if len(files) == 0 {
		n.logf("node %d holds no files of %s-%d: nothing corrupted", i, n.topic, p)
		return
	}
	path := files[n.rng.IntN(len(files))]
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		n.t.Errorf("nemesis: corrupting %s: %v", path, err)
		return
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil || fi.Size() < 2 {
		n.logf("node %d: %s is empty: nothing corrupted", i, path)
		return
	}
	size := fi.Size()
	where := []string{"head", "middle", "tail"}[n.rng.IntN(3)]
	var pos int64
	switch span := min(size-1, 200); where {
	case "head":
		pos = n.rng.Int64N(span)
	case "middle":
		pos = size / 2
	case "tail":
		pos = size - 2 - n.rng.Int64N(span)
	}
	b := make([]byte, 2)
	if _, err := f.ReadAt(b, pos); err != nil {
		n.t.Errorf("nemesis: reading %s at %d: %v", path, pos, err)
		return
	}
	b[0], b[1] = ^b[0], ^b[1]
	if _, err := f.WriteAt(b, pos); err != nil {
		n.t.Errorf("nemesis: corrupting %s at %d: %v", path, pos, err)
		return
	}
	n.logf("flipped 2 bytes at byte %d of %d (%s) of node %d's %s", pos, size, where, i, path)
}
