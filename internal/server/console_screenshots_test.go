package server_test

import (
	"bytes"
	"context"
	"fmt"
	"image"
	"image/color/palette"
	"image/draw"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/runnel-io/runnel/internal/testutil"
)

// TestConsoleScreenshots writes the screenshots of docs/console.md: every page of the
// console on a SASL node with ACLs, some data, and a minute of traffic for the charts.
// It runs only when RUNNEL_SCREENSHOTS names the directory to write them to:
//
//	RUNNEL_SCREENSHOTS=$PWD/docs/img go test -run TestConsoleScreenshots ./internal/server/
//
// The PNGs are 1280x800, reduced to 256 colours to stay a few tens of KB.
func TestConsoleScreenshots(t *testing.T) {
	dir := os.Getenv("RUNNEL_SCREENSHOTS")
	if dir == "" {
		t.Skip("RUNNEL_SCREENSHOTS is not set: it names the directory the console's screenshots are written to (docs/img)")
	}
	bin := chromiumOrSkip(t)
	tn := securedConsoleNode(t)
	seedConsoleData(t, tn, 1)
	base := "http://" + tn.server().HTTPAddr().String()
	ctx0, cancel0 := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel0()
	adm := adminOf(t, tn)
	alice := "alice"
	_, err := adm.AlterClientQuotas(ctx0, []kadm.AlterClientQuotaEntry{
		{Entity: kadm.ClientQuotaEntity{{Type: "user", Name: &alice}}, Ops: []kadm.AlterClientQuotaOp{{Key: "producer_byte_rate", Value: 1 << 20}}},
		{Entity: kadm.ClientQuotaEntity{{Type: "client-id"}}, Ops: []kadm.AlterClientQuotaOp{{Key: "consumer_byte_rate", Value: 4 << 20}}},
	})
	testutil.NoError(t, err, "set the quotas")

	// A minute of traffic: orders grows, console-g consumes part of it, so the charts
	// have four samples.
	cl, err := kgo.NewClient(kgo.SeedBrokers(tn.addr()), kgo.ProducerLinger(0))
	testutil.NoError(t, err, "producer")
	defer cl.Close()
	stop := time.Now().Add(50 * time.Second)
	for i := 0; time.Now().Before(stop); i++ {
		var rs []*kgo.Record
		for j := range 20 + i%15 {
			rs = append(rs, &kgo.Record{Topic: "orders", Key: fmt.Appendf(nil, "order-%d", j), Value: fmt.Appendf(nil, `{"id":%d,"total":%d.50}`, i*100+j, j)})
		}
		testutil.NoError(t, cl.ProduceSync(ctx0, rs...).FirstErr(), "produce to orders")
		if i%20 == 0 {
			offs, err := adm.ListEndOffsets(ctx0, "orders")
			testutil.NoError(t, err, "orders' ends")
			commit := kadm.Offsets{}
			offs.Each(func(o kadm.ListedOffset) {
				commit.Add(kadm.Offset{Topic: o.Topic, Partition: o.Partition, At: o.Offset * 2 / 3, LeaderEpoch: -1})
			})
			testutil.NoError(t, adm.CommitAllOffsets(ctx0, "console-g", commit), "commit console-g")
		}
		time.Sleep(200 * time.Millisecond)
	}

	// The traffic took a minute of ctx0's three: the browser has the rest.
	b := newBrowser(t, bin, base, 2*time.Minute, chromedp.WindowSize(1280, 800), chromedp.Flag("hide-scrollbars", true))
	ctx := b.ctx
	shoot := func(name, path, ready string) {
		t.Helper()
		testutil.NoError(t, chromedp.Do(ctx, chromedp.Navigate(base+path), chromedp.WaitReady(chromedp.CSS(ready))), "open %s", path)
		// The scripts fill the records and charts after the page loads.
		deadline := time.Now().Add(5 * time.Second)
		for time.Now().Before(deadline) {
			done, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`Array.from(document.querySelectorAll("[data-chart-kind]")).every(e => e.dataset.loaded) &&
				(!document.getElementById("records") || document.querySelectorAll("#records tbody tr").length > 0)`))
			if err == nil && done {
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
		buf, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
		testutil.NoError(t, err, "screenshot %s", path)
		out := filepath.Join(dir, "console-"+name+".png")
		testutil.NoError(t, os.WriteFile(out, shrinkPNG(t, buf), 0o644), "write %s", out)
		t.Logf("%s: %s", path, out)
	}
	// The window's size includes the browser's frame: the page's is set here.
	testutil.NoError(t, chromedp.Do(ctx, chromedp.EmulateViewport(1280, 800)), "set the viewport to 1280x800")
	shoot("login", "/login", "input[name=username]")
	b.signIn("admin", "admin-pw", "/login")
	b.do("the page after admin's sign-in", chromedp.WaitVisible(chromedp.CSS(`h1`)))
	for _, p := range []struct{ name, path, ready string }{
		{"cluster", "/", "#nodes"}, {"nodes", "/nodes", "#nodes"}, {"node", "/nodes/1", "#node-configs"},
		{"topics", "/topics", "#topics"}, {"topic", "/topics/orders", "#partitions"}, {"records", "/topics/orders/records", "#records"},
		{"new-topic", "/new-topic", "#create-topic"}, {"groups", "/groups", "h1"}, {"group", "/groups/console-g", "#group-offsets"},
		{"group-manage", "/groups/console-g/manage", "#reset"}, {"reassignments", "/reassignments", "#reassignments"},
		{"mirrors", "/mirrors", "h1"}, {"acls", "/acls", "#acls"}, {"users", "/users", "#users"}, {"quotas", "/quotas", "#quotas"},
	} {
		shoot(p.name, p.path, p.ready)
	}
}

// shrinkPNG reduces a screenshot to the Plan 9 palette's 256 colours, compressed.
func shrinkPNG(t *testing.T, b []byte) []byte {
	t.Helper()
	img, err := png.Decode(bytes.NewReader(b))
	testutil.NoError(t, err, "decode the screenshot")
	pal := image.NewPaletted(img.Bounds(), palette.Plan9)
	draw.Draw(pal, img.Bounds(), img, image.Point{}, draw.Src)
	var out bytes.Buffer
	enc := png.Encoder{CompressionLevel: png.BestCompression}
	testutil.NoError(t, enc.Encode(&out, pal), "encode the screenshot")
	if !strings.HasPrefix(out.String(), "\x89PNG") {
		t.Fatal("not a PNG")
	}
	return out.Bytes()
}
