package httpd

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"
)

// These tests drive the console's handler over a fixed source: routing, methods,
// status codes, content types and escaping. internal/server's console tests run it
// against real nodes.

// oddGroup is a group id a Kafka client may well send: markup, quotes, an ampersand
// and a slash.
const oddGroup = `<script>alert("x")</script>&'/g`

type fakeSource struct{}

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

func hdr() Header {
	return Header{ServedBy: 2, GeneratedAt: time.Unix(1700000000, 0), MetadataOffset: 42}
}

func i64(v int64) *int64 { return &v }

func (fakeSource) Cluster(context.Context) (*Cluster, error) {
	return &Cluster{Header: hdr(), ClusterID: "c-1", ControllerID: 1, NodesTotal: 2, NodesDown: 1, Problems: []PartitionProblem{
		{Topic: "orders", Partition: 0, Status: StatusUnderReplicated, Leader: 1, Replicas: []int32{1, 2}, ISR: []int32{1}}},
		Nodes: []Node{{ID: 1, Host: "h1", Port: 9092, Registered: true, State: NodeUp, Controller: true},
			{ID: 2, Host: "h2", Port: 9092, Registered: true, State: NodeDown, Fenced: true, Self: true}}}, nil
}
func (f fakeSource) Nodes(ctx context.Context) (*Nodes, error) {
	c, _ := f.Cluster(ctx)
	return &Nodes{Header: c.Header, ControllerID: 1, Nodes: c.Nodes}, nil
}
func (fakeSource) Topics(context.Context) (*Topics, error) {
	return &Topics{Header: hdr(), Topics: []TopicSummary{{Name: "orders", PartitionCount: 1, ReplicationFactor: 2, UnderReplicated: 1}}}, nil
}
func (fakeSource) Topic(_ context.Context, name string) (*Topic, error) {
	if name != "orders" {
		return nil, fmt.Errorf("%w: topic %q does not exist", ErrNotFound, name)
	}
	return &Topic{Header: hdr(), TopicSummary: TopicSummary{Name: "orders", PartitionCount: 2, ReplicationFactor: 2},
		Configs: map[string]string{}, Partitions: []Partition{
			{Partition: 0, Leader: 1, Replicas: []int32{1, 2}, ISR: []int32{1}, DownReplicas: []int32{2}, Status: StatusUnderReplicated,
				Offsets: Offsets{LogStart: i64(0), HighWatermark: i64(17), LogEnd: i64(17), Source: OffsetsLocal}},
			{Partition: 1, Leader: 2, Replicas: []int32{2, 1}, ISR: []int32{2, 1}, Status: StatusOK,
				Offsets: Offsets{Source: OffsetsUnavailable, Error: "leader 2 did not answer: i/o timeout"}}},
		Groups: []TopicGroupLag{{GroupID: oddGroup, State: "Empty", Lag: i64(5)}}}, nil
}
func (fakeSource) Groups(context.Context) (*Groups, error) {
	return &Groups{Header: hdr(), Groups: []GroupSummary{{GroupID: oddGroup, State: "Empty", Coordinator: 1, Lag: i64(5), Topics: []string{"orders"}}}}, nil
}
func (fakeSource) Group(_ context.Context, id string) (*Group, error) {
	if id != oddGroup {
		return nil, fmt.Errorf("%w: consumer group %q does not exist", ErrNotFound, id)
	}
	return &Group{Header: hdr(), GroupSummary: GroupSummary{GroupID: id, State: "Empty", Lag: i64(5)}, Members: []GroupMember{},
		Offsets: []GroupOffset{{Topic: "orders", Partition: 0, Committed: i64(12), End: i64(17), Lag: i64(5)}}}, nil
}
func (fakeSource) Reassignments(context.Context) (*Reassignments, error) {
	return nil, fmt.Errorf("%w: node 2 is starting: waiting for the metadata quorum", ErrUnavailable)
}
func (fakeSource) Mirrors(context.Context) (*Mirrors, error) {
	return &Mirrors{Header: hdr(), Mirrors: []MirrorLink{{Name: "dr", Partitions: []MirrorPartition{
		{Topic: "orders", TargetTopic: "src.orders", LagRecords: 3, LagSeconds: 1.5, State: "running"}}, Groups: []MirrorCheckpoint{}}}}, nil
}

