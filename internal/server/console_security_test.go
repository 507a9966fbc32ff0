package server_test

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/runnel-io/runnel/internal/httpd"
	"github.com/runnel-io/runnel/internal/testutil"
)

// The HTTP port of a secured node (docs/security.md, "The HTTP port"): with a
// SASL_PLAINTEXT listener every console page and /api/v1/ call needs a login with a
// SASL user of the cluster, and what the user sees follows its Kafka ACLs.

// consoleClient is an HTTP client of base with a cookie jar, which does not follow
// redirects (so a test sees them).
type consoleClient struct {
	t    *testing.T
	base string
	c    *http.Client
}

func newConsoleClient(t *testing.T, base string, tlsCfg *tls.Config) *consoleClient {
	jar, err := cookiejar.New(nil)
	testutil.NoError(t, err, "cookiejar")
	return &consoleClient{t: t, base: base, c: &http.Client{Jar: jar, Timeout: 10 * time.Second,
		Transport:     &http.Transport{TLSClientConfig: tlsCfg},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
}

// do sends one request and returns its status, headers and body.
func (cc *consoleClient) do(method, path string, body io.Reader, hdr map[string]string) (int, http.Header, string) {
	cc.t.Helper()
	req, err := http.NewRequest(method, cc.base+path, body)
	testutil.NoError(cc.t, err, "%s %s", method, path)
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := cc.c.Do(req)
	testutil.NoError(cc.t, err, "%s %s", method, path)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	testutil.NoError(cc.t, err, "read %s %s", method, path)
	return resp.StatusCode, resp.Header, string(b)
}

func (cc *consoleClient) get(path string) (int, http.Header, string) {
	cc.t.Helper()
	return cc.do(http.MethodGet, path, nil, nil)
}

// getJSON decodes a 200 JSON answer of path into v.
func (cc *consoleClient) getJSON(path string, v any) {
	cc.t.Helper()
	code, _, body := cc.get(path)
	if code != http.StatusOK {
		cc.t.Fatalf("GET %s: %d\n%s", path, code, body)
	}
	testutil.NoError(cc.t, json.Unmarshal([]byte(body), v), "decode GET %s", path)
}

// login posts a JSON login and returns its status, headers and body.
func (cc *consoleClient) login(user, password string) (int, http.Header, string) {
	cc.t.Helper()
	b, _ := json.Marshal(map[string]string{"username": user, "password": password})
	return cc.do(http.MethodPost, "/api/v1/login", strings.NewReader(string(b)), map[string]string{"Content-Type": "application/json"})
}

// consolePages are every console page and its API twin (the group and topic pages
// with ids that exist).
var consolePages = []string{"/", "/nodes", "/topics", "/topics/a", "/groups", "/groups/ga", "/reassignments", "/mirrors", "/links"}
var consoleAPIs = []string{"/api/v1/cluster", "/api/v1/nodes", "/api/v1/topics", "/api/v1/topics/a", "/api/v1/groups",
	"/api/v1/groups/ga", "/api/v1/reassignments", "/api/v1/mirrors", "/api/v1/links", "/api/v1/session"}

// securedConsoleNode starts a node with a SASL_PLAINTEXT listener and ACLs on: users
// admin (a super user) and alice; the nodes' own PLAINTEXT connections are
// ANONYMOUS, a super user too. Topics a and b; alice may READ topic a and group ga;
// groups ga and gb both have offsets on a and b.
func securedConsoleNode(t *testing.T, extra ...string) *testNode {
	t.Helper()
	sets := append([]string{"listeners=PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0",
		"inter.broker.listener.name=PLAINTEXT", "sasl.enabled.mechanisms=SCRAM-SHA-512,PLAIN",
		"sasl.bootstrap.users=admin:admin-pw,alice:alice-pw", "authorizer.class.name=StandardAuthorizer",
		"super.users=User:admin;User:ANONYMOUS"}, extra...)
	tn, _ := startOwn(t, ownConfig(t, 1, sets...))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	adm := adminOf(t, tn)
	createAliceACLs(t, ctx, adm, 1)
	for _, g := range []string{"ga", "gb"} {
		os := kadm.Offsets{}
		os.Add(kadm.Offset{Topic: "a", Partition: 0, At: 0, LeaderEpoch: -1})
		os.Add(kadm.Offset{Topic: "b", Partition: 0, At: 0, LeaderEpoch: -1})
		r, err := adm.CommitOffsets(ctx, g, os)
		testutil.NoError(t, err, "commit %s", g)
		testutil.NoError(t, r.Error(), "commit %s", g)
	}
	return tn
}

// createAliceACLs creates topics a and b (one partition, rf replicas) and lets alice
// READ topic a and group ga.
func createAliceACLs(t *testing.T, ctx context.Context, adm *kadm.Client, rf int16) {
	t.Helper()
	for _, topic := range []string{"a", "b"} {
		_, err := adm.CreateTopic(ctx, 1, rf, nil, topic)
		testutil.NoError(t, err, "create %s", topic)
	}
	res, err := adm.CreateACLs(ctx, kadm.NewACLs().Allow("User:alice").AllowHosts().Topics("a").Groups("ga").
		ResourcePatternType(kadm.ACLPatternLiteral).Operations(kadm.OpRead))
	testutil.NoError(t, err, "create alice's ACLs")
	for _, r := range res {
		testutil.NoError(t, r.Err, "create ACL %+v", r)
	}
}

func TestConsoleNeedsLoginOnSASLNode(t *testing.T) {
	tn := securedConsoleNode(t)
	base := "http://" + tn.server().HTTPAddr().String()
	anon := newConsoleClient(t, base, nil)

	// Without a login: every page redirects to the login page, every API call is 401.
	for _, p := range consolePages {
		code, h, _ := anon.get(p)
		testutil.Equal(t, code, http.StatusSeeOther, "GET %s without a login", p)
		testutil.Equal(t, h.Get("Location"), "/login?next="+url.QueryEscape(p), "GET %s redirects to", p)
	}
	for _, p := range consoleAPIs {
		code, h, body := anon.get(p)
		testutil.Equal(t, code, http.StatusUnauthorized, "GET %s without a login: %s", p, body)
		testutil.Equal(t, h.Get("Content-Type"), "application/json", "GET %s's error", p)
	}
	code, _, body := anon.get("/login")
	testutil.Equal(t, code, http.StatusOK, "the login page")
	testutil.True(t, strings.Contains(body, `name="password"`), "the login page has no password field:\n%s", body)
	// What stays open.
	for _, p := range []string{"/metrics", "/healthz"} {
		code, _, _ := anon.get(p)
		testutil.Equal(t, code, http.StatusOK, "GET %s without a login", p)
	}
	testutil.Eventually(t, 10*time.Second, func() error {
		if code, _, body := anon.get("/readyz"); code != http.StatusOK {
			return fmt.Errorf("/readyz: %d %s", code, body)
		}
		return nil
	})

	// A wrong password: 401, a clear message, no session.
	code, h, body := anon.login("alice", "not-alice-pw")
	testutil.Equal(t, code, http.StatusUnauthorized, "a wrong password: %s", body)
	testutil.True(t, strings.Contains(body, "wrong user name or password"), "the refusal says why: %s", body)
	testutil.Equal(t, h.Get("Set-Cookie"), "", "a refused login sets a cookie")
	code, _, _ = anon.get("/api/v1/topics")
	testutil.Equal(t, code, http.StatusUnauthorized, "after a refused login")
	code, _, body = anon.login("mallory", "alice-pw")
	testutil.Equal(t, code, http.StatusUnauthorized, "an unknown user: %s", body)

	// A mechanism may be named: SCRAM runs the listener's whole exchange; one the
	// SASL listeners do not enable is refused.
	loginWith := func(cc *consoleClient, user, password, mech string) (int, string) {
		b, _ := json.Marshal(map[string]string{"username": user, "password": password, "mechanism": mech})
		code, _, body := cc.do(http.MethodPost, "/api/v1/login", strings.NewReader(string(b)), map[string]string{"Content-Type": "application/json"})
		return code, body
	}
	code, body = loginWith(newConsoleClient(t, base, nil), "alice", "alice-pw", "SCRAM-SHA-512")
	testutil.Equal(t, code, http.StatusOK, "alice's SCRAM-SHA-512 login: %s", body)
	code, body = loginWith(newConsoleClient(t, base, nil), "alice", "not-alice-pw", "SCRAM-SHA-512")
	testutil.Equal(t, code, http.StatusUnauthorized, "a wrong SCRAM-SHA-512 password: %s", body)
	code, body = loginWith(newConsoleClient(t, base, nil), "alice", "alice-pw", "SCRAM-SHA-256")
	testutil.Equal(t, code, http.StatusBadRequest, "a mechanism no listener enables: %s", body)
	testutil.True(t, strings.Contains(body, "not enabled"), "the refusal says why: %s", body)

	// alice (JSON login) sees topic a and group ga only.
	alice := newConsoleClient(t, base, nil)
	code, h, body = alice.login("alice", "alice-pw")
	testutil.Equal(t, code, http.StatusOK, "alice's login: %s", body)
	cookie := h.Get("Set-Cookie")
	for _, attr := range []string{httpd.SessionCookie + "=", "HttpOnly", "SameSite=Strict"} {
		testutil.True(t, strings.Contains(cookie, attr), "the session cookie %q lacks %s", cookie, attr)
	}
	testutil.True(t, !strings.Contains(cookie, "Secure"), "a cookie over plain HTTP is Secure: %q", cookie)
	var info httpd.SessionInfo
	testutil.NoError(t, json.Unmarshal([]byte(body), &info), "decode the login")
	testutil.Equal(t, info.Principal, "User:alice", "the login's principal")

	var topics httpd.Topics
	alice.getJSON("/api/v1/topics", &topics)
	testutil.Equal(t, fmt.Sprint(topicNames(topics)), "[a]", "alice's topics")
	var topic httpd.Topic
	alice.getJSON("/api/v1/topics/a", &topic)
	testutil.Equal(t, len(topic.Partitions), 1, "topic a's partitions for alice")
	code, _, body = alice.get("/api/v1/topics/b")
	testutil.Equal(t, code, http.StatusForbidden, "alice asks for topic b: %s", body)
	testutil.True(t, strings.Contains(body, "user alice (host 127.0.0.1) lacks DESCRIBE on topic b"),
		"the refusal names the missing ACL: %s", body)
	code, _, _ = alice.get("/api/v1/topics/no-such-topic")
	testutil.Equal(t, code, http.StatusForbidden, "alice asks for a topic that does not exist (no hint that it does not)")
	code, _, body = alice.get("/topics")
	testutil.Equal(t, code, http.StatusOK, "alice's topics page")
	testutil.True(t, strings.Contains(body, `href="/topics/a"`) && !strings.Contains(body, `href="/topics/b"`), "alice's topics page links:\n%s", body)
	var cluster httpd.Cluster
	alice.getJSON("/api/v1/cluster", &cluster)
	testutil.Equal(t, cluster.Topics, 1, "topics counted on alice's overview")

	var groups httpd.Groups
	alice.getJSON("/api/v1/groups", &groups)
	testutil.Equal(t, len(groups.Groups), 1, "alice's groups: %+v", groups.Groups)
	testutil.Equal(t, groups.Groups[0].GroupID, "ga", "alice's group")
	testutil.Equal(t, fmt.Sprint(groups.Groups[0].Topics), "[a]", "the topics of ga alice sees")
	code, _, body = alice.get("/api/v1/groups/gb")
	testutil.Equal(t, code, http.StatusForbidden, "alice asks for group gb: %s", body)
	testutil.True(t, strings.Contains(body, "lacks DESCRIBE on group gb"), "the refusal names the group: %s", body)
	code, _, body = alice.get("/api/v1/reassignments")
	testutil.Equal(t, code, http.StatusForbidden, "alice asks for the reassignments (DESCRIBE on the cluster): %s", body)
	testutil.True(t, strings.Contains(body, "lacks DESCRIBE on the cluster"), "the refusal names the cluster: %s", body)

	// admin (a super user, form login as the login page sends it) sees everything.
	admin := newConsoleClient(t, base, nil)
	code, h, body = admin.do(http.MethodPost, "/login", strings.NewReader(url.Values{"username": {"admin"}, "password": {"admin-pw"},
		"next": {"/topics"}}.Encode()), map[string]string{"Content-Type": "application/x-www-form-urlencoded"})
	testutil.Equal(t, code, http.StatusSeeOther, "admin's form login: %s", body)
	testutil.Equal(t, h.Get("Location"), "/topics", "after the form login")
	topics = httpd.Topics{}
	admin.getJSON("/api/v1/topics", &topics)
	names := topicNames(topics)
	testutil.True(t, slices.Contains(names, "a") && slices.Contains(names, "b"), "admin's topics: %v", names)
	groups = httpd.Groups{}
	admin.getJSON("/api/v1/groups", &groups)
	testutil.Equal(t, len(groups.Groups), 2, "admin's groups (ga and gb): %+v", groups.Groups)
	code, _, _ = admin.get("/api/v1/reassignments")
	testutil.Equal(t, code, http.StatusOK, "admin asks for the reassignments")
	// Every page has the sign-out form with the session's token; without it the form
	// is refused, with it the session ends.
	code, _, body = admin.get("/topics")
	testutil.Equal(t, code, http.StatusOK, "admin's topics page")
	m := regexp.MustCompile(`name="csrf_token" value="([^"]+)"`).FindStringSubmatch(body)
	testutil.True(t, m != nil, "no sign-out form on the page:\n%s", body)
	form := map[string]string{"Content-Type": "application/x-www-form-urlencoded"}
	code, _, _ = admin.do(http.MethodPost, "/logout", strings.NewReader("csrf_token=wrong"), form)
	testutil.Equal(t, code, http.StatusForbidden, "the sign-out form with a wrong token")
	code, h, _ = admin.do(http.MethodPost, "/logout", strings.NewReader(url.Values{"csrf_token": {m[1]}}.Encode()), form)
	testutil.Equal(t, code, http.StatusSeeOther, "the sign-out form")
	testutil.Equal(t, h.Get("Location"), "/login", "after signing out")
	code, _, _ = admin.get("/api/v1/topics")
	testutil.Equal(t, code, http.StatusUnauthorized, "admin after signing out")

	// A wrong form login re-renders the page with the reason.
	code, _, body = anon.do(http.MethodPost, "/login", strings.NewReader(url.Values{"username": {"admin"}, "password": {"x"}}.Encode()),
		map[string]string{"Content-Type": "application/x-www-form-urlencoded"})
	testutil.Equal(t, code, http.StatusUnauthorized, "a wrong form login")
	testutil.True(t, strings.Contains(body, "wrong user name or password"), "the login page says why:\n%s", body)

	// Logout is a write: it needs the session's CSRF token.
	var sess httpd.SessionInfo
	alice.getJSON("/api/v1/session", &sess)
	testutil.True(t, sess.CSRFToken != "" && sess.User == "alice", "alice's session: %+v", sess)
	code, _, body = alice.do(http.MethodPost, "/api/v1/logout", nil, nil)
	testutil.Equal(t, code, http.StatusForbidden, "logout without the CSRF token: %s", body)
	code, _, body = alice.do(http.MethodPost, "/api/v1/logout", nil, map[string]string{httpd.CSRFHeader: "not-the-token"})
	testutil.Equal(t, code, http.StatusForbidden, "logout with a wrong CSRF token: %s", body)
	code, _, _ = alice.get("/api/v1/topics")
	testutil.Equal(t, code, http.StatusOK, "alice is still signed in after refused logouts")
	code, _, body = alice.do(http.MethodPost, "/api/v1/logout", nil, map[string]string{httpd.CSRFHeader: sess.CSRFToken})
	testutil.Equal(t, code, http.StatusOK, "logout: %s", body)
	code, _, _ = alice.get("/api/v1/topics")
	testutil.Equal(t, code, http.StatusUnauthorized, "after logout")
	code, _, _ = alice.get("/topics")
	testutil.Equal(t, code, http.StatusSeeOther, "a page after logout")
}

func topicNames(ts httpd.Topics) []string {
	var out []string
	for _, t := range ts.Topics {
		out = append(out, t.Name)
	}
	return out
}

// A node without a SASL listener keeps the console open, as before: no login, and
// /api/v1/login says none is needed.
func TestConsoleOpenWithoutSASL(t *testing.T) {
	tn, _ := startOwn(t, ownConfig(t, 1))
	cc := newConsoleClient(t, "http://"+tn.server().HTTPAddr().String(), nil)
	for _, p := range []string{"/api/v1/cluster", "/api/v1/topics", "/api/v1/nodes"} {
		code, _, body := cc.get(p)
		testutil.Equal(t, code, http.StatusOK, "GET %s on an open node: %s", p, body)
	}
	code, _, _ := cc.get("/topics")
	testutil.Equal(t, code, http.StatusOK, "the topics page on an open node")
	code, _, body := cc.login("alice", "pw")
	testutil.Equal(t, code, http.StatusNotFound, "a login on an open node: %s", body)
	// The anonymous session carries the CSRF token later writes need.
	var sess httpd.SessionInfo
	cc.getJSON("/api/v1/session", &sess)
	testutil.True(t, !sess.LoginRequired && sess.CSRFToken != "" && sess.User == "", "an open node's session: %+v", sess)
}

// http.tls.certificate.location and http.tls.key.location serve HTTPS: the login
// works over it and its cookie is Secure; plain HTTP is not answered.
func TestConsoleHTTPS(t *testing.T) {
	pki := testutil.NewPKI(t)
	tn := securedConsoleNode(t, "http.tls.certificate.location="+pki.ServerCert, "http.tls.key.location="+pki.ServerKey)
	addr := tn.server().HTTPAddr().String()
	cc := newConsoleClient(t, "https://"+addr, &tls.Config{RootCAs: pki.Pool})
	code, _, _ := cc.get("/healthz")
	testutil.Equal(t, code, http.StatusOK, "GET /healthz over HTTPS")
	code, _, _ = cc.get("/api/v1/topics")
	testutil.Equal(t, code, http.StatusUnauthorized, "the API over HTTPS without a login")
	code, h, body := cc.login("alice", "alice-pw")
	testutil.Equal(t, code, http.StatusOK, "alice's login over HTTPS: %s", body)
	testutil.True(t, strings.Contains(h.Get("Set-Cookie"), "Secure"), "the cookie over HTTPS is not Secure: %q", h.Get("Set-Cookie"))
	var topics httpd.Topics
	cc.getJSON("/api/v1/topics", &topics)
	testutil.Equal(t, fmt.Sprint(topicNames(topics)), "[a]", "alice's topics over HTTPS")

	plain := &http.Client{Timeout: 5 * time.Second}
	if resp, err := plain.Get("http://" + addr + "/healthz"); err == nil {
		resp.Body.Close()
		testutil.True(t, resp.StatusCode == http.StatusBadRequest, "plain HTTP to the HTTPS port answered %d", resp.StatusCode)
	}
}
