package controller

import (
	"errors"
	"strings"
	"testing"

	"github.com/runnel-io/runnel/internal/metadata"
)

func TestValidateTopicName(t *testing.T) {
	for _, tc := range []struct {
		name string
		ok   bool
		says string // part of the error message
	}{
		{"orders", true, ""},
		{"a.b_c-D9", true, ""},
		{strings.Repeat("x", 249), true, ""},
		{"", false, "empty"},
		{".", false, `"."`},
		{"..", false, `".."`},
		{"...", true, ""},
		{strings.Repeat("x", 250), false, "250 characters"},
		{"has space", false, "' '"},
		{"slash/", false, "'/'"},
		{"é", false, "'é'"},
	} {
		err := ValidateTopicName(tc.name)
		if tc.ok != (err == nil) || err != nil && (!errors.Is(err, ErrInvalidTopic) || !strings.Contains(err.Error(), tc.says)) {
			t.Errorf("ValidateTopicName(%.20q) = %v, want ok=%v mentioning %q", tc.name, err, tc.ok, tc.says)
		}
	}
}

func TestCreateTopicsPerItemErrors(t *testing.T) {
	c := startWithBrokers(t, 3)
	c.cfg.ValidateTopicConfig = func(k, v string) error {
		if k != "retention.ms" {
			return errors.New("unknown config")
		}
		return nil
	}
	mustCreate(t, c, topicSpec("exists", 1, 1), topicSpec("a.b", 1, 1))
	specs := []metadata.TopicSpec{
		topicSpec("ok", 4, 3),       // 0
		topicSpec("exists", 1, 1),   // 1
		topicSpec("bad name", 1, 1), // 2
		topicSpec("zero", 0, 1),     // 3
		topicSpec("neg", -2, 1),     // 4
		topicSpec("rf4", 1, 4),      // 5
		topicSpec("rf0", 1, 0),      // 6
		topicSpec("twice", 1, 1),    // 7
		topicSpec("twice", 1, 1),    // 8
		topicSpec("a_b", 1, 1),      // 9
		{Name: "cfg", NumPartitions: 1, ReplicationFactor: 1, Configs: map[string]string{"nope": "1"}},                                 // 10
		{Name: "defaults", NumPartitions: -1, ReplicationFactor: -1, Configs: map[string]string{"retention.ms": "5"}},                  // 11
		{Name: "manual", NumPartitions: -1, ReplicationFactor: -1, Assignments: map[int32][]metadata.NodeID{0: {3, 1}, 1: {2, 3}}},     // 12
		{Name: "manual-gap", NumPartitions: -1, ReplicationFactor: -1, Assignments: map[int32][]metadata.NodeID{0: {1}, 2: {2}}},       // 13
		{Name: "manual-dup", NumPartitions: -1, ReplicationFactor: -1, Assignments: map[int32][]metadata.NodeID{0: {1, 1}}},            // 14
		{Name: "manual-unknown", NumPartitions: -1, ReplicationFactor: -1, Assignments: map[int32][]metadata.NodeID{0: {9}}},           // 15
		{Name: "manual-uneven", NumPartitions: -1, ReplicationFactor: -1, Assignments: map[int32][]metadata.NodeID{0: {1}, 1: {1, 2}}}, // 16
		{Name: "manual-and-count", NumPartitions: 2, ReplicationFactor: -1, Assignments: map[int32][]metadata.NodeID{0: {1}}},          // 17
		topicSpec("__consumer_offsets", 2, 1), // 18
	}
	want := []error{nil, ErrTopicExists, ErrInvalidTopic, ErrInvalidPartitions, ErrInvalidPartitions,
		ErrInvalidReplicationFactor, ErrInvalidReplicationFactor, ErrInvalidRequest, ErrInvalidRequest, ErrInvalidTopic,
		ErrInvalidConfig, nil, nil, ErrInvalidReplicaAssignment, ErrInvalidReplicaAssignment, ErrInvalidReplicaAssignment,
		ErrInvalidReplicaAssignment, ErrInvalidRequest, nil}

	// validateOnly gives the same answers and changes nothing.
	offset := c.Image().Offset
	for i, err := range c.CreateTopics(testCtx(t), specs, true) {
		wantErr(t, "validate "+specs[i].Name, err, want[i])
	}
	if c.Image().Offset != offset || c.Image().Topic("ok") != nil {
		t.Fatal("validateOnly changed the image")
	}
	for i, err := range c.CreateTopics(testCtx(t), specs, false) {
		wantErr(t, "create "+specs[i].Name, err, want[i])
	}
	im := c.Image()
	for i, s := range specs {
		if (want[i] == nil) != (im.Topic(s.Name) != nil) && s.Name != "exists" {
			t.Errorf("topic %q in image: %v, want %v", s.Name, im.Topic(s.Name) != nil, want[i] == nil)
		}
	}
	checkNewTopic(t, im.Topic("ok"), 4, 3)
	checkNewTopic(t, im.Topic("defaults"), 1, 1)
	if got := im.Topic("defaults").Configs["retention.ms"]; got != "5" {
		t.Errorf("configs of new topic: %v", im.Topic("defaults").Configs)
	}
	if m := im.Topic("manual").Partitions; describe(m[0]) != "replicas=[3 1] isr=[3 1] leader=3 le=0 pe=0" || m[1].Leader != 2 {
		t.Errorf("manual assignment: %s / %s", describe(m[0]), describe(m[1]))
	}
	if !im.Topic("__consumer_offsets").Internal || im.Topic("ok").Internal {
		t.Error("internal flag wrong")
	}
	if im.Topic("ok").ID == im.Topic("defaults").ID || im.Topic("ok").ID == [16]byte{} {
		t.Error("topic ids not unique")
	}
}