// linksEmpty makes fakeSource's Links answer a cluster without links.
var linksEmpty bool

func (fakeSource) Links(context.Context) (*Links, error) {
	if linksEmpty {
		return &Links{Header: hdr(), Links: []Link{}}, nil
	}
	return &Links{Header: hdr(), Links: []Link{{Name: "dr", Source: "src1:9092", State: "paused", MirrorTopics: 1,
		LagRecords: 7, MaxLagSeconds: 12.5, Error: "node 3: i/o timeout", Partitions: []LinkPartition{
			{Topic: "orders", Partition: 0, State: "paused", End: 10, SourceEnd: 17, LagRecords: 7, LagSeconds: 12.5, Leader: 1},
			{Topic: "orders", Partition: 1, State: "failed", End: 4, SourceEnd: -1, Error: "source topic orders was re-created", Leader: 2}}}}}, nil
}

func serve(t *testing.T, method, target string) (*http.Response, string) {
	t.Helper()
	rec := httptest.NewRecorder()
	NewConsole(ConsoleOptions{Source: fakeSource{}, Logger: quiet}).ServeHTTP(rec, httptest.NewRequest(method, target, nil))
	resp := rec.Result()
	body, _ := io.ReadAll(resp.Body)
	return resp, string(body)
}

func TestConsolePagesAndAPI(t *testing.T) {
	odd := url.PathEscape(oddGroup)
	for _, path := range []string{"/", "/nodes", "/topics", "/topics/orders", "/groups", "/groups/" + odd, "/mirrors", "/links"} {
		resp, body := serve(t, http.MethodGet, path)
		if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/html; charset=utf-8" {
			t.Fatalf("GET %s: %d %s\n%s", path, resp.StatusCode, resp.Header.Get("Content-Type"), body)
		}
		for _, nav := range navEntries {
			if !strings.Contains(body, fmt.Sprintf(`href="%s"`, nav.Href)) {
				t.Errorf("GET %s: no nav link to %s", path, nav.Href)
			}
		}
		api := "/api/v1" + path
		if path == "/" {
			api = "/api/v1/cluster"
		}
		if !strings.Contains(body, fmt.Sprintf(`href="%s"`, strings.ReplaceAll(api, "&", "&amp;"))) {
			t.Errorf("GET %s: no link to its JSON %s", path, api)
		}
		resp, body = serve(t, http.MethodGet, api)
		var v map[string]any
		if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "application/json" || json.Unmarshal([]byte(body), &v) != nil {
			t.Fatalf("GET %s: %d %s\n%s", api, resp.StatusCode, resp.Header.Get("Content-Type"), body)
		}
		if v["served_by"] != float64(2) || v["metadata_offset"] != float64(42) {
			t.Errorf("GET %s: header fields missing: %s", api, body)
		}
	}
}

// A group id is anything a client sent: every page shows it escaped, links to it
// path-escaped, and the JSON carries it exactly.
func TestConsoleEscapesNames(t *testing.T) {
	for _, path := range []string{"/groups", "/topics/orders", "/groups/" + url.PathEscape(oddGroup)} {
		_, body := serve(t, http.MethodGet, path)
		if strings.Contains(body, "<script>alert") || strings.Contains(body, `"x")`) {
			t.Fatalf("GET %s: the group id is not escaped:\n%s", path, body)
		}
		if !strings.Contains(body, "&lt;script&gt;alert(&#34;x&#34;)&lt;/script&gt;&amp;&#39;/g") {
			t.Fatalf("GET %s: the escaped group id is missing:\n%s", path, body)
		}
	}
	_, body := serve(t, http.MethodGet, "/groups")
	if want := `href="/groups/` + url.PathEscape(oddGroup); !strings.Contains(body, strings.ReplaceAll(want, "&", "&amp;")) &&
		!strings.Contains(body, want) {
		t.Fatalf("/groups: no path-escaped link %s:\n%s", want, body)
	}
	_, body = serve(t, http.MethodGet, "/api/v1/groups/"+url.PathEscape(oddGroup))
	var g Group
	if err := json.Unmarshal([]byte(body), &g); err != nil || g.GroupID != oddGroup || *g.Lag != 5 {
		t.Fatalf("/api/v1/groups/{odd}: %v %+v\n%s", err, g, body)
	}
}

