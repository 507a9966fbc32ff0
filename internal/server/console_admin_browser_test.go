package server_test

import (
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/runnel-io/runnel/internal/testutil"
)

// TestConsoleAdminPagesInBrowser drives the ACL, user, quota and node pages in headless
// chromium on a SASL node with ACLs: the admin creates and deletes an ACL and sets a
// quota with the pages' forms, sees the users and a node's configs and charts drawn;
// alice, without DESCRIBE on the cluster, is refused the ACL page naming that ACL, and
// gets the charts of the topic she may read but not of another.
func TestConsoleAdminPagesInBrowser(t *testing.T) {
	bin := chromiumOrSkip(t)
	tn := securedConsoleNode(t)
	base := "http://" + tn.server().HTTPAddr().String()
	b := newBrowser(t, bin, base, 30*time.Second)
	signIn := func(user, password string) {
		t.Helper()
		b.signIn(user, password, "/login")
		// The login page has a heading too: wait until the browser left it.
		b.wait(`location.pathname !== "/login" && document.readyState === "complete"`, "signed in as "+user)
	}
	aclRows := `Array.from(document.querySelectorAll("#acls tbody tr")).map(tr => Array.from(tr.cells).slice(0, 6).map(td => td.textContent.trim()).join(" ")).join("\n")`

	signIn("admin", "admin-pw")
	// The ACL page lists alice's two ACLs; create one with the form, then delete it
	// with its row's button.
	b.open("/acls", `#acls`)
	testutil.Equal(t, b.eval(aclRows), "User:alice * group ga literal read allow\nUser:alice * topic a literal read allow", "the ACL rows")
	b.do("fill the create-ACL form",
		chromedp.SendKeys(chromedp.CSS(`#acl-principal`), "User:bob"),
		chromedp.SendKeys(chromedp.CSS(`#acl-resource-name`), "b"),
		chromedp.SetValue(chromedp.CSS(`#acl-operation`), "write"),
		chromedp.Click(chromedp.CSS(`#create-acl button`)),
	)
	b.wait(`document.querySelectorAll("#acls tbody tr").length === 3`, "the created ACL listed")
	testutil.Equal(t, b.eval(`document.querySelector("#acls tbody tr:nth-child(3) td").textContent`), "User:bob", "the new ACL's principal")
	b.do("delete bob's ACL", chromedp.Click(chromedp.CSS(`#acls tbody tr:nth-child(3) button`)))
	b.wait(`document.querySelectorAll("#acls tbody tr").length === 2`, "bob's ACL gone")

	// Users: mechanisms, no secret. Quotas: set one with the form.
	b.open("/users", `#users`)
	testutil.Equal(t, b.eval(`Array.from(document.querySelectorAll("#users tbody tr")).map(tr => tr.cells[0].textContent + " " + tr.cells[1].textContent).join(", ")`),
		"admin SCRAM-SHA-256, admin SCRAM-SHA-512, alice SCRAM-SHA-256, alice SCRAM-SHA-512", "the users and their mechanisms (sasl.bootstrap.users makes both)")
	b.do("set alice's producer_byte_rate",
		chromedp.Navigate(base+"/quotas"),
		chromedp.WaitVisible(chromedp.CSS(`#set-quota`)),
		chromedp.SendKeys(chromedp.CSS(`#quota-user`), "alice"),
		chromedp.SendKeys(chromedp.CSS(`#quota-value`), "2048"),
		chromedp.Click(chromedp.CSS(`#set-quota button`)),
	)
	b.wait(`document.querySelectorAll("#quotas tbody tr td.mono").length > 0`, "the quota listed")
	testutil.Equal(t, b.eval(`Array.from(document.querySelectorAll("#quotas tbody tr")[0].cells).slice(0, 3).map(td => td.textContent).join(" ")`),
		"user=alice producer_byte_rate 2048", "the quota row")

	// A node's page: its configs with their source, and its charts drawn as SVG.
	b.open("/nodes/1", `#node-configs`)
	testutil.Equal(t, b.eval(`Array.from(document.querySelectorAll("#node-configs tbody tr")).find(tr => tr.cells[0].textContent === "super.users").cells[2].textContent`),
		"static", "super.users' source")
	b.wait(`document.getElementById("node-charts").dataset.loaded === "1" && document.querySelectorAll("#node-charts figure svg").length === 4`, "node 1's four charts")

	// alice: the ACL page refused naming the ACL she lacks; the charts of topic a,
	// which she may read, but not of b.
	b.do("sign out", chromedp.Navigate(base+"/topics"), chromedp.Click(chromedp.CSS(`form.logout button`)))
	b.wait(`location.pathname === "/login" && document.readyState === "complete"`, "signed out")
	signIn("alice", "alice-pw")
	b.do("alice opens /acls", chromedp.Navigate(base+"/acls"), chromedp.WaitVisible(chromedp.CSS(`#page-error`)))
	testutil.Equal(t, b.eval(`document.getElementById("page-error").textContent`), "forbidden: user alice (host 127.0.0.1) lacks DESCRIBE on the cluster", "alice's refusal")
	testutil.Equal(t, b.eval(`String(document.querySelectorAll("#create-acl").length)`), "0", "the create form shown to alice")
	charts := func(topic string) string {
		t.Helper()
		v, err := chromedp.Run(b.ctx, chromedp.Evaluate[string](`fetch("/api/v1/charts?kind=topic&name=`+topic+`").then(r => r.json().then(j => r.status + " " + (j.series ? j.series.map(s => s.metric).join(",") : j.message)))`, chromedp.EvalAwaitPromise))
		testutil.NoError(t, err, "fetch the charts of topic %s in the page", topic)
		return v
	}
	testutil.Equal(t, charts("a"), "200 bytes_in,records_in,bytes_out,records_out", "alice's charts of topic a")
	testutil.Equal(t, charts("b"), "403 forbidden: user alice (host 127.0.0.1) lacks DESCRIBE on topic b", "alice's charts of topic b")
}
