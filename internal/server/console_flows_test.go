package server_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/runnel-io/runnel/internal/httpd"
	"github.com/runnel-io/runnel/internal/testutil"
	"github.com/runnel-io/runnel/mirror"
)

// A reassignment held in progress by a replication throttle: both nodes list it, the
// leader's node with the bytes its new replica still has to copy, the other without
// (it cannot know them).
func TestConsoleReassignment(t *testing.T) {
	nodes := startCluster(t, 2, "leader.replication.throttled.rate=1024", "follower.replication.throttled.rate=1024")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	adm := adminOf(t, nodes[0])
	star := "*"
	_, err := adm.CreateTopic(ctx, 1, 1, map[string]*string{
		"leader.replication.throttled.replicas": &star, "follower.replication.throttled.replicas": &star}, "moving")
	testutil.NoError(t, err, "create moving")
	cl, err := kgo.NewClient(kgo.SeedBrokers(nodes[0].addr()), kgo.ProducerLinger(0))
	testutil.NoError(t, err, "producer")
	defer cl.Close()
	value := make([]byte, 1024)
	var rs []*kgo.Record
	for range 200 {
		rs = append(rs, &kgo.Record{Topic: "moving", Value: value})
	}
	testutil.NoError(t, cl.ProduceSync(ctx, rs...).FirstErr(), "produce 200 KiB to moving")

	var tp httpd.Topic
	consoleJSON(t, nodes[0], "/api/v1/topics/moving", &tp)
	leader := tp.Partitions[0].Leader
	other := 3 - leader // the nodes are 1 and 2
	var req kadm.AlterPartitionAssignmentsReq
	req.Assign("moving", 0, []int32{leader, other})
	resp, err := adm.AlterPartitionAssignments(ctx, req)
	testutil.NoError(t, err, "reassign moving/0 to %d,%d", leader, other)
	testutil.NoError(t, resp.Error(), "reassign moving/0")

	// At 1 KiB/s the 200 KiB take minutes: the move is in progress throughout.
	for _, tn := range nodes {
		testutil.Eventually(t, 10*time.Second, func() error {
			var rs httpd.Reassignments
			consoleJSON(t, tn, "/api/v1/reassignments", &rs)
			if len(rs.Reassignments) != 1 {
				return fmt.Errorf("node %d lists reassignments %+v", tn.id, rs.Reassignments)
			}
			r := rs.Reassignments[0]
			if r.Topic != "moving" || r.Partition != 0 || len(r.Adding) != 1 || r.Adding[0] != other || len(r.AddingInSync) != 0 || len(r.Target) != 2 {
				t.Fatalf("node %d: reassignment %+v, want moving/0 adding %d", tn.id, r, other)
			}
			switch {
			case tn.id == leader && (r.BytesRemaining == nil || *r.BytesRemaining <= 0):
				return fmt.Errorf("the leader's node %d shows bytes remaining %v", tn.id, r.BytesRemaining)
			case tn.id != leader && r.BytesRemaining != nil:
				t.Fatalf("node %d, not the leader, shows bytes remaining %d", tn.id, *r.BytesRemaining)
			}
			// Every node measures the progress as the CLI does: the adding replica's
			// log against the leader's, a rate from two samples (the records compress
			// well: the copy may be whole while the throttle keeps it out of the ISR).
			if r.SizeBytes == nil || r.BytesCopied == nil || r.BytesLeft == nil || *r.SizeBytes <= 0 ||
				*r.BytesCopied+*r.BytesLeft != *r.SizeBytes || r.Rate == nil || r.ETA == nil && *r.BytesLeft == 0 {
				return fmt.Errorf("node %d's progress of moving/0: size %v copied %v left %v rate %v (%s)", tn.id, show(r.SizeBytes), show(r.BytesCopied), show(r.BytesLeft), show(r.Rate), rs.SizesError)
			}
			if rs.BytesLeft == nil || *rs.BytesLeft != *r.BytesLeft || rs.Rate == nil {
				return fmt.Errorf("node %d's totals: left %v rate %v, want the one partition's", tn.id, show(rs.BytesLeft), show(rs.Rate))
			}
			return nil
		})
		var c httpd.Cluster
		consoleJSON(t, tn, "/api/v1/cluster", &c)
		if c.Reassigning != 1 {
			t.Errorf("node %d's overview counts %d reassignments", tn.id, c.Reassigning)
		}
		if code, _, body := consoleGet(t, tn, "/reassignments"); code != http.StatusOK || !strings.Contains(body, `href="/topics/moving"`) || !strings.Contains(body, `id="reassign-left"`) {
			t.Errorf("node %d's reassignments page: %d\n%s", tn.id, code, body)
		}
	}
}

