package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/runnel-io/runnel/internal/balance"
	"github.com/runnel-io/runnel/internal/clustertest"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// apiNames names the API keys the reassign tests need, for their skip messages.
var apiNames = map[int16]string{43: "ElectLeaders", 45: "AlterPartitionReassignments", 46: "ListPartitionReassignments"}

// requireAPIs skips the test unless the broker at bootstrap lists every key in its
// ApiVersions, so that a test of a broker API that has not landed turns on by
// itself when it does.
func requireAPIs(t *testing.T, bootstrap string, keys ...int16) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(strings.Split(bootstrap, ",")...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ok := map[int16]bool{}
	for _, k := range keys {
		served, err := brokersServe(ctxTimeout(t, 10*time.Second), kadm.NewClient(cl), k)
		if err != nil {
			t.Fatalf("api versions: %v", err)
		}
		ok[k] = served
	}
	for _, k := range keys {
		if !ok[k] {
			t.Skipf("the broker does not serve %s (API key %d) yet", apiNames[k], k)
		}
	}
}

func TestReassignPlanFileParse(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{`{"version":2,"partitions":[]}`, `want "version": 1`},
		{`{"partitions":[{"topic":"t","partition":0,"replicas":[1]}]}`, `want "version": 1`},
		{`{"version":1,"partitions":[]}`, "no partition to reassign"},
		{`{"version":1,"partitions":[{"partition":0,"replicas":[1]}]}`, "entry 1 has no topic"},
		{`{"version":1,"partitions":[{"topic":"t","replicas":[1]}]}`, `entry 1 (topic "t") has no partition`},
		{`{"version":1,"partitions":[{"topic":"t","partition":0,"replicas":[1],"log_dirs":["/d"]}]}`, "log_dirs other than"},
		{`[1,2]`, "not Kafka's reassignment JSON"},
	} {
		if _, err := parsePlan([]byte(tc.in)); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("parsePlan(%s) = %v, want an error naming %q", tc.in, err, tc.want)
		}
	}
	// What writeReassignment writes, parsePlan reads back, log_dirs "any" included.
	ps := []reassignPartition{{Topic: "a", Partition: 3, Replicas: []int32{2, 1}}, {Topic: "b", Partition: 0, Replicas: []int32{4}, LogDirs: []string{"any"}}}
	var b strings.Builder
	if err := writeReassignment(&b, ps); err != nil {
		t.Fatal(err)
	}
	got, err := parsePlan([]byte(b.String()))
	if err != nil || len(got) != 2 || got[0].Topic != "a" || got[0].Partition != 3 || joinInt32s(got[1].Replicas) != "4" {
		t.Errorf("round trip of %s: %+v, %v", b.String(), got, err)
	}
	var asJSON reassignmentJSON
	if err := json.Unmarshal([]byte(b.String()), &asJSON); err != nil || asJSON.Version != 1 {
		t.Errorf("not JSON: %v in %s", err, b.String())
	}
}

func TestReassignValidatePlan(t *testing.T) {
	md := kadm.Metadata{
		Brokers: kadm.BrokerDetails{{NodeID: 1}, {NodeID: 2}, {NodeID: 3}},
		Topics: kadm.TopicDetails{"t": {Topic: "t", Partitions: kadm.PartitionDetails{
			0: {Topic: "t", Partition: 0, Replicas: []int32{1, 2}},
			1: {Topic: "t", Partition: 1, Replicas: []int32{2, 3}},
		}}},
	}
	v := &clusterView{md: md, live: map[int32]kadm.BrokerDetail{}}
	for _, b := range md.Brokers {
		v.live[b.NodeID] = b
	}
	for _, td := range md.Topics.Sorted() {
		for _, p := range td.Partitions.Sorted() {
			v.parts = append(v.parts, balanceFromDetail(p))
		}
	}
	olds, err := validatePlan(v, []reassignPartition{{Topic: "t", Partition: 1, Replicas: []int32{3, 1}}})
	if err != nil || joinInt32s(olds[0]) != "2,3" {
		t.Fatalf("valid plan: %v, %v", olds, err)
	}
	_, err = validatePlan(v, []reassignPartition{
		{Topic: "nope", Partition: 0, Replicas: []int32{1}},
		{Topic: "t", Partition: 7, Replicas: []int32{1}},
		{Topic: "t", Partition: 0, Replicas: []int32{1, 1}},
		{Topic: "t", Partition: 1, Replicas: []int32{}},
		{Topic: "t", Partition: 1, Replicas: []int32{9}},
	})
	for _, want := range []string{
		`topic "nope" partition 0: unknown topic`,
		`topic "t" partition 7: unknown partition (the topic has 2)`,
		`topic "t" partition 0: node 1 is listed twice in the replicas 1,1`,
		`topic "t" partition 1: empty replica list`,
		`topic "t" partition 1: listed twice`,
		`topic "t" partition 1: unknown node 9 (live nodes: 1,2,3)`,
	} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("validatePlan error %v lacks %q", err, want)
		}
	}
}

