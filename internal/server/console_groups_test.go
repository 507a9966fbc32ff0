package server_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/runnel-io/runnel/internal/httpd"
	"github.com/runnel-io/runnel/internal/testutil"
)

// The group pages name each group's protocol as runnel group list does (classic,
// consumer, share) and show a share group's share state as runnel share describe
// does: per partition its start offset, the log end and the lag.
func TestConsoleGroupProtocols(t *testing.T) {
	tn, ctx, adm, _ := nodeWithTopic(t, "sq", 1)
	cl := testClient(t, tn.addr())
	for i := range 10 {
		testutil.NoError(t, cl.ProduceSync(ctx, &kgo.Record{Topic: "sq", Value: []byte{byte('0' + i)}}).FirstErr(), "produce to sq")
	}
	os := kadm.Offsets{}
	os.Add(kadm.Offset{Topic: "sq", Partition: 0, At: 3, LeaderEpoch: -1})
	testutil.NoError(t, adm.CommitAllOffsets(ctx, "gc", os), "commit gc")
	so := kadm.Offsets{}
	so.Add(kadm.Offset{Topic: "sq", Partition: 0, At: 4, LeaderEpoch: -1})
	res, err := adm.AlterShareGroupOffsets(ctx, "sg", so)
	testutil.NoError(t, err, "set share group sg's start offset on sq/0")
	e, _ := res.Lookup("sq", 0)
	testutil.NoError(t, e, "set share group sg's start offset on sq/0")

	cc := newConsoleClient(t, "http://"+tn.server().HTTPAddr().String(), nil)
	var groups httpd.Groups
	cc.getJSON("/api/v1/groups", &groups)
	testutil.Equal(t, len(groups.Groups), 2, "the groups (gc and sg): %+v", groups.Groups)
	gc, sg := groups.Groups[0], groups.Groups[1]
	testutil.Equal(t, gc.GroupID+" "+gc.Protocol, "gc classic", "the classic group in the list")
	testutil.Equal(t, sg.GroupID+" "+sg.Protocol, "sg share", "the share group in the list")
	testutil.True(t, sg.Error == "" && sg.Lag != nil && *sg.Lag == 6, "sg's lag in the list: %+v", sg)
	testutil.Equal(t, strings.Join(sg.Topics, ","), "sq", "sg's topics")

	var g httpd.Group
	cc.getJSON("/api/v1/groups/sg", &g)
	testutil.Equal(t, g.Protocol, "share", "sg's protocol")
	testutil.Equal(t, g.State, "Empty", "sg's state")
	testutil.Equal(t, len(g.Offsets), 1, "sg's share partitions: %+v", g.Offsets)
	o := g.Offsets[0]
	testutil.True(t, o.Topic == "sq" && o.Partition == 0 && o.StartOffset != nil && *o.StartOffset == 4 && o.Committed == nil &&
		o.End != nil && *o.End == 10 && o.Lag != nil && *o.Lag == 6, "sg's share state on sq/0: %+v", o)
	code, _, body := cc.get("/groups/sg")
	testutil.Equal(t, code, http.StatusOK, "sg's page")
	for _, want := range []string{`<div class="value" id="group-protocol">share`, "Share state and lag", "<th class=\"num\">Start offset</th>"} {
		testutil.True(t, strings.Contains(body, want), "sg's page lacks %q:\n%s", want, body)
	}
	code, _, body = cc.get("/groups")
	testutil.Equal(t, code, http.StatusOK, "the groups page")
	testutil.True(t, strings.Contains(body, "<td>classic") && strings.Contains(body, "<td>share"), "the groups page names the protocols:\n%s", body)

	g = httpd.Group{}
	cc.getJSON("/api/v1/groups/gc", &g)
	testutil.Equal(t, g.Protocol, "classic", "gc's protocol")
	testutil.True(t, len(g.Offsets) == 1 && g.Offsets[0].Committed != nil && *g.Offsets[0].Committed == 3 && g.Offsets[0].StartOffset == nil,
		"gc's offsets: %+v", g.Offsets)
}
