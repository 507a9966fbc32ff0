package server_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/runnel-io/runnel/internal/console"
	"github.com/runnel-io/runnel/internal/httpd"
	"github.com/runnel-io/runnel/internal/testutil"
)

// The console against real nodes: a 3-node in-process cluster with a topic, records,
// a consumer group with lag (and one whose id is markup), then one node killed. Every
// live node must show the same cluster: the dead node down, the topic's partitions
// under-replicated with the dead replica marked, the leaders' offsets and the group's
// lag exact, whichever node leads or coordinates.

// consoleOddGroup is a group id no page may show unescaped.
const consoleOddGroup = `<img src=x onerror=alert(1)>&"/odd`

// consoleGet fetches path from node tn's HTTP listener.
func consoleGet(t *testing.T, tn *testNode, path string) (int, http.Header, string) {
	t.Helper()
	c := http.Client{Timeout: 10 * time.Second}
	req, err := http.NewRequest(http.MethodGet, "http://"+tn.server().HTTPAddr().String()+path, nil)
	testutil.NoError(t, err, "GET %s", path)
	if ck := consoleSessions[tn]; ck != nil {
		req.AddCookie(ck)
	}
	resp, err := c.Do(req)
	testutil.NoError(t, err, "GET %s from node %d", path, tn.id)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	testutil.NoError(t, err, "read GET %s from node %d", path, tn.id)
	return resp.StatusCode, resp.Header, string(body)
}

// consoleSessions are the console sessions consoleLogin opened, by node: consoleGet
// sends them (a node with a SASL listener requires a login, docs/security.md).
var consoleSessions = map[*testNode]*http.Cookie{}

// consoleLogin signs in to tn's console as user (a SASL user of the cluster) and keeps
// the session for consoleGet.
func consoleLogin(t *testing.T, tn *testNode, user, password string) {
	t.Helper()
	c := http.Client{Timeout: 10 * time.Second}
	resp, err := c.PostForm("http://"+tn.server().HTTPAddr().String()+"/api/v1/login", url.Values{"username": {user}, "password": {password}})
	testutil.NoError(t, err, "login to node %d's console", tn.id)
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("login to node %d's console as %s: %d %s", tn.id, user, resp.StatusCode, body)
	}
	for _, ck := range resp.Cookies() {
		if ck.Name == "runnel_session" {
			consoleSessions[tn] = ck
			t.Cleanup(func() { delete(consoleSessions, tn) })
			return
		}
	}
	t.Fatalf("login to node %d's console set no session cookie", tn.id)
}

// consoleJSON fetches an /api/v1 answer of node tn into v; it fails the test unless
// the answer is 200 application/json.
func consoleJSON(t *testing.T, tn *testNode, path string, v any) {
	t.Helper()
	code, h, body := consoleGet(t, tn, path)
	if code != http.StatusOK || h.Get("Content-Type") != "application/json" {
		t.Fatalf("GET %s from node %d: %d %s\n%s", path, tn.id, code, h.Get("Content-Type"), body)
	}
	testutil.NoError(t, json.Unmarshal([]byte(body), v), "decode GET %s from node %d", path, tn.id)
}

// consoleRecords are the records produced to each partition of "orders", and
// consoleCommits what the group "console-g" commits: its lag is 10-4 + 5-5 + 0 = 6.
var (
	consoleRecords = []int{10, 5, 0}
	consoleCommits = map[int32]int64{0: 4, 1: 5}
)

const consoleLag = 6

// seedConsoleData creates "orders" (3 partitions, rf replicas), produces
// consoleRecords and commits consoleCommits for "console-g" and consoleOddGroup.
func seedConsoleData(t *testing.T, tn *testNode, rf int16) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	adm := adminOf(t, tn)
	_, err := adm.CreateTopic(ctx, int32(len(consoleRecords)), rf, nil, "orders")
	testutil.NoError(t, err, "create orders")
	cl, err := kgo.NewClient(kgo.SeedBrokers(tn.addr()), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	testutil.NoError(t, err, "producer")
	defer cl.Close()
	for p, n := range consoleRecords {
		for i := range n {
			r := &kgo.Record{Topic: "orders", Partition: int32(p), Value: fmt.Appendf(nil, "r%d", i)}
			testutil.NoError(t, cl.ProduceSync(ctx, r).FirstErr(), "produce to orders/%d", p)
		}
	}
	for _, g := range []string{"console-g", consoleOddGroup} {
		os := make(kadm.Offsets)
		for p, at := range consoleCommits {
			os.Add(kadm.Offset{Topic: "orders", Partition: p, At: at, LeaderEpoch: -1})
		}
		err := adm.CommitAllOffsets(ctx, g, os)
		testutil.NoError(t, err, "commit offsets of group %q", g)
	}
}

