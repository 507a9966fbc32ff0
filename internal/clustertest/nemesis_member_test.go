package clustertest_test

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/runnel-io/runnel/internal/cli"
	"github.com/twmb/franz-go/pkg/kerr"
)

// The membership changes of TestNemesis (issue 14): a broker joins, gets its share of
// replicas from the balancer (partition.autobalancing.mode=node_add, the default),
// and later leaves by `runnel cluster decommission`: drained back onto the voters,
// stopped for good and unregistered. The faults go on meanwhile, and may hit the
// joined node as any other while it is in. It never votes: --controllers names the
// original three nodes (cluster.AddNode), so the metadata quorum stays those three
// and the majority arithmetic of the faults counts voters for the quorum and each
// partition's replicas for its own majority (step.quorumLost, step.lost).

const (
	// shareTimeout bounds how long after it joined a node may go without its share:
	// the balancer plans once no node holding replicas is down and nothing moves (so a
	// long kill of a voter delays the plan by up to longHi), and the moves copy little
	// (the load writes ~15 KB/s per partition) at the balancer's 100 MB/s throttle.
	shareTimeout = 60 * time.Second
	// drainTimeout bounds a decommission, from its start until the node holds no
	// replica; the faults go on meanwhile and a kill of the node being drained, or of
	// a voter receiving its replicas, holds the moves up to longHi.
	drainTimeout = 60 * time.Second
	// unregisterTimeout bounds the wait for a stopped, drained node to be fenced and
	// unregistered.
	unregisterTimeout = 30 * time.Second
	// decommissionThrottle is the --throttle of the decommission, in bytes/s: the
	// partitions hold some 100-400 KB each by then, so that the drain lasts about as
	// long as the fault injected beside it, and the load's acknowledgements must flow
	// while the throttled copies go on (KIP-73: the ISR's traffic is not throttled).
	decommissionThrottle = 256 << 10
	// offsetsTopic is Kafka's group offsets topic: the offset checker's group creates
	// it, and the balancer counts its replicas in a node's share.
	offsetsTopic = "__consumer_offsets"
)

// member is a node that joined the cluster as a broker.
type member struct {
	id     int32
	joined time.Time // AddNode returned
	// share is when the node first held its share of replicas, every one in sync.
	share time.Time
	// leaving is when the decommission started its moves (zero before); drained when
	// the node held no replica; left when it was stopped and unregistered.
	leaving, drained, left time.Time
	// held is how many replicas the node held when its decommission started.
	held int
	// failed: the share or the drain took too long (the test failed); the node then
	// stays in, running, and nothing more is done with it.
	failed bool
	// wait runs the decommission that follows the drain to its end (its moves done,
	// its throttles cleared); it sends the command's error, then is set to nil.
	wait   chan error
	cancel context.CancelFunc // stops the command of wait
	out    *bytes.Buffer      // its output; read only after it sent on wait
}

// in reports whether the member runs as a node of the cluster: joined, not yet left.
func (m *member) in() bool { return m != nil && m.left.IsZero() }

// nodeIDs are the nodes faults may hit: the voters, and the joined node while it is in.
func (n *nemesis) nodeIDs() []int32 {
	ids := []int32{}
	for id := int32(1); id <= nemesisVoters; id++ {
		ids = append(ids, id)
	}
	if n.member.in() {
		ids = append(ids, n.member.id)
	}
	return ids
}

// membershipDue reports whether the next step should change the membership: a node
// joins if none is in (the first step of every run, so that its moves overlap the
// faults that follow, then at random), and the joined node leaves once it holds its
// share, when a third of the run is left (so that the drain overlaps the last faults)
// or at random.
func (n *nemesis) membershipDue(deadline time.Time, random bool, duration time.Duration) bool {
	switch m := n.member; {
	case !m.in():
		return m == nil || random
	case m.share.IsZero() || !m.leaving.IsZero():
		return false
	default:
		return random || time.Until(deadline) < duration/3
	}
}

// membershipStep joins a node (none is in) or starts the decommission of the joined
// one, then injects a single fault right away, so that the balancer's moves or the
// drain run under it. A refused decommission makes it a plain single fault.
func (n *nemesis) membershipStep() {
	if !n.member.in() {
		n.joinStep()
	} else if !n.leaveStep() {
		n.singleFault("")
	}
}

