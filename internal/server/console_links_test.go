package server_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/runnel-io/runnel/internal/httpd"
	"github.com/runnel-io/runnel/internal/testutil"
)

// The console's Links page on a real destination node: empty before any link, then
// the link with its mirror partitions as `runnel link status --json` reports them,
// paused with the lag in records the source's new records make.
func TestConsoleLinks(t *testing.T) {
	src, dst := startCluster(t, 1)[0], startCluster(t, 1)[0]
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	var ls httpd.Links
	consoleJSON(t, dst, "/api/v1/links", &ls)
	if ls.Links == nil || len(ls.Links) != 0 {
		t.Fatalf("/api/v1/links before any link: %+v, want an empty list", ls.Links)
	}
	if code, _, body := consoleGet(t, dst, "/links"); code != http.StatusOK || !strings.Contains(body, "No cluster links") {
		t.Fatalf("/links before any link: %d\n%s", code, body)
	}

	_, err := adminOf(t, src).CreateTopic(ctx, 2, 1, nil, "orders")
	testutil.NoError(t, err, "create orders on the source")
	cl, err := kgo.NewClient(kgo.SeedBrokers(src.addr()), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	testutil.NoError(t, err, "source client")
	defer cl.Close()
	produce := func(n int) {
		for i := range n {
			err := cl.ProduceSync(ctx, &kgo.Record{Topic: "orders", Partition: 0, Value: fmt.Appendf(nil, "r%d", i)}).FirstErr()
			testutil.NoError(t, err, "produce to orders-0 on the source")
		}
	}
	produce(3)
	if code, out, errs := runCLI("link", "create", "dr", "--source", src.addr(), "--topics", "orders", "-b", dst.addr()); code != 0 {
		t.Fatalf("link create: exit %d: %s%s", code, errs, out)
	}
	testutil.Eventually(t, 20*time.Second, func() error {
		consoleJSON(t, dst, "/api/v1/links", &ls)
		if len(ls.Links) != 1 {
			return fmt.Errorf("links %+v, want dr", ls.Links)
		}
		l := ls.Links[0]
		if l.Name != "dr" || l.Source != src.addr() || l.State != "active" || l.MirrorTopics != 1 || l.Error != "" || len(l.Partitions) != 2 {
			return fmt.Errorf("link %+v, want dr from %s, active, 1 mirror topic, 2 partitions", l, src.addr())
		}
		if p := l.Partitions[0]; p.Topic != "orders" || p.Partition != 0 || p.State != "mirroring" || p.End != 3 || p.SourceEnd != 3 ||
			p.LagRecords != 0 || p.Leader != dst.id {
			return fmt.Errorf("orders-0 %+v, want mirroring, caught up at 3, led by node %d", p, dst.id)
		}
		return nil
	})

	// Paused, the link copies nothing but follows the source's end: the lag shows,
	// the same on the page, in the JSON and in `runnel link status --json`.
	if code, out, errs := runCLI("link", "pause", "dr", "-b", dst.addr()); code != 0 {
		t.Fatalf("link pause: exit %d: %s%s", code, errs, out)
	}
	produce(4)
	testutil.Eventually(t, 20*time.Second, func() error {
		consoleJSON(t, dst, "/api/v1/links", &ls)
		l := ls.Links[0]
		if p := l.Partitions[0]; l.State != "paused" || p.State != "paused" || p.End != 3 || p.SourceEnd != 7 || p.LagRecords != 4 ||
			p.LagSeconds <= 0 || l.LagRecords != 4 || l.MaxLagSeconds < p.LagSeconds {
			return fmt.Errorf("paused link %+v, want orders-0 paused at 3 of 7: 4 records and some seconds behind", l)
		}
		return nil
	})
	code, out, errs := runCLI("link", "status", "dr", "--json", "-b", dst.addr())
	if code != 0 {
		t.Fatalf("link status: exit %d: %s%s", code, errs, out)
	}
	var st struct {
		Partitions []httpd.LinkPartition `json:"partitions"`
	}
	testutil.NoError(t, json.Unmarshal([]byte(out), &st), "decode link status --json")
	consoleJSON(t, dst, "/api/v1/links", &ls)
	if len(st.Partitions) != len(ls.Links[0].Partitions) {
		t.Fatalf("link status %+v, console %+v", st.Partitions, ls.Links[0].Partitions)
	}
	for i, want := range st.Partitions {
		got := ls.Links[0].Partitions[i]
		if got.Topic != want.Topic || got.Partition != want.Partition || got.State != want.State || got.End != want.End ||
			got.SourceEnd != want.SourceEnd || got.LagRecords != want.LagRecords || got.Error != want.Error {
			t.Errorf("console partition %+v, link status --json %+v", got, want)
		}
	}
	_, _, body := consoleGet(t, dst, "/links")
	for _, want := range []string{`id="link-dr"`, "<strong>paused</strong>", `<td class="num lag behind">4</td>`, `<td class="num">7</td><td class="num">3</td>`} {
		if !strings.Contains(body, want) {
			t.Errorf("/links lacks %q:\n%s", want, body)
		}
	}
}

// The links need DESCRIBE on the cluster, as `runnel link status`: alice, who may
// only read topic a, is refused naming the ACL; admin, a super user, sees them.
func TestConsoleLinksNeedDescribeOnCluster(t *testing.T) {
	tn := securedConsoleNode(t)
	base := "http://" + tn.server().HTTPAddr().String()
	alice := newConsoleClient(t, base, nil)
	code, _, body := alice.login("alice", "alice-pw")
	testutil.Equal(t, code, http.StatusOK, "alice's login: %s", body)
	for _, path := range []string{"/api/v1/links", "/links"} {
		code, _, body = alice.get(path)
		testutil.Equal(t, code, http.StatusForbidden, "alice asks for %s: %s", path, body)
		testutil.True(t, strings.Contains(body, "lacks DESCRIBE on the cluster"), "%s: the refusal names the cluster: %s", path, body)
	}
	admin := newConsoleClient(t, base, nil)
	code, _, body = admin.login("admin", "admin-pw")
	testutil.Equal(t, code, http.StatusOK, "admin's login: %s", body)
	var ls httpd.Links
	admin.getJSON("/api/v1/links", &ls)
	testutil.True(t, ls.Links != nil && len(ls.Links) == 0, "admin's links on a node without links: %+v", ls.Links)
}
