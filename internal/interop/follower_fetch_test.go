package interop_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/runnel-io/runnel/internal/clustertest"
	"github.com/runnel-io/runnel/internal/config"
	"github.com/runnel-io/runnel/internal/testutil"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"
)

// Fetch from the closest replica (KIP-392): the sizes of the scenario.
const (
	rackFirst     = 300 // records read while the rack's follower is up
	rackMore      = 200 // records written after it stopped
	rackValueSize = 200 // bytes per value
	// rackFollower is the node whose rack (r2) the consumers are in: a follower of
	// every partition of the scenario, whose leader is node 1.
	rackFollower = 2
)

// TestFollowerFetch: on a 3-node cluster whose nodes have broker.rack r1, r2, r3 and
// the rack-aware replica.selector.class, a consumer with client.rack r2 reads a
// partition led by node 1 from node 2, its rack's follower: node 2's consumer bytes as
// a follower grow by at least the records read, node 1 serves consumers nothing (it
// only names node 2 as the preferred read replica). Once node 2 is down the consumer
// reads the rest from the leader. Both with franz-go (kgo.Rack) and with librdkafka
// (confluent-kafka's client.rack, py/confluent_rack.py) when python3 has it. Without
// follower fetching every byte comes from the leader and the test fails at once.
func TestFollowerFetch(t *testing.T) {
	c := clustertest.Start(t, clustertest.Options{Nodes: 3, InProcess: true, StartTimeout: 30 * time.Second,
		Sets: append([]string{"replica.selector.class=" + config.RackAwareReplicaSelector, "auto.create.topics.enable=false"},
			clustertest.FastFailureDetection...),
		NodeSets: func(id int32) []string { return []string{fmt.Sprintf("broker.rack=r%d", id)} },
	})
	franzTopic, rdkTopic := topicName(t)+"-franz", topicName(t)+"-librdkafka"
	python := rackPython(t)
	topics := []string{franzTopic}
	if python != "" {
		topics = append(topics, rdkTopic)
	}
	// Uncompressed, so that the bytes served are at least the values read.
	producer := c.Client(t, kgo.RequiredAcks(kgo.AllISRAcks()), kgo.RecordRetries(20),
		kgo.ProducerBatchCompression(kgo.NoCompression()))
	for _, topic := range topics {
		createLedBy1(t, c, producer, topic)
		produceNumbered(t, producer, topic, 0, rackFirst)
	}
	served := func() consumerBytes { return scrapeConsumerBytes(t, c) }
	before := served()

	// franz-go: the leader names node 2 (no records), node 2 serves everything.
	consumer := c.Client(t, kgo.Rack(fmt.Sprintf("r%d", rackFollower)), kgo.FetchMaxWait(200*time.Millisecond),
		// Its preferred replica expires after this long and it asks the leader again
		// (the default is 30 minutes): how it notices, later, that node 2 is gone.
		kgo.RecheckPreferredReplicaInterval(time.Second),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{franzTopic: {0: kgo.NewOffset().At(0)}}))
	consumeNumbered(t, consumer, 0, rackFirst)
	after := served()
	checkServed(t, "franz-go with kgo.Rack(r2), node 2 up", before, after, rackFollower, rackFirst*rackValueSize)

	checkRawFetches(t, c, franzTopic)
	after = served() // the raw fetches read from both nodes

	var rdk *rackScript
	if python != "" {
		// librdkafka: the same with client.rack, then it waits for the follower to stop.
		rdk = startRackScript(t, python, c.Bootstrap(), rdkTopic)
		rdk.waitPhase1(t)
		before, after = after, served()
		checkServed(t, "librdkafka with client.rack=r2, node 2 up", before, after, rackFollower, rackFirst*rackValueSize)
	}

	c.Kill(rackFollower)
	stopped := time.Now()
	for _, topic := range topics {
		produceNumbered(t, producer, topic, rackFirst, rackMore)
	}
	if rdk != nil {
		rdk.proceed(t)
	}
	consumeNumbered(t, consumer, rackFirst, rackMore)
	if rdk != nil {
		rdk.wait(t)
	}
	t.Logf("consumers read the %d records written after node %d stopped within %v of the stop", rackMore, rackFollower,
		time.Since(stopped).Round(time.Millisecond))
	final := served()
	want := float64(len(topics) * rackMore * rackValueSize)
	testutil.True(t, final.leader[1]-after.leader[1] >= want,
		"node 1 (the leader) served consumers %.0f bytes after node 2 stopped; want at least %.0f (every record written since)",
		final.leader[1]-after.leader[1], want)
	testutil.True(t, final.follower[3] == 0, "node 3 (rack r3) served consumers %.0f bytes as a follower; want none", final.follower[3])
}

