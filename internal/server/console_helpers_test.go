package server_test

import (
	"context"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/runnel-io/runnel/internal/testutil"
)

// What the console's tests share: a node with a topic, the check of calls a user's
// ACLs refuse, a record read back with a Kafka client; and for the browser tests, which
// drive a real headless chromium through the pages as an operator would, starting the
// browser, signing in, waiting for a page's scripts, and the forms more than one test
// fills.

// nodeWithTopic starts one node (with sets) and creates topic on it (partitions, one
// replica). It returns the node, a 30 s context for the test, an admin client and the
// created topic.
func nodeWithTopic(t *testing.T, topic string, partitions int32, sets ...string) (*testNode, context.Context, *kadm.Client, kadm.CreateTopicResponse) {
	t.Helper()
	tn := startCluster(t, 1, sets...)[0]
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	adm := adminOf(t, tn)
	ct, err := adm.CreateTopic(ctx, partitions, 1, nil, topic)
	testutil.NoError(t, err, "create %s", topic)
	return tn, ctx, adm, ct
}

// denial is a console call a user's ACLs refuse, and what the refusal must say.
type denial struct {
	method, path string
	body         any
	want         string
}

// checkDenied makes each call as cc (a write with token) and checks that it is
// refused 403, naming what the user lacks; who labels the failures.
func (cc *consoleClient) checkDenied(who, token string, ds []denial) {
	cc.t.Helper()
	for _, d := range ds {
		var code int
		var body string
		if d.method == http.MethodGet {
			code, _, body = cc.get(d.path)
		} else {
			code, body = cc.send(d.method, d.path, token, d.body)
		}
		testutil.Equal(cc.t, code, http.StatusForbidden, "%s's %s %s: %s", who, d.method, d.path, body)
		testutil.True(cc.t, strings.Contains(body, d.want), "%s's %s %s names the missing ACL %q: %s", who, d.method, d.path, d.want, body)
	}
}

// chromiumPath is Debian's chromium (scripts/install-deps.sh installs it), or "".
func chromiumPath() string {
	if _, err := os.Stat("/usr/bin/chromium"); err == nil {
		return "/usr/bin/chromium"
	}
	if p, err := exec.LookPath("chromium"); err == nil {
		return p
	}
	return ""
}

// chromiumOrSkip is chromiumPath, skipping the test when there is no chromium.
func chromiumOrSkip(t *testing.T) string {
	t.Helper()
	bin := chromiumPath()
	if bin == "" {
		testutil.Missing(t, "no chromium binary (/usr/bin/chromium or chromium on PATH): scripts/install-deps.sh installs Debian's chromium")
	}
	return bin
}

// browser is one tab of a headless chromium on the console at base.
type browser struct {
	t    *testing.T
	ctx  context.Context
	base string
}

// newBrowser starts chromium bin for the console at base, 1280x900; extra options
// come after the defaults (a flag set again wins). The whole browser lives under one
// deadline, so the test never waits on it for ever; it ends with the test. --no-sandbox:
// CI runs as root, where chromium's sandbox refuses to start.
func newBrowser(t *testing.T, bin, base string, deadline time.Duration, extra ...chromedp.ExecAllocatorOption) *browser {
	t.Helper()
	tctx, cancel := context.WithTimeout(context.Background(), deadline)
	t.Cleanup(cancel)
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(bin), chromedp.NoSandbox,
		chromedp.Headless, chromedp.DisableGPU, chromedp.WindowSize(1280, 900))
	actx, cancelAlloc := chromedp.NewExecAllocator(tctx, append(opts, extra...)...)
	t.Cleanup(cancelAlloc)
	ctx, cancelBrowser := chromedp.NewContext(actx)
	t.Cleanup(cancelBrowser)
	return &browser{t: t, ctx: ctx, base: base}
}

// do runs actions in order, failing the test with what when one fails.
func (b *browser) do(what string, actions ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	testutil.NoError(b.t, chromedp.Do(b.ctx, actions...), "%s", what)
}

