package clustertest_test

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/runnel-io/runnel/internal/clustertest"
)

// TestStrayLogsDeletedOnReturn: node 3 is killed; while it is down partition 0 of a
// topic moves off it and a second topic is deleted. When node 3 comes back, it
// deletes both directories once it has caught up with the metadata (Kafka's KRaft
// stray log detection), and logs each deletion; partition 1, of which it is still a
// replica, keeps its data: node 3 rejoins its ISR and holds every acknowledged record
// (History.Check reads node 3's copy).
func TestStrayLogsDeletedOnReturn(t *testing.T) {
	skipIfShort(t)
	c := startCluster(t, 3)
	topic := topicName(t)
	deleted := topic + "-deleted"
	createTopic(t, c, topic, 2, 3)
	createTopic(t, c, deleted, 1, 3)
	h := clustertest.NewHistory()
	cl := c.Client(t, kgo.RequiredAcks(kgo.AllISRAcks()), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	produce := func(n int, toDeleted bool) {
		ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
		defer cancel()
		for i := range n {
			if err := produceSync(ctx, cl, h, topic, int32(i%2)); err != nil {
				t.Fatalf("produce: %v", err)
			}
		}
		if !toDeleted {
			return
		}
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: deleted, Value: []byte("x")}).FirstErr(); err != nil {
			t.Fatalf("produce to %s: %v", deleted, err)
		}
	}
	produce(200, true)
	n3 := c.Node(3)
	moved, kept, gone := n3.PartitionDir(topic, 0), n3.PartitionDir(topic, 1), n3.PartitionDir(deleted, 0)
	for _, d := range []string{moved, kept, gone} {
		if _, err := os.Stat(d); err != nil {
			t.Fatalf("node 3 before the kill: %v", err)
		}
	}

	c.Kill(3)
	adm := c.Admin(t)
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	req := kadm.AlterPartitionAssignmentsReq{}
	req.Assign(topic, 0, []int32{1, 2})
	resp, err := adm.AlterPartitionAssignments(ctx, req)
	if err != nil {
		t.Fatalf("AlterPartitionReassignments: %v", err)
	}
	resp.Each(func(r kadm.AlterPartitionAssignmentsResponse) {
		if r.Err != nil {
			t.Fatalf("move of %s-%d: %v (%s)", r.Topic, r.Partition, r.Err, r.ErrMessage)
		}
	})
	waitReplicas(t, c, topic, 0, []int32{1, 2})
	dr, err := adm.DeleteTopics(ctx, deleted)
	if err == nil {
		err = dr.Error()
	}
	if err != nil {
		t.Fatalf("delete topic %s: %v", deleted, err)
	}
	// Written while node 3 is away: partition 1 must catch node 3 up on them.
	produce(200, false)

	c.Restart(3)
	deadline := time.Now().Add(waitTimeout)
	for _, d := range []string{moved, gone} {
		for {
			_, err := os.Stat(d)
			if os.IsNotExist(err) {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("node 3 still keeps %s %v after its restart (stat: %v)", d, waitTimeout, err)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	logs := c.Logs(3)
	for _, want := range []string{fmt.Sprintf("topic=%s partition=0", topic), fmt.Sprintf("topic=%s partition=0", deleted)} {
		if !strayLogged(logs, want) {
			t.Errorf("node 3's log names no stray deletion of %s", want)
		}
	}
	if _, err := os.Stat(kept); err != nil {
		t.Fatalf("node 3 lost its replica of %s-1: %v", topic, err)
	}
	c.WaitISR(t, topic, 1, 3, waitTimeout)
	res := h.Check(t, c, topic)
	if !slices.Contains(res.ISR[1], 3) {
		t.Fatalf("partition 1 checked without node 3's copy (ISR %v)", res.ISR[1])
	}
	if st, _ := c.PartitionFrom(context.Background(), 1, topic, 0); slices.Contains(st.Replicas, 3) {
		t.Fatalf("partition 0 back on node 3: %v", st.Replicas)
	}
}

// strayLogged says whether logs hold a stray deletion line with the attributes want.
func strayLogged(logs, want string) bool {
	for _, l := range strings.Split(logs, "\n") {
		if strings.Contains(l, "deleting stray partition log") && strings.Contains(l, want+" ") {
			return true
		}
	}
	return false
}
