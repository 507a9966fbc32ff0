package server_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/runnel-io/runnel/internal/console"
	"github.com/runnel-io/runnel/internal/httpd"
	"github.com/runnel-io/runnel/internal/testutil"
)

// The console's records and write endpoints (docs/console.md), over HTTP against a
// real node: each is the Kafka operation a client would send, refused without the
// session's CSRF token, and, on a secured node, without the user's ACL for it.

// csrf is the CSRF token of cc's session (GET /api/v1/session).
func (cc *consoleClient) csrf() string {
	cc.t.Helper()
	var s httpd.SessionInfo
	cc.getJSON("/api/v1/session", &s)
	testutil.True(cc.t, s.CSRFToken != "", "GET /api/v1/session gave no csrf_token")
	return s.CSRFToken
}

// send sends a write with body as JSON and token as X-CSRF-Token ("" sends none), and
// returns its status and body.
func (cc *consoleClient) send(method, path, token string, body any) (int, string) {
	cc.t.Helper()
	var rd *bytes.Reader
	if body != nil {
		b, err := json.Marshal(body)
		testutil.NoError(cc.t, err, "encode %s %s", method, path)
		rd = bytes.NewReader(b)
	} else {
		rd = bytes.NewReader(nil)
	}
	hdr := map[string]string{"Content-Type": "application/json"}
	if token != "" {
		hdr[httpd.CSRFHeader] = token
	}
	code, _, out := cc.do(method, path, rd, hdr)
	return code, out
}

// sendOK is send, failing the test unless the answer is 200, decoded into v.
func (cc *consoleClient) sendOK(method, path, token string, body, v any) {
	cc.t.Helper()
	code, out := cc.send(method, path, token, body)
	if code != http.StatusOK {
		cc.t.Fatalf("%s %s: %d\n%s", method, path, code, out)
	}
	testutil.NoError(cc.t, json.Unmarshal([]byte(out), v), "decode %s %s", method, path)
}

func recordKeys(rs console.Records) []string {
	var out []string
	for _, r := range rs.Records {
		if r.Key == nil {
			out = append(out, "<nil>")
		} else {
			out = append(out, *r.Key)
		}
	}
	return out
}

