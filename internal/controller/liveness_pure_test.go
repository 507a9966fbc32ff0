package controller

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/runnel-io/runnel/internal/metadata"
)

// electionImage has brokers 1..3 and topic "t":
//
//	p0 replicas [1 2 3] isr [1 2 3] leader 1
//	p1 replicas [2 3 1] isr [2 3 1] leader 2
//	p2 replicas [1 2]   isr [1]     leader 1 (1 is the only in-sync replica)
//	p3 replicas [3 2]   isr [3 2]   leader 3 (broker 1 not involved)
func electionImage(topicConfigs map[string]string) *metadata.Image {
	ids := func(x ...metadata.NodeID) []metadata.NodeID { return x }
	im := metadata.Empty()
	for id := metadata.NodeID(1); id <= 3; id++ {
		im = im.Apply(metadata.Record{Type: metadata.RegisterBrokerType, Broker: &metadata.Broker{ID: id, Epoch: 1}}, 1)
	}
	im = im.Apply(metadata.Record{Type: metadata.CreateTopicType, Topic: &metadata.Topic{Name: "t", Configs: topicConfigs,
		Partitions: []metadata.Partition{
			{Replicas: ids(1, 2, 3), ISR: ids(1, 2, 3), Leader: 1},
			{Replicas: ids(2, 3, 1), ISR: ids(2, 3, 1), Leader: 2},
			{Replicas: ids(1, 2), ISR: ids(1), Leader: 1},
			{Replicas: ids(3, 2), ISR: ids(3, 2), Leader: 3},
		}}}, 2)
	return im
}

func describeElections(es []election) string {
	var out []string
	for _, e := range es {
		s := fmt.Sprintf("p%d: %s", e.tp.Partition, describe(e.next))
		if e.unclean() {
			s += " UNCLEAN"
		}
		out = append(out, s)
	}
	return strings.Join(out, "\n")
}

func never(string) bool { return false }

func TestFenceElections(t *testing.T) {
	im := electionImage(nil)
	got := describeElections(fenceElections(im, 1, liveSet(1, 2, 3), never))
	want := strings.Join([]string{
		"p0: replicas=[1 2 3] isr=[2 3] leader=2 le=1 pe=1",
		"p1: replicas=[2 3 1] isr=[2 3] leader=2 le=0 pe=1",
		"p2: replicas=[1 2] isr=[1] leader=-1 le=1 pe=1", // offline, keeps its last ISR member
	}, "\n")
	if got != want {
		t.Errorf("fence 1:\n%s\nwant:\n%s", got, want)
	}
	got = describeElections(fenceElections(im, 1, liveSet(1, 2, 3), func(string) bool { return true }))
	if !strings.Contains(got, "p2: replicas=[1 2] isr=[2] leader=2 le=1 pe=1 UNCLEAN") {
		t.Errorf("fence 1 with unclean election allowed:\n%s", got)
	}
}

func TestShutdownElections(t *testing.T) {
	im := electionImage(nil)
	got := describeElections(shutdownElections(im, 1, liveSet(1, 2, 3)))
	want := strings.Join([]string{
		"p0: replicas=[1 2 3] isr=[2 3] leader=2 le=1 pe=1",
		"p1: replicas=[2 3 1] isr=[2 3] leader=2 le=0 pe=1",
		// p2 has nowhere to go and stays as it is; never unclean.
	}, "\n")
	if got != want {
		t.Errorf("shutdown of 1:\n%s\nwant:\n%s", got, want)
	}
}

func TestUnfenceElections(t *testing.T) {
	im := electionImage(map[string]string{"unclean.leader.election.enable": "false"})
	im = applyElections(im, fenceElections(im, 1, liveSet(1, 2, 3), never))
	im = im.Apply(metadata.Record{Type: metadata.FenceBrokerType, BrokerID: 1}, 3)
	got := describeElections(unfenceElections(im, 1, liveSet(2, 3), never))
	if want := "p2: replicas=[1 2] isr=[1] leader=1 le=2 pe=2"; got != want {
		t.Errorf("unfence 1: %s, want %s", got, want)
	}
	if got := describeElections(unfenceElections(im, 3, liveSet(2, 3), never)); got != "" {
		t.Errorf("unfencing a broker outside the offline ISR elected: %s", got)
	}
}