// checkRawFetches sends consumer fetches of topic's partition (led by node 1, which
// holds rackFirst records on every node) to the leader and to node 2 and checks each
// answer: the leader names node 2 to a v11+ fetch from rack r2, with no records, and
// serves one from its own rack or without a rack (before v11 there is none); node 2
// serves v11+ fetches up to its high watermark, answers OFFSET_OUT_OF_RANGE past its
// log end and NOT_LEADER_OR_FOLLOWER before v11.
func checkRawFetches(t *testing.T, c *clustertest.Cluster, topic string) {
	t.Helper()
	cl := c.Client(t)
	old := c.Client(t, kgo.MaxVersions(kversion.V2_2_0())) // Fetch v10: no RackID
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	topics, err := kadm.NewClient(cl).ListTopics(ctx, topic)
	testutil.NoError(t, err, "listing", topic)
	topicID := topics[topic].ID // Fetch v13+ names topics by id
	fetch := func(cl *kgo.Client, node int, rack string, offset int64) (int16, kmsg.FetchResponseTopicPartition) {
		t.Helper()
		req := kmsg.NewPtrFetchRequest()
		req.ReplicaID, req.MaxWaitMillis, req.MaxBytes, req.Rack = -1, 100, 1<<20, rack
		req.SessionEpoch = -1
		rt := kmsg.NewFetchRequestTopic()
		rt.Topic, rt.TopicID = topic, topicID
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.Partition, rp.FetchOffset, rp.PartitionMaxBytes, rp.CurrentLeaderEpoch = 0, offset, 1<<20, -1
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
		defer cancel()
		kresp, err := cl.Broker(node).Request(ctx, req)
		testutil.NoError(t, err, "fetch from node", node)
		resp := kresp.(*kmsg.FetchResponse)
		testutil.True(t, len(resp.Topics) == 1 && len(resp.Topics[0].Partitions) == 1, "fetch from node %d: %d topics", node, len(resp.Topics))
		return resp.Version, resp.Topics[0].Partitions[0]
	}
	v, p := fetch(cl, 1, "r2", 0)
	testutil.True(t, v >= 11 && p.ErrorCode == 0 && p.PreferredReadReplica == rackFollower && len(p.RecordBatches) == 0 &&
		p.HighWatermark == rackFirst,
		"leader, Fetch v%d from rack r2: error %d, preferred read replica %d, %d record bytes, high watermark %d; want none, %d, none, %d",
		v, p.ErrorCode, p.PreferredReadReplica, len(p.RecordBatches), p.HighWatermark, rackFollower, rackFirst)
	for _, rack := range []string{"r1", "r9", ""} {
		_, p = fetch(cl, 1, rack, 0)
		testutil.True(t, p.ErrorCode == 0 && p.PreferredReadReplica == -1 && len(p.RecordBatches) > 0,
			"leader, fetch from rack %q: error %d, preferred read replica %d, %d record bytes; want the leader to serve it",
			rack, p.ErrorCode, p.PreferredReadReplica, len(p.RecordBatches))
	}
	v, p = fetch(old, 1, "", 0)
	testutil.True(t, v == 10 && p.ErrorCode == 0 && len(p.RecordBatches) > 0, "leader, Fetch v%d: error %d, %d record bytes; want records", v, p.ErrorCode, len(p.RecordBatches))

	_, p = fetch(cl, rackFollower, "r2", 0)
	testutil.True(t, p.ErrorCode == 0 && p.PreferredReadReplica == -1 && len(p.RecordBatches) > 0 && p.HighWatermark <= rackFirst,
		"follower, fetch at 0: error %d, preferred read replica %d, %d record bytes, high watermark %d; want records below its high watermark",
		p.ErrorCode, p.PreferredReadReplica, len(p.RecordBatches), p.HighWatermark)
	_, p = fetch(cl, rackFollower, "r2", rackFirst+5)
	testutil.True(t, p.ErrorCode == kerr.OffsetOutOfRange.Code,
		"follower, fetch at %d past its log end %d: error %d; want OFFSET_OUT_OF_RANGE", rackFirst+5, rackFirst, p.ErrorCode)
	v, p = fetch(old, rackFollower, "", 0)
	testutil.True(t, p.ErrorCode == kerr.NotLeaderForPartition.Code,
		"follower, Fetch v%d: error %d; want NOT_LEADER_OR_FOLLOWER (a follower serves consumers from v11)", v, p.ErrorCode)
}