func TestConsoleCluster(t *testing.T) {
	nodes := startCluster(t, 3)
	seedConsoleData(t, nodes[0], 3)

	// Healthy: every partition ok, the offsets and the lag exact, on any node; any
	// node reads any partition's records, from whichever node leads it.
	for _, tn := range nodes {
		checkConsoleTopic(t, tn, nil)
		for p, n := range consoleRecords {
			var page console.Records
			consoleJSON(t, tn, fmt.Sprintf("/api/v1/topics/orders/records?partition=%d&offset=0&limit=100", p), &page)
			if len(page.Records) != n || n > 0 && *page.Records[n-1].Value != fmt.Sprintf("r%d", n-1) {
				t.Fatalf("node %d: the records of orders/%d: %+v", tn.id, p, page)
			}
		}
	}
	dead := nodes[2]
	dead.kill()
	live := nodes[:2]
	// The controller fences the dead node after broker.session.timeout.ms (1.5 s)
	// and takes it out of every ISR; each live node shows it once it applied that.
	for _, tn := range live {
		testutil.Eventually(t, 20*time.Second, func() error {
			var c httpd.Cluster
			consoleJSON(t, tn, "/api/v1/cluster", &c)
			if c.NodesDown != 1 || c.UnderReplicated < len(consoleRecords) {
				return fmt.Errorf("node %d: %d nodes down, %d under-replicated partitions", tn.id, c.NodesDown, c.UnderReplicated)
			}
			return nil
		})
	}
	var views []httpd.Cluster
	for _, tn := range live {
		var c httpd.Cluster
		consoleJSON(t, tn, "/api/v1/cluster", &c)
		views = append(views, c)
		checkConsoleNodes(t, tn, c.Nodes, dead.id)
		checkConsoleTopic(t, tn, []int32{dead.id})
		checkConsoleGroups(t, tn)
		checkConsolePages(t, tn)
	}
	// A plain node shows the cluster the controller does.
	a, b := views[0], views[1]
	if a.ClusterID != b.ClusterID || a.ControllerID != b.ControllerID || a.NodesDown != b.NodesDown || a.Partitions != b.Partitions {
		t.Fatalf("nodes %d and %d disagree: %+v\n%+v", a.ServedBy, b.ServedBy, a, b)
	}
	if slices.IndexFunc(a.Problems, func(p httpd.PartitionProblem) bool { return p.Topic == "orders" }) < 0 {
		t.Fatalf("the overview lists no problem partition of orders: %+v", a.Problems)
	}
}

// checkConsoleNodes: the dead node is down, the others up, the controller marked.
func checkConsoleNodes(t *testing.T, tn *testNode, nodes []httpd.Node, dead int32) {
	t.Helper()
	if len(nodes) != 3 {
		t.Fatalf("node %d lists %d nodes: %+v", tn.id, len(nodes), nodes)
	}
	controllers := 0
	for _, n := range nodes {
		want := httpd.NodeUp
		if n.ID == dead {
			want = httpd.NodeDown
		}
		if n.State != want || n.Self != (n.ID == tn.id) {
			t.Errorf("node %d shows node %d as %s (self %v), want %s", tn.id, n.ID, n.State, n.Self, want)
		}
		if n.Controller {
			controllers++
		}
	}
	if controllers != 1 {
		t.Errorf("node %d shows %d active controllers: %+v", tn.id, controllers, nodes)
	}
}

