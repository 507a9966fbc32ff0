package server_test

import (
	"context"
	"crypto/tls"
	"crypto/x509/pkix"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/runnel-io/runnel/internal/httpd"
	"github.com/runnel-io/runnel/internal/testutil"
)

// securedConsoleCluster starts three nodes whose only Kafka listener is SASL_SSL
// (nodes reach each other over it as User:node), with ACLs on and the console served
// over HTTPS from the nodes' certificate: users admin (a super user) and alice, who
// may READ topic a and group ga. Topics a (RF 3, 20 records keyed order-N with a JSON
// value and a trace header) and b; group ga has a commit at 0 on a. It returns the
// nodes and an admin client over SASL_SSL.
func securedConsoleCluster(t *testing.T, pki *testPKI, extra ...string) ([]*testNode, *kgo.Client) {
	t.Helper()
	nodes := startCluster(t, 3, append([]string{
		"ssl.keystore.location=" + pki.NodeFile, "ssl.truststore.location=" + pki.CAFile,
		"inter.broker.sasl.username=node", "inter.broker.sasl.password=node-secret",
		// Each property is checked as it is set: the inter-broker listener is
		// named while a PLAINTEXT one still exists, then that one goes.
		"listeners=PLAINTEXT://127.0.0.1:0,SASL_SSL://127.0.0.1:0", "inter.broker.listener.name=SASL_SSL",
		"listeners=SASL_SSL://127.0.0.1:0",
		"sasl.bootstrap.users=admin:admin-pw,alice:alice-pw",
		"authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer",
		"super.users=User:node;User:admin",
		"http.tls.certificate.location=" + pki.NodeFile}, extra...)...)
	cl := testClient(t, listenerAddr(t, nodes[0].server(), "SASL_SSL"), kgo.DialTLSConfig(pki.clientTLS()),
		kgo.SASL(saslMechanism("SCRAM-SHA-512", "admin", "admin-pw")), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.RequiredAcks(kgo.AllISRAcks()), kgo.RetryTimeout(30*time.Second))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// The active controller creates the bootstrap users once it leads.
	testutil.Eventually(t, 20*time.Second, func() error { return cl.Ping(ctx) })
	adm := kadm.NewClient(cl)
	createAliceACLs(t, ctx, adm, 3)
	var recs []*kgo.Record
	for i := range 20 {
		recs = append(recs, &kgo.Record{Topic: "a", Key: []byte("order-" + strconv.Itoa(i)), Value: []byte(`{"id":` + strconv.Itoa(i) + `}`),
			Headers: []kgo.RecordHeader{{Key: "trace", Value: []byte("t-" + strconv.Itoa(i))}}})
	}
	testutil.NoError(t, cl.ProduceSync(ctx, recs...).FirstErr(), "produce to a")
	os := kadm.Offsets{}
	os.Add(kadm.Offset{Topic: "a", Partition: 0, At: 0, LeaderEpoch: -1})
	testutil.NoError(t, adm.CommitAllOffsets(ctx, "ga", os), "commit ga")
	return nodes, cl
}