// consumerBytes is runnel_consumer_fetch_bytes_total of every node still up, by node
// id: as the partition's leader and as a follower.
type consumerBytes struct{ leader, follower map[int32]float64 }

// checkServed fails unless, between before and after, node served consumers at least
// min bytes as a follower and no other node served them anything as leader.
func checkServed(t *testing.T, what string, before, after consumerBytes, node int32, min float64) {
	t.Helper()
	t.Logf("%s: consumer bytes as leader %v, as follower %v", what, after.leader, after.follower)
	got := after.follower[node] - before.follower[node]
	testutil.True(t, got >= min, "%s: node %d served consumers %.0f bytes as a follower; want at least %.0f (the records read)",
		what, node, got, min)
	for id, b := range after.leader {
		testutil.True(t, b == before.leader[id], "%s: node %d served consumers %.0f bytes as the leader; want none (node %d is in the consumer's rack)",
			what, id, b-before.leader[id], node)
	}
}

// scrapeConsumerBytes reads runnel_consumer_fetch_bytes_total from the /metrics of every
// node that runs.
func scrapeConsumerBytes(t *testing.T, c *clustertest.Cluster) consumerBytes {
	t.Helper()
	out := consumerBytes{leader: map[int32]float64{}, follower: map[int32]float64{}}
	for i := 1; i <= c.Size(); i++ {
		n := c.Node(i)
		if !n.Running() {
			continue
		}
		resp, err := http.Get("http://" + n.HTTPAddr + "/metrics")
		testutil.NoError(t, err, "GET /metrics of node", n.ID)
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		testutil.NoError(t, err, "reading /metrics of node", n.ID)
		for line := range strings.SplitSeq(string(body), "\n") {
			for as, m := range map[string]map[int32]float64{"leader": out.leader, "follower": out.follower} {
				if v, ok := strings.CutPrefix(line, `runnel_consumer_fetch_bytes_total{replica="`+as+`"} `); ok {
					f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
					testutil.NoError(t, err, "node", n.ID, line)
					m[n.ID] = f
				}
			}
		}
		_, ok := out.follower[n.ID]
		testutil.True(t, ok, "node %d exports no runnel_consumer_fetch_bytes_total{replica=\"follower\"}", n.ID)
	}
	return out
}

// createLedBy1 creates topic, one partition on nodes 1, 2, 3 (node 1 its preferred
// leader) with min.insync.replicas 2, and waits for node 1 to lead it with all three in
// sync.
func createLedBy1(t *testing.T, c *clustertest.Cluster, cl *kgo.Client, topic string) {
	t.Helper()
	req := kmsg.NewPtrCreateTopicsRequest()
	req.TimeoutMillis = 10000
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = topic, -1, -1
	ra := kmsg.NewCreateTopicsRequestTopicReplicaAssignment()
	ra.Partition, ra.Replicas = 0, []int32{1, 2, 3}
	rt.ReplicaAssignment = append(rt.ReplicaAssignment, ra)
	cfg := kmsg.NewCreateTopicsRequestTopicConfig()
	cfg.Name, cfg.Value = "min.insync.replicas", kmsg.StringPtr("2")
	rt.Configs = append(rt.Configs, cfg)
	req.Topics = append(req.Topics, rt)
	testutil.Eventually(t, 30*time.Second, func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
		defer cancel()
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			return err
		}
		if err := kerr.ErrorForCode(resp.Topics[0].ErrorCode); err != nil && err != kerr.TopicAlreadyExists {
			return fmt.Errorf("creating %s on nodes 1, 2, 3: %w", topic, err)
		}
		return nil
	})
	c.WaitISR(t, topic, 0, 3, 30*time.Second)
	if leader, _ := c.WaitLeader(t, topic, 0, 30*time.Second); leader != 1 {
		t.Fatalf("%s/0 is led by node %d; want node 1, its first replica", topic, leader)
	}
}

// numbered is record i's value: its offset as six digits, then padding to
// rackValueSize bytes.
func numbered(i int) []byte {
	return []byte(fmt.Sprintf("%06d", i) + strings.Repeat("x", rackValueSize-6))
}