// A mirror link, as its progress topic on this (the target) cluster says: one
// partition running, one whose owner stopped committing a minute ago (stale, its lag
// in seconds grown by that minute), and a group's synced offset.
func TestConsoleMirrors(t *testing.T) {
	nodes := startCluster(t, 1)
	tn := nodes[0]
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	adm := adminOf(t, tn)
	compact := "compact"
	topic := mirror.ProgressTopic("dr")
	_, err := adm.CreateTopic(ctx, 1, 1, map[string]*string{"cleanup.policy": &compact}, topic)
	testutil.NoError(t, err, "create %s", topic)
	now := time.Now()
	progress := map[string]any{
		"m": mirror.Meta{SourceCluster: "src-cluster", TargetCluster: "dst-cluster", Alias: "src", Naming: "prefix"},
		"s/orders/0": mirror.PartitionState{Topic: "orders", Partition: 0, TargetTopic: "src.orders", Next: 90, TargetEnd: 90,
			SourceEnd: 100, LagRecords: 10, LagSeconds: 0.5, Records: 90, State: "running", Updated: now.UnixMilli(), Owner: "m-1"},
		"s/orders/1": mirror.PartitionState{Topic: "orders", Partition: 1, TargetTopic: "src.orders", Next: 40, TargetEnd: 40,
			SourceEnd: 50, LagRecords: 10, LagSeconds: 1, Records: 40, State: "running", Updated: now.Add(-time.Minute).UnixMilli(), Owner: "m-2"},
		"g/grp/orders/0": mirror.Checkpoint{Group: "grp", Topic: "orders", Partition: 0, TargetTopic: "src.orders",
			SourceOffset: 80, TargetOffset: 80, Updated: now.UnixMilli()},
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(tn.addr()))
	testutil.NoError(t, err, "producer")
	defer cl.Close()
	for k, v := range progress {
		b, err := json.Marshal(v)
		testutil.NoError(t, err, "encode %s", k)
		testutil.NoError(t, cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Key: []byte(k), Value: b}).FirstErr(), "write %s", k)
	}

	var ms httpd.Mirrors
	consoleJSON(t, tn, "/api/v1/mirrors", &ms)
	if len(ms.Mirrors) != 1 {
		t.Fatalf("mirrors %+v", ms.Mirrors)
	}
	m := ms.Mirrors[0]
	if m.Name != "dr" || m.Error != "" || m.SourceCluster != "src-cluster" || m.Alias != "src" || len(m.Partitions) != 2 || len(m.Groups) != 1 {
		t.Fatalf("mirror %+v", m)
	}
	p0, p1 := m.Partitions[0], m.Partitions[1]
	if p0.State != "running" || p0.LagRecords != 10 || p0.LagSeconds != 0.5 || p1.State != "stale" || p1.LagSeconds < 60 {
		t.Fatalf("mirror partitions %+v, want orders/0 running with 0.5 s of lag, orders/1 stale with over 60 s", m.Partitions)
	}
	if m.LagRecords != 20 || m.MaxLagSeconds != p1.LagSeconds {
		t.Errorf("mirror totals: %d records, %.1f s", m.LagRecords, m.MaxLagSeconds)
	}
	if g := m.Groups[0]; g.Group != "grp" || g.SourceOffset != 80 || g.TargetOffset != 80 {
		t.Errorf("mirror group %+v", g)
	}
	var c httpd.Cluster
	consoleJSON(t, tn, "/api/v1/cluster", &c)
	testutil.Equal(t, c.Mirrors, 1, "mirror links on the overview")
	code, _, body := consoleGet(t, tn, "/mirrors")
	if code != http.StatusOK || !strings.Contains(body, `id="mirror-dr"`) || !strings.Contains(body, "stale") {
		t.Fatalf("the mirrors page: %d\n%s", code, body)
	}
}

// show is *p, or nil.
func show[T any](p *T) any {
	if p == nil {
		return nil
	}
	return *p
}
