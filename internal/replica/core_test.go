package replica

import (
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/cockroachdb/datadriven"
	"github.com/runnel-io/runnel/internal/log"
	"github.com/runnel-io/runnel/internal/log/logtest"
	"github.com/runnel-io/runnel/internal/metadata"
	"github.com/runnel-io/runnel/internal/vfs"
)

// TestCoreScripts runs the scripts in testdata/ against the pure replication core
// (core.go), the way Partition and Manager drive it, minus locks and goroutines. Each
// script covers one rule; the expected output is in the script (regenerate with
// `go test ./internal/replica -run TestCoreScripts -rewrite` and review the diff).
//
// Commands (times are milliseconds, nodes are ids):
//
//	become leader=N epoch=E replicas=1,2,3 isr=1,2 [min-isr=M] [leo=O] [now=T] [checkpoint-hw=H] [partition-epoch=P]
//	    apply a controller assignment at log end leo (Partition.applyState)
//	append [n=K] [unsynced]    the leader appends K records, durable at once unless unsynced
//	sync                       the leader's fsync completes
//	fetch follower=N offset=O now=T [log-start=S]
//	                           a follower fetch, once per request (RecordFollowerFetch),
//	                           and the expansion it may propose (Manager.maybeExpandIsr)
//	tick now=T [lag=L]         the periodic ISR check (Manager.maybeShrinkIsr)
//	commit [leader=N] | reject | stale
//	                           the controller's answer to the change in flight: stored
//	                           (with N made leader in the same record), refused, or
//	                           overtaken by a newer state
//	disk-full nodes=(2,3)        these followers' disks are full (the metadata says so)
//	follower-log epochs=(0x5,1x5) hw=H
//	                           a follower's real log: 5 records of epoch 0, then 5 of 1
//	diverge leader-epoch=E leader-end=O
//	                           the leader's OffsetForLeaderEpoch answer: where the
//	                           follower cuts (divergencePoint)
//	follower-hw leader-hw=H    the high watermark a follower adopts (capped by its log end)
//	preferred [rack=R] offset=O now=T racks=(1:r1,2:r2)
//	                           the preferred read replica the leader names to a consumer
//	                           in rack R fetching at O (KIP-392, selector.go); racks are
//	                           the nodes a client can be sent to, with their broker.rack
func TestCoreScripts(t *testing.T) {
	datadriven.Walk(t, "testdata", func(t *testing.T, path string) {
		sim := &coreSim{t: t, lagMs: 30000}
		datadriven.RunTest(t, path, func(t *testing.T, d *datadriven.TestData) string {
			return sim.run(d)
		})
	})
}

// coreSim is one partition's replica under script control.
type coreSim struct {
	t   *testing.T
	rs  replicationState
	hw  int64
	leo int64
	// durable is the leader's durable end (the topic fsyncs every batch): the high
	// watermark counts it, the ISR rules count leo.
	durable  int64
	lagMs    int64
	diskFull []metadata.NodeID
	// followerLog is the follower's log of follower-log scripts.
	followerLog *log.Log
}