// The proof of docs/security.md's "The HTTP port" on a 3-node SASL_SSL cluster with
// ACLs, its console over HTTPS: without a login every page and /api/v1/ call of every
// node is refused; alice, who may READ topic a, sees a alone, and each action her ACLs
// do not allow is refused with the ACL it lacks, on a node that leads nothing she asks
// for as on one that does. Then, in headless chromium over HTTPS, alice signs in, is
// shown a denied page naming the missing ACL and signs out; admin signs in, finds a
// record by its key, produces one (read back by a Kafka client over SASL_SSL), creates
// and deletes a topic and resets ga's offsets.
func TestConsoleSecuredCluster(t *testing.T) {
	pki := newTestPKI(t)
	nodes, cl := securedConsoleCluster(t, pki)
	ctx0, cancel0 := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel0()
	adm := kadm.NewClient(cl)
	tlsCfg := &tls.Config{RootCAs: pki.Pool}

	for _, tn := range nodes {
		base := "https://" + tn.server().HTTPAddr().String()
		anon := newConsoleClient(t, base, tlsCfg)
		for _, p := range append(consolePages, "/acls", "/users", "/quotas", "/topics/a/records", "/new-topic", "/groups/ga/manage") {
			code, h, _ := anon.get(p)
			testutil.Equal(t, code, http.StatusSeeOther, "node %d: GET %s without a login", tn.id, p)
			testutil.Equal(t, h.Get("Location"), "/login?next="+url.QueryEscape(p), "node %d: GET %s redirects to", tn.id, p)
		}
		for _, p := range append(consoleAPIs, "/api/v1/acls", "/api/v1/users", "/api/v1/quotas", "/api/v1/topics/a/records?partition=0") {
			code, _, body := anon.get(p)
			testutil.Equal(t, code, http.StatusUnauthorized, "node %d: GET %s without a login: %s", tn.id, p, body)
		}
		code, body := anon.send(http.MethodPost, "/api/v1/topics/a/records", "x", map[string]any{"value": "v"})
		testutil.Equal(t, code, http.StatusUnauthorized, "node %d: a produce without a login: %s", tn.id, body)

		alice := newConsoleClient(t, base, tlsCfg)
		code, _, body = alice.login("alice", "alice-pw")
		testutil.Equal(t, code, http.StatusOK, "node %d: alice's login: %s", tn.id, body)
		var topics httpd.Topics
		alice.getJSON("/api/v1/topics", &topics)
		testutil.Equal(t, fmt.Sprint(topicNames(topics)), "[a]", "node %d: alice's topics", tn.id)
		var groups httpd.Groups
		testutil.Eventually(t, 20*time.Second, func() error {
			groups = httpd.Groups{}
			alice.getJSON("/api/v1/groups", &groups)
			if len(groups.Groups) != 1 || groups.Groups[0].GroupID != "ga" {
				return fmt.Errorf("node %d: alice's groups %+v, want ga alone", tn.id, groups.Groups)
			}
			return nil
		})
		token := alice.csrf()
		alice.checkDenied(fmt.Sprintf("node %d: alice", tn.id), token, []denial{
			{http.MethodGet, "/api/v1/topics/b", nil, "user alice (host 127.0.0.1) lacks DESCRIBE on topic b"},
			{http.MethodGet, "/api/v1/topics/b/records?partition=0", nil, "user alice (host 127.0.0.1) lacks READ on topic b"},
			{http.MethodPost, "/api/v1/topics/a/records", map[string]any{"value": "v"}, "user alice (host 127.0.0.1) lacks WRITE on topic a"},
			{http.MethodPost, "/api/v1/topics", map[string]any{"name": "new"}, "user alice (host 127.0.0.1) lacks CREATE on topic new"},
			{http.MethodDelete, "/api/v1/topics/a", nil, "user alice (host 127.0.0.1) lacks DELETE on topic a"},
			{http.MethodDelete, "/api/v1/groups/ga", nil, "user alice (host 127.0.0.1) lacks DELETE on group ga"},
			{http.MethodGet, "/api/v1/acls", nil, "user alice (host 127.0.0.1) lacks DESCRIBE on the cluster"},
		})
	}
	ends, err := adm.ListEndOffsets(ctx0, "a")
	testutil.NoError(t, err, "end offsets of a")
	e, _ := ends.Lookup("a", 0)
	testutil.Equal(t, e.Offset, int64(20), "a's end offset after alice's refused produces")

	bin := chromiumOrSkip(t)
	// The browser uses the last node's console: its partitions are led wherever the
	// controller put them, so the node's console asks the others over SASL_SSL.
	// The test's CA is not in chromium's store.
	b := newBrowser(t, bin, "https://"+nodes[2].server().HTTPAddr().String(), 30*time.Second,
		chromedp.Flag("ignore-certificate-errors", true))

	// alice: topic b's page is denied with the ACL she lacks; she signs out.
	b.signIn("alice", "alice-pw", "/topics/b")
	b.wait(`location.pathname === "/topics/b" && document.body.innerText.includes("lacks DESCRIBE on topic b")`, "after alice's sign-in")
	page := b.eval(`document.body.innerText`)
	testutil.True(t, strings.Contains(page, "user alice (host 127.0.0.1) lacks DESCRIBE on topic b"), "the denied page:\n%s", page)
	b.do("alice signs out", chromedp.Click(chromedp.CSS(`form[action="/logout"] button`)))
	b.wait(`location.pathname === "/login"`, "the login page after signing out")

	// admin: create a topic from the topic list.
	b.signIn("admin", "admin-pw", "/topics")
	b.wait(`!!document.getElementById("topics")`, "after admin's sign-in")
	b.createTopic("made-in-browser", "2")
	b.wait(`location.pathname === "/topics/made-in-browser" && document.querySelectorAll("#partitions tbody tr").length === 2`, "the created topic's page with its 2 partitions")

	// Browse a: find order-7 by its key.
	b.open("/topics/a/records", `#browse`)
	key, value, headers := b.filterRecords("20", "order-7", "json")
	testutil.Equal(t, key, "order-7", "the found record's key")
	testutil.Equal(t, value, "{\n  \"id\": 7\n}", "the found record's value as JSON")
	testutil.Equal(t, headers, "trace=t-7", "the found record's headers")

	// Produce from the page; a Kafka client over SASL_SSL reads it back.
	testutil.Equal(t, b.produce("0", "from-browser", `{"made":"here"}`, "src=browser"), "Produced to partition 0 at offset 20.", "the produce's answer")
	cons := testClient(t, listenerAddr(t, nodes[0].server(), "SASL_SSL"), kgo.DialTLSConfig(pki.clientTLS()),
		kgo.SASL(saslMechanism("SCRAM-SHA-512", "admin", "admin-pw")),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{"a": {0: kgo.NewOffset().At(20)}}))
	checkReadBack(t, ctx0, cons, "a/0 from 20", `from-browser|{"made":"here"}`, "src=browser")

	// Reset ga on a to latest (the dry run box unticked): the commit moves to 21.
	b.open("/groups/ga/manage", `#reset`)
	b.reset("reset ga on a to latest", "a", "latest", false)
	b.wait(`document.getElementById("reset-status").textContent.startsWith("Offsets")`, "the reset's answer")
	testutil.Equal(t, committedAt(t, ctx0, adm, "ga", "a", 0), int64(21), "ga's offset on a after the reset")

	// Delete the created topic.
	// The delete went through node 3's console; adm may ask node 1 or 2, which apply
	// it from the metadata log, and answers from kgo's metadata cache (up to 5 s old).
	b.deleteTopic("made-in-browser")
	testutil.Eventually(t, 10*time.Second, func() error {
		td, err := adm.ListTopics(ctx0, "made-in-browser")
		if err == nil && td.Has("made-in-browser") {
			err = errors.New("made-in-browser is still listed")
		}
		return err
	})
}