func TestReassignStatusMeasure(t *testing.T) {
	ms := []moving{{Topic: "t", Partition: 0, Replicas: []int32{1, 2, 3}, Adding: []int32{3}, Removing: []int32{1}, Leader: 2}}
	earlier := map[string]map[int32]map[int32]int64{"t": {0: {1: 1000, 2: 1000, 3: 200}}}
	now := map[string]map[int32]map[int32]int64{"t": {0: {1: 1000, 2: 1000, 3: 600}}}
	measure(ms, now, earlier, 2*time.Second)
	m := ms[0]
	if m.Size != 1000 || m.Copied != 600 || m.Left != 400 || m.Rate != 200 || m.ETA != 2 {
		t.Fatalf("measured %+v; want size 1000, copied 600, left 400, rate 200/s, ETA 2s", m)
	}
	st := &reassignStatus{Partitions: ms}
	st.total()
	var plain, term strings.Builder
	if err := printReassignStatus(&plain, st, false); err != nil {
		t.Fatal(err)
	}
	if err := printReassignStatus(&term, st, true); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"600 B", "400 B", "200 B/s", "2s", "1 partition moving: 600 B copied, 400 B left, 200 B/s, ETA 2s"} {
		if !strings.Contains(plain.String(), want) {
			t.Errorf("status lacks %q:\n%s", want, plain.String())
		}
	}
	if strings.Contains(plain.String(), "[") || !strings.Contains(term.String(), "[############........]  60%") {
		t.Errorf("progress bar only on a terminal:\nplain:\n%s\nterminal:\n%s", plain.String(), term.String())
	}
	// No progress between the samples: no rate, no ETA.
	ms[0].Rate, ms[0].ETA = 0, -1
	measure(ms, now, now, time.Second)
	if ms[0].Rate != 0 || ms[0].ETA != -1 {
		t.Errorf("without progress: rate %v ETA %v, want 0 and unknown", ms[0].Rate, ms[0].ETA)
	}
}