// joinStep starts a new node, which joins as a broker, and injects a single fault.
func (n *nemesis) joinStep() {
	n.logf("state: %s", n.snapshot())
	start := time.Now()
	node := n.c.AddNode(n.t)
	n.member = &member{id: node.ID, joined: time.Now()}
	n.logf("node %d joined as a broker (voters 1-%d) in %v; the balancer is to give it its share", node.ID, nemesisVoters, time.Since(start).Round(time.Millisecond))
	n.singleFault(fmt.Sprintf("node %d joins", node.ID))
}

// leaveStep starts the decommission of the joined node and injects a single fault;
// false, with no fault, if the decommission was refused.
func (n *nemesis) leaveStep() bool {
	n.logf("state: %s", n.snapshot())
	if !n.startLeave() {
		return false
	}
	n.singleFault(fmt.Sprintf("node %d leaves", n.member.id))
	return true
}

// advanceMembership notes the joined node's progress between steps, with every fault
// undone: its share arriving, its drain ending; a drained node is then stopped and
// unregistered. It fails the test when the share or the drain takes too long.
func (n *nemesis) advanceMembership() {
	m := n.member
	if !m.in() || m.failed {
		return
	}
	if m.share.IsZero() {
		if ok, desc := n.holdsShare(m.id); ok {
			m.share = time.Now()
			n.logf("node %d holds its share, %v after it joined: %s", m.id, m.share.Sub(m.joined).Round(time.Millisecond), desc)
		} else if time.Since(m.joined) > shareTimeout {
			n.t.Errorf("nemesis +%.3fs: node %d joined %v ago and still lacks its share: %s",
				time.Since(n.start).Seconds(), m.id, time.Since(m.joined).Round(time.Millisecond), desc)
			m.share = time.Now() // reported once; the leave may still go on
		}
		return
	}
	if m.leaving.IsZero() {
		return
	}
	if m.wait != nil {
		select {
		case err := <-m.wait:
			m.wait = nil
			if err != nil {
				// As an operator would: the command is meant to be run again (the
				// faults fail its requests now and then).
				n.logf("decommission %d failed (%v), running it again; its output: %s", m.id, err, cliTail(m.out.String(), 5))
				n.followDrain(m)
				return
			}
			n.logf("decommission %d: %s", m.id, cliTail(m.out.String(), 3))
		default:
		}
	}
	held, desc := n.holding(m.id)
	switch {
	case held == 0 && m.wait == nil:
		m.drained = time.Now()
		n.logf("node %d drained: %d replicas moved off it in %v", m.id, m.held, m.drained.Sub(m.leaving).Round(time.Millisecond))
		n.finishLeave(m)
	case time.Since(m.leaving) > drainTimeout:
		n.t.Errorf("nemesis +%.3fs: node %d still holds replicas %v after its decommission began: %s",
			time.Since(n.start).Seconds(), m.id, time.Since(m.leaving).Round(time.Millisecond), desc)
		m.failed = true
	case held > 0 && m.wait == nil:
		// The command ended with replicas left on the node (a move replaced by
		// another, a partition created meanwhile): it is run again, and plans anew.
		n.logf("decommission %d ended with the node still holding replicas (%s); running it again", m.id, desc)
		n.followDrain(m)
	}
}

// finishMembership ends the run's membership changes once every fault is undone:
// the joined node gets its share if it has not, and leaves if it has not (a leave
// step, with its single fault), so that every run does both and the checks see the
// replicas moved back onto the voters.
func (n *nemesis) finishMembership() {
	m := n.member
	if !m.in() {
		return
	}
	for m.share.IsZero() && !m.failed {
		n.advanceMembership()
		time.Sleep(200 * time.Millisecond)
	}
	if m.leaving.IsZero() && !m.failed {
		deadline := time.Now().Add(redundancyTimeout)
		for n.waitRedundant() && !n.leaveStep() {
			if time.Now().After(deadline) {
				n.t.Errorf("nemesis: the decommission of node %d was refused for %v with every node up", m.id, redundancyTimeout)
				return
			}
			time.Sleep(time.Second)
		}
	}
	for m.in() && !m.failed {
		n.advanceMembership()
		time.Sleep(200 * time.Millisecond)
	}
	if m.wait != nil {
		m.cancel()
		<-m.wait
	}
}

