package server_test

import (
	"context"
	"errors"
	"strconv"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/runnel-io/runnel/internal/testutil"
)

// TestConsoleActionsInBrowser drives the console's action pages in headless chromium on
// a SASL node with ACLs, as an operator would: sign in, create a topic from the topic
// list, find a record a Kafka client produced (by its key, with its JSON value shown
// pretty and its headers), produce a record from the topic's record page and read it
// back with a Kafka consumer, then delete the created topic.
func TestConsoleActionsInBrowser(t *testing.T) {
	bin := chromiumPath()
	if bin == "" {
		t.Skip("no chromium binary (/usr/bin/chromium or chromium on PATH): scripts/install-deps.sh installs Debian's chromium")
	}
	tn := securedConsoleNode(t)
	base := "http://" + tn.server().HTTPAddr().String()
	ctx0, cancel0 := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel0()
	// The nodes' own PLAINTEXT listener is ANONYMOUS, a super user: a plain client.
	cl, err := kgo.NewClient(kgo.SeedBrokers(tn.addr()), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	testutil.NoError(t, err, "kgo.NewClient")
	defer cl.Close()
	var recs []*kgo.Record
	for i := range 20 {
		recs = append(recs, &kgo.Record{Topic: "a", Key: []byte("order-" + strconv.Itoa(i)), Value: []byte(`{"id":` + strconv.Itoa(i) + `,"items":["x","y"]}`),
			Headers: []kgo.RecordHeader{{Key: "trace", Value: []byte("t-" + strconv.Itoa(i))}}})
	}
	testutil.NoError(t, cl.ProduceSync(ctx0, recs...).FirstErr(), "produce to a")

	tctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(bin), chromedp.NoSandbox,
		chromedp.Headless, chromedp.DisableGPU, chromedp.WindowSize(1280, 900))
	actx, cancelAlloc := chromedp.NewExecAllocator(tctx, opts...)
	defer cancelAlloc()
	ctx, cancelBrowser := chromedp.NewContext(actx)
	defer cancelBrowser()
	// wait evaluates expr until it is true (across a navigation, which ends a Poll).
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
	text := func(sel string) string {
		t.Helper()
		v, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(sel)))
		testutil.NoError(t, err, "read the text of %s", sel)
		return v
	}

	// Sign in: the topic list redirects to the login page, which comes back to it.
	testutil.NoError(t, chromedp.Do(ctx,
		chromedp.Navigate(base+"/topics"),
		chromedp.WaitVisible(chromedp.CSS(`input[name=username]`)),
		chromedp.SendKeys(chromedp.CSS(`input[name=username]`), "admin"),
		chromedp.SendKeys(chromedp.CSS(`input[name=password]`), "admin-pw"),
		chromedp.Submit(chromedp.CSS(`input[name=password]`)),
		chromedp.WaitVisible(chromedp.CSS(`#topics`)),
	), "sign in as admin")

	// Create a topic from the topic list.
	testutil.NoError(t, chromedp.Do(ctx,
		chromedp.Click(chromedp.CSS(`#new-topic`)),
		chromedp.WaitVisible(chromedp.CSS(`#create-topic`)),
		chromedp.SendKeys(chromedp.CSS(`#create-name`), "made-in-browser"),
		chromedp.SendKeys(chromedp.CSS(`#create-partitions`), "2"),
		chromedp.Click(chromedp.CSS(`#create-topic button`)),
	), "fill the create-topic form")
	wait(`location.pathname === "/topics/made-in-browser" && !!document.getElementById("partitions")`, "the created topic's page")
	parts, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll("#partitions tbody tr").length`))
	testutil.NoError(t, err, "count the created topic's partitions")
	testutil.Equal(t, parts, 2, "the created topic's partitions")

	// Find order-7 on topic a's record page by its key; its value shown as JSON.
	testutil.NoError(t, chromedp.Do(ctx,
		chromedp.Navigate(base+"/topics/a"),
		chromedp.Click(chromedp.CSS(`#browse-records`)),
		chromedp.WaitVisible(chromedp.CSS(`#browse`)),
	), "topic a → its records")
	wait(`document.querySelectorAll("#records tbody tr").length === 20`, "the newest page of a (20 records)")
	testutil.NoError(t, chromedp.Do(ctx,
		chromedp.SendKeys(chromedp.CSS(`#filter`), "order-7"),
		chromedp.SetValue(chromedp.CSS(`#format`), "json"),
		chromedp.Click(chromedp.CSS(`#browse button`)),
	), "filter a on order-7")
	wait(`document.querySelectorAll("#records tbody tr").length === 1`, "the records matching order-7")
	testutil.Equal(t, text(`#records tbody td.key`), "order-7", "the found record's key")
	testutil.Equal(t, text(`#records tbody td.value`), "{\n  \"id\": 7,\n  \"items\": [\n    \"x\",\n    \"y\"\n  ]\n}", "the found record's value as JSON")
	testutil.Equal(t, text(`#records tbody td.headers`), "trace=t-7", "the found record's headers")

	// Produce from the page; a Kafka consumer reads it back exactly.
	testutil.NoError(t, chromedp.Do(ctx,
		chromedp.SendKeys(chromedp.CSS(`#produce-partition`), "0"),
		chromedp.SendKeys(chromedp.CSS(`#produce-key`), "from-browser"),
		chromedp.SendKeys(chromedp.CSS(`#produce-value`), `{"made":"here"}`),
		chromedp.SendKeys(chromedp.CSS(`#produce-headers`), "src=browser"),
		chromedp.Click(chromedp.CSS(`#produce button`)),
	), "fill the produce form")
	wait(`document.getElementById("produce-result").textContent.startsWith("Produced")`, "the produce's answer")
	testutil.Equal(t, text(`#produce-result`), "Produced to partition 0 at offset 20.", "the produce's answer")
	cons, err := kgo.NewClient(kgo.SeedBrokers(tn.addr()),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{"a": {0: kgo.NewOffset().At(20)}}))
	testutil.NoError(t, err, "consumer")
	defer cons.Close()
	fs := cons.PollRecords(ctx0, 1)
	testutil.NoError(t, fs.Err0(), "consume a/0 at 20")
	back := fs.Records()
	testutil.Equal(t, len(back), 1, "records of a/0 from 20")
	testutil.Equal(t, string(back[0].Key)+"|"+string(back[0].Value), `from-browser|{"made":"here"}`, "the record produced from the browser")
	testutil.Equal(t, len(back[0].Headers), 1, "its headers")
	testutil.Equal(t, back[0].Headers[0].Key+"="+string(back[0].Headers[0].Value), "src=browser", "its header")

	// Reset group ga on a: a dry run shows old and new and changes nothing, then the
	// reset itself moves the commit.
	testutil.NoError(t, chromedp.Do(ctx,
		chromedp.Navigate(base+"/groups/ga"),
		chromedp.Click(chromedp.CSS(`#manage-group`)),
		chromedp.WaitVisible(chromedp.CSS(`#reset`)),
		chromedp.SendKeys(chromedp.CSS(`#reset-topic`), "a"),
		chromedp.SendKeys(chromedp.CSS(`#reset-to`), "latest"),
		chromedp.Click(chromedp.CSS(`#reset button`)),
	), "ga → manage → a dry run to latest")
	wait(`document.getElementById("reset-status").textContent !== ""`, "the dry run's answer")
	testutil.Equal(t, text(`#reset-status`), "Dry run: nothing changed.", "the dry run's answer")
	row, err := chromedp.Run(ctx, chromedp.Evaluate[string](`Array.from(document.querySelectorAll("#reset-result tbody td")).map(td => td.textContent).join("|")`))
	testutil.NoError(t, err, "read the dry run's table")
	testutil.Equal(t, row, "0|0|21", "the dry run's partition, old and new")
	adm := adminOf(t, tn)
	committed := func() int64 {
		t.Helper()
		o, err := adm.FetchOffsets(ctx0, "ga")
		testutil.NoError(t, err, "ga's offsets")
		r, _ := o.Lookup("a", 0)
		return r.At
	}
	testutil.Equal(t, committed(), int64(0), "ga's offset on a after the dry run")
	testutil.NoError(t, chromedp.Do(ctx,
		chromedp.Click(chromedp.CSS(`#reset-dry`)),
		chromedp.Click(chromedp.CSS(`#reset button`)),
	), "reset ga on a to latest")
	wait(`document.getElementById("reset-status").textContent.startsWith("Offsets")`, "the reset's answer")
	testutil.Equal(t, committed(), int64(21), "ga's offset on a after the reset")

	// Delete the created topic from its record page.
	testutil.NoError(t, chromedp.Do(ctx,
		chromedp.Navigate(base+"/topics/made-in-browser/records"),
		chromedp.WaitVisible(chromedp.CSS(`#delete-topic`)),
		chromedp.SendKeys(chromedp.CSS(`#delete-confirm`), "made-in-browser"),
		chromedp.Click(chromedp.CSS(`#delete-topic button`)),
	), "delete made-in-browser")
	wait(`document.getElementById("delete-result").textContent !== ""`, "the delete's answer")
	testutil.Equal(t, text(`#delete-result`), "Topic made-in-browser deleted.", "the delete's answer")
	testutil.Eventually(t, 10*time.Second, func() error {
		td, err := adm.ListTopics(ctx0, "made-in-browser")
		if err == nil && td.Has("made-in-browser") {
			err = errors.New("made-in-browser is still listed")
		}
		return err
	})
}
