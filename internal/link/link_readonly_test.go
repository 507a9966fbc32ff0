package link_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/runnel-io/runnel/internal/testutil"
)

// TestLinkMirrorTopicAdminRefused: a client's CreatePartitions, AlterConfigs,
// IncrementalAlterConfigs and DeleteRecords of a mirror topic are refused with
// INVALID_REQUEST and (where the response carries one) the message naming the link,
// as a produce is; the replication throttle lists stay settable (reassignment of
// this cluster's replicas); once promoted, the same changes go through.
func TestLinkMirrorTopicAdminRefused(t *testing.T) {
	src, dst := startNode(t), startNode(t)
	const topic, name = "readonly", "ro"
	ctx := context.Background()
	if _, err := src.Admin(t).CreateTopic(ctx, 1, 1, nil, topic); err != nil {
		t.Fatal(err)
	}
	if err := src.Client(t).ProduceSync(ctx, &kgo.Record{Topic: topic, Value: []byte("a")}, &kgo.Record{Topic: topic, Value: []byte("b")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	runCLI(t, "link", "create", name, "--source", src.Bootstrap(), "-b", dst.Bootstrap())
	testutil.Eventually(t, 10*time.Second, func() error {
		if st := status(t, dst.Bootstrap(), name); len(st.Partitions) != 1 || st.Partitions[0].End != 2 {
			return fmt.Errorf("not mirrored yet: %+v", st.Partitions)
		}
		return nil
	})
	adm := dst.Admin(t)
	const want = "topic readonly is a mirror topic of link ro; promote it first"
	refused := func(what string, err error, msg string) {
		t.Helper()
		if !errors.Is(err, kerr.InvalidRequest) || !strings.Contains(msg, want) {
			t.Errorf("%s of a mirror topic: %v (message %q), want INVALID_REQUEST with %q", what, err, msg, want)
		}
	}

	cp, err := adm.CreatePartitions(ctx, 1, topic)
	if err != nil {
		t.Fatal(err)
	}
	refused("CreatePartitions", cp[topic].Err, cp[topic].ErrMessage)
	retention := "3600000"
	inc, err := adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{{Op: kadm.SetConfig, Name: "retention.ms", Value: &retention}}, topic)
	if err != nil {
		t.Fatal(err)
	}
	refused("IncrementalAlterConfigs", inc[0].Err, inc[0].ErrMessage)
	legacy, err := adm.AlterTopicConfigsState(ctx, []kadm.AlterConfig{{Name: "retention.ms", Value: &retention}}, topic)
	if err != nil {
		t.Fatal(err)
	}
	refused("AlterConfigs", legacy[0].Err, legacy[0].ErrMessage)
	var offs kadm.Offsets
	offs.Add(kadm.Offset{Topic: topic, Partition: 0, At: 1})
	dr, err := adm.DeleteRecords(ctx, offs)
	if err != nil {
		t.Fatal(err)
	}
	// DeleteRecords answers a code only (no message field in any version).
	if r, _ := dr.Lookup(topic, 0); !errors.Is(r.Err, kerr.InvalidRequest) {
		t.Errorf("DeleteRecords of a mirror topic: %v, want INVALID_REQUEST", r.Err)
	}
	throttle := "*"
	th, err := adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{{Op: kadm.SetConfig, Name: "leader.replication.throttled.replicas", Value: &throttle}}, topic)
	if err != nil || th[0].Err != nil {
		t.Errorf("setting the replication throttle of a mirror topic: %v %v, want it allowed", err, th)
	}
	// Nothing changed: one partition, the log starting at 0, no retention override.
	td, err := adm.ListTopics(ctx, topic)
	if err != nil || len(td[topic].Partitions) != 1 {
		t.Errorf("mirror topic after the refused CreatePartitions: %v %+v", err, td[topic])
	}
	if starts, err := adm.ListStartOffsets(ctx, topic); err != nil {
		t.Error(err)
	} else if o, ok := starts.Lookup(topic, 0); !ok || o.Err != nil || o.Offset != 0 {
		t.Errorf("mirror topic's log start after the refused DeleteRecords: %d (listed: %v, %v), want 0", o.Offset, ok, o.Err)
	}
	if rc, err := adm.DescribeTopicConfigs(ctx, topic); err != nil {
		t.Errorf("describing the mirror topic's configs: %v", err)
	} else if c, err := rc.On(topic, nil); err != nil || c.Err != nil {
		t.Errorf("describing the mirror topic's configs: %v %v", err, c.Err)
	} else {
		for _, kv := range c.Configs {
			if kv.Key == "retention.ms" && kv.MaybeValue() == retention {
				t.Errorf("mirror topic's retention.ms changed to %s by a refused alteration", retention)
			}
		}
	}

	// Promoted, the topic is this cluster's own: the same changes go through, the
	// first time an admin asks once promote returned.
	runCLI(t, "link", "promote", name, "--all", "-b", dst.Bootstrap())
	if cp, err = adm.CreatePartitions(ctx, 1, topic); err != nil || cp[topic].Err != nil {
		t.Fatalf("CreatePartitions of a promoted topic: %v %v (%s)", err, cp[topic].Err, cp[topic].ErrMessage)
	}
	if td, err := adm.ListTopics(ctx, topic); err != nil || len(td[topic].Partitions) != 2 {
		t.Errorf("promoted topic after CreatePartitions(+1): %v %+v, want 2 partitions", err, td[topic])
	}
	inc, err = adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{{Op: kadm.SetConfig, Name: "retention.ms", Value: &retention}}, topic)
	if err != nil || inc[0].Err != nil {
		t.Errorf("IncrementalAlterConfigs of a promoted topic: %v %+v", err, inc)
	}
	if dr, err = adm.DeleteRecords(ctx, offs); err != nil {
		t.Fatal(err)
	} else if r, _ := dr.Lookup(topic, 0); r.Err != nil {
		t.Errorf("DeleteRecords of a promoted topic: %v", r.Err)
	}
}