// checkConsoleTopic: orders' partitions with their leader's exact offsets, every
// partition under-replicated with the dead replicas marked (or ok when none is), and
// the groups' lag on the topic.
func checkConsoleTopic(t *testing.T, tn *testNode, dead []int32) {
	t.Helper()
	var tp httpd.Topic
	consoleJSON(t, tn, "/api/v1/topics/orders", &tp)
	if len(tp.Partitions) != len(consoleRecords) || tp.ReplicationFactor != 3 {
		t.Fatalf("node %d: orders has %d partitions, RF %d", tn.id, len(tp.Partitions), tp.ReplicationFactor)
	}
	sources := map[string]int{}
	for i, p := range tp.Partitions {
		o := p.Offsets
		sources[o.Source]++
		if o.HighWatermark == nil || *o.HighWatermark != int64(consoleRecords[i]) || o.LogStart == nil || *o.LogStart != 0 {
			t.Errorf("node %d: orders/%d offsets %s, want log start 0, high watermark %d", tn.id, i, showOffsets(o), consoleRecords[i])
		}
		if (o.Source == httpd.OffsetsLocal) != (p.Leader == tn.id) || (o.LogEnd != nil) != (o.Source == httpd.OffsetsLocal) {
			t.Errorf("node %d: orders/%d led by %d has offsets from %q (log end %v)", tn.id, i, p.Leader, o.Source, o.LogEnd)
		}
		want := httpd.StatusOK
		if len(dead) > 0 {
			want = httpd.StatusUnderReplicated
		}
		if p.Status != want || !slices.Equal(p.DownReplicas, dead) || slices.ContainsFunc(dead, func(d int32) bool { return slices.Contains(p.ISR, d) }) {
			t.Errorf("node %d: orders/%d is %s with down replicas %v and ISR %v, want %s with %v down", tn.id, i, p.Status, p.DownReplicas, p.ISR, want, dead)
		}
	}
	if sources[httpd.OffsetsLocal]+sources[httpd.OffsetsListOffsets] != len(consoleRecords) {
		t.Errorf("node %d: offsets from %v", tn.id, sources)
	}
	if tp.GroupsError != "" || len(tp.Groups) != 2 {
		t.Fatalf("node %d: orders' groups %+v (error %q)", tn.id, tp.Groups, tp.GroupsError)
	}
	for _, g := range tp.Groups {
		if g.Lag == nil || *g.Lag != consoleLag {
			t.Errorf("node %d: group %q's lag on orders is %v, want %d (%s)", tn.id, g.GroupID, g.Lag, consoleLag, g.Error)
		}
	}
}

// showOffsets prints offsets with their values (or null), not their pointers.
func showOffsets(o httpd.Offsets) string {
	b, _ := json.Marshal(o)
	return string(b)
}

// checkConsoleGroups: both groups listed with their lag, and one group's offsets
// partition by partition, the odd id reached through its escaped path.
func checkConsoleGroups(t *testing.T, tn *testNode) {
	t.Helper()
	var gs httpd.Groups
	consoleJSON(t, tn, "/api/v1/groups", &gs)
	var ids []string
	for _, g := range gs.Groups {
		if g.GroupID == "console-g" || g.GroupID == consoleOddGroup {
			ids = append(ids, g.GroupID)
			if g.Lag == nil || *g.Lag != consoleLag || g.Error != "" {
				t.Errorf("node %d: group %q lag %v (%s), want %d", tn.id, g.GroupID, g.Lag, g.Error, consoleLag)
			}
		}
	}
	if len(ids) != 2 || gs.Error != "" {
		t.Fatalf("node %d lists groups %+v (error %q)", tn.id, gs.Groups, gs.Error)
	}
	var g httpd.Group
	consoleJSON(t, tn, "/api/v1/groups/"+url.PathEscape(consoleOddGroup), &g)
	if g.GroupID != consoleOddGroup || len(g.Offsets) != len(consoleRecords) {
		t.Fatalf("node %d: group %q: %+v", tn.id, consoleOddGroup, g)
	}
	for _, o := range g.Offsets {
		want, committed := consoleCommits[o.Partition]
		if committed != (o.Committed != nil) || committed && *o.Committed != want || o.End == nil || *o.End != int64(consoleRecords[o.Partition]) {
			t.Errorf("node %d: group offsets of orders/%d: %+v", tn.id, o.Partition, o)
		}
	}
	if code, _, body := consoleGet(t, tn, "/api/v1/groups/no-such-group"); code != http.StatusNotFound || !strings.Contains(body, `"code": 404`) {
		t.Errorf("node %d: an unknown group answers %d %s", tn.id, code, body)
	}
}

// checkConsolePages: every page renders on a real node, the odd group id escaped.
func checkConsolePages(t *testing.T, tn *testNode) {
	t.Helper()
	for _, path := range []string{"/", "/nodes", "/topics", "/topics/orders", "/groups", "/groups/" + url.PathEscape(consoleOddGroup), "/reassignments", "/mirrors"} {
		code, h, body := consoleGet(t, tn, path)
		if code != http.StatusOK || !strings.HasPrefix(h.Get("Content-Type"), "text/html") {
			t.Fatalf("GET %s from node %d: %d\n%s", path, tn.id, code, body)
		}
		if strings.Contains(body, "<img src=x") {
			t.Fatalf("GET %s from node %d shows the group id unescaped", path, tn.id)
		}
	}
	_, _, body := consoleGet(t, tn, "/")
	if !strings.Contains(body, "fenced by the controller") || !strings.Contains(body, "under-replicated") {
		t.Errorf("node %d's overview does not show the dead node and the under-replicated partitions:\n%s", tn.id, body)
	}
	if code, _, _ := consoleGet(t, tn, "/topics/no-such-topic"); code != http.StatusNotFound {
		t.Errorf("node %d: an unknown topic's page answers %d", tn.id, code)
	}
}
