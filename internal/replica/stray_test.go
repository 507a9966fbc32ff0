package replica

import (
	"context"
	"testing"

	"github.com/runnel-io/runnel/internal/log"
	"github.com/runnel-io/runnel/internal/metadata"
	"github.com/runnel-io/runnel/internal/vfs"
)

// TestStrayLogsWaitForCaughtUpImage: node 1 starts with four logs on disk. The first
// images it applies are not caught up, and they place none of the logs here: nothing
// is deleted. On the first caught-up image the logs of a deleted topic, of a partition
// past the topic's count and of a partition moved away go; the log of a partition the
// node is becoming a replica of (adding) stays, and so does the hosted one.
func TestStrayLogsWaitForCaughtUpImage(t *testing.T) {
	dir := t.TempDir()
	tps := []metadata.TopicPartition{{Topic: "gone"}, {Topic: "t", Partition: 5}, {Topic: "t", Partition: 1},
		{Topic: "t", Partition: 2}, {Topic: "t", Partition: 0}}
	{
		logs, err := log.NewManager(log.ManagerOptions{FS: vfs.OS(), DataDir: dir, Defaults: log.DefaultConfig()})
		if err != nil {
			t.Fatal(err)
		}
		for _, tp := range tps {
			if _, err := logs.GetOrCreate(tp, log.DefaultConfig()); err != nil {
				t.Fatal(err)
			}
		}
		if err := logs.Close(); err != nil {
			t.Fatal(err)
		}
	}
	caughtUp := false
	logs, m := newSweepManager(t, dir, func(*metadata.Image) bool { return caughtUp })

	ids := func(n ...metadata.NodeID) []metadata.NodeID { return n }
	im := metadata.Empty().Apply(metadata.Record{Type: metadata.CreateTopicType, Topic: &metadata.Topic{
		Name: "t", Partitions: []metadata.Partition{
			{Replicas: ids(1, 2), ISR: ids(1, 2), Leader: 1},
			{Replicas: ids(2, 3), ISR: ids(2, 3), Leader: 2},
			// Moving onto 1: the replicas are the target plus the removed ones.
			{Replicas: ids(1, 2, 3), ISR: ids(2, 3), Leader: 2, AddingReplicas: ids(1), RemovingReplicas: ids(3)},
		},
	}}, 1)
	// A stale image: node 1 is not a replica of t-2 yet, nor of t-0.
	stale := metadata.Empty().Apply(metadata.Record{Type: metadata.CreateTopicType, Topic: &metadata.Topic{
		Name: "t", Partitions: []metadata.Partition{{Replicas: ids(2, 3), ISR: ids(2, 3), Leader: 2}},
	}}, 1)
	if err := m.ApplyImage(stale); err != nil {
		t.Fatal(err)
	}
	if err := m.ApplyImage(im); err != nil {
		t.Fatal(err)
	}
	for _, tp := range tps {
		if logs.Get(tp) == nil {
			t.Fatalf("%s-%d deleted before the node caught up", tp.Topic, tp.Partition)
		}
	}
	caughtUp = true
	im2 := im.Apply(metadata.Record{Type: metadata.RegisterBrokerType, Broker: &metadata.Broker{ID: 1}}, 2)
	if err := m.ApplyImage(im2); err != nil {
		t.Fatal(err)
	}
	want := map[metadata.TopicPartition]bool{tps[0]: false, tps[1]: false, tps[2]: false, tps[3]: true, tps[4]: true}
	for tp, kept := range want {
		if got := logs.Get(tp) != nil; got != kept {
			t.Errorf("%s-%d: kept %v, want %v", tp.Topic, tp.Partition, got, kept)
		}
	}
	// An adding replica is a replica, hosted or not.
	if why := strayReason(im2, 1, tps[3]); why != "" {
		t.Errorf("the adding replica of t-2 counted as stray: %s", why)
	}
}

// TestRecreatedTopicInOneImage: a topic deleted and re-created under the same name
// between two images this node applies (a node that lagged, or was down, sees both in
// one step) is a new topic: the old log goes and the node hosts a new, empty one. The
// old ordering applied the new partition onto the old log and then deleted it, so the
// node, the new topic's leader, hosted nothing until the partition next changed.
func TestRecreatedTopicInOneImage(t *testing.T) {
	logs, m := newSweepManager(t, t.TempDir(), func(*metadata.Image) bool { return true })
	topic := func(id byte) *metadata.Topic {
		return &metadata.Topic{Name: "t", ID: [16]byte{id}, Partitions: []metadata.Partition{
			{Replicas: []metadata.NodeID{1}, ISR: []metadata.NodeID{1}, Leader: 1, LeaderEpoch: 0}}}
	}
	tp := metadata.TopicPartition{Topic: "t"}
	im := metadata.Empty().Apply(metadata.Record{Type: metadata.CreateTopicType, Topic: topic(1)}, 1)
	if err := m.ApplyImage(im); err != nil {
		t.Fatal(err)
	}
	old := logs.Get(tp)
	if old == nil {
		t.Fatal("t-0 not created")
	}
	recreated := im.Apply(metadata.Record{Type: metadata.DeleteTopicType, TopicName: "t"}, 2).
		Apply(metadata.Record{Type: metadata.CreateTopicType, Topic: topic(2)}, 3)
	if err := m.ApplyImage(recreated); err != nil {
		t.Fatal(err)
	}
	p, err := m.Partition(tp)
	if err != nil {
		t.Fatalf("t-0 of the re-created topic, led by this node, is not hosted: %v", err)
	}
	if now := logs.Get(tp); now == nil || now == old || p.log != now {
		t.Errorf("t-0 of the re-created topic runs on the deleted topic's log (old %p, now %p, partition's %p)", old, now, p.log)
	}
}

