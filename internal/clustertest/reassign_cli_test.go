package clustertest_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/runnel-io/runnel/internal/cli"
	"github.com/runnel-io/runnel/internal/clustertest"
	"github.com/runnel-io/runnel/internal/config"
)

// cliResult is one in-process run of the runnel command line.
type cliResult struct {
	code           int
	stdout, stderr string
}

func runCLI(args ...string) cliResult {
	var out, errb bytes.Buffer
	code := cli.MainIO(args, strings.NewReader(""), &out, &errb)
	return cliResult{code, out.String(), errb.String()}
}

func mustCLI(t *testing.T, args ...string) cliResult {
	t.Helper()
	r := runCLI(args...)
	if r.code != 0 {
		t.Fatalf("runnel %s: exit %d\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), r.code, r.stdout, r.stderr)
	}
	return r
}

// requireServed skips the test unless every node lists each API key in ApiVersions,
// so that it turns on by itself once the broker serves them.
func requireServed(t *testing.T, c *clustertest.Cluster, keys map[int16]string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	vs, err := c.Admin(t).ApiVersions(ctx)
	if err != nil {
		t.Fatalf("api versions: %v", err)
	}
	for key, name := range keys {
		for _, v := range vs {
			if _, ok := v.KeyMaxVersion(key); v.Err == nil && !ok {
				t.Skipf("node %d does not serve %s (API key %d) yet", v.NodeID, name, key)
			}
		}
	}
}

// createAssigned creates topic with the given replicas per partition.
func createAssigned(t *testing.T, c *clustertest.Cluster, topic string, assign [][]int32) {
	t.Helper()
	req := kmsg.NewPtrCreateTopicsRequest()
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = topic, -1, -1
	for p, reps := range assign {
		ra := kmsg.NewCreateTopicsRequestTopicReplicaAssignment()
		ra.Partition, ra.Replicas = int32(p), reps
		rt.ReplicaAssignment = append(rt.ReplicaAssignment, ra)
	}
	req.Topics = append(req.Topics, rt)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	resp, err := req.RequestWith(ctx, c.Client(t))
	if err == nil && resp.Topics[0].ErrorCode != 0 {
		err = fmt.Errorf("error code %d: %v", resp.Topics[0].ErrorCode, resp.Topics[0].ErrorMessage)
	}
	if err != nil {
		t.Fatalf("create topic %s with assignment %v: %v", topic, assign, err)
	}
	for p, reps := range assign {
		c.WaitISR(t, topic, int32(p), len(reps), waitTimeout)
	}
}

// assignment reads every partition's replicas of topic from a live node.
func assignment(t *testing.T, c *clustertest.Cluster, topic string, partitions int) [][]int32 {
	t.Helper()
	out := make([][]int32, partitions)
	for p := range partitions {
		st, err := c.PartitionFrom(context.Background(), int(c.LiveIDs()[0]), topic, int32(p))
		if err != nil {
			t.Fatalf("%s-%d: %v", topic, p, err)
		}
		out[p] = st.Replicas
	}
	return out
}

// perNode counts replicas and preferred leaders (first replicas) per node.
func perNode(assign [][]int32) (replicas, leaders map[int32]int) {
	replicas, leaders = map[int32]int{}, map[int32]int{}
	for _, reps := range assign {
		for _, n := range reps {
			replicas[n]++
		}
		leaders[reps[0]]++
	}
	return replicas, leaders
}

type planJSON struct {
	Version    int `json:"version"`
	Partitions []struct {
		Topic     string  `json:"topic"`
		Partition int32   `json:"partition"`
		Replicas  []int32 `json:"replicas"`
	} `json:"partitions"`
}

// throttleConfigs returns the topic's throttled replica lists as described.
func throttleConfigs(t *testing.T, adm *kadm.Client, topic string) (leader, follower string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	rcs, err := adm.DescribeTopicConfigs(ctx, topic)
	if err != nil || len(rcs) != 1 || rcs[0].Err != nil {
		t.Fatalf("describe configs of %s: %v %+v", topic, err, rcs)
	}
	for _, c := range rcs[0].Configs {
		switch c.Key {
		case "leader.replication.throttled.replicas":
			leader = c.MaybeValue()
		case "follower.replication.throttled.replicas":
			follower = c.MaybeValue()
		}
	}
	return leader, follower
}

// TestReassignCLI drives the commands against four real nodes: a topic on nodes
// 1-3 is spread onto node 4, which joined the three voters, by `reassign plan` + `execute --throttle` (the controller
// sets the throttle configs with the moves and removes them with the last one), leaders
// go back to the preferred replicas with `cluster elect-leaders`, `cluster
// decommission` is refused while a partition needs every node or has its only other
// in-sync replica down, and then drains node 4, and `reassign cancel` rolls back a move throttled to 1 KiB/s half-way.
func TestReassignCLI(t *testing.T) {
	skipIfShort(t)
	// The moves are the CLI's: the controller's own balancer stays off (where this
	// checkout has it), or it would give node 4 its share before the plan.
	sets := slices.Clone(clustertest.FastFailureDetection)
	if config.Default().Set("partition.autobalancing.mode", "off") == nil {
		sets = append(sets, "partition.autobalancing.mode=off")
	}
	c := clustertest.Start(t, clustertest.Options{Nodes: 3, Sets: sets, StartTimeout: startTimeout})
	requireServed(t, c, map[int16]string{43: "ElectLeaders", 45: "AlterPartitionReassignments", 46: "ListPartitionReassignments"})
	c.AddNode(t) // node 4 joins as a broker (a metadata non-voter)
	c.WaitBrokers(t, []int32{1, 2, 3, 4}, waitTimeout)
	b := c.Bootstrap()
	const topic, parts = "orders", 8
	createAssigned(t, c, topic, [][]int32{{1, 2}, {2, 3}, {3, 1}, {1, 2}, {2, 3}, {3, 1}, {1, 3}, {2, 1}})
	cl := c.Client(t, kgo.RequiredAcks(kgo.AllISRAcks()), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	for p := range int32(parts) {
		for range 20 {
			if err := cl.ProduceSync(context.Background(), &kgo.Record{Topic: topic, Partition: p, Value: bytes.Repeat([]byte("x"), 1024)}).FirstErr(); err != nil {
				t.Fatalf("produce to %s-%d: %v", topic, p, err)
			}
		}
	}
	before := assignment(t, c, topic, parts)

	// Scale out: node 4 takes its share (16 replicas over 4 nodes: 4 each, 2 leaders
	// each). Nodes 1..3 hold 6, 5, 5: the excess is 4 replicas.
	r := mustCLI(t, "reassign", "plan", "-b", b)
	var plan planJSON
	if err := json.Unmarshal([]byte(r.stdout), &plan); err != nil || plan.Version != 1 {
		t.Fatalf("plan output is not Kafka's reassignment JSON: %v\n%s", err, r.stdout)
	}
	after := slices.Clone(before)
	for _, p := range plan.Partitions {
		after[p.Partition] = p.Replicas
	}
	replicas, leaders := perNode(after)
	for n := int32(1); n <= 4; n++ {
		if replicas[n] != 4 || leaders[n] != 2 {
			t.Errorf("planned: node %d holds %d replicas and leads %d, want 4 and 2 (%v)", n, replicas[n], leaders[n], after)
		}
	}
	if !strings.Contains(r.stderr, "4 replicas move (the excess over the even share is 4)") {
		t.Errorf("plan summary:\n%s", r.stderr)
	}
	file := filepath.Join(t.TempDir(), "plan.json")
	if err := os.WriteFile(file, []byte(r.stdout), 0o600); err != nil {
		t.Fatal(err)
	}
	r = mustCLI(t, "reassign", "execute", "-b", b, "--plan", file, "--throttle", "104857600")
	if !strings.Contains(r.stdout, "Throttled the copies to 104857600 bytes/s; the controller removes the throttles when the moves end.") || !strings.Contains(r.stdout, "Current assignment") {
		t.Errorf("execute output:\n%s", r.stdout)
	}
	adm := c.Admin(t)
	if l, f := throttleConfigs(t, adm, topic); !strings.Contains(f, ":4") || l == "" {
		t.Errorf("throttled replicas after execute: leader %q follower %q; want the new replicas on node 4 among the followers", l, f)
	}
	// The rates: checked where the nodes describe them per node (Runnel applies
	// them cluster-wide and describes the default); the cancel half-way needs the
	// nodes to throttle at all (a dynamic rate), else the move may finish first.
	ratesKept := config.IsDynamicBrokerProperty("leader.replication.throttled.rate")
	rateDescribed := false
	if rate, src := brokerRate(t, adm, 4); src == kmsg.ConfigSourceDefaultConfig {
		t.Logf("node 4 describes leader.replication.throttled.rate as the default (%s): its per-node checks are skipped", rate)
	} else if rate != "104857600" {
		t.Errorf("node 4's leader.replication.throttled.rate after execute: %q (%v), want 104857600", rate, src)
	} else {
		rateDescribed = true
	}
	var st struct {
		InProgress       bool     `json:"in_progress"`
		ThrottlesRemoved []string `json:"throttles_removed"`
	}
	deadline := time.Now().Add(reassignTimeout)
	for {
		r = mustCLI(t, "reassign", "status", "-b", b, "--json", "--interval", "100ms")
		if err := json.Unmarshal([]byte(r.stdout), &st); err != nil {
			t.Fatalf("status --json: %v in %q", err, r.stdout)
		}
		if !st.InProgress {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("moves still in progress after %v:\n%s", reassignTimeout, r.stdout)
		}
	}
	if len(st.ThrottlesRemoved) != 0 {
		t.Errorf("the status that found nothing in progress removed %v: on Runnel the controller owns the throttles", st.ThrottlesRemoved)
	}
	// The controller removed them with the last move's completion.
	if rate, src := brokerRate(t, adm, 4); rateDescribed && src != kmsg.ConfigSourceDefaultConfig {
		t.Errorf("node 4's leader.replication.throttled.rate after the moves: %q (%v), want the default", rate, src)
	}
	if l, f := throttleConfigs(t, adm, topic); l != "" || f != "" {
		t.Errorf("throttled replicas left after the moves: %q %q", l, f)
	}
	for _, p := range plan.Partitions {
		waitReplicas(t, c, topic, p.Partition, p.Replicas)
	}

	// Leaders back on the preferred replicas.
	r = mustCLI(t, "cluster", "elect-leaders", "-b", b, "--topic", topic, "--json")
	var rows []struct{ Topic, Result, Error string }
	if err := json.Unmarshal([]byte(r.stdout), &rows); err != nil || len(rows) != parts {
		t.Fatalf("elect-leaders --json: %v in %q", err, r.stdout)
	}
	for p := range int32(parts) {
		c.WaitLeader(t, topic, p, waitTimeout)
		st, _ := c.PartitionFrom(context.Background(), int(c.LiveIDs()[0]), topic, p)
		if st.Leader != st.Replicas[0] {
			t.Errorf("%s-%d: leader %d after elect-leaders, preferred %d", topic, p, st.Leader, st.Replicas[0])
		}
	}

	// A partition that needs all four nodes: decommission is refused.
	createTopic(t, c, "wide", 1, 4)
	r = runCLI("cluster", "decommission", "-b", b, "4")
	if r.code != 1 || !strings.Contains(r.stderr, `refusing to decommission node 4: topic "wide" partition 0 has 4 replicas and only 3 other live nodes (1,2,3) could hold them`) {
		t.Errorf("decommission with an RF 4 topic: exit %d, stderr %q", r.code, r.stderr)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := adm.DeleteTopic(ctx, "wide"); err != nil {
		t.Fatalf("delete topic wide: %v", err)
	}
	waitTopicGone(t, c, "wide")

	// A partition whose only other in-sync replica is down: draining node 4 would
	// leave it under min.insync.replicas, so decommission is refused too.
	createAssigned(t, c, "guarded", [][]int32{{4, 3}})
	setMinISR(t, adm, "guarded", "2")
	c.Kill(3)
	c.WaitISR(t, "guarded", 0, 1, waitTimeout)
	r = runCLI("cluster", "decommission", "-b", b, "4")
	if r.code != 1 || !strings.Contains(r.stderr, `topic "guarded" partition 0: its in-sync replicas on other nodes are []; with the one replacing node 4 that is fewer than min.insync.replicas=2`) {
		t.Errorf("decommission with node 3 down: exit %d, stderr %q", r.code, r.stderr)
	}
	// A plan made while node 3 is down moves its replicas off it, and says so.
	r = mustCLI(t, "reassign", "plan", "-b", b)
	if !strings.Contains(r.stderr, "warning: node 3 is not live (down or fenced) and holds 5 replicas: the plan moves them off it.") {
		t.Errorf("plan with node 3 down:\n%s", r.stderr)
	}
	c.Restart(3)
	c.WaitISR(t, "guarded", 0, 2, waitTimeout)
	for p := range int32(parts) {
		c.WaitISR(t, topic, p, 2, waitTimeout)
	}

	// One command: it drains node 4, asks for its process to be stopped, waits, and
	// unregisters it. The test plays the operator: it stops node 4 once drained.
	r = decommissionStopping(t, c, 4, "--interval", "100ms", "--throttle", "104857600")
	for _, want := range []string{"Started", "Node 4 holds no replica.", "stop its process now", "Unregistered node 4"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("decommission output lacks %q:\n%s", want, r.stdout)
		}
	}
	t.Logf("decommission output:\n%s", r.stdout)
	c.WaitBrokers(t, []int32{1, 2, 3}, waitTimeout)
	unregistered := true
	r = runCLI("cluster", "decommission", "-b", b, "4")
	if r.code != 1 || !strings.Contains(r.stderr, "node 4 is not a node of the cluster (live: 1,2,3)") {
		t.Errorf("decommission of an unregistered node: exit %d, stderr %q", r.code, r.stderr)
	}
	t.Logf("node 4 unregistered: %v", unregistered)
	drained := assignment(t, c, topic, parts)
	replicas, _ = perNode(drained)
	for n := int32(1); n <= 3; n++ {
		if replicas[4] != 0 || replicas[n] < 5 || replicas[n] > 6 {
			t.Errorf("after decommission: %v (want none on node 4, 5 or 6 on each other)", replicas)
		}
	}

	// Cancel half-way: a move throttled to 64 KiB/s cannot copy the partition's
	// 4 MiB before the cancel; the old replicas come back. It needs the nodes to
	// throttle (KIP-73), else the move may finish first.
	if !ratesKept {
		t.Logf("cancel half-way not run: the nodes do not keep leader.replication.throttled.rate yet, so nothing holds a move open")
		return
	}
	cancelThrottledMove(t, c, topic, drained[0])

	// A dead node is drained too: its replicas are copied from the others (the
	// throttle goes to the live nodes), then it is a voter, which stays registered.
	c.Kill(3)
	c.WaitBrokers(t, []int32{1, 2}, waitTimeout)
	r = runCLI("cluster", "decommission", "-b", b, "3", "--interval", "100ms", "--throttle", "104857600")
	if r.code != 1 || !strings.Contains(r.stdout, "Node 3 holds no replica") || !strings.Contains(r.stderr, "node 3 is a metadata voter") {
		t.Errorf("decommission of dead node 3: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if replicas, _ := perNode(assignment(t, c, topic, parts)); replicas[3] != 0 {
		t.Errorf("after draining dead node 3: %v", replicas)
	}
}

// cancelThrottledMove starts a move of topic-0 throttled to 64 KiB/s onto a node
// that does not hold it, and cancels it while it copies.
func cancelThrottledMove(t *testing.T, c *clustertest.Cluster, topic string, old []int32) {
	t.Helper()
	b := c.Bootstrap()
	spare := int32(-1)
	for n := int32(1); n <= 3; n++ {
		if !slices.Contains(old, n) {
			spare = n
		}
	}
	file := filepath.Join(t.TempDir(), "slow.json")
	plan := fmt.Sprintf(`{"version":1,"partitions":[{"topic":%q,"partition":0,"replicas":[%d,%d]}]}`, topic, old[1], spare)
	if err := os.WriteFile(file, []byte(plan), 0o600); err != nil {
		t.Fatal(err)
	}
	// 4 MiB that does not compress, so the copy takes a minute at 64 KiB/s.
	cl := c.Client(t, kgo.RequiredAcks(kgo.AllISRAcks()), kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerBatchCompression(kgo.NoCompression()))
	for range 64 {
		v := make([]byte, 64<<10)
		rand.Read(v)
		if err := cl.ProduceSync(context.Background(), &kgo.Record{Topic: topic, Partition: 0, Value: v}).FirstErr(); err != nil {
			t.Fatalf("produce to %s-0: %v", topic, err)
		}
	}
	// The throttle is a rate over the quota window (11 s, as Kafka's), so the
	// first rate × 11 s pass at once: 64 KiB/s leaves most of the 4 MiB to copy.
	mustCLI(t, "reassign", "execute", "-b", b, "--plan", file, "--throttle", "65536")
	// Another move on top (--additional): the first one's throttled replicas stay.
	st1, err := c.PartitionFrom(context.Background(), int(c.LiveIDs()[0]), topic, 1)
	if err != nil {
		t.Fatal(err)
	}
	more := filepath.Join(t.TempDir(), "more.json")
	spare1 := int32(6) - st1.Replicas[0] - st1.Replicas[1] // the third of nodes 1, 2, 3
	plan = fmt.Sprintf(`{"version":1,"partitions":[{"topic":%q,"partition":1,"replicas":[%d,%d]}]}`, topic, st1.Replicas[0], spare1)
	if err := os.WriteFile(more, []byte(plan), 0o600); err != nil {
		t.Fatal(err)
	}
	if r := runCLI("reassign", "execute", "-b", b, "--plan", more, "--throttle", "65536"); r.code != 1 || !strings.Contains(r.stderr, "1 reassignment is in progress (orders/0)") {
		t.Errorf("execute while a move is in progress: exit %d, stderr %q", r.code, r.stderr)
	}
	mustCLI(t, "reassign", "execute", "-b", b, "--plan", more, "--throttle", "65536", "--additional")
	if l, _ := throttleConfigs(t, c.Admin(t), topic); !strings.Contains(l, fmt.Sprintf("0:%d", old[0])) || !strings.Contains(l, fmt.Sprintf("1:%d", st1.Replicas[0])) {
		t.Errorf("leader throttled replicas after --additional: %q, want partition 0's and 1's", l)
	}
	r := mustCLI(t, "reassign", "status", "-b", b, "--interval", "500ms")
	if !regexp.MustCompile(`(?m)^orders\s+0\s`).MatchString(r.stdout) || !regexp.MustCompile(`\d+ partitions? moving`).MatchString(r.stdout) {
		t.Errorf("status of a move throttled to 64 KiB/s:\n%s", r.stdout)
	}
	t.Logf("status half-way:\n%s", r.stdout)
	r = mustCLI(t, "reassign", "cancel", "-b", b)
	if want := fmt.Sprintf("Cancelled %s/0 (adding %d", topic, spare); !strings.Contains(r.stdout, want) {
		t.Errorf("cancel output lacks %q:\n%s", want, r.stdout)
	}
	// The controller removed the throttles in the proposal that cancelled the moves.
	if l, f := throttleConfigs(t, c.Admin(t), topic); l != "" || f != "" {
		t.Errorf("throttled replicas left after the cancel: %q %q", l, f)
	}
	// The same replicas; their order is the move's list minus the ones added (as
	// Kafka's KRaft controller reverts), so it is logged, not checked.
	deadline := time.Now().Add(waitTimeout)
	for {
		st, err := c.PartitionFrom(context.Background(), int(c.LiveIDs()[0]), topic, 0)
		if err == nil && sameSet(st.Replicas, old) {
			if !slices.Equal(st.Replicas, old) {
				t.Logf("cancel restored replicas %v of %v, in another order", st.Replicas, old)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s-0: replicas %v (%v) after cancel, want %v back", topic, st.Replicas, err, old)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if r := mustCLI(t, "reassign", "status", "-b", b); !strings.HasPrefix(r.stdout, "No reassignment in progress.") {
		t.Errorf("status after cancel:\n%s", r.stdout)
	}
}

// setMinISR sets topic's min.insync.replicas.
func setMinISR(t *testing.T, adm *kadm.Client, topic, n string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resps, err := adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{{Op: kadm.SetConfig, Name: "min.insync.replicas", Value: &n}}, topic)
	if err == nil {
		err = resps[0].Err
	}
	if err != nil {
		t.Fatalf("set min.insync.replicas of %s: %v", topic, err)
	}
}

// brokerRate describes node's leader.replication.throttled.rate.
func brokerRate(t *testing.T, adm *kadm.Client, node int32) (string, kmsg.ConfigSource) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	rcs, err := adm.DescribeBrokerConfigs(ctx, node)
	if err != nil || len(rcs) != 1 || rcs[0].Err != nil {
		t.Fatalf("describe configs of node %d: %v %+v", node, err, rcs)
	}
	for _, c := range rcs[0].Configs {
		if c.Key == "leader.replication.throttled.rate" {
			return c.MaybeValue(), c.Source
		}
	}
	return "", kmsg.ConfigSourceDefaultConfig
}

// waitTopicGone waits until no live node lists topic.
func waitTopicGone(t *testing.T, c *clustertest.Cluster, topic string) {
	t.Helper()
	deadline := time.Now().Add(waitTimeout)
	for {
		gone := true
		for _, id := range c.LiveIDs() {
			md, err := c.MetadataFrom(context.Background(), int(id), topic)
			if err != nil || len(md.Topics) == 1 && md.Topics[0].ErrorCode == 0 {
				gone = false
			}
		}
		if gone {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("topic %s still listed after %v", topic, waitTimeout)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestReassignThrottleHeldWhileWatched: a move started by `reassign execute --throttle
// T` while `reassign status --json` runs every 200 ms, as docs/scale-out.md suggests
// watching it, copies at the throttle (it takes at least 0.8 × D/T) and every status
// taken before it ends lists the moving partition. Before the controller owned the
// throttles, a status run between execute's setting of the rates and its start of the
// moves found nothing in progress and removed the throttles: a 1 MiB/s move copied
// 6-12 MB in a quarter of a second.
func TestReassignThrottleHeldWhileWatched(t *testing.T) {
	skipIfShort(t)
	sets := append(slices.Clone(clustertest.FastFailureDetection), "partition.autobalancing.mode=off")
	c := clustertest.Start(t, clustertest.Options{Nodes: 3, Sets: sets, StartTimeout: startTimeout})
	b := c.Bootstrap()
	const topic = "watched"
	createAssigned(t, c, topic, [][]int32{{1, 2}})
	const record, count = 64 << 10, 64 // D: 4 MiB that do not compress
	const rate = 512 << 10             // T: 512 KiB/s, so D/T = 8 s
	cl := c.Client(t, kgo.RequiredAcks(kgo.AllISRAcks()), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.ProducerBatchMaxBytes(1<<20), kgo.ProducerBatchCompression(kgo.NoCompression()))
	for range count {
		v := make([]byte, record)
		rand.Read(v)
		cl.Produce(context.Background(), &kgo.Record{Topic: topic, Partition: 0, Value: v}, nil)
	}
	if err := cl.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "plan.json")
	if err := os.WriteFile(file, []byte(`{"version":1,"partitions":[{"topic":"watched","partition":0,"replicas":[1,3]}]}`), 0o600); err != nil {
		t.Fatal(err)
	}

	// The watcher: a status every 200 ms from before the execute until the move ends.
	type sample struct {
		at     time.Time
		moving bool
	}
	var samples []sample
	var statusFailures []string // a status that failed is a defect, not a sample to skip
	stop := make(chan struct{})
	watched := make(chan struct{})
	go func() {
		defer close(watched)
		for {
			select {
			case <-stop:
				return
			default:
			}
			r := runCLI("reassign", "status", "-b", b, "--json", "--interval", "200ms")
			var st struct {
				Partitions []struct {
					Topic     string `json:"topic"`
					Partition int32  `json:"partition"`
				} `json:"partitions"`
			}
			if r.code != 0 || json.Unmarshal([]byte(r.stdout), &st) != nil {
				statusFailures = append(statusFailures, fmt.Sprintf("exit %d: %s%s", r.code, r.stdout, r.stderr))
				continue
			}
			moving := slices.ContainsFunc(st.Partitions, func(p struct {
				Topic     string `json:"topic"`
				Partition int32  `json:"partition"`
			}) bool {
				return p.Topic == topic && p.Partition == 0
			})
			samples = append(samples, sample{time.Now(), moving})
		}
	}()
	time.Sleep(300 * time.Millisecond)
	start := time.Now()
	mustCLI(t, "reassign", "execute", "-b", b, "--plan", file, "--throttle", fmt.Sprint(rate))
	waitReplicas(t, c, topic, 0, []int32{1, 3})
	took := time.Since(start)
	close(stop)
	<-watched

	d := float64(record * count)
	t.Logf("moved %.1f MiB under a %d KiB/s throttle with a status every 200 ms: %v (D/T %.1f s), %d status samples",
		d/(1<<20), rate>>10, took.Round(time.Millisecond), d/rate, len(samples))
	if min := time.Duration(0.8 * d / rate * float64(time.Second)); took < min {
		t.Errorf("the watched throttled move took %v, less than 0.8 × D/T = %v: the throttle did not hold", took.Round(time.Millisecond), min.Round(time.Millisecond))
	}
	if len(statusFailures) > 0 {
		t.Errorf("%d of the watcher's statuses failed; first: %s", len(statusFailures), statusFailures[0])
	}
	// Every sample taken after the execute returned and before the move ended lists it.
	listed, missed := 0, 0
	for _, s := range samples {
		if s.at.Before(start.Add(time.Second)) || s.at.After(start.Add(took-time.Second)) {
			continue // around the start and the end: either answer is right
		}
		if s.moving {
			listed++
		} else {
			missed++
		}
	}
	if listed == 0 || missed > 0 {
		t.Errorf("status samples during the move: %d listed %s-0, %d did not", listed, topic, missed)
	}
	if l, f := throttleConfigs(t, c.Admin(t), topic); l != "" || f != "" {
		t.Errorf("throttled replicas left after the move: %q %q", l, f)
	}
}

// decommissionStopping runs `runnel cluster decommission ID ARGS...` and plays the
// operator it asks to stop the node: once the command says to stop the node's
// process, it stops it. It returns the command's result, failing the test unless it
// exits 0.
func decommissionStopping(t *testing.T, c *clustertest.Cluster, id int32, args ...string) cliResult {
	t.Helper()
	var out, errb syncBuffer
	done := make(chan int, 1)
	go func() {
		done <- cli.MainIO(append([]string{"cluster", "decommission", "-b", c.Bootstrap(), fmt.Sprint(id)}, args...),
			strings.NewReader(""), &out, &errb)
	}()
	deadline := time.Now().Add(2 * reassignTimeout)
	for !strings.Contains(out.String(), "stop its process now") {
		select {
		case code := <-done:
			t.Fatalf("decommission %d returned before asking for the node to be stopped: exit %d\n%s%s", id, code, out.String(), errb.String())
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("decommission %d did not ask for the node to be stopped within %v:\n%s", id, 2*reassignTimeout, out.String())
		}
	}
	if holdsReplicas(t, c, id) || isVoter(t, c, id) {
		t.Errorf("decommission %d asked for the node to be stopped while it still holds replicas or votes", id)
	}
	if err := c.Stop(int(id)); err != nil {
		t.Fatalf("stopping node %d: %v", id, err)
	}
	select {
	case code := <-done:
		r := cliResult{code, out.String(), errb.String()}
		if r.code != 0 {
			t.Fatalf("decommission %d: exit %d\n%s%s", id, r.code, r.stdout, r.stderr)
		}
		return r
	case <-time.After(reassignTimeout):
		t.Fatalf("decommission %d did not end within %v of the node's stop:\n%s", id, reassignTimeout, out.String())
	}
	return cliResult{}
}

// syncBuffer is a bytes.Buffer that a command writes while the test reads it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// holdsReplicas reports whether any partition lists node id as a replica.
func holdsReplicas(t *testing.T, c *clustertest.Cluster, id int32) bool {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	md, err := c.Admin(t).Metadata(ctx)
	if err != nil {
		return true
	}
	for _, td := range md.Topics {
		for _, p := range td.Partitions {
			if slices.Contains(p.Replicas, id) {
				return true
			}
		}
	}
	return false
}

// isVoter reports whether node id is a voter of the metadata quorum.
func isVoter(t *testing.T, c *clustertest.Cluster, id int32) bool {
	t.Helper()
	r := runCLI("cluster", "quorum", "-b", c.Bootstrap(), "--json")
	var st struct {
		Voters []struct {
			ID int32 `json:"id"`
		} `json:"voters"`
	}
	if r.code != 0 || json.Unmarshal([]byte(r.stdout), &st) != nil {
		return true
	}
	return slices.ContainsFunc(st.Voters, func(v struct {
		ID int32 `json:"id"`
	}) bool {
		return v.ID == id
	})
}

// TestDecommissionVoter: `runnel cluster decommission 1` on three voters and a broker
// (node 4) takes voter 1 out of the cluster with that one command: it drains node 1,
// promotes node 4 into the voters in its place (the quorum stays at three), removes
// node 1 from the voters, waits for its process to stop and unregisters it. Before,
// the command drained node 1 and exited 0 with node 1 still a voter and a broker.
func TestDecommissionVoter(t *testing.T) {
	skipIfShort(t)
	sets := append(slices.Clone(clustertest.FastFailureDetection), "partition.autobalancing.mode=off")
	c := clustertest.Start(t, clustertest.Options{Nodes: 3, Sets: sets, StartTimeout: startTimeout})
	c.AddNode(t)
	c.WaitBrokers(t, []int32{1, 2, 3, 4}, waitTimeout)
	createAssigned(t, c, "held", [][]int32{{1, 2}, {2, 1}, {1, 3}})
	r := decommissionStopping(t, c, 1, "--interval", "100ms")
	for _, want := range []string{"Node 1 holds no replica.", "Node 4 joined the metadata voters in node 1's place.",
		"Node 1 left the metadata voters", "Unregistered node 1"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("decommission output lacks %q:\n%s", want, r.stdout)
		}
	}
	t.Logf("decommission output:\n%s", r.stdout)
	c.WaitBrokers(t, []int32{2, 3, 4}, waitTimeout)
	q := mustCLI(t, "cluster", "quorum", "-b", c.Bootstrap(), "--json")
	var st struct {
		Voters []struct {
			ID int32 `json:"id"`
		} `json:"voters"`
	}
	if err := json.Unmarshal([]byte(q.stdout), &st); err != nil {
		t.Fatal(err)
	}
	var voters []int32
	for _, v := range st.Voters {
		voters = append(voters, v.ID)
	}
	slices.Sort(voters)
	if !slices.Equal(voters, []int32{2, 3, 4}) {
		t.Errorf("voters after decommissioning node 1: %v, want [2 3 4]", voters)
	}
	// A cluster of three voters and no spare broker: decommissioning a voter is refused
	// before anything moves.
	r2 := runCLI("cluster", "decommission", "-b", c.Bootstrap(), "2")
	if r2.code != 1 || !strings.Contains(r2.stderr, "node 2 is a metadata voter (voters 2,3,4)") {
		t.Errorf("decommission of a voter with no spare: exit %d\n%s%s", r2.code, r2.stdout, r2.stderr)
	}
	if !holdsReplicas(t, c, 2) {
		t.Errorf("the refused decommission moved node 2's replicas")
	}
}