// Unknown offsets are a dash with the reason, never a number.
func TestConsoleUnknownOffsets(t *testing.T) {
	_, body := serve(t, http.MethodGet, "/topics/orders")
	for _, want := range []string{"leader 2 did not answer: i/o timeout", ">unavailable<", `title="node 2 is down"`} {
		if !strings.Contains(body, want) {
			t.Errorf("/topics/orders lacks %q", want)
		}
	}
	_, body = serve(t, http.MethodGet, "/api/v1/topics/orders")
	var tp Topic
	if err := json.Unmarshal([]byte(body), &tp); err != nil {
		t.Fatal(err)
	}
	if o := tp.Partitions[1].Offsets; o.HighWatermark != nil || o.LogStart != nil || o.Source != OffsetsUnavailable || o.Error == "" {
		t.Fatalf("partition 1's offsets should be null with an error: %+v", o)
	}
	if !strings.Contains(body, `"high_watermark": null`) {
		t.Fatalf("unknown offsets must be null in the JSON:\n%s", body)
	}
}

func TestConsoleReadOnly(t *testing.T) {
	for _, m := range []string{http.MethodPost, http.MethodPut, http.MethodDelete, http.MethodPatch} {
		resp, body := serve(t, m, "/api/v1/topics/orders")
		var e APIError
		if resp.StatusCode != 405 || resp.Header.Get("Allow") != "GET, HEAD" || json.Unmarshal([]byte(body), &e) != nil || e.Code != 405 {
			t.Fatalf("%s /api/v1/topics/orders: %d Allow=%q %s", m, resp.StatusCode, resp.Header.Get("Allow"), body)
		}
		if resp, _ := serve(t, m, "/topics"); resp.StatusCode != 405 {
			t.Fatalf("%s /topics: %d, want 405", m, resp.StatusCode)
		}
	}
	srv := httptest.NewServer(NewConsole(ConsoleOptions{Source: fakeSource{}}))
	defer srv.Close()
	resp, err := http.Head(srv.URL + "/api/v1/cluster")
	if err != nil || resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "application/json" {
		t.Fatalf("HEAD /api/v1/cluster: %v %+v", err, resp)
	}
	resp.Body.Close()
}

func TestConsoleErrors(t *testing.T) {
	cases := []struct {
		path string
		code int
		msg  string
	}{
		{"/api/v1/topics/nope", 404, `topic "nope" does not exist`},
		{"/api/v1/groups/nope", 404, `consumer group "nope" does not exist`},
		{"/api/v1/reassignments", 503, "node 2 is starting"},
		{"/api/v1/nothing", 404, "no API endpoint /api/v1/nothing"},
	}
	for _, c := range cases {
		resp, body := serve(t, http.MethodGet, c.path)
		var e APIError
		if resp.StatusCode != c.code || resp.Header.Get("Content-Type") != "application/json" || json.Unmarshal([]byte(body), &e) != nil ||
			e.Code != c.code || !strings.Contains(e.Message, c.msg) {
			t.Errorf("GET %s: %d %s, want %d with %q", c.path, resp.StatusCode, body, c.code, c.msg)
		}
	}
	for _, c := range []struct {
		path string
		code int
		msg  string
	}{{"/topics/nope", 404, "does not exist"}, {"/reassignments", 503, "starting"}, {"/no/such/page", 404, "There is no page"}} {
		resp, body := serve(t, http.MethodGet, c.path)
		if resp.StatusCode != c.code || !strings.Contains(body, c.msg) || !strings.Contains(body, `href="/topics"`) {
			t.Errorf("GET %s: %d, want %d with %q and the nav bar:\n%s", c.path, resp.StatusCode, c.code, c.msg, body)
		}
	}
}