func (s *coreSim) run(d *datadriven.TestData) string {
	var out strings.Builder
	switch d.Cmd {
	case "become":
		st := metadata.Partition{
			Leader: metadata.NodeID(s.intArg(d, "leader", -1)), LeaderEpoch: int32(s.intArg(d, "epoch", 0)),
			PartitionEpoch: int32(s.intArg(d, "partition-epoch", 0)),
			Replicas:       s.nodesArg(d, "replicas"), ISR: s.nodesArg(d, "isr"),
		}
		if s.rs.self == 0 {
			s.rs = replicationState{self: 1, leader: metadata.NoLeader}
		}
		s.leo = s.intArg(d, "leo", s.leo)
		s.durable = s.leo
		became := s.rs.become(st, int32(s.intArg(d, "min-isr", 1)), true, s.leo, s.intArg(d, "now", 0))
		if became {
			fmt.Fprintf(&out, "became leader of epoch %d at offset %d\n", st.LeaderEpoch, s.leo)
			if hw, ok := leaderStartHighWatermark(s.intArg(d, "checkpoint-hw", -1), 0, s.leo, s.hw); ok {
				s.hw = hw
			}
		}
		s.advance(&out)
	case "append":
		if !s.rs.isLeader() {
			return "error: not leader\n"
		}
		s.leo += s.intArg(d, "n", 1)
		if !d.HasArg("unsynced") {
			s.durable = s.leo
		}
		s.advance(&out)
	case "sync":
		s.durable = s.leo
		s.advance(&out)
	case "fetch":
		id := metadata.NodeID(s.intArg(d, "follower", 0))
		off := s.intArg(d, "offset", 0)
		if !s.rs.isLeader() {
			return "error: not leader\n"
		}
		if off > s.leo {
			return "error: offset out of range\n"
		}
		expand := s.rs.recordFetch(id, off, s.leo, s.hw, s.intArg(d, "now", 0), s.lagMs)
		s.rs.followers[id].logStartOffset = s.intArg(d, "log-start", -1)
		if expand {
			if newISR := s.rs.expandISR(id); newISR != nil && s.rs.isrChangeSent(newISR) != 0 {
				fmt.Fprintf(&out, "propose expand to %v\n", newISR)
			}
		}
		s.advance(&out)
	case "tick":
		s.lagMs = s.intArg(d, "lag", s.lagMs)
		full := func(r metadata.NodeID) bool { return slices.Contains(s.diskFull, r) }
		newISR, drop := s.rs.shrinkISR(s.leo, s.intArg(d, "now", 0), s.lagMs, full)
		if newISR != nil && s.rs.isrChangeSent(newISR) != 0 {
			fmt.Fprintf(&out, "propose shrink to %v (out of sync: %v)\n", newISR, drop)
		}
		s.advance(&out)
	case "commit":
		// The controller stores the change in flight, in this leader epoch; with
		// leader=N it also makes N leader in the same record (a reassignment that
		// completes), and the answer carries the new leader epoch.
		if s.rs.pendingISR == nil {
			return "error: no change in flight\n"
		}
		st := metadata.Partition{Leader: s.rs.leader, LeaderEpoch: s.rs.leaderEpoch,
			PartitionEpoch: s.rs.partitionEpoch + 1, ISR: s.rs.pendingISR}
		if l := s.intArg(d, "leader", -1); l >= 0 && metadata.NodeID(l) != s.rs.leader {
			st.Leader, st.LeaderEpoch = metadata.NodeID(l), s.rs.leaderEpoch+1
		}
		s.rs.isrChangeAnswered(s.rs.isrChangeSeq, isrCommitted, &st)
		s.advance(&out)
	case "reject":
		s.rs.isrChangeAnswered(s.rs.isrChangeSeq, isrRefused, nil)
		s.advance(&out)
	case "stale":
		s.rs.isrChangeAnswered(s.rs.isrChangeSeq, isrStale, nil)
		s.advance(&out)
	case "disk-full":
		s.diskFull = s.nodesArg(d, "nodes")
		return "ok\n"
	case "follower-log":
		s.followerLog = s.newFollowerLog(d)
		s.hw = s.intArg(d, "hw", 0)
		fmt.Fprintf(&out, "log end %d, epochs %s\n", s.followerLog.LogEndOffset(), epochsString(s.followerLog))
		return out.String()
	case "diverge":
		to := divergencePoint(s.followerLog, s.hw, int32(s.intArg(d, "leader-epoch", -1)), s.intArg(d, "leader-end", -1))
		leo := s.followerLog.LogEndOffset()
		if to >= leo {
			return fmt.Sprintf("keep everything (log end %d)\n", leo)
		}
		return fmt.Sprintf("truncate to %d: drop %d records\n", to, leo-to)
	case "follower-hw":
		return fmt.Sprintf("hw=%d\n", followerHighWatermark(s.intArg(d, "leader-hw", 0), s.intArg(d, "leo", s.leo)))
	case "preferred":
		return s.preferred(d)
	default:
		d.Fatalf(s.t, "unknown command %q", d.Cmd)
	}
	out.WriteString(s.state())
	return out.String()
}

// preferred runs the preferred read replica rule (selector.go) on the leader's state.
func (s *coreSim) preferred(d *datadriven.TestData) string {
	racks := map[metadata.NodeID]string{}
	for _, a := range d.CmdArgs {
		if a.Key != "racks" {
			continue
		}
		for _, v := range a.Vals {
			id, rack, ok := strings.Cut(v, ":")
			n, err := strconv.Atoi(id)
			if !ok || err != nil {
				d.Fatalf(s.t, "racks=%s: want ID:RACK", v)
			}
			racks[metadata.NodeID(n)] = rack
		}
	}
	var rack string
	if d.HasArg("rack") {
		d.ScanArgs(s.t, "rack", &rack)
	}
	broker := func(id metadata.NodeID) (string, bool) {
		r, ok := racks[id]
		return r, ok
	}
	id := s.rs.preferredReadReplica(rack, s.intArg(d, "offset", 0), s.leo, s.intArg(d, "now", 0), broker)
	if id < 0 {
		return "read from the leader (-1)\n"
	}
	return fmt.Sprintf("read from replica %d\n", id)
}