// open navigates to path and waits until the element ready is visible.
func (b *browser) open(path, ready string) {
	b.t.Helper()
	b.do("open "+path, chromedp.Navigate(b.base+path), chromedp.WaitVisible(chromedp.CSS(ready)))
}

// wait evaluates expr until it is true, for 10 s. It polls from here rather than
// with chromedp.Poll, which a navigation ends: the pages' scripts fill them after
// they load, and a form's answer may be a new page.
func (b *browser) wait(expr, what string) {
	b.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		ok, err := chromedp.Run(b.ctx, chromedp.Evaluate[bool](expr))
		if err == nil && ok {
			return
		}
		if time.Now().After(deadline) {
			msg, _ := chromedp.Run(b.ctx, chromedp.Evaluate[string](`(document.getElementById("error")||{}).textContent || ""`))
			page, _ := chromedp.Run(b.ctx, chromedp.Evaluate[string](`document.body ? document.body.innerText.slice(0, 2000) : ""`))
			b.t.Fatalf("%s: not after 10 s (last error %v; page error %q); the page:\n%s", what, err, msg, page)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// text is the text of the element sel.
func (b *browser) text(sel string) string {
	b.t.Helper()
	v, err := chromedp.Run(b.ctx, chromedp.Text(chromedp.CSS(sel)))
	testutil.NoError(b.t, err, "read the text of %s", sel)
	return v
}

// eval is the string expr evaluates to in the page.
func (b *browser) eval(expr string) string {
	b.t.Helper()
	v, err := chromedp.Run(b.ctx, chromedp.Evaluate[string](expr))
	testutil.NoError(b.t, err, "evaluate %s", expr)
	return v
}

// signIn opens next (the login page, or a page that sends the browser to it) and
// submits the login form as user; the caller waits for the page it expects after.
func (b *browser) signIn(user, password, next string) {
	b.t.Helper()
	b.do("sign in as "+user,
		chromedp.Navigate(b.base+next),
		chromedp.WaitVisible(chromedp.CSS(`input[name=username]`)),
		chromedp.SendKeys(chromedp.CSS(`input[name=username]`), user),
		chromedp.SendKeys(chromedp.CSS(`input[name=password]`), password),
		chromedp.Submit(chromedp.CSS(`input[name=password]`)),
	)
}

// createTopic fills and submits the create-topic form of the topic list shown.
func (b *browser) createTopic(name, partitions string) {
	b.t.Helper()
	b.do("fill the create-topic form",
		chromedp.Click(chromedp.CSS(`#new-topic`)),
		chromedp.WaitVisible(chromedp.CSS(`#create-topic`)),
		chromedp.SendKeys(chromedp.CSS(`#create-name`), name),
		chromedp.SendKeys(chromedp.CSS(`#create-partitions`), partitions),
		chromedp.Click(chromedp.CSS(`#create-topic button`)),
	)
}

// filterRecords waits for the newest page of the record page shown to hold newest
// records, filters it on filter with values shown as format, waits for the one
// match and returns its key, value and headers cells.
func (b *browser) filterRecords(newest, filter, format string) (key, value, headers string) {
	b.t.Helper()
	b.wait(`document.querySelectorAll("#records tbody tr").length === `+newest, "the newest page ("+newest+" records)")
	b.do("filter on "+filter,
		chromedp.SendKeys(chromedp.CSS(`#filter`), filter),
		chromedp.SetValue(chromedp.CSS(`#format`), format),
		chromedp.Click(chromedp.CSS(`#browse button`)),
	)
	b.wait(`document.querySelectorAll("#records tbody tr").length === 1`, "the one record matching "+filter)
	return b.text(`#records tbody td.key`), b.text(`#records tbody td.value`), b.text(`#records tbody td.headers`)
}

// produce fills and submits the produce form of the record page shown and returns
// its answer.
func (b *browser) produce(partition, key, value, headers string) string {
	b.t.Helper()
	b.do("fill the produce form",
		chromedp.SendKeys(chromedp.CSS(`#produce-partition`), partition),
		chromedp.SendKeys(chromedp.CSS(`#produce-key`), key),
		chromedp.SendKeys(chromedp.CSS(`#produce-value`), value),
		chromedp.SendKeys(chromedp.CSS(`#produce-headers`), headers),
		chromedp.Click(chromedp.CSS(`#produce button`)),
	)
	b.wait(`document.getElementById("produce-result").textContent.startsWith("Produced")`, "the produce's answer")
	return b.text(`#produce-result`)
}

// reset fills and submits the reset form of the group's manage page shown: topic,
// to, and, unless dryRun, its dry-run box unticked.
func (b *browser) reset(what, topic, to string, dryRun bool) {
	b.t.Helper()
	actions := []chromedp.Action[chromedp.Void]{
		chromedp.SendKeys(chromedp.CSS(`#reset-topic`), topic),
		chromedp.SendKeys(chromedp.CSS(`#reset-to`), to),
	}
	if !dryRun {
		actions = append(actions, chromedp.Click(chromedp.CSS(`#reset-dry`)))
	}
	b.do(what, append(actions, chromedp.Click(chromedp.CSS(`#reset button`)))...)
}

// deleteTopic deletes topic from its record page and checks the page's answer.
func (b *browser) deleteTopic(topic string) {
	b.t.Helper()
	b.do("delete "+topic,
		chromedp.Navigate(b.base+"/topics/"+topic+"/records"),
		chromedp.WaitVisible(chromedp.CSS(`#delete-topic`)),
		chromedp.SendKeys(chromedp.CSS(`#delete-confirm`), topic),
		chromedp.Click(chromedp.CSS(`#delete-topic button`)),
	)
	b.wait(`document.getElementById("delete-result").textContent !== ""`, "the delete's answer")
	testutil.Equal(b.t, b.text(`#delete-result`), "Topic "+topic+" deleted.", "the delete's answer")
}

// checkTopicGone checks that node tn, asked directly, no longer has topic: a delete
// is answered once the node that took it applied it. (kadm's ListTopics may answer
// from kgo's metadata cache, up to 5 s old.)
func checkTopicGone(t *testing.T, tn *testNode, topic string) {
	t.Helper()
	m := rawMetadata(t, tn, topic)
	testutil.True(t, len(m.Topics) == 1 && m.Topics[0].ErrorCode == kerr.UnknownTopicOrPartition.Code,
		"node %d's Metadata of %s after its delete: %+v", tn.id, topic, m.Topics)
}

// committedAt is group's committed offset on topic/partition.
func committedAt(t *testing.T, ctx context.Context, adm *kadm.Client, group, topic string, partition int32) int64 {
	t.Helper()
	o, err := adm.FetchOffsets(ctx, group)
	testutil.NoError(t, err, "%s's offsets", group)
	r, _ := o.Lookup(topic, partition)
	return r.At
}

// checkReadBack polls cons (a consumer of the one partition where) for the one
// record a console produced there and checks its key|value and its one header
// (key=value).
func checkReadBack(t *testing.T, ctx context.Context, cons *kgo.Client, where, keyValue, header string) {
	t.Helper()
	fs := cons.PollRecords(ctx, 1)
	testutil.NoError(t, fs.Err0(), "consume %s", where)
	back := fs.Records()
	testutil.Equal(t, len(back), 1, "records of %s", where)
	testutil.Equal(t, string(back[0].Key)+"|"+string(back[0].Value), keyValue, "the record read back from %s", where)
	testutil.Equal(t, len(back[0].Headers), 1, "its headers")
	testutil.Equal(t, back[0].Headers[0].Key+"="+string(back[0].Headers[0].Value), header, "its header")
}