func TestConsoleAssets(t *testing.T) {
	resp, body := serve(t, http.MethodGet, "/assets/console.css")
	if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/css") || !strings.Contains(body, "table.data") {
		t.Fatalf("console.css: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	if resp, _ := serve(t, http.MethodGet, "/assets/console.js"); resp.StatusCode != 200 {
		t.Fatalf("console.js: %d", resp.StatusCode)
	}
	// The templates are embedded too, but are not served.
	if resp, _ := serve(t, http.MethodGet, "/assets/templates/layout.html"); resp.StatusCode != 404 {
		t.Fatalf("a template is served: %d", resp.StatusCode)
	}
}

// The links page shows every link with its state and, per partition, the lag in
// records and seconds, the state and the error; the JSON carries
// `runnel link status --json`'s field names.
func TestConsoleLinks(t *testing.T) {
	resp, body := serve(t, http.MethodGet, "/links")
	if resp.StatusCode != 200 {
		t.Fatalf("GET /links: %d\n%s", resp.StatusCode, body)
	}
	for _, want := range []string{`id="link-dr"`, "<h2>dr</h2>", "src1:9092", "<strong>paused</strong>", "1 mirror topic.",
		"<strong>7</strong> records", "<strong>12.5 s</strong>", "node 3: i/o timeout",
		`<td class="num">17</td><td class="num">10</td>`, `<td class="num lag behind">7</td><td class="num">12.5 s</td>`,
		`<tr class="row-under_replicated">`, `<tr class="row-bad">`, "<td>failed</td>", "source topic orders was re-created",
		`title="no fetch from the source yet"`, `href="/topics/orders"`, `href="/api/v1/links"`, `href="/links" class="active"`} {
		if !strings.Contains(body, want) {
			t.Errorf("/links lacks %q", want)
		}
	}
	_, body = serve(t, http.MethodGet, "/api/v1/links")
	var raw struct {
		Links []map[string]any `json:"links"`
	}
	if err := json.Unmarshal([]byte(body), &raw); err != nil || len(raw.Links) != 1 {
		t.Fatalf("/api/v1/links: %v\n%s", err, body)
	}
	for _, f := range []string{"name", "source", "state", "mirror_topics", "lag_records", "max_lag_seconds", "partitions", "error"} {
		if _, ok := raw.Links[0][f]; !ok {
			t.Errorf("/api/v1/links: link lacks %q:\n%s", f, body)
		}
	}
	ps, _ := raw.Links[0]["partitions"].([]any)
	if len(ps) != 2 {
		t.Fatalf("/api/v1/links: want 2 partitions:\n%s", body)
	}
	p := ps[0].(map[string]any)
	for f, want := range map[string]any{"topic": "orders", "partition": 0.0, "state": "paused", "end": 10.0, "source_end": 17.0,
		"lag_records": 7.0, "lag_seconds": 12.5, "error": "", "leader": 1.0} {
		if p[f] != want {
			t.Errorf("/api/v1/links: partition 0's %q is %v, want %v", f, p[f], want)
		}
	}

	linksEmpty = true
	defer func() { linksEmpty = false }()
	_, body = serve(t, http.MethodGet, "/links")
	if !strings.Contains(body, "No cluster links: <span class=\"mono\">runnel link create") {
		t.Errorf("/links without links lacks the empty state:\n%s", body)
	}
	_, body = serve(t, http.MethodGet, "/api/v1/links")
	if !strings.Contains(body, `"links": []`) {
		t.Errorf("/api/v1/links without links must be an empty list:\n%s", body)
	}
}
