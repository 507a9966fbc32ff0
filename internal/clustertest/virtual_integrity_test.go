package clustertest_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/runnel-io/runnel/internal/clustertest"
	"github.com/twmb/franz-go/pkg/kgo"
)

// Bit rot on a stopped node's disk (issue 29): two bytes of a partition's segment
// changed in the middle, after a clean shutdown, on the leader, on a follower, or on
// two of three replicas at different places. Every node then restarts, the damaged
// ones first. No acknowledged record may be lost on any node: the damaged replica
// keeps its log end, the controller moves the leadership to an intact in-sync replica
// once one has caught up, the damaged one truncates to its damage as a follower
// outside the ISR, fetches the rest again and rejoins the ISR, and in the end all
// three copies hold every acknowledged record (History.Check reads them as recovery
// would; a copy still damaged fails it with the storage error). Before, the damaged
// leader cut its log at the damage and its followers truncated to match it.
func TestVirtualBitRotRepaired(t *testing.T) {
	for _, tc := range []struct {
		name string
		// damage says which replicas are damaged, and where (a fraction of the
		// segment's size): "leader", "follower" (the first follower), "follower2".
		damage map[string]float64
	}{
		{"leader", map[string]float64{"leader": 0.5}},
		{"follower", map[string]float64{"follower": 0.5}},
		{"leader and follower", map[string]float64{"leader": 0.3, "follower": 0.7}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			inVirtualTime(t, func(t *testing.T) { bitRotScenario(t, tc.damage) })
		})
	}
}

func bitRotScenario(t *testing.T, damage map[string]float64) {
	c := startVirtual(t, 3)
	topic := "rot"
	createTopic(t, c, topic, 1, 3)
	c.WaitISR(t, topic, 0, 3, waitTimeout)
	h := clustertest.NewHistory()
	cl := c.Client(t, kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerLinger(0),
		kgo.ProducerBatchCompression(kgo.NoCompression())) // History.Check reads uncompressed batches
	const records = 4000
	for i := range records {
		r := &kgo.Record{Topic: topic, Partition: 0, Value: h.NextValue(0)}
		cl.Produce(context.Background(), r, h.Record)
		if i%200 == 199 {
			if err := cl.Flush(context.Background()); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := cl.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	if h.Len() != records {
		t.Fatalf("%d of %d records acknowledged: %s", h.Len(), records, h.Failures())
	}
	leader, _ := c.WaitLeader(t, topic, 0, waitTimeout)
	var followers []int32
	for _, id := range []int32{1, 2, 3} {
		if id != leader {
			followers = append(followers, id)
		}
	}
	role := map[string]int32{"leader": leader, "follower": followers[0], "follower2": followers[1]}
	// The followers first, the leader last: it ends as the only in-sync replica.
	order := append(slices.Clone(followers), leader)
	for _, id := range order {
		if err := c.Stop(int(id)); err != nil {
			t.Fatalf("stopping node %d: %v", id, err)
		}
	}
	var damaged []int32
	for who, at := range damage {
		id := role[who]
		flipBytes(t, filepath.Join(c.Node(int(id)).PartitionDir(topic, 0), "00000000000000000000.log"), at)
		damaged = append(damaged, id)
	}
	// The damaged nodes first, in the order they stopped last first.
	slices.SortFunc(damaged, func(a, b int32) int { return slices.Index(order, b) - slices.Index(order, a) })
	restart := slices.Clone(damaged)
	for _, id := range slices.Backward(order) {
		if !slices.Contains(restart, id) {
			restart = append(restart, id)
		}
	}
	ids := make([]int, len(restart))
	for i, id := range restart {
		ids[i] = int(id)
	}
	c.RestartTogether(ids...)
	isr := c.WaitISR(t, topic, 0, 3, waitTimeout)
	st, err := c.LeaderState(topic, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("damaged %v (roles %v), restarted in order %v: leader now %d, ISR %v", damaged, role, restart, st.Leader, isr)
	h.Check(t, c, topic)
	for _, id := range damaged {
		logs := c.Logs(int(id))
		for _, want := range []string{"corrupt data in segment", "truncating to the first damaged offset"} {
			if !strings.Contains(logs, want) {
				t.Errorf("node %d (damaged) never logged %q", id, want)
			}
		}
		q, err := os.ReadDir(filepath.Join(c.Node(int(id)).DataDir, "quarantine", topic+"-0"))
		if err != nil || len(q) == 0 {
			t.Errorf("node %d keeps no quarantined copy of its damaged segment: %v", id, err)
		}
	}
}

// flipBytes overwrites two bytes of the file at the given fraction of its size, as
// the reproduction did (printf 'XX' | dd ... conv=notrunc).
func flipBytes(t *testing.T, path string, at float64) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		t.Fatal(err)
	}
	pos := int64(float64(fi.Size()) * at)
	if _, err := f.WriteAt([]byte("XX"), pos); err != nil {
		t.Fatalf("corrupting %s at %d: %v", path, pos, err)
	}
	t.Logf("wrote XX at byte %d of %d of %s", pos, fi.Size(), path)
}