func TestPreferredElections(t *testing.T) {
	ids := func(x ...metadata.NodeID) []metadata.NodeID { return x }
	im := metadata.Empty()
	im = im.Apply(metadata.Record{Type: metadata.CreateTopicType, Topic: &metadata.Topic{Name: "t",
		Partitions: []metadata.Partition{
			{Replicas: ids(1, 2, 3), ISR: ids(2, 3, 1), Leader: 2, LeaderEpoch: 3, PartitionEpoch: 5}, // back to 1
			{Replicas: ids(1, 2, 3), ISR: ids(2, 3), Leader: 2},                                       // 1 out of sync
			{Replicas: ids(3, 1), ISR: ids(3, 1), Leader: 1},                                          // 3 not live
			{Replicas: ids(2, 1), ISR: ids(2, 1), Leader: 2},                                          // already preferred
		}}}, 1)
	got := describeElections(preferredElections(im, liveSet(1, 2), 0))
	if want := "p0: replicas=[1 2 3] isr=[2 3 1] leader=1 le=4 pe=6"; got != want {
		t.Errorf("preferred elections: %s, want %s", got, want)
	}
	// leader.imbalance.per.broker.percentage: node 1 is the preferred replica of three
	// partitions and leads none of them (imbalance 100%); with ten partitions where it
	// leads nine, one misplaced (10%) is not above 10%, and nothing moves.
	var parts []metadata.Partition
	for i := range 10 {
		leader := metadata.NodeID(1)
		if i == 0 {
			leader = 2
		}
		parts = append(parts, metadata.Partition{Replicas: ids(1, 2), ISR: ids(1, 2), Leader: leader})
	}
	im2 := metadata.Empty().Apply(metadata.Record{Type: metadata.CreateTopicType, Topic: &metadata.Topic{Name: "u", Partitions: parts}}, 1)
	if got := describeElections(preferredElections(im2, liveSet(1, 2), 0.10)); got != "" {
		t.Errorf("10%% imbalance with leader.imbalance.per.broker.percentage=10 moved: %s", got)
	}
	if got := describeElections(preferredElections(im2, liveSet(1, 2), 0.05)); got == "" {
		t.Error("10% imbalance with leader.imbalance.per.broker.percentage=5 moved nothing")
	}
	if got := describeElections(preferredElections(im, liveSet(1, 2), 0.10)); got == "" {
		t.Error("a node leading none of its preferred partitions was left imbalanced at 10%")
	}
}

func TestExpiredBrokers(t *testing.T) {
	t0 := time.Unix(1000, 0)
	im := metadata.Empty()
	for id := metadata.NodeID(1); id <= 4; id++ {
		im = im.Apply(metadata.Record{Type: metadata.RegisterBrokerType, Broker: &metadata.Broker{ID: id, Epoch: 2, Fenced: id == 3}}, 1)
	}
	s := newSessions(7, t0)
	s.get(1, 2).lastContact = t0.Add(time.Second)
	s.get(4, 1).lastContact = t0.Add(2 * time.Second) // an older registration's session does not count
	got := expiredBrokers(im, s, t0.Add(2500*time.Millisecond), 2*time.Second)
	if fmt.Sprint(got) != "[2 4]" {
		t.Errorf("expired = %v, want [2 4] (1 heartbeated, 3 is fenced, 2 and 4 only have the grace period)", got)
	}
	if got := expiredBrokers(im, s, t0.Add(1500*time.Millisecond), 2*time.Second); len(got) != 0 {
		t.Errorf("expired within the grace period: %v", got)
	}
}

func TestDeafController(t *testing.T) {
	t0 := time.Unix(1000, 0)
	const timeout = 2 * time.Second
	im := metadata.Empty()
	for id := metadata.NodeID(1); id <= 3; id++ {
		im = im.Apply(metadata.Record{Type: metadata.RegisterBrokerType, Broker: &metadata.Broker{ID: id, Epoch: 2}}, 1)
	}
	at := func(contacts ...time.Duration) *sessions {
		s := newSessions(7, t0)
		for i, d := range contacts {
			s.get(metadata.NodeID(i+1), 2).lastContact = t0.Add(d)
		}
		return s
	}
	now := t0.Add(3 * time.Second)
	// Every broker, node 1's own included, silent for more than half the timeout.
	if !deaf(im, at(0, 500*time.Millisecond, 1500*time.Millisecond), now, timeout, 1) {
		t.Error("no broker heard from for over 1.5 s (session timeout 2 s): not deaf")
	}
	// One broker heard from within half the timeout: the others are really silent.
	if deaf(im, at(0, 0, 2500*time.Millisecond), now, timeout, 1) {
		t.Error("broker 3 heartbeated 0.5 s ago, yet deaf")
	}
	// A controller that is not a broker itself (a dedicated controller) cannot tell
	// its own deafness from every broker being down.
	if deaf(im, at(0, 0, 0), now, timeout, 9) {
		t.Error("a dedicated controller (node 9, no broker) called itself deaf")
	}
	fenced := im.Apply(metadata.Record{Type: metadata.FenceBrokerType, BrokerID: 1}, 2)
	if deaf(fenced, at(0, 0, 0), now, timeout, 1) {
		t.Error("a controller whose own broker is fenced called itself deaf")
	}
}
