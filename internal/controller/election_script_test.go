package controller

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/cockroachdb/datadriven"

	"github.com/runnel-io/runnel/internal/metadata"
)

// TestElectionScripts runs the scripts in testdata/election/ against the controller's
// pure election plans (election.go, degraded.go): what fencing, unfencing, a
// controlled shutdown, a full disk and the preferred-leader rebalance do to the
// partitions of one image, each step applied before the next, as the controller
// commits them. Regenerate the expected output with
// `go test ./internal/controller -run TestElectionScripts -rewrite` and review the diff.
//
// Commands (nodes are ids; brokers 1..5 are registered, live as `live` says):
//
//	topic name=T [unclean]     create topic T (unclean.leader.election.enable when
//	                           unclean), one partition per input line:
//	                           `replicas=1,2,3 isr=1,2 leader=1 [le=E] [pe=P]`
//	live nodes=(1,2,3)         the brokers that are registered, unfenced and reachable
//	disk-full nodes=(2)        these brokers' disks are full ((): none)
//	fence node=N               N's session expired (fenceElections); N is no longer live
//	unfence node=N             N is back (unfenceElections); N is live
//	shutdown node=N            N asks for a controlled shutdown (shutdownElections)
//	damaged node=N tp=(T/0,..) N's replicas of these partitions are damaged (():
//	                           none); N's other damage is cleared
//	full-disk, degraded        leadership moves off full disks and damaged replicas,
//	                           damaged followers leave the ISR (degradedElections)
//	elect-preferred tp=T/P     an ElectLeaders (preferred) request for T/P: prints
//	                           the change or the refusal (electOnDemand)
//	preferred [ratio=R]        the preferred-leader rebalance (preferredElections),
//	                           for nodes whose imbalance is above R (default 0.1)
//	show                       every partition
//
// Each step prints the partitions it changes (UNCLEAN: the new leader was outside the
// ISR), or "no change".
func TestElectionScripts(t *testing.T) {
	datadriven.Walk(t, "testdata/election", func(t *testing.T, path string) {
		s := &electionSim{im: metadata.Empty(), live: []metadata.NodeID{1, 2, 3}, unclean: map[string]bool{}}
		for id := metadata.NodeID(1); id <= 5; id++ {
			s.im = s.im.Apply(metadata.Record{Type: metadata.RegisterBrokerType, Broker: &metadata.Broker{ID: id, Epoch: 1}}, s.im.Offset+1)
		}
		datadriven.RunTest(t, path, func(t *testing.T, d *datadriven.TestData) string {
			return s.run(t, d)
		})
	})
}

type electionSim struct {
	im      *metadata.Image
	live    []metadata.NodeID
	unclean map[string]bool
}

func (s *electionSim) isLive(id metadata.NodeID) bool { return slices.Contains(s.live, id) }

func (s *electionSim) run(t *testing.T, d *datadriven.TestData) string {
	switch d.Cmd {
	case "topic":
		var name string
		d.ScanArgs(t, "name", &name)
		s.unclean[name] = d.HasArg("unclean")
		var parts []metadata.Partition
		for _, line := range strings.Split(strings.TrimSpace(d.Input), "\n") {
			parts = append(parts, parsePartition(t, line))
		}
		s.im = s.im.Apply(metadata.Record{Type: metadata.CreateTopicType, Topic: &metadata.Topic{Name: name, Partitions: parts}}, s.im.Offset+1)
		return s.show()
	case "live":
		s.live = nodesArg(t, d, "nodes")
		return ""
	case "disk-full":
		full := nodesArg(t, d, "nodes")
		for id := metadata.NodeID(1); id <= 5; id++ {
			s.im = s.im.Apply(metadata.Record{Type: metadata.BrokerDiskType, BrokerID: id, DiskFull: slices.Contains(full, id)}, s.im.Offset+1)
		}
		return ""
	case "fence":
		id := nodeArg(t, d)
		es := fenceElections(s.im, id, s.isLive, s.uncleanFor)
		s.live = slices.DeleteFunc(s.live, func(r metadata.NodeID) bool { return r == id })
		return s.apply(es)
	case "unfence":
		id := nodeArg(t, d)
		es := unfenceElections(s.im, id, s.isLive, s.uncleanFor)
		if !s.isLive(id) {
			s.live = append(s.live, id)
		}
		return s.apply(es)
	case "shutdown":
		return s.apply(shutdownElections(s.im, nodeArg(t, d), s.isLive))
	case "damaged":
		id := nodeArg(t, d)
		var ds []metadata.DamagedReplica
		for _, arg := range d.CmdArgs {
			if arg.Key != "tp" {
				continue
			}
			for _, v := range arg.Vals {
				if v == "" {
					continue // tp=(): none
				}
				topic, part, ok := strings.Cut(v, "/")
				n, err := strconv.Atoi(part)
				if !ok || err != nil {
					t.Fatalf("%s: tp=%q: want TOPIC/PARTITION", d.Pos, v)
				}
				ds = append(ds, metadata.DamagedReplica{Topic: topic, Partition: int32(n), FirstOffset: 10, LastOffset: 19, File: "00000000000000000000.log"})
			}
		}
		metadata.SortDamage(ds)
		s.im = s.im.Apply(metadata.Record{Type: metadata.BrokerDamageType, BrokerID: id, Damaged: ds}, s.im.Offset+1)
		return ""
	case "full-disk", "degraded":
		return s.apply(degradedElections(s.im, s.isLive))
	case "elect-preferred":
		var v string
		d.ScanArgs(t, "tp", &v)
		topic, part, _ := strings.Cut(v, "/")
		n, _ := strconv.Atoi(part)
		tp := metadata.TopicPartition{Topic: topic, Partition: int32(n)}
		p, ok := s.im.Partition(tp)
		if !ok {
			t.Fatalf("%s: no partition %s", d.Pos, v)
		}
		next, err := electOnDemand(p, false, s.isLive, unfit(s.im, tp), func(r metadata.NodeID) bool { return s.im.Damaged(tp, r) })
		if err != nil {
			return fmt.Sprintf("refused: %v\n", err)
		}
		return s.apply([]election{{tp, p, next}})
	case "preferred":
		ratio := 0.1
		if d.HasArg("ratio") {
			var r string
			d.ScanArgs(t, "ratio", &r)
			v, err := strconv.ParseFloat(r, 64)
			if err != nil {
				t.Fatalf("%s: ratio=%q: %v", d.Pos, r, err)
			}
			ratio = v
		}
		return s.apply(preferredElections(s.im, s.isLive, ratio))
	case "show":
		return s.show()
	}
	t.Fatalf("%s: unknown command %q", d.Pos, d.Cmd)
	return ""
}