// checkNewTopic checks a freshly created topic: leader first replica, ISR = replicas,
// epochs 0, distinct replicas.
func checkNewTopic(t *testing.T, topic *metadata.Topic, partitions, rf int) {
	t.Helper()
	if topic == nil || len(topic.Partitions) != partitions {
		t.Fatalf("topic %+v, want %d partitions", topic, partitions)
	}
	for i, p := range topic.Partitions {
		if len(p.Replicas) != rf || p.Leader != p.Replicas[0] || !sameNodes(p.ISR, p.Replicas) || p.LeaderEpoch != 0 || p.PartitionEpoch != 0 {
			t.Fatalf("partition %d: %s", i, describe(p))
		}
	}
}

func TestDeleteTopics(t *testing.T) {
	c := startWithBrokers(t, 1)
	mustCreate(t, c, topicSpec("a", 1, 1), topicSpec("b", 1, 1))
	errs := c.DeleteTopics(testCtx(t), []string{"a", "missing", "b", "b"})
	for i, want := range []error{nil, ErrUnknownTopic, ErrInvalidRequest, ErrInvalidRequest} {
		wantErr(t, "delete", errs[i], want)
	}
	if c.Image().Topic("a") != nil || c.Image().Topic("b") == nil {
		t.Fatalf("after delete: %v", c.Image().TopicNames())
	}
	// Re-creating gets a new id.
	old := c.Image().Topic("b").ID
	c.DeleteTopics(testCtx(t), []string{"b"})
	mustCreate(t, c, topicSpec("b", 1, 1))
	if c.Image().Topic("b").ID == old {
		t.Fatal("re-created topic kept its id")
	}
	c.cfg.DisableTopicDeletion = true
	wantErr(t, "delete when disabled", c.DeleteTopics(testCtx(t), []string{"b"})[0], ErrTopicDeletionDisabled)
}

func TestCreatePartitions(t *testing.T) {
	c := startWithBrokers(t, 3)
	mustCreate(t, c, topicSpec("t", 2, 2))
	for _, tc := range []struct {
		topic  string
		total  int32
		assign [][]metadata.NodeID
		want   error
	}{
		{"missing", 3, nil, ErrUnknownTopic},
		{"t", 2, nil, ErrInvalidPartitions},
		{"t", 1, nil, ErrInvalidPartitions},
		{"t", 4, [][]metadata.NodeID{{1, 2}}, ErrInvalidReplicaAssignment},
		{"t", 3, [][]metadata.NodeID{{1}}, ErrInvalidReplicaAssignment},
		{"t", 3, [][]metadata.NodeID{{1, 7}}, ErrInvalidReplicaAssignment},
	} {
		err := c.CreatePartitions(testCtx(t), tc.topic, tc.total, tc.assign, false)
		wantErr(t, tc.topic, err, tc.want)
	}
	if err := c.CreatePartitions(testCtx(t), "t", 5, nil, true); err != nil || len(c.Image().Topic("t").Partitions) != 2 {
		t.Fatalf("validateOnly: %v, partitions %d", err, len(c.Image().Topic("t").Partitions))
	}
	if err := c.CreatePartitions(testCtx(t), "t", 3, [][]metadata.NodeID{{3, 1}}, false); err != nil {
		t.Fatal(err)
	}
	if err := c.CreatePartitions(testCtx(t), "t", 6, nil, false); err != nil {
		t.Fatal(err)
	}
	topic := c.Image().Topic("t")
	checkNewTopic(t, topic, 6, 2)
	if got := describe(topic.Partitions[2]); got != "replicas=[3 1] isr=[3 1] leader=3 le=0 pe=0" {
		t.Fatalf("manually assigned partition: %s", got)
	}
}