// A node whose SSL listener requires client certificates, its console over HTTPS: a
// client that presents a certificate of the listener's CA is signed in as that
// certificate's principal (User:CN=carol, as the SSL listener names her) without a
// password, and sees what her ACLs let her see on the Kafka port; without a
// certificate the console asks for a login.
func TestConsoleCertificateLogin(t *testing.T) {
	pki := newTestPKI(t)
	tn, _ := startOwn(t, ownConfig(t, 1, "ssl.keystore.location="+pki.NodeFile, "ssl.truststore.location="+pki.CAFile,
		"listeners=PLAINTEXT://127.0.0.1:0,SSL://127.0.0.1:0", "listener.name.ssl.ssl.client.auth=required",
		"authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer", "super.users=User:ANONYMOUS",
		"http.tls.certificate.location="+pki.NodeFile))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	adm := adminOf(t, tn)
	for _, topic := range []string{"a", "b"} {
		_, err := adm.CreateTopic(ctx, 1, 1, nil, topic)
		testutil.NoError(t, err, "create %s", topic)
	}
	res, err := adm.CreateACLs(ctx, kadm.NewACLs().Allow("User:CN=carol").AllowHosts().Topics("a").
		ResourcePatternType(kadm.ACLPatternLiteral).Operations(kadm.OpRead))
	testutil.NoError(t, err, "create carol's ACL")
	for _, r := range res {
		testutil.NoError(t, r.Err, "create ACL %+v", r)
	}
	_, carol := pki.issue("carol", pkix.Name{CommonName: "carol"}, false)

	// The Kafka SSL listener with carol's certificate lists topic a alone.
	kcl := testClient(t, listenerAddr(t, tn.server(), "SSL"), kgo.DialTLSConfig(pki.clientTLS(carol)))
	td, err := kadm.NewClient(kcl).ListTopics(ctx)
	testutil.NoError(t, err, "carol lists the topics on the SSL listener")
	testutil.Equal(t, fmt.Sprint(td.Names()), "[a]", "carol's topics on the SSL listener")

	base := "https://" + tn.server().HTTPAddr().String()
	anon := newConsoleClient(t, base, &tls.Config{RootCAs: pki.Pool})
	code, _, body := anon.get("/api/v1/topics")
	testutil.Equal(t, code, http.StatusUnauthorized, "the API without a certificate or a login: %s", body)
	code, h, _ := anon.get("/topics")
	testutil.Equal(t, code, http.StatusSeeOther, "a page without a certificate or a login")
	testutil.Equal(t, h.Get("Location"), "/login?next=%2Ftopics", "a page without a certificate or a login goes to")

	cc := newConsoleClient(t, base, pki.clientTLS(carol))
	var sess httpd.SessionInfo
	cc.getJSON("/api/v1/session", &sess)
	testutil.Equal(t, sess.Principal, "User:CN=carol", "the principal of carol's certificate")
	testutil.Equal(t, sess.Mechanism, "SSL", "how carol signed in")
	testutil.True(t, sess.CSRFToken != "", "carol's session has no CSRF token: %+v", sess)
	var topics httpd.Topics
	cc.getJSON("/api/v1/topics", &topics)
	testutil.Equal(t, fmt.Sprint(topicNames(topics)), "[a]", "carol's topics on the console")
	code, _, body = cc.get("/api/v1/topics/b")
	testutil.Equal(t, code, http.StatusForbidden, "carol asks for topic b: %s", body)
	testutil.True(t, strings.Contains(body, "user CN=carol (host 127.0.0.1) lacks DESCRIBE on topic b"), "the refusal names the missing ACL: %s", body)
	code, body = cc.send(http.MethodPost, "/api/v1/topics/a/records", sess.CSRFToken, map[string]any{"value": "v"})
	testutil.Equal(t, code, http.StatusForbidden, "carol's produce to a: %s", body)
	testutil.True(t, strings.Contains(body, "lacks WRITE on topic a"), "the refusal names the missing ACL: %s", body)
	// No password is asked: the login page sends her on, a page is served.
	code, h, _ = cc.get("/login?next=%2Ftopics")
	testutil.Equal(t, code, http.StatusSeeOther, "the login page with a certificate")
	testutil.Equal(t, h.Get("Location"), "/topics", "the login page with a certificate goes to")
	code, _, body = cc.get("/topics")
	testutil.Equal(t, code, http.StatusOK, "the topics page with a certificate")
	testutil.True(t, strings.Contains(body, `href="/topics/a"`) && !strings.Contains(body, `href="/topics/b"`), "carol's topics page:\n%s", body)
	// A fresh client with the certificate needs no session first: its first call is
	// answered as carol.
	fresh := newConsoleClient(t, base, pki.clientTLS(carol))
	topics = httpd.Topics{}
	fresh.getJSON("/api/v1/topics", &topics)
	testutil.Equal(t, fmt.Sprint(topicNames(topics)), "[a]", "carol's topics on a first call")
}