// startLeave starts the decommission of the joined node: `runnel cluster
// decommission --no-wait` plans the drain and starts its moves, which a second run
// of the command then follows. It returns false if the command was refused (a node
// restarted by the last step not yet unfenced, a partition's other replicas not yet
// in sync) or failed.
func (n *nemesis) startLeave() bool {
	m := n.member
	held, _ := n.holding(m.id)
	out, err := n.runCLI(context.Background(), "cluster", "decommission", fmt.Sprint(m.id), "-b", n.c.Bootstrap(),
		"--no-wait", "--throttle", fmt.Sprint(decommissionThrottle))
	if err != nil {
		n.logf("decommission %d --no-wait refused: %v: %s", m.id, err, cliTail(out, 5))
		return false
	}
	m.leaving, m.held = time.Now(), held
	// The command plans and starts the drain, or, while other moves go on (a move
	// fault's moving back, the balancer's last), says it waits for them: the command
	// that follows the drain plans it then.
	n.logf("node %d leaves, holding %d replicas: decommission --no-wait: %s", m.id, held, cliTail(out, 2))
	n.followDrain(m)
	return true
}

// followDrain runs `runnel cluster decommission ID --no-wait-stop` in the background:
// it waits for the moves and says the node is to be stopped (finishLeave stops it).
func (n *nemesis) followDrain(m *member) {
	ctx, cancel := context.WithCancel(context.Background())
	m.wait, m.cancel, m.out = make(chan error, 1), cancel, &bytes.Buffer{}
	args := []string{"cluster", "decommission", fmt.Sprint(m.id), "-b", n.c.Bootstrap(), "--interval", "500ms", "--no-wait-stop"}
	go func(wait chan error, out *bytes.Buffer) {
		o, err := n.runCLI(ctx, args...)
		out.WriteString(o)
		wait <- err
	}(m.wait, m.out)
}

// finishLeave stops the drained node for good and unregisters it (`runnel cluster
// decommission ID` once more: it unregisters a stopped node that holds nothing, once
// the controller has fenced it).
func (n *nemesis) finishLeave(m *member) {
	if err := n.c.Stop(int(m.id)); err != nil {
		n.t.Errorf("nemesis: stopping drained node %d: %v", m.id, err)
	}
	deadline := time.Now().Add(unregisterTimeout)
	for {
		out, err := n.runCLI(context.Background(), "cluster", "decommission", fmt.Sprint(m.id), "-b", n.c.Bootstrap())
		if err == nil && strings.Contains(out, fmt.Sprintf("Unregistered node %d", m.id)) {
			break
		}
		if time.Now().After(deadline) {
			n.t.Errorf("nemesis: unregistering stopped, drained node %d: %v: %s", m.id, err, cliTail(out, 5))
			break
		}
		time.Sleep(200 * time.Millisecond) // until the controller has fenced the stopped node
	}
	m.left = time.Now()
	n.logf("node %d left: stopped and unregistered, %v after its decommission began", m.id, m.left.Sub(m.leaving).Round(time.Millisecond))
}

// runCLI runs the runnel command line in this process and returns its output
// (stdout then stderr) and error.
func (n *nemesis) runCLI(ctx context.Context, args ...string) (string, error) {
	var out bytes.Buffer
	root := cli.NewRoot()
	root.SetArgs(args)
	root.SetIn(strings.NewReader(""))
	root.SetOut(&out)
	root.SetErr(&out)
	_, err := root.ExecuteContextC(ctx)
	return out.String(), err
}