// produceNumbered writes records from..from+n-1 to topic's one partition, in order
// (the partition holds exactly from records before).
func produceNumbered(t *testing.T, cl *kgo.Client, topic string, from, n int) {
	t.Helper()
	rs := make([]*kgo.Record, n)
	for i := range rs {
		rs[i] = &kgo.Record{Topic: topic, Value: numbered(from + i)}
	}
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	testutil.NoError(t, cl.ProduceSync(ctx, rs...).FirstErr(), "producing records", from, "to", from+n-1, "to", topic)
	testutil.True(t, rs[n-1].Offset == int64(from+n-1), "%s: record %d written at offset %d", topic, from+n-1, rs[n-1].Offset)
}

// consumeNumbered polls cl until it has the n records from offset from, each at its
// offset with its numbered value.
func consumeNumbered(t *testing.T, cl *kgo.Client, from, n int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	next := int64(from)
	for next < int64(from+n) {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("franz-go consumer: %d of records %d..%d after %v", next-int64(from), from, from+n-1, testTimeout)
		}
		fs.EachError(func(topic string, p int32, err error) { t.Logf("franz-go consumer: %s/%d: %v", topic, p, err) })
		fs.EachRecord(func(r *kgo.Record) {
			if r.Offset != next || string(r.Value) != string(numbered(int(next))) {
				t.Fatalf("franz-go consumer: record at offset %d (value %.10q...), want offset %d", r.Offset, r.Value, next)
			}
			next++
		})
	}
}

// rackPython is the python3 that has confluent_kafka, or "" (the librdkafka half is
// then skipped, and said so).
func rackPython(t *testing.T) string {
	for _, py := range []string{"/usr/bin/python3", "python3"} {
		ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
		err := exec.CommandContext(ctx, py, "-c", "import confluent_kafka").Run()
		cancel()
		if err == nil {
			return py
		}
	}
	t.Log("no python3 can import confluent_kafka (scripts/install-deps.sh installs python3-confluent-kafka): the librdkafka half is skipped")
	return ""
}

// rackScript is py/confluent_rack.py running: phase 1 reads the first records, then it
// waits on its standard input for the test to stop the follower.
type rackScript struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	lines  chan string     // its output, line by line; closed at its end
	out    strings.Builder // every line read so far, for failure messages
	exited chan error
}

func startRackScript(t *testing.T, python, bootstrap, topic string) *rackScript {
	t.Helper()
	dir, err := filepath.Abs("py")
	testutil.NoError(t, err, "locating internal/interop/py")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	cmd := exec.CommandContext(ctx, python, filepath.Join(dir, "confluent_rack.py"), bootstrap, topic)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "PYTHONDONTWRITEBYTECODE=1", fmt.Sprintf("CLIENT_RACK=r%d", rackFollower),
		fmt.Sprintf("FIRST=%d", rackFirst), fmt.Sprintf("TOTAL=%d", rackFirst+rackMore))
	s := &rackScript{cmd: cmd, lines: make(chan string, 1024), exited: make(chan error, 1)}
	s.stdin, err = cmd.StdinPipe()
	testutil.NoError(t, err)
	stdout, err := cmd.StdoutPipe()
	testutil.NoError(t, err)
	cmd.Stderr = cmd.Stdout
	testutil.NoError(t, cmd.Start(), "starting", cmd.String())
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			s.lines <- sc.Text()
		}
		close(s.lines)
		s.exited <- cmd.Wait()
	}()
	return s
}

// next returns the script's next output line, false at its end or after timeout.
func (s *rackScript) next(timeout time.Duration) (string, bool) {
	select {
	case l, ok := <-s.lines:
		if ok {
			s.out.WriteString(l + "\n")
		}
		return l, ok
	case <-time.After(timeout):
		return "", false
	}
}

func (s *rackScript) waitPhase1(t *testing.T) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		l, ok := s.next(time.Until(deadline))
		if !ok {
			t.Fatalf("confluent_rack.py never finished its first phase; output:\n%s", s.out.String())
		}
		if strings.Contains(l, "PHASE1 DONE") {
			return
		}
	}
}

func (s *rackScript) proceed(t *testing.T) {
	t.Helper()
	_, err := io.WriteString(s.stdin, "go\n")
	testutil.NoError(t, err, "telling confluent_rack.py to go on")
}

func (s *rackScript) wait(t *testing.T) {
	t.Helper()
	for {
		if _, ok := s.next(40 * time.Second); !ok {
			break
		}
	}
	if err := <-s.exited; err != nil {
		t.Fatalf("confluent_rack.py: %v; output:\n%s", err, s.out.String())
	}
	t.Logf("confluent_rack.py passed; output:\n%s", strings.TrimRight(s.out.String(), "\n"))
}