func (s *electionSim) uncleanFor(topic string) bool { return s.unclean[topic] }

// apply commits es to the image, as the controller's Raft entry would, and prints them.
func (s *electionSim) apply(es []election) string {
	s.im = applyElections(s.im, es)
	if len(es) == 0 {
		return "no change\n"
	}
	var b strings.Builder
	for _, e := range es {
		fmt.Fprintf(&b, "%s/%d: %s", e.tp.Topic, e.tp.Partition, describe(e.next))
		if e.unclean() {
			b.WriteString(" UNCLEAN")
		}
		b.WriteByte('\n')
	}
	return b.String()
}

func (s *electionSim) show() string {
	var b strings.Builder
	for _, name := range s.im.TopicNames() {
		for i, p := range s.im.Topics[name].Partitions {
			fmt.Fprintf(&b, "%s/%d: %s\n", name, i, describe(p))
		}
	}
	return b.String()
}

func parsePartition(t *testing.T, line string) metadata.Partition {
	p := metadata.Partition{Leader: metadata.NoLeader}
	for _, f := range strings.Fields(line) {
		k, v, ok := strings.Cut(f, "=")
		if !ok {
			t.Fatalf("partition %q: %q is not key=value", line, f)
		}
		switch k {
		case "replicas":
			p.Replicas = parseNodes(t, v)
		case "isr":
			p.ISR = parseNodes(t, v)
		case "leader", "le", "pe":
			n, err := strconv.Atoi(v)
			if err != nil {
				t.Fatalf("partition %q: %s=%q: %v", line, k, v, err)
			}
			switch k {
			case "leader":
				p.Leader = metadata.NodeID(n)
			case "le":
				p.LeaderEpoch = int32(n)
			default:
				p.PartitionEpoch = int32(n)
			}
		default:
			t.Fatalf("partition %q: unknown field %q", line, k)
		}
	}
	return p
}

func parseNodes(t *testing.T, v string) []metadata.NodeID {
	out := []metadata.NodeID{}
	for _, f := range strings.Split(strings.Trim(v, "()"), ",") {
		if f == "" {
			continue
		}
		n, err := strconv.Atoi(f)
		if err != nil {
			t.Fatalf("node list %q: %v", v, err)
		}
		out = append(out, metadata.NodeID(n))
	}
	return out
}

func nodesArg(t *testing.T, d *datadriven.TestData, key string) []metadata.NodeID {
	for _, a := range d.CmdArgs {
		if a.Key == key {
			return parseNodes(t, strings.Join(a.Vals, ","))
		}
	}
	t.Fatalf("%s: %s needs %s=(...)", d.Pos, d.Cmd, key)
	return nil
}

func nodeArg(t *testing.T, d *datadriven.TestData) metadata.NodeID {
	var n int
	d.ScanArgs(t, "node", &n)
	return metadata.NodeID(n)
}