// holdsShare reports whether node id holds its share of the replicas of every topic,
// as every live node sees it: at least ⌊R/N⌋−1 of the R replicas over the N nodes in,
// at least one of the nemesis topic, none still being added, and every partition it
// is a replica of has a full ISR (every replica in sync, the node among them). The balancer gives each node ⌊R'/N⌋ or ⌈R'/N⌉ of the R' replicas there were
// when it planned, and a move fault in force then (one partition at RF 2, two in a
// double fault) makes R' as low as R−2, so ⌊R'/N⌋ ≥ ⌊R/N⌋−1 (seed 1796193217995694377:
// the plan came while testnemesis-4 was at RF 2, and gave node 4 41 of 167).
func (n *nemesis) holdsShare(id int32) (bool, string) {
	views, err := n.replicaViews()
	if err != nil {
		return false, err.Error()
	}
	adding, err := n.addingTo(id)
	if err != nil {
		return false, err.Error()
	}
	for _, v := range views {
		total, mine, ofTopic := 0, 0, 0
		var behind []string
		for tp, st := range v.parts {
			total += len(st.Replicas)
			if !slices.Contains(st.Replicas, id) {
				continue
			}
			mine++
			if tp.topic == n.topic {
				ofTopic++
			}
			if !slices.Contains(st.ISR, id) || len(st.ISR) < len(st.Replicas) {
				behind = append(behind, fmt.Sprintf("%s-%d replicas %v ISR %v", tp.topic, tp.p, st.Replicas, st.ISR))
			}
		}
		want := total/len(n.nodeIDs()) - 1
		desc := fmt.Sprintf("node %d sees it hold %d of %d replicas (%d of %s), want at least %d; ISR not full in %v; being added to %v",
			v.from, mine, total, ofTopic, n.topic, want, behind, adding)
		if mine < want || ofTopic == 0 || len(behind) > 0 || len(adding) > 0 {
			return false, desc
		}
		if v == views[len(views)-1] {
			return true, desc
		}
	}
	return false, "no live node answered"
}

// holding returns how many replicas node id holds in the view of the live node that
// sees it hold the most (0 only when every live node sees none), and a description.
func (n *nemesis) holding(id int32) (int, string) {
	views, err := n.replicaViews()
	if err != nil {
		return -1, err.Error()
	}
	most, desc := 0, ""
	for _, v := range views {
		var held []string
		for tp, st := range v.parts {
			if slices.Contains(st.Replicas, id) {
				held = append(held, fmt.Sprintf("%s-%d", tp.topic, tp.p))
			}
		}
		if len(held) >= most {
			slices.Sort(held)
			most, desc = len(held), fmt.Sprintf("node %d sees it hold %d: %v", v.from, len(held), held)
		}
	}
	return most, desc
}

// addingTo returns the partitions an ongoing reassignment adds node id to.
func (n *nemesis) addingTo(id int32) ([]string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	resp, err := n.adm.ListPartitionReassignments(ctx, nil)
	if err != nil {
		return nil, fmt.Errorf("listing reassignments: %w", err)
	}
	var out []string
	for topic, ps := range resp {
		for p, r := range ps {
			if slices.Contains(r.AddingReplicas, id) {
				out = append(out, fmt.Sprintf("%s-%d", topic, p))
			}
		}
	}
	slices.Sort(out)
	return out, nil
}

type topicPart struct {
	topic string
	p     int32
}

// replicaView is one live node's view of the partitions of the nemesis topic and of
// the group offsets topic.
type replicaView struct {
	from  int32
	parts map[topicPart]replicaState
}

type replicaState struct{ Replicas, ISR []int32 }

// replicaViews asks every live node for its view; an error if none answered.
func (n *nemesis) replicaViews() ([]*replicaView, error) {
	var views []*replicaView
	var errs []string
	for _, id := range n.c.LiveIDs() {
		resp, err := n.c.MetadataFrom(context.Background(), int(id), n.topic, offsetsTopic)
		if err != nil {
			errs = append(errs, err.Error())
			continue
		}
		v := &replicaView{from: id, parts: map[topicPart]replicaState{}}
		for _, t := range resp.Topics {
			if t.Topic == nil || kerr.ErrorForCode(t.ErrorCode) != nil {
				continue // the offsets topic before the first commit
			}
			for _, p := range t.Partitions {
				v.parts[topicPart{*t.Topic, p.Partition}] = replicaState{Replicas: p.Replicas, ISR: p.ISR}
			}
		}
		views = append(views, v)
	}
	if len(views) == 0 {
		return nil, fmt.Errorf("no live node answered Metadata: %s", strings.Join(errs, "; "))
	}
	return views, nil
}

// lastLines returns the last k non-empty lines of s, joined by " | ".
func cliTail(s string, k int) string {
	lines := slices.DeleteFunc(strings.Split(s, "\n"), func(l string) bool { return strings.TrimSpace(l) == "" })
	if len(lines) > k {
		lines = lines[len(lines)-k:]
	}
	return strings.Join(lines, " | ")
}