// TestEarlierTopicLogReplaced: node 1 restarts with the logs of three partitions on
// disk: a-0 recorded under topic id 1, b-0 under id 3, c-0 with no id (an older
// directory). Meanwhile topic a was deleted and re-created (id 2); b is unchanged.
// Before the node catches up nothing is deleted or recorded; on the first caught-up
// image a-0's log is replaced by a new one recorded under id 2, b-0 is kept, and c-0
// gets its id recorded. After that, a partition hosted anew is checked at once.
func TestEarlierTopicLogReplaced(t *testing.T) {
	dir := t.TempDir()
	a, b, c, d := metadata.TopicPartition{Topic: "a"}, metadata.TopicPartition{Topic: "b"},
		metadata.TopicPartition{Topic: "c"}, metadata.TopicPartition{Topic: "d"}
	{
		logs, err := log.NewManager(log.ManagerOptions{FS: vfs.OS(), DataDir: dir, Defaults: log.DefaultConfig()})
		if err != nil {
			t.Fatal(err)
		}
		for tp, id := range map[metadata.TopicPartition]byte{a: 1, b: 3, c: 0, d: 9} {
			l, err := logs.GetOrCreate(tp, log.DefaultConfig())
			if err != nil {
				t.Fatal(err)
			}
			if id != 0 {
				if err := l.SetTopicID([16]byte{id}); err != nil {
					t.Fatal(err)
				}
			}
		}
		if err := logs.Close(); err != nil {
			t.Fatal(err)
		}
	}
	caughtUp := false
	logs, m := newSweepManager(t, dir, func(*metadata.Image) bool { return caughtUp })
	create := func(im *metadata.Image, name string, id byte, off uint64) *metadata.Image {
		return im.Apply(metadata.Record{Type: metadata.CreateTopicType, Topic: &metadata.Topic{Name: name, ID: [16]byte{id},
			Partitions: []metadata.Partition{{Replicas: []metadata.NodeID{1}, ISR: []metadata.NodeID{1}, Leader: 1}}}}, off)
	}
	im := create(create(create(metadata.Empty(), "a", 2, 1), "b", 3, 2), "c", 4, 3)
	before := map[metadata.TopicPartition]*log.Log{a: logs.Get(a), b: logs.Get(b), c: logs.Get(c)}
	if err := m.ApplyImage(im); err != nil { // not caught up
		t.Fatal(err)
	}
	for tp, l := range before {
		if logs.Get(tp) != l {
			t.Fatalf("%s-0's log replaced before the node caught up", tp.Topic)
		}
	}
	if _, ok := before[c].TopicID(); ok {
		t.Fatal("c-0's topic id recorded from an image the node had not caught up to")
	}
	caughtUp = true
	im = im.Apply(metadata.Record{Type: metadata.RegisterBrokerType, Broker: &metadata.Broker{ID: 1}}, 4)
	if err := m.ApplyImage(im); err != nil {
		t.Fatal(err)
	}
	if now := logs.Get(a); now == nil || now == before[a] {
		t.Errorf("a-0, recorded under topic id 1, still runs on its log under topic id 2")
	} else if p, err := m.Partition(a); err != nil || p.log != now {
		t.Errorf("a-0 not hosted on its new log: %v", err)
	} else if id, ok := now.TopicID(); !ok || id != [16]byte{2} {
		t.Errorf("a-0's new log records topic id %v (%v), want 2", id, ok)
	}
	if logs.Get(b) != before[b] {
		t.Error("b-0's log, of the same topic id as the metadata's, was replaced")
	}
	if id, ok := before[c].TopicID(); !ok || id != [16]byte{4} {
		t.Errorf("c-0's log records topic id %v (%v) after the caught-up image, want 4", id, ok)
	}
	// Caught up: d-0 (recorded under id 9) hosted now as topic d with id 5 is replaced at once.
	oldD := logs.Get(d)
	if err := m.ApplyImage(create(im, "d", 5, 5)); err != nil {
		t.Fatal(err)
	}
	if now := logs.Get(d); now == nil || now == oldD {
		t.Error("d-0's log of topic id 9 was hosted as topic d with id 5")
	}
}

// newSweepManager opens the logs under dir and a Manager of node 1 over them with
// caughtUp as Options.CaughtUp, both closed at the end of the test.
func newSweepManager(t *testing.T, dir string, caughtUp func(*metadata.Image) bool) (*log.Manager, *Manager) {
	t.Helper()
	logs, err := log.NewManager(log.ManagerOptions{FS: vfs.OS(), DataDir: dir, Defaults: log.DefaultConfig()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { logs.Close() })
	m, err := NewManager(Options{Node: 1, Logs: logs, CaughtUp: caughtUp,
		Resolve: func(*metadata.Image, *metadata.Topic) TopicSettings {
			return TopicSettings{Log: log.DefaultConfig(), MinISR: 1}
		}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close(context.Background()) })
	return logs, m
}
