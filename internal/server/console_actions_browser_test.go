package server_test

import (
	"context"
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
	bin := chromiumOrSkip(t)
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

	b := newBrowser(t, bin, base, 30*time.Second)
	// Sign in: the topic list redirects to the login page, which comes back to it.
	b.signIn("admin", "admin-pw", "/topics")
	b.do("the topic list after admin's sign-in", chromedp.WaitVisible(chromedp.CSS(`#topics`)))

	// Create a topic from the topic list.
	b.createTopic("made-in-browser", "2")
	b.wait(`location.pathname === "/topics/made-in-browser" && !!document.getElementById("partitions")`, "the created topic's page")
	parts, err := chromedp.Run(b.ctx, chromedp.Evaluate[int](`document.querySelectorAll("#partitions tbody tr").length`))
	testutil.NoError(t, err, "count the created topic's partitions")
	testutil.Equal(t, parts, 2, "the created topic's partitions")

	// Find order-7 on topic a's record page by its key; its value shown as JSON.
	b.do("topic a → its records",
		chromedp.Navigate(base+"/topics/a"),
		chromedp.Click(chromedp.CSS(`#browse-records`)),
		chromedp.WaitVisible(chromedp.CSS(`#browse`)),
	)
	key, value, headers := b.filterRecords("20", "order-7", "json")
	testutil.Equal(t, key, "order-7", "the found record's key")
	testutil.Equal(t, value, "{\n  \"id\": 7,\n  \"items\": [\n    \"x\",\n    \"y\"\n  ]\n}", "the found record's value as JSON")
	testutil.Equal(t, headers, "trace=t-7", "the found record's headers")

	// Produce from the page; a Kafka consumer reads it back exactly.
	testutil.Equal(t, b.produce("0", "from-browser", `{"made":"here"}`, "src=browser"), "Produced to partition 0 at offset 20.", "the produce's answer")
	cons, err := kgo.NewClient(kgo.SeedBrokers(tn.addr()),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{"a": {0: kgo.NewOffset().At(20)}}))
	testutil.NoError(t, err, "consumer")
	defer cons.Close()
	checkReadBack(t, ctx0, cons, "a/0 from 20", `from-browser|{"made":"here"}`, "src=browser")

	// Reset group ga on a: a dry run shows old and new and changes nothing, then the
	// reset itself moves the commit.
	b.do("ga → manage",
		chromedp.Navigate(base+"/groups/ga"),
		chromedp.Click(chromedp.CSS(`#manage-group`)),
		chromedp.WaitVisible(chromedp.CSS(`#reset`)),
	)
	b.reset("a dry run of ga on a to latest", "a", "latest", true)
	b.wait(`document.getElementById("reset-status").textContent !== ""`, "the dry run's answer")
	testutil.Equal(t, b.text(`#reset-status`), "Dry run: nothing changed.", "the dry run's answer")
	testutil.Equal(t, b.eval(`Array.from(document.querySelectorAll("#reset-result tbody td")).map(td => td.textContent).join("|")`),
		"0|0|21", "the dry run's partition, old and new")
	adm := adminOf(t, tn)
	testutil.Equal(t, committedAt(t, ctx0, adm, "ga", "a", 0), int64(0), "ga's offset on a after the dry run")
	b.do("reset ga on a to latest",
		chromedp.Click(chromedp.CSS(`#reset-dry`)),
		chromedp.Click(chromedp.CSS(`#reset button`)),
	)
	b.wait(`document.getElementById("reset-status").textContent.startsWith("Offsets")`, "the reset's answer")
	testutil.Equal(t, committedAt(t, ctx0, adm, "ga", "a", 0), int64(21), "ga's offset on a after the reset")

	// Delete the created topic from its record page.
	b.deleteTopic("made-in-browser")
	checkTopicGone(t, tn, "made-in-browser")
}
