package server_test

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"

	"github.com/runnel-io/runnel/internal/testutil"
)

// TestConsoleInBrowser drives the console in a real headless chromium, as a reader
// would: the overview, the nav to the topic list, the topic's page (its partitions
// table and its groups' lag), then a group's page. A group id made of markup must
// show as text, and no script of it may run.
func TestConsoleInBrowser(t *testing.T) {
	bin := chromiumOrSkip(t)
	nodes := startCluster(t, 1)
	seedConsoleData(t, nodes[0], 1)
	base := "http://" + nodes[0].server().HTTPAddr().String()
	b := newBrowser(t, bin, base, 30*time.Second)
	ctx := b.ctx
	b.do("open "+base+"/ in chromium", chromedp.Navigate(base+"/"))
	// A script smuggled in through a group id would open a dialog: count them.
	dialogs := make(chan string, 4)
	go func() {
		for ev, err := range chromedp.Events(ctx, page.JavascriptDialogOpening) {
			if err != nil {
				return
			}
			dialogs <- ev.Message
			chromedp.Call(ctx, page.HandleJavaScriptDialog, page.HandleJavaScriptDialogParams{Accept: true})
		}
	}()
	rows := func(table string) [][]string {
		t.Helper()
		v, err := chromedp.Run(ctx, chromedp.Evaluate[[][]string](`Array.from(document.querySelectorAll('`+table+
			` tbody tr')).map(tr => Array.from(tr.cells).map(td => td.innerText.trim()))`))
		testutil.NoError(t, err, "read the rows of %s", table)
		return v
	}
	b.do("the overview's nodes table", chromedp.WaitVisible(chromedp.CSS(`#nodes`)))
	testutil.Equal(t, b.text("h1"), "Cluster", "the overview's heading")
	b.do("browse / → Topics → orders",
		chromedp.Click(chromedp.CSS(`header nav a[href="/topics"]`)),
		chromedp.WaitVisible(chromedp.CSS(`#topics`)),
		chromedp.Click(chromedp.CSS(`#topics a[href="/topics/orders"]`)),
		chromedp.WaitVisible(chromedp.CSS(`#partitions`)),
	)
	loc, err := chromedp.Run(ctx, chromedp.Location())
	testutil.NoError(t, err, "the topic page's address")
	testutil.Equal(t, loc, base+"/topics/orders", "the topic page's address")
	// Columns: partition, leader, epoch, replicas, ISR, status, log start, high
	// watermark, log end, offsets from.
	parts := rows("#partitions")
	testutil.Equal(t, len(parts), len(consoleRecords), "rows of the partitions table: %q", parts)
	for i, row := range parts {
		n := strconv.Itoa(consoleRecords[i])
		want := []string{strconv.Itoa(i), "1", "0", "1", "1", "ok", "0", n, n, "this node (leader)"}
		testutil.Equal(t, strings.Join(row, "|"), strings.Join(want, "|"), "row %d of the partitions table", i)
	}
	// The groups sorted by id: the odd one ('<') first, shown as its text.
	groups := rows("#topic-groups")
	testutil.Equal(t, len(groups), 2, "rows of the topic's groups table: %q", groups)
	testutil.Equal(t, strings.Join(groups[0], "|"), consoleOddGroup+"|Empty|"+strconv.Itoa(consoleLag), "the odd group's row")
	testutil.Equal(t, strings.Join(groups[1], "|"), "console-g|Empty|"+strconv.Itoa(consoleLag), "console-g's row")

	b.do("browse orders → console-g",
		chromedp.Click(chromedp.CSS(`#topic-groups tbody tr:nth-child(2) a`)),
		chromedp.WaitVisible(chromedp.CSS(`#group-offsets`)),
	)
	testutil.Equal(t, b.text("#group-lag"), strconv.Itoa(consoleLag), "console-g's total lag")
	// Columns: topic, partition, committed, end, lag, member.
	offsets := rows("#group-offsets")
	testutil.Equal(t, len(offsets), len(consoleRecords), "rows of console-g's offsets: %q", offsets)
	testutil.Equal(t, strings.Join(offsets[0][:5], "|"), "orders|0|4|10|6", "console-g on orders/0")

	b.do("browse orders → the odd group",
		chromedp.Navigate(base+"/topics/orders"),
		chromedp.WaitVisible(chromedp.CSS(`#topic-groups`)),
		chromedp.Click(chromedp.CSS(`#topic-groups tbody tr:nth-child(1) a`)),
		chromedp.WaitVisible(chromedp.CSS(`#group-offsets`)),
	)
	testutil.Equal(t, b.text("h1"), "Group "+consoleOddGroup, "the odd group's page heading")
	select {
	case msg := <-dialogs:
		t.Fatalf("a script in a group id ran in the page (dialog %q)", msg)
	default:
	}
}