func TestAlterConfigs(t *testing.T) {
	c := startWithBrokers(t, 1)
	c.cfg.ValidateTopicConfig = func(k, v string) error {
		if v == "bad" {
			return errors.New("not a number")
		}
		return nil
	}
	c.cfg.ValidateBrokerConfig = c.cfg.ValidateTopicConfig
	mustCreate(t, c, metadata.TopicSpec{Name: "t", NumPartitions: 1, ReplicationFactor: 1, Configs: map[string]string{"a": "1", "b": "2"}})
	ctx := testCtx(t)
	check := func(want string) {
		t.Helper()
		if got := configString(c.Image().Topic("t").Configs); got != want {
			t.Fatalf("configs %s, want %s", got, want)
		}
	}
	wantErr(t, "unknown topic", c.AlterTopicConfigs(ctx, "nope", nil, false, false), ErrUnknownTopic)
	err := c.AlterTopicConfigs(ctx, "t", map[string]*string{"c": ptr("bad")}, false, false)
	if !errors.Is(err, ErrInvalidConfig) || !strings.Contains(err.Error(), "not a number") {
		t.Fatalf("invalid value: %v, want ErrInvalidConfig wrapping the validator's error", err)
	}
	c.AlterTopicConfigs(ctx, "t", map[string]*string{"c": ptr("3")}, false, true)
	check("a=1,b=2")
	c.AlterTopicConfigs(ctx, "t", map[string]*string{"c": ptr("3"), "a": nil, "zz": nil}, false, false)
	check("b=2,c=3")
	c.AlterTopicConfigs(ctx, "t", map[string]*string{"d": ptr("4"), "x": nil}, true, false)
	check("d=4")
	c.AlterTopicConfigs(ctx, "t", map[string]*string{}, true, false)
	check("")

	if err := c.AlterBrokerConfigs(ctx, map[string]*string{"log.retention.ms": ptr("9")}, false); err != nil {
		t.Fatal(err)
	}
	wantErr(t, "bad broker config", c.AlterBrokerConfigs(ctx, map[string]*string{"k": ptr("bad")}, false), ErrInvalidConfig)
	if got := configString(c.Image().Configs); got != "log.retention.ms=9" {
		t.Fatalf("broker configs %s", got)
	}
}

func configString(m map[string]string) string {
	recs := configRecords("", nil, toPtrs(m), false)
	parts := make([]string, 0, len(recs))
	for _, r := range recs {
		parts = append(parts, r.ConfigKey+"="+*r.ConfigValue)
	}
	return strings.Join(parts, ",")
}

func toPtrs(m map[string]string) map[string]*string {
	out := map[string]*string{}
	for k, v := range m {
		out[k] = &v
	}
	return out
}

func TestConfigRecords(t *testing.T) {
	cur := map[string]string{"a": "1", "b": "2"}
	for _, tc := range []struct {
		set        map[string]*string
		replaceAll bool
		want       string
	}{
		{map[string]*string{"a": ptr("1")}, false, ""},
		{map[string]*string{"a": ptr("9"), "b": nil, "c": nil}, false, "a=9 b=<del>"},
		{map[string]*string{"a": ptr("1")}, true, "b=<del>"},
		{map[string]*string{"c": ptr("3")}, true, "a=<del> b=<del> c=3"},
		{nil, true, "a=<del> b=<del>"},
	} {
		var got []string
		for _, r := range configRecords("t", cur, tc.set, tc.replaceAll) {
			v := "<del>"
			if r.ConfigValue != nil {
				v = *r.ConfigValue
			}
			if r.TopicName != "t" || r.Type != metadata.ConfigType {
				t.Fatalf("record %+v", r)
			}
			got = append(got, r.ConfigKey+"="+v)
		}
		if strings.Join(got, " ") != tc.want {
			t.Errorf("configRecords(%v, replaceAll=%v) = %q, want %q", tc.set, tc.replaceAll, strings.Join(got, " "), tc.want)
		}
	}
}