func TestConsoleRecordsAPI(t *testing.T) {
	tn, ctx, _, _ := nodeWithTopic(t, "rec", 2)
	cc := newConsoleClient(t, "http://"+tn.server().HTTPAddr().String(), nil)
	cl, err := kgo.NewClient(kgo.SeedBrokers(tn.addr()), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	testutil.NoError(t, err, "kgo.NewClient")
	defer cl.Close()
	// Partition 0: k0..k9 with JSON values, a header and times base+i s; then a record
	// with no key and a value that is not UTF-8.
	base := time.UnixMilli(1_700_000_000_000)
	var recs []*kgo.Record
	for i := range 10 {
		recs = append(recs, &kgo.Record{Topic: "rec", Partition: 0, Key: []byte("k" + strconv.Itoa(i)),
			Value: []byte(`{"n":` + strconv.Itoa(i) + `}`), Headers: []kgo.RecordHeader{{Key: "h", Value: []byte("v")}},
			Timestamp: base.Add(time.Duration(i) * time.Second)})
	}
	binary := []byte{0xff, 0xfe, 0x00, 0x01}
	recs = append(recs, &kgo.Record{Topic: "rec", Partition: 0, Value: binary, Timestamp: base.Add(10 * time.Second)})
	testutil.NoError(t, cl.ProduceSync(ctx, recs...).FirstErr(), "produce to rec/0")

	var page console.Records
	cc.getJSON("/api/v1/topics/rec/records?partition=0&offset=0&limit=4", &page)
	testutil.Equal(t, strings.Join(recordKeys(page), ","), "k0,k1,k2,k3", "the first page's keys")
	testutil.Equal(t, page.NextOffset, int64(4), "the first page's next_offset")
	testutil.Equal(t, page.HighWatermark, int64(11), "the partition's high watermark")
	r := page.Records[1]
	testutil.Equal(t, *r.Value, `{"n":1}`, "record 1's value")
	testutil.Equal(t, r.ValueEncoding, "", "record 1's value encoding (text)")
	testutil.Equal(t, r.Timestamp, base.Add(time.Second).UnixMilli(), "record 1's timestamp")
	testutil.Equal(t, len(r.Headers), 1, "record 1's headers")
	testutil.Equal(t, r.Headers[0].Key+"="+*r.Headers[0].Value, "h=v", "record 1's header")
	testutil.Equal(t, r.Size, len("k1")+len(`{"n":1}`)+len("h")+len("v"), "record 1's size")

	cc.getJSON("/api/v1/topics/rec/records?partition=0&offset=4&limit=4", &page)
	testutil.Equal(t, strings.Join(recordKeys(page), ","), "k4,k5,k6,k7", "the second page's keys")
	// Newest: the last page.
	cc.getJSON("/api/v1/topics/rec/records?partition=0&limit=2", &page)
	testutil.Equal(t, strings.Join(recordKeys(page), ","), "k9,<nil>", "the newest page's keys")
	nk := page.Records[1]
	testutil.True(t, nk.Key == nil, "the record without a key has a null key")
	testutil.Equal(t, nk.ValueEncoding, "base64", "a value that is not UTF-8 is base64")
	got, err := base64.StdEncoding.DecodeString(*nk.Value)
	testutil.NoError(t, err, "decode the base64 value")
	testutil.True(t, bytes.Equal(got, binary), "the binary value round-trips: %x", got)
	// From a time: the first record at or after it.
	cc.getJSON("/api/v1/topics/rec/records?partition=0&limit=2&timestamp="+strconv.FormatInt(base.Add(5*time.Second).UnixMilli(), 10), &page)
	testutil.Equal(t, strings.Join(recordKeys(page), ","), "k5,k6", "the page from k5's time")
	// A filter on the key's text reads on past the records that do not match.
	cc.getJSON("/api/v1/topics/rec/records?partition=0&offset=0&limit=5&filter=k7", &page)
	testutil.Equal(t, strings.Join(recordKeys(page), ","), "k7", "the records matching k7")
	testutil.Equal(t, page.Scanned, 11, "records read for the filter")
	// Newest with a filter: the last matches, not only those among the last limit records.
	cc.getJSON("/api/v1/topics/rec/records?partition=0&limit=2&filter=%22n%22", &page)
	testutil.Equal(t, strings.Join(recordKeys(page), ","), "k8,k9", "the newest records matching \"n\"")
	code, _, body := cc.get("/api/v1/topics/rec/records?partition=7")
	testutil.Equal(t, code, http.StatusNotFound, "a partition that does not exist: %s", body)

	// Produce: refused without the CSRF token, then done with it and read back by a
	// Kafka consumer exactly.
	rec := map[string]any{"partition": 1, "key": "from-console", "value": `{"hello":"world"}`,
		"headers": []map[string]string{{"key": "source", "value": "console"}}}
	code, body = cc.send(http.MethodPost, "/api/v1/topics/rec/records", "", rec)
	testutil.Equal(t, code, http.StatusForbidden, "a produce without X-CSRF-Token: %s", body)
	testutil.True(t, strings.Contains(body, "X-CSRF-Token"), "the refusal names the header: %s", body)
	token := cc.csrf()
	code, body = cc.send(http.MethodPost, "/api/v1/topics/rec/records", "wrong", rec)
	testutil.Equal(t, code, http.StatusForbidden, "a produce with a wrong token: %s", body)
	var produced console.Produced
	cc.sendOK(http.MethodPost, "/api/v1/topics/rec/records", token, rec, &produced)
	testutil.Equal(t, produced.Partition, int32(1), "the produced record's partition")
	testutil.Equal(t, produced.Offset, int64(0), "the produced record's offset")
	cons, err := kgo.NewClient(kgo.SeedBrokers(tn.addr()),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{"rec": {1: kgo.NewOffset().AtStart()}}))
	testutil.NoError(t, err, "consumer")
	defer cons.Close()
	checkReadBack(t, ctx, cons, "rec/1", `from-console|{"hello":"world"}`, "source=console")
}

