package server_test

import (
	"context"
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
	bin := chromiumPath()
	if bin == "" {
		t.Skip("no chromium binary (/usr/bin/chromium or chromium on PATH): scripts/install-deps.sh installs Debian's chromium")
	}
	tn := securedConsoleNode(t)
	base := "http://" + tn.server().HTTPAddr().String()
	tctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(bin), chromedp.NoSandbox,
		chromedp.Headless, chromedp.DisableGPU, chromedp.WindowSize(1280, 900))
	actx, cancelAlloc := chromedp.NewExecAllocator(tctx, opts...)
	defer cancelAlloc()
	ctx, cancelBrowser := chromedp.NewContext(actx)
	defer cancelBrowser()
	wait := func(expr, what string) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for {
			ok, err := chromedp.Run(ctx, chromedp.Evaluate[bool](expr))
			if err == nil && ok {
				return
			}
			if time.Now().After(deadline) {
				msg, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`(document.getElementById("error")||{}).textContent || ""`))
				t.Fatalf("%s: not after 10 s (last error %v; page error %q)", what, err, msg)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	eval := func(expr string) string {
		t.Helper()
		v, err := chromedp.Run(ctx, chromedp.Evaluate[string](expr))
		testutil.NoError(t, err, "evaluate %s", expr)
		return v
	}
	signIn := func(user, password string) {
		t.Helper()
		testutil.NoError(t, chromedp.Do(ctx,
			chromedp.Navigate(base+"/login"),
			chromedp.WaitVisible(chromedp.CSS(`input[name=username]`)),
			chromedp.SendKeys(chromedp.CSS(`input[name=username]`), user),
			chromedp.SendKeys(chromedp.CSS(`input[name=password]`), password),
			chromedp.Submit(chromedp.CSS(`input[name=password]`)),
		), "sign in as %s", user)
		// The login page has a heading too: wait until the browser left it.
		wait(`location.pathname !== "/login" && document.readyState === "complete"`, "signed in as "+user)
	}
	aclRows := `Array.from(document.querySelectorAll("#acls tbody tr")).map(tr => Array.from(tr.cells).slice(0, 6).map(td => td.textContent.trim()).join(" ")).join("\n")`

	signIn("admin", "admin-pw")
	// The ACL page lists alice's two ACLs; create one with the form, then delete it
	// with its row's button.
	testutil.NoError(t, chromedp.Do(ctx, chromedp.Navigate(base+"/acls"), chromedp.WaitVisible(chromedp.CSS(`#acls`))), "open /acls")
	testutil.Equal(t, eval(aclRows), "User:alice * group ga literal read allow\nUser:alice * topic a literal read allow", "the ACL rows")
	testutil.NoError(t, chromedp.Do(ctx,
		chromedp.SendKeys(chromedp.CSS(`#acl-principal`), "User:bob"),
		chromedp.SendKeys(chromedp.CSS(`#acl-resource-name`), "b"),
		chromedp.SetValue(chromedp.CSS(`#acl-operation`), "write"),
		chromedp.Click(chromedp.CSS(`#create-acl button`)),
	), "fill the create-ACL form")
	wait(`document.querySelectorAll("#acls tbody tr").length === 3`, "the created ACL listed")
	testutil.Equal(t, eval(`document.querySelector("#acls tbody tr:nth-child(3) td").textContent`), "User:bob", "the new ACL's principal")
	testutil.NoError(t, chromedp.Do(ctx, chromedp.Click(chromedp.CSS(`#acls tbody tr:nth-child(3) button`))), "delete bob's ACL")
	wait(`document.querySelectorAll("#acls tbody tr").length === 2`, "bob's ACL gone")

	// Users: mechanisms, no secret. Quotas: set one with the form.
	testutil.NoError(t, chromedp.Do(ctx, chromedp.Navigate(base+"/users"), chromedp.WaitVisible(chromedp.CSS(`#users`))), "open /users")
	testutil.Equal(t, eval(`Array.from(document.querySelectorAll("#users tbody tr")).map(tr => tr.cells[0].textContent + " " + tr.cells[1].textContent).join(", ")`),
		"admin SCRAM-SHA-256, admin SCRAM-SHA-512, alice SCRAM-SHA-256, alice SCRAM-SHA-512", "the users and their mechanisms (sasl.bootstrap.users makes both)")
	testutil.NoError(t, chromedp.Do(ctx,
		chromedp.Navigate(base+"/quotas"),
		chromedp.WaitVisible(chromedp.CSS(`#set-quota`)),
		chromedp.SendKeys(chromedp.CSS(`#quota-user`), "alice"),
		chromedp.SendKeys(chromedp.CSS(`#quota-value`), "2048"),
		chromedp.Click(chromedp.CSS(`#set-quota button`)),
	), "set alice's producer_byte_rate")
	wait(`document.querySelectorAll("#quotas tbody tr td.mono").length > 0`, "the quota listed")
	testutil.Equal(t, eval(`Array.from(document.querySelectorAll("#quotas tbody tr")[0].cells).slice(0, 3).map(td => td.textContent).join(" ")`),
		"user=alice producer_byte_rate 2048", "the quota row")

	// A node's page: its configs with their source, and its charts drawn as SVG.
	testutil.NoError(t, chromedp.Do(ctx, chromedp.Navigate(base+"/nodes/1"), chromedp.WaitVisible(chromedp.CSS(`#node-configs`))), "open /nodes/1")
	testutil.Equal(t, eval(`Array.from(document.querySelectorAll("#node-configs tbody tr")).find(tr => tr.cells[0].textContent === "super.users").cells[2].textContent`),
		"static", "super.users' source")
	wait(`document.getElementById("node-charts").dataset.loaded === "1" && document.querySelectorAll("#node-charts figure svg").length === 4`, "node 1's four charts")

	// alice: the ACL page refused naming the ACL she lacks; the charts of topic a,
	// which she may read, but not of b.
	testutil.NoError(t, chromedp.Do(ctx, chromedp.Navigate(base+"/topics"), chromedp.Click(chromedp.CSS(`form.logout button`))), "sign out")
	wait(`location.pathname === "/login" && document.readyState === "complete"`, "signed out")
	signIn("alice", "alice-pw")
	testutil.NoError(t, chromedp.Do(ctx, chromedp.Navigate(base+"/acls"), chromedp.WaitVisible(chromedp.CSS(`#page-error`))), "alice opens /acls")
	testutil.Equal(t, eval(`document.getElementById("page-error").textContent`), "forbidden: user alice (host 127.0.0.1) lacks DESCRIBE on the cluster", "alice's refusal")
	testutil.Equal(t, eval(`String(document.querySelectorAll("#create-acl").length)`), "0", "the create form shown to alice")
	charts := func(topic string) string {
		t.Helper()
		v, err := chromedp.Run(ctx, chromedp.Evaluate[string](`fetch("/api/v1/charts?kind=topic&name=`+topic+`").then(r => r.json().then(j => r.status + " " + (j.series ? j.series.map(s => s.metric).join(",") : j.message)))`, chromedp.EvalAwaitPromise))
		testutil.NoError(t, err, "fetch the charts of topic %s in the page", topic)
		return v
	}
	testutil.Equal(t, charts("a"), "200 bytes_in,records_in,bytes_out,records_out", "alice's charts of topic a")
	testutil.Equal(t, charts("b"), "403 forbidden: user alice (host 127.0.0.1) lacks DESCRIBE on topic b", "alice's charts of topic b")
}