// advance raises the high watermark as the Partition does after every append, fetch
// and ISR change, and says so when it moves.
func (s *coreSim) advance(out *strings.Builder) {
	if hw, raised := s.rs.advanceHighWatermark(s.hw, s.durable); raised {
		fmt.Fprintf(out, "hw %d -> %d\n", s.hw, hw)
		s.hw = hw
	}
}

func (s *coreSim) state() string {
	var b strings.Builder
	role := "follower"
	if s.rs.isLeader() {
		role = "leader"
	}
	fmt.Fprintf(&b, "%s epoch=%d leo=%d hw=%d isr=%v", role, s.rs.leaderEpoch, s.leo, s.hw, s.rs.isr)
	if s.durable != s.leo {
		fmt.Fprintf(&b, " durable=%d", s.durable)
	}
	if s.rs.pendingISR != nil {
		fmt.Fprintf(&b, " pending=%v", s.rs.pendingISR)
	}
	b.WriteString("\n")
	if s.rs.isLeader() {
		ids := make([]metadata.NodeID, 0, len(s.rs.followers))
		for id := range s.rs.followers {
			ids = append(ids, id)
		}
		sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
		for _, id := range ids {
			f := s.rs.followers[id]
			fmt.Fprintf(&b, "  follower %d: leo=%d caught-up-at=%d\n", id, f.logEndOffset, f.lastCaughtUpTimeMs)
		}
	}
	return b.String()
}

func (s *coreSim) intArg(d *datadriven.TestData, key string, def int64) int64 {
	for _, a := range d.CmdArgs {
		if a.Key == key {
			v, err := strconv.ParseInt(a.Vals[0], 10, 64)
			if err != nil {
				d.Fatalf(s.t, "%s=%s: %v", key, a.Vals[0], err)
			}
			return v
		}
	}
	return def
}

func (s *coreSim) nodesArg(d *datadriven.TestData, key string) []metadata.NodeID {
	var out []metadata.NodeID
	for _, a := range d.CmdArgs {
		if a.Key != key {
			continue
		}
		for _, v := range a.Vals {
			n, err := strconv.Atoi(v)
			if err != nil {
				d.Fatalf(s.t, "%s=%s: %v", key, v, err)
			}
			out = append(out, metadata.NodeID(n))
		}
	}
	return out
}

// newFollowerLog builds a real log holding, per epochs=EPOCHxCOUNT entry in order,
// COUNT one-record batches appended in leader epoch EPOCH.
func (s *coreSim) newFollowerLog(d *datadriven.TestData) *log.Log {
	logs, err := log.NewManager(log.ManagerOptions{FS: vfs.OS(), DataDir: s.t.TempDir(), Defaults: log.DefaultConfig()})
	if err != nil {
		s.t.Fatal(err)
	}
	s.t.Cleanup(func() { logs.Close() })
	l, err := logs.GetOrCreate(metadata.TopicPartition{Topic: "t"}, log.DefaultConfig())
	if err != nil {
		s.t.Fatal(err)
	}
	for _, a := range d.CmdArgs {
		if a.Key != "epochs" {
			continue
		}
		for _, v := range a.Vals {
			epoch, count, ok := strings.Cut(v, "x")
			e, err1 := strconv.Atoi(epoch)
			n, err2 := strconv.Atoi(count)
			if !ok || err1 != nil || err2 != nil {
				d.Fatalf(s.t, "epochs=%s: want EPOCHxCOUNT", v)
			}
			for range n {
				if _, err := l.AppendAsLeader(logtest.Batch(1, 10), int32(e)); err != nil {
					s.t.Fatal(err)
				}
			}
		}
	}
	return l
}

func epochsString(l *log.Log) string {
	var parts []string
	for _, e := range l.EpochEntries() {
		parts = append(parts, fmt.Sprintf("%d@%d", e.Epoch, e.StartOffset))
	}
	return "[" + strings.Join(parts, " ") + "]"
}