// Every page of the console, httpd's own and internal/console's (the record browser,
// the forms, the node, ACL, user and quota pages, a page refused for a missing ACL),
// has the same frame: the nav bar, the node line and the signed-in user's sign-out
// form with the session's token.
func TestConsolePagesShareTheLayout(t *testing.T) {
	tn := securedConsoleNode(t)
	for _, user := range []string{"admin", "alice"} {
		cc := newConsoleClient(t, "http://"+tn.server().HTTPAddr().String(), nil)
		code, _, body := cc.login(user, user+"-pw")
		testutil.Equal(t, code, http.StatusOK, "%s's login: %s", user, body)
		token := cc.csrf()
		for _, p := range append(consolePages, "/topics/a/records", "/new-topic", "/groups/ga/manage", "/nodes/1", "/acls", "/users", "/quotas") {
			code, _, body := cc.get(p)
			testutil.True(t, code == http.StatusOK || code == http.StatusForbidden, "%s's GET %s: %d", user, p, code)
			for _, want := range []string{`<nav aria-label="console">`, `<a href="/acls"`,
				`<form method="post" action="/logout" class="logout"><span>` + user + `</span><input type="hidden" name="csrf_token" value="` + token + `">`,
				`<div class="meta">Node 1 answered · metadata offset `} {
				if code == http.StatusForbidden && strings.HasPrefix(want, `<div class="meta">`) {
					continue // a refusal reads no data
				}
				testutil.True(t, strings.Contains(body, want), "%s's %s (%d) lacks %q:\n%s", user, p, code, want, body)
			}
		}
	}
}

