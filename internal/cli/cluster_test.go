package cli

import (
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
)

func TestSummarize(t *testing.T) {
	part := func(topic string, p, leader int32, replicas, isr []int32) kadm.PartitionDetail {
		return kadm.PartitionDetail{Topic: topic, Partition: p, Leader: leader, Replicas: replicas, ISR: isr}
	}
	md := kadm.Metadata{
		Cluster: "c1", Controller: 2,
		Brokers: kadm.BrokerDetails{{NodeID: 1, Host: "a", Port: 9092}, {NodeID: 2, Host: "b", Port: 9092}, {NodeID: 3, Host: "c", Port: 9092}},
		Topics: kadm.TopicDetails{
			"ok": {Topic: "ok", Partitions: kadm.PartitionDetails{
				0: part("ok", 0, 1, []int32{1, 2, 3}, []int32{1, 2, 3}),
				1: part("ok", 1, 2, []int32{2, 3, 1}, []int32{2, 3, 1}),
			}},
			"sick": {Topic: "sick", Partitions: kadm.PartitionDetails{
				0: part("sick", 0, 1, []int32{1, 2, 3}, []int32{1, 2}),                                                            // under-replicated
				1: part("sick", 1, 3, []int32{3, 1, 2}, []int32{3}),                                                               // and under min ISR
				2: {Topic: "sick", Partition: 2, Leader: -1, Replicas: []int32{2, 3, 1}, Err: errors.New("LEADER_NOT_AVAILABLE")}, // offline
			}},
		},
	}
	st := summarize(md, map[string]int{"ok": 2, "sick": 2})
	if st.ClusterID != "c1" || st.Controller != 2 || st.Partitions != 5 {
		t.Errorf("header %+v", st)
	}
	if st.UnderReplicated != 3 || st.UnderMinISR != 2 || st.Offline != 1 {
		t.Errorf("under-replicated %d, under-min-ISR %d, offline %d; want 3, 2, 1", st.UnderReplicated, st.UnderMinISR, st.Offline)
	}
	var leaders []int
	for _, n := range st.Nodes {
		leaders = append(leaders, n.Leaders)
	}
	if !slices.Equal(leaders, []int{2, 1, 1}) {
		t.Errorf("leaders per node %v, want [2 1 1]", leaders)
	}
	if len(st.Problems) != 3 || !slices.Equal(st.Problems[2].Problems, []string{"offline", "under-replicated", "under-min-isr", "LEADER_NOT_AVAILABLE"}) {
		t.Errorf("problems %+v", st.Problems)
	}
	if st := summarize(md, nil); st.UnderMinISR != -1 {
		t.Errorf("unknown min ISR counted as %d, want -1", st.UnderMinISR)
	}
}

func TestClusterStatus(t *testing.T) {
	_, b := newCluster(t, kfake.NumBrokers(3), kfake.SeedTopics(4, "t"))
	var st clusterStatus
	r := mustRun(t, "", "cluster", "status", "-b", b, "--json")
	if err := json.Unmarshal([]byte(r.stdout), &st); err != nil {
		t.Fatalf("cluster status --json: %v in %q", err, r.stdout)
	}
	total := 0
	for _, n := range st.Nodes {
		total += n.Leaders
	}
	if len(st.Nodes) != 3 || st.Partitions != 4 || total != 4 || st.Controller < 0 || st.UnderMinISR != 0 || st.Offline != 0 {
		t.Errorf("status %+v", st)
	}
	r = mustRun(t, "", "cluster", "status", "-b", b)
	for _, want := range []string{"Cluster ID:", "Controller:", "NODE", "HOST:PORT", "REPLICAS", "LEADERS", "under-replicated: 0"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("status lacks %q:\n%s", want, r.stdout)
		}
	}
}

func TestClusterStatusDiskFull(t *testing.T) {
	md := kadm.Metadata{Brokers: kadm.BrokerDetails{{NodeID: 1, Host: "a", Port: 9092}, {NodeID: 2, Host: "b", Port: 9092}}}
	st := summarize(md, map[string]int{})
	st.addDisks(kadm.DescribedAllLogDirs{
		1: {"/d": {Broker: 1, Dir: "/d", TotalBytes: 100 << 20, UsableBytes: 50 << 20}},
		2: {"/d": {Broker: 2, Dir: "/d", Err: kerr.KafkaStorageError, TotalBytes: 100 << 20, UsableBytes: 0}},
	})
	if st.NodesDegraded != 1 || st.Nodes[0].DiskFull || !st.Nodes[1].DiskFull {
		t.Fatalf("degraded %d, nodes %+v", st.NodesDegraded, st.Nodes)
	}
	var out strings.Builder
	if err := printClusterStatus(&out, st); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"degraded: disk full (0.0 MiB free of 100.0 MiB)", "1 of 2 nodes degraded (disk full"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("status lacks %q:\n%s", want, out.String())
		}
	}
}