// Against one real node: plan, the plan checks execute makes, status and cancel with
// nothing in progress, elect-leaders, and a decommission that must be refused.
func TestReassignCommandsOneNode(t *testing.T) {
	b := clustertest.StartOne(t)
	mustRun(t, "", "topic", "create", "-b", b, "orders", "-p", "2", "-r", "1")
	r := mustRun(t, "", "reassign", "plan", "-b", b)
	if r.stdout != "{\"version\":1,\"partitions\":[]}\n" || !strings.Contains(r.stderr, "already balanced: nothing to move") {
		t.Errorf("plan on a balanced node: stdout %q stderr %q", r.stdout, r.stderr)
	}
	dir := t.TempDir()
	write := func(name, s string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"plan", "--nodes", "1,2"}, 1, "node 2 is not a live node of the cluster (live: 1)"},
		{[]string{"plan", "--nodes", "1,x"}, 2, `"x" is not a node id`},
		{[]string{"plan", "--topics", "nope.*"}, 2, "--topics matches no topic"},
		{[]string{"plan", "--topics", "("}, 2, "bad --topics"},
		{[]string{"plan", "--drain", "1"}, 1, "--drain 1: no other node to move its replicas to"},
		{[]string{"plan", "--drain", "5"}, 1, "--drain 5: node 5 is not a live node and holds no replica"},
		{[]string{"execute"}, 2, "required flag"},
		{[]string{"execute", "--plan", filepath.Join(dir, "missing.json")}, 1, "read plan"},
		{[]string{"execute", "--plan", write("bad.json", `{"version":1,"partitions":[{"topic":"nope","partition":0,"replicas":[1]},{"topic":"orders","partition":5,"replicas":[1]},{"topic":"orders","partition":0,"replicas":[1,1]},{"topic":"orders","partition":1,"replicas":[]},{"topic":"orders","partition":1,"replicas":[7]}]}`)},
			1, `invalid plan: topic "nope" partition 0: unknown topic; topic "orders" partition 5: unknown partition (the topic has 2); topic "orders" partition 0: node 1 is listed twice in the replicas 1,1; topic "orders" partition 1: empty replica list; topic "orders" partition 1: listed twice; topic "orders" partition 1: unknown node 7 (live nodes: 1)`},
		{[]string{"execute", "--plan", write("t.json", `{"version":1,"partitions":[{"topic":"orders","partition":0,"replicas":[1]}]}`), "--throttle", "-1"}, 2, "--throttle must not be negative"},
	} {
		r := run(t, "", append([]string{"reassign", "-b", b}, tc.args...)...)
		if r.code != tc.code || !strings.Contains(r.stderr, tc.want) {
			t.Errorf("reassign %v: exit %d, stderr %q; want exit %d naming %q", tc.args, r.code, r.stderr, tc.code, tc.want)
		}
	}
	r = run(t, "", "cluster", "decommission", "-b", b, "1")
	if r.code != 1 || !strings.Contains(r.stderr, `refusing to decommission node 1: topic "orders" partition 0 has 1 replica and only 0 other live nodes`) {
		t.Errorf("decommission of the only node: exit %d, stderr %q", r.code, r.stderr)
	}

	requireAPIs(t, b, 43, 45, 46)
	r = mustRun(t, "", "reassign", "execute", "-b", b, "--plan", write("same.json", `{"version":1,"partitions":[{"topic":"orders","partition":0,"replicas":[1]}]}`))
	for _, want := range []string{"Current assignment", `{"topic":"orders","partition":0,"replicas":[1]}`, "Started orders/0: 1 -> 1"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("execute output lacks %q:\n%s", want, r.stdout)
		}
	}
	// The plan from stdin, as a pipe from `reassign plan` gives it.
	r = mustRun(t, `{"version":1,"partitions":[{"topic":"orders","partition":1,"replicas":[1],"log_dirs":["any"]}]}`,
		"reassign", "execute", "-b", b, "--plan", "-", "--additional")
	if !strings.Contains(r.stdout, "Started orders/1: 1 -> 1") {
		t.Errorf("execute --plan - :\n%s", r.stdout)
	}
	eventually(t, 10*time.Second, func() error {
		r := mustRun(t, "", "reassign", "status", "-b", b, "--interval", "0")
		return errIf(r.stdout != "No reassignment in progress.\n", "status: %q", r.stdout)
	})
	r = mustRun(t, "", "reassign", "status", "-b", b, "--watch", "--watch-count", "2", "--interval", "50ms")
	if strings.Count(r.stdout, "No reassignment in progress.") != 2 || strings.Count(r.stdout, "--- ") != 2 {
		t.Errorf("status --watch --watch-count 2:\n%s", r.stdout)
	}
	if r := run(t, "", "reassign", "status", "-b", b, "--watch-count", "2"); r.code != 2 {
		t.Errorf("--watch-count without --watch: exit %d", r.code)
	}
	var st reassignStatus
	r = mustRun(t, "", "reassign", "status", "-b", b, "--json")
	if err := json.Unmarshal([]byte(r.stdout), &st); err != nil || st.InProgress || len(st.Partitions) != 0 {
		t.Errorf("status --json: %+v, %v in %q", st, err, r.stdout)
	}
	if r := mustRun(t, "", "reassign", "cancel", "-b", b); r.stdout != "No reassignment in progress.\n" {
		t.Errorf("cancel with nothing in progress: %q", r.stdout)
	}

	if r := mustRun(t, "", "cluster", "elect-leaders", "-b", b); !strings.Contains(r.stdout, "Every partition is led by its preferred replica: nothing to elect.") &&
		!strings.Contains(r.stdout, "0 failed") {
		t.Errorf("elect-leaders of every partition:\n%s", r.stdout)
	}
	r = mustRun(t, "", "cluster", "elect-leaders", "-b", b, "--topic", "orders")
	if !strings.Contains(r.stdout, "orders  0          already preferred") || !strings.Contains(r.stdout, "0 elected, 2 already led by their preferred replica, 0 failed") {
		t.Errorf("elect-leaders --topic orders:\n%s", r.stdout)
	}
	var rows []electRow
	r = mustRun(t, "", "cluster", "elect-leaders", "-b", b, "--topic", "orders", "--partition", "1", "--json")
	if err := json.Unmarshal([]byte(r.stdout), &rows); err != nil || len(rows) != 1 || rows[0].Result != "already preferred" {
		t.Errorf("elect-leaders --partition 1 --json: %+v, %v in %q", rows, err, r.stdout)
	}
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"--topic", "nope"}, 1, `topic "nope" does not exist`},
		{[]string{"--topic", "orders", "--partition", "9"}, 1, `topic "orders" has no partition 9 (it has 2)`},
		{[]string{"--partition", "0"}, 2, "--partition needs --topic"},
	} {
		r := run(t, "", append([]string{"cluster", "elect-leaders", "-b", b}, tc.args...)...)
		if r.code != tc.code || !strings.Contains(r.stderr, tc.want) {
			t.Errorf("elect-leaders %v: exit %d, stderr %q; want exit %d naming %q", tc.args, r.code, r.stderr, tc.code, tc.want)
		}
	}
}

func balanceFromDetail(p kadm.PartitionDetail) balance.Partition {
	return balance.Partition{Topic: p.Topic, Partition: p.Partition, Replicas: p.Replicas}
}