// A method a console path does not take is answered 405 with the methods it does take
// (httpd's read-only views and the console's writes together); an unknown API path is
// answered 404 with every endpoint, the writes included.
func TestConsoleMethodsAndEndpoints(t *testing.T) {
	tn, _ := startOwn(t, ownConfig(t, 1))
	cc := newConsoleClient(t, "http://"+tn.server().HTTPAddr().String(), nil)
	for _, c := range []struct{ method, path, allow string }{
		{http.MethodPut, "/api/v1/topics/a/records", "GET, HEAD, POST"},
		{http.MethodPatch, "/api/v1/topics/a", "GET, HEAD, DELETE"},
		{http.MethodPut, "/api/v1/acls", "GET, HEAD, POST, DELETE"},
		{http.MethodPost, "/api/v1/cluster", "GET, HEAD"},
		{http.MethodPost, "/topics", "GET, HEAD"},
		{http.MethodDelete, "/groups/g/manage", "GET, HEAD"},
	} {
		code, h, body := cc.do(c.method, c.path, nil, nil)
		testutil.Equal(t, code, http.StatusMethodNotAllowed, "%s %s: %s", c.method, c.path, body)
		testutil.Equal(t, h.Get("Allow"), c.allow, "%s %s's Allow", c.method, c.path)
		want := "method " + c.method + " not allowed on " + c.path + ": it takes " + c.allow
		testutil.True(t, strings.Contains(body, want), "%s %s says %q: %s", c.method, c.path, want, body)
	}
	for _, method := range []string{http.MethodGet, http.MethodPost} {
		code, _, body := cc.do(method, "/api/v1/nothing", nil, nil)
		testutil.Equal(t, code, http.StatusNotFound, "%s /api/v1/nothing: %s", method, body)
		for _, ep := range []string{"GET /api/v1/cluster", "POST /api/v1/login", "GET /api/v1/topics/{name}/records",
			"POST /api/v1/topics/{name}/records", "DELETE /api/v1/groups/{id}", "POST /api/v1/quotas", "GET /api/v1/charts"} {
			testutil.True(t, strings.Contains(body, ep), "%s /api/v1/nothing's list lacks %s: %s", method, ep, body)
		}
	}
	code, _, _ := cc.do(http.MethodPost, "/no-such-page", nil, nil)
	testutil.Equal(t, code, http.StatusNotFound, "POST /no-such-page")
}
