package clustertest_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/runnel-io/runnel/internal/clustertest"
	"github.com/runnel-io/runnel/internal/kafka"
)

// Bit rot in a cold segment of a running node (issue 29): recovery never reads a
// rolled segment below the recovery point and nothing else does until a reader lags
// that far, so the damage stays hidden while the intact copies may be lost. Two
// bytes change in the middle of a rolled segment of a follower while it runs; a
// scrub pass finds them, either asked for (`runnel cluster scrub`'s request:
// DescribeLogDirs with the scrub tag) or the background scrubber (log.scrub.*, a
// pass a minute here); the follower reports the damage, leaves the ISR, truncates to
// it and fetches the rest again, and rejoins: the ISR is whole again and every
// acknowledged record is on all three copies (History.Check reads the files).
// Without a scrub the damage is never found.
func TestVirtualScrubRepairs(t *testing.T) {
	for _, background := range []bool{false, true} {
		name := "cluster scrub"
		if background {
			name = "scrubber"
		}
		t.Run(name, func(t *testing.T) {
			inVirtualTime(t, func(t *testing.T) { scrubScenario(t, background) })
		})
	}
}

func scrubScenario(t *testing.T, background bool) {
	sets := slices.Clone(clustertest.FastFailureDetection)
	if background {
		sets = append(sets, "log.scrub.interval.ms=60000", "log.scrub.bytes.per.second=-1")
	} else {
		sets = append(sets, "log.scrub.enable=false")
	}
	c := clustertest.Start(t, clustertest.Options{Nodes: 3, Virtual: true, Sets: sets, StartTimeout: startTimeout})
	topic := "scrubbed"
	adm := c.Admin(t)
	two, seg := "2", "16384"
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	if _, err := adm.CreateTopic(ctx, 1, 3, map[string]*string{"min.insync.replicas": &two, "segment.bytes": &seg}, topic); err != nil {
		t.Fatal(err)
	}
	c.WaitISR(t, topic, 0, 3, waitTimeout)
	h := clustertest.NewHistory()
	cl := c.Client(t, kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerLinger(0),
		kgo.ProducerBatchCompression(kgo.NoCompression())) // History.Check reads uncompressed batches
	const records = 3000
	for i := range records {
		cl.Produce(context.Background(), &kgo.Record{Topic: topic, Partition: 0, Value: h.NextValue(0)}, h.Record)
		if i%100 == 99 {
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
	c.WaitISR(t, topic, 0, 3, waitTimeout)
	leader, _ := c.WaitLeader(t, topic, 0, waitTimeout)
	follower := int32(1)
	if leader == 1 {
		follower = 2
	}
	segs, err := filepath.Glob(filepath.Join(c.Node(int(follower)).PartitionDir(topic, 0), "*.log"))
	if err != nil || len(segs) < 3 {
		t.Fatalf("node %d has segments %v (%v): want rolled ones", follower, segs, err)
	}
	slices.Sort(segs)
	flipBytes(t, segs[1], 0.5) // a cold segment: neither the first nor the active one

	if background {
		// The next pass begins within a minute (log.scrub.interval.ms).
		waitLogged(t, c, follower, "corrupt data in segment", 3*time.Minute)
	} else {
		ni := scrubNode(t, cl, follower, topic)
		if ni.Scrub.Corrupt != 1 || ni.Scrub.BatchesChecked == 0 {
			t.Fatalf("node %d's scrub: %+v, want 1 damaged range found", follower, *ni.Scrub)
		}
	}
	waitLogged(t, c, follower, "truncating to the first damaged offset", waitTimeout)
	isr := c.WaitISR(t, topic, 0, 3, waitTimeout)
	t.Logf("node %d repaired, ISR %v", follower, isr)
	h.Check(t, c, topic)
	if q, err := os.ReadDir(filepath.Join(c.Node(int(follower)).DataDir, "quarantine", topic+"-0")); err != nil || len(q) == 0 {
		t.Errorf("node %d keeps no quarantined copy of its damaged segment: %v", follower, err)
	}
	if !background {
		if ni := scrubNode(t, cl, follower, topic); ni.Scrub.Corrupt != 0 || ni.DamagedPartitions != 0 || ni.RepairedBatchesTotal < 1 {
			t.Fatalf("node %d after its repair: %+v (scrub %+v), want no damage and 1 repaired", follower, ni, *ni.Scrub)
		}
	}
}

// scrubNode sends node id the scrub request of `runnel cluster scrub` for topic and
// returns its answer.
func scrubNode(t *testing.T, cl *kgo.Client, id int32, topic string) kafka.NodeIntegrity {
	t.Helper()
	req := kmsg.NewPtrDescribeLogDirsRequest()
	b, _ := json.Marshal(kafka.ScrubRequest{Topics: []string{topic}})
	req.UnknownTags.Set(kafka.ScrubRequestTag, b)
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	if _, err := kmsg.NewPtrMetadataRequest().RequestWith(ctx, cl); err != nil {
		t.Fatal(err)
	}
	resp, err := req.RequestWith(ctx, cl.Broker(int(id)))
	if err == nil {
		err = kerr.ErrorForCode(resp.ErrorCode)
	}
	if err != nil {
		t.Fatalf("scrub of node %d: %v", id, err)
	}
	var ni *kafka.NodeIntegrity
	resp.UnknownTags.Each(func(tag uint32, b []byte) {
		if tag == kafka.NodeIntegrityTag {
			v, err := kafka.DecodeNodeIntegrity(b)
			if err != nil {
				t.Fatal(err)
			}
			ni = &v
		}
	})
	if ni == nil || ni.Scrub == nil {
		t.Fatalf("node %d answered the scrub without its result", id)
	}
	return *ni
}

// waitLogged waits until node id's log holds want.
func waitLogged(t *testing.T, c *clustertest.Cluster, id int32, want string, timeout time.Duration) {
	t.Helper()
	for deadline := time.Now().Add(timeout); !strings.Contains(c.Logs(int(id)), want); {
		if time.Now().After(deadline) {
			t.Fatalf("node %d never logged %q within %v", id, want, timeout)
		}
		time.Sleep(time.Second)
	}
}