func TestAlterPartition(t *testing.T) {
	c := startWithBrokers(t, 3)
	mustCreate(t, c, metadata.TopicSpec{Name: "t", NumPartitions: -1, ReplicationFactor: -1,
		Assignments: map[int32][]metadata.NodeID{0: {1, 2, 3}}})
	tp := metadata.TopicPartition{Topic: "t", Partition: 0}
	ctx := testCtx(t)
	for _, tc := range []struct {
		name       string
		tp         metadata.TopicPartition
		leader     metadata.NodeID
		le, pe     int32
		isr        []metadata.NodeID
		want       error
		wantResult string
	}{
		{"unknown partition", metadata.TopicPartition{Topic: "t", Partition: 1}, 1, 0, 0, []metadata.NodeID{1}, ErrUnknownTopic, ""},
		{"not leader", tp, 2, 0, 0, []metadata.NodeID{2}, ErrInvalidRequest, ""},
		{"stale leader epoch", tp, 1, -1, 0, []metadata.NodeID{1}, ErrFencedLeaderEpoch, ""},
		{"future leader epoch", tp, 1, 1, 0, []metadata.NodeID{1}, ErrNotController, ""},
		{"future partition epoch", tp, 1, 0, 1, []metadata.NodeID{1}, ErrNotController, ""},
		{"leader not in isr", tp, 1, 0, 0, []metadata.NodeID{2}, ErrInvalidRequest, ""},
		{"not a replica", tp, 1, 0, 0, []metadata.NodeID{1, 4}, ErrInvalidRequest, ""},
		{"repeated", tp, 1, 0, 0, []metadata.NodeID{1, 1}, ErrInvalidRequest, ""},
		{"unchanged", tp, 1, 0, 0, []metadata.NodeID{1, 2, 3}, nil, "replicas=[1 2 3] isr=[1 2 3] leader=1 le=0 pe=0"},
		{"shrink", tp, 1, 0, 0, []metadata.NodeID{1, 3}, nil, "replicas=[1 2 3] isr=[1 3] leader=1 le=0 pe=1"},
		{"replayed shrink", tp, 1, 0, 0, []metadata.NodeID{1, 3}, ErrInvalidUpdateVersion, ""},
		{"expand", tp, 1, 0, 1, []metadata.NodeID{1, 3, 2}, nil, "replicas=[1 2 3] isr=[1 3 2] leader=1 le=0 pe=2"},
	} {
		p, err := c.AlterPartition(ctx, tc.tp, tc.leader, tc.le, tc.pe, tc.isr)
		wantErr(t, tc.name, err, tc.want)
		if err == nil && describe(p) != tc.wantResult {
			t.Fatalf("%s: got %s, want %s", tc.name, describe(p), tc.wantResult)
		}
	}
	if got := describe(c.Image().Topic("t").Partitions[0]); got != "replicas=[1 2 3] isr=[1 3 2] leader=1 le=0 pe=2" {
		t.Fatalf("image: %s", got)
	}
	// A fenced broker cannot be in the ISR.
	c.AlterPartition(ctx, tp, 1, 0, 2, []metadata.NodeID{1})
	c.proposeFence(t, 2)
	_, err := c.AlterPartition(ctx, tp, 1, 0, 3, []metadata.NodeID{1, 2})
	wantErr(t, "fenced joins", err, ErrIneligibleReplica)
	if p, err := c.AlterPartition(ctx, tp, 1, 0, 3, []metadata.NodeID{1, 3}); err != nil || p.PartitionEpoch != 4 {
		t.Fatalf("expand with an unfenced broker: %s, %v", describe(p), err)
	}
}

// proposeFence fences a broker directly (fencing has no public operation yet).
func (c *Controller) proposeFence(t *testing.T, id metadata.NodeID) {
	t.Helper()
	err := c.withLeader(testCtx(t), func(*metadata.Image) error {
		_, err := c.proposeLocked(testCtx(t), []metadata.Record{{Type: metadata.FenceBrokerType, BrokerID: id}})
		return err
	})
	if err != nil || !c.Image().Brokers[id].Fenced {
		t.Fatalf("fence %d: %v", id, err)
	}
}