func TestConsoleTopicAndGroupActions(t *testing.T) {
	tn := startCluster(t, 1, "group.initial.rebalance.delay.ms=0")[0]
	cc := newConsoleClient(t, "http://"+tn.server().HTTPAddr().String(), nil)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	adm := adminOf(t, tn)
	token := cc.csrf()

	create := map[string]any{"name": "made", "partitions": 3, "replication_factor": 1, "configs": map[string]string{"retention.ms": "3600000"}}
	code, body := cc.send(http.MethodPost, "/api/v1/topics", "", create)
	testutil.Equal(t, code, http.StatusForbidden, "a create without X-CSRF-Token: %s", body)
	var ta console.TopicAction
	cc.sendOK(http.MethodPost, "/api/v1/topics", token, create, &ta)
	testutil.Equal(t, ta.Partitions, int32(3), "the created topic's partitions")
	td, err := adm.ListTopics(ctx, "made")
	testutil.NoError(t, err, "list made")
	testutil.Equal(t, len(td["made"].Partitions), 3, "made's partitions as Metadata says")
	rc, err := adm.DescribeTopicConfigs(ctx, "made")
	testutil.NoError(t, err, "describe made's configs")
	c, err := rc.On("made", nil)
	testutil.NoError(t, err, "made's configs")
	var retention string
	for _, kv := range c.Configs {
		if kv.Key == "retention.ms" && kv.Value != nil {
			retention = *kv.Value
		}
	}
	testutil.Equal(t, retention, "3600000", "made's retention.ms")
	code, body = cc.send(http.MethodPost, "/api/v1/topics", token, create)
	testutil.Equal(t, code, http.StatusConflict, "creating made again: %s", body)

	// A group with offsets on made: 10 records per partition, committed at 4.
	cl, err := kgo.NewClient(kgo.SeedBrokers(tn.addr()), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	testutil.NoError(t, err, "kgo.NewClient")
	defer cl.Close()
	var recs []*kgo.Record
	for p := range int32(3) {
		for range 10 {
			recs = append(recs, &kgo.Record{Topic: "made", Partition: p, Value: []byte("x")})
		}
	}
	testutil.NoError(t, cl.ProduceSync(ctx, recs...).FirstErr(), "produce to made")
	offs := kadm.Offsets{}
	for p := range int32(3) {
		offs.Add(kadm.Offset{Topic: "made", Partition: p, At: 4, LeaderEpoch: -1})
	}
	_, err = adm.CommitOffsets(ctx, "g1", offs)
	testutil.NoError(t, err, "commit g1's offsets")
	committed := func() []int64 {
		t.Helper()
		o, err := adm.FetchOffsets(ctx, "g1")
		testutil.NoError(t, err, "fetch g1's offsets")
		var out []int64
		for p := range int32(3) {
			r, _ := o.Lookup("made", p)
			out = append(out, r.At)
		}
		return out
	}

	var reset console.ResetOffsets
	cc.sendOK(http.MethodPost, "/api/v1/groups/g1/reset-offsets", token,
		map[string]any{"topic": "made", "to": "earliest", "dry_run": true}, &reset)
	testutil.Equal(t, len(reset.Partitions), 3, "the dry run's partitions")
	for _, p := range reset.Partitions {
		testutil.True(t, p.Old != nil && *p.Old == 4 && p.New == 0, "dry run on partition %d: old %v new %d", p.Partition, p.Old, p.New)
	}
	testutil.Equal(t, committed(), []int64{4, 4, 4}, "g1's offsets after the dry run")
	code, body = cc.send(http.MethodPost, "/api/v1/groups/g1/reset-offsets", "", map[string]any{"topic": "made", "to": "earliest"})
	testutil.Equal(t, code, http.StatusForbidden, "a reset without X-CSRF-Token: %s", body)
	testutil.Equal(t, committed(), []int64{4, 4, 4}, "g1's offsets after the refused reset")
	cc.sendOK(http.MethodPost, "/api/v1/groups/g1/reset-offsets", token, map[string]any{"topic": "made", "to": "latest", "partitions": []int32{1}}, &reset)
	testutil.Equal(t, committed(), []int64{4, 10, 4}, "g1's offsets after the reset of partition 1 to latest")
	cc.sendOK(http.MethodPost, "/api/v1/groups/g1/reset-offsets", token, map[string]any{"topic": "made", "to": "7"}, &reset)
	testutil.Equal(t, committed(), []int64{7, 7, 7}, "g1's offsets after the reset to 7")
	code, body = cc.send(http.MethodPost, "/api/v1/groups/g1/reset-offsets", token, map[string]any{"topic": "made", "to": "yesterday"})
	testutil.Equal(t, code, http.StatusBadRequest, "a reset to a position the CLI does not take: %s", body)

	// A group with a member: neither reset nor deleted, as Kafka's tools refuse.
	member, err := kgo.NewClient(kgo.SeedBrokers(tn.addr()), kgo.ConsumerGroup("busy"), kgo.ConsumeTopics("made"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	testutil.NoError(t, err, "busy's member")
	defer member.Close()
	testutil.NoError(t, member.PollRecords(ctx, 1).Err0(), "busy's member consumes")
	code, body = cc.send(http.MethodPost, "/api/v1/groups/busy/reset-offsets", token, map[string]any{"topic": "made", "to": "earliest"})
	testutil.Equal(t, code, http.StatusConflict, "a reset of a group with a member: %s", body)
	testutil.True(t, strings.Contains(body, "group busy has 1 active member (state Stable)"), "the refusal says why: %s", body)
	code, body = cc.send(http.MethodDelete, "/api/v1/groups/busy", token, nil)
	testutil.Equal(t, code, http.StatusConflict, "deleting a group with a member: %s", body)

	var ga console.GroupAction
	cc.sendOK(http.MethodDelete, "/api/v1/groups/g1", token, nil, &ga)
	lg, err := adm.ListGroups(ctx)
	testutil.NoError(t, err, "list groups")
	testutil.True(t, !strings.Contains(strings.Join(lg.Groups(), ","), "g1"), "g1 is deleted: %v", lg.Groups())

	code, body = cc.send(http.MethodDelete, "/api/v1/topics/made", "", nil)
	testutil.Equal(t, code, http.StatusForbidden, "a delete without X-CSRF-Token: %s", body)
	cc.sendOK(http.MethodDelete, "/api/v1/topics/made", token, nil, &ta)
	testutil.True(t, ta.Deleted, "the delete's answer")
	checkTopicGone(t, tn, "made")
	code, body = cc.send(http.MethodDelete, "/api/v1/topics/made", token, nil)
	testutil.Equal(t, code, http.StatusNotFound, "deleting made again: %s", body)
}

// On a SASL node with ACLs, alice may READ topic a and group ga (securedConsoleNode):
// every action beyond that is refused, naming the ACL she lacks, and changes nothing.
func TestConsoleActionsNeedTheirACL(t *testing.T) {
	tn := securedConsoleNode(t)
	base := "http://" + tn.server().HTTPAddr().String()
	anon := newConsoleClient(t, base, nil)
	code, body := anon.send(http.MethodPost, "/api/v1/topics/a/records", "x", map[string]any{"value": "v"})
	testutil.Equal(t, code, http.StatusUnauthorized, "a produce without a login: %s", body)
	code, _, body = anon.get("/api/v1/topics/a/records")
	testutil.Equal(t, code, http.StatusUnauthorized, "records without a login: %s", body)
	for _, page := range []string{"/topics/a/records", "/new-topic", "/groups/ga/manage"} {
		code, h, _ := anon.get(page)
		testutil.Equal(t, code, http.StatusSeeOther, "%s without a login", page)
		testutil.True(t, strings.HasPrefix(h.Get("Location"), "/login"), "%s without a login goes to %q", page, h.Get("Location"))
	}

	alice := newConsoleClient(t, base, nil)
	code, _, body = alice.login("alice", "alice-pw")
	testutil.Equal(t, code, http.StatusOK, "alice's login: %s", body)
	token := alice.csrf()
	var page console.Records
	alice.getJSON("/api/v1/topics/a/records?partition=0&offset=0", &page)
	alice.checkDenied("alice", token, []denial{
		{http.MethodGet, "/api/v1/topics/b/records?partition=0", nil, "user alice (host 127.0.0.1) lacks READ on topic b"},
		{http.MethodPost, "/api/v1/topics/a/records", map[string]any{"value": "v"}, "user alice (host 127.0.0.1) lacks WRITE on topic a"},
		{http.MethodPost, "/api/v1/topics", map[string]any{"name": "new"}, "user alice (host 127.0.0.1) lacks CREATE on topic new"},
		{http.MethodDelete, "/api/v1/topics/a", nil, "user alice (host 127.0.0.1) lacks DELETE on topic a"},
		{http.MethodPost, "/api/v1/groups/gb/reset-offsets", map[string]any{"topic": "a", "to": "earliest"}, "user alice (host 127.0.0.1) lacks READ on group gb"},
		{http.MethodPost, "/api/v1/groups/ga/reset-offsets", map[string]any{"topic": "b", "to": "earliest"}, "user alice (host 127.0.0.1) lacks READ on topic b"},
		{http.MethodDelete, "/api/v1/groups/ga", nil, "user alice (host 127.0.0.1) lacks DELETE on group ga"},
	})
	// What her ACLs allow: resetting ga on a (READ on both), changing its commit.
	var reset console.ResetOffsets
	alice.sendOK(http.MethodPost, "/api/v1/groups/ga/reset-offsets", token, map[string]any{"topic": "a", "to": "latest"}, &reset)
	testutil.Equal(t, len(reset.Partitions), 1, "alice's reset of ga on a")

	// Nothing changed by the refusals: a has no record, b and both groups exist.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	adm := adminOf(t, tn)
	ends, err := adm.ListEndOffsets(ctx, "a", "b")
	testutil.NoError(t, err, "end offsets of a and b")
	e, _ := ends.Lookup("a", 0)
	testutil.Equal(t, e.Offset, int64(0), "a's end offset after alice's refused produce")
	eb, ok := ends.Lookup("b", 0)
	testutil.True(t, ok && eb.Err == nil, "b still exists: %v", eb.Err)
	lg, err := adm.ListGroups(ctx)
	testutil.NoError(t, err, "list groups")
	groups := lg.Groups()
	slices.Sort(groups)
	testutil.Equal(t, strings.Join(groups, ","), "ga,gb", "the groups after alice's refused delete")

	// The super user may write.
	admin := newConsoleClient(t, base, nil)
	code, _, body = admin.login("admin", "admin-pw")
	testutil.Equal(t, code, http.StatusOK, "admin's login: %s", body)
	var produced console.Produced
	admin.sendOK(http.MethodPost, "/api/v1/topics/b/records", admin.csrf(), map[string]any{"value": "v"}, &produced)
	testutil.Equal(t, produced.Offset, int64(0), "admin's record on b")
}
