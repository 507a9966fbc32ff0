package server_test

import (
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/runnel-io/runnel/internal/console"
	"github.com/runnel-io/runnel/internal/testutil"
)

// The charts' endpoint on a real node: the node samples the cluster on its own (the
// first sample as soon as it serves clients), and a group's lag series holds the
// group's total lag, a topic's and a node's series are there with their points.
func TestConsoleCharts(t *testing.T) {
	tn := startCluster(t, 1)[0]
	seedConsoleData(t, tn, 1)
	var g console.ChartData
	testutil.Eventually(t, 20*time.Second, func() error {
		consoleJSON(t, tn, "/api/v1/charts?kind=group&name=console-g", &g)
		if len(g.Series) != 1 || g.Series[0].Metric != "lag" {
			return fmt.Errorf("group series %+v, want one, lag", g.Series)
		}
		pts := g.Series[0].Points
		if len(pts) == 0 || pts[len(pts)-1][1] == nil {
			return fmt.Errorf("group console-g's lag has no value yet: %d points", len(pts))
		}
		if got := *pts[len(pts)-1][1]; got != consoleLag {
			return fmt.Errorf("group console-g's lag is %v, want %d", got, consoleLag)
		}
		return nil
	})
	for _, q := range []string{"kind=topic&name=orders", "kind=node&name=1"} {
		var d console.ChartData
		consoleJSON(t, tn, "/api/v1/charts?"+q, &d)
		testutil.True(t, len(d.Series) == 4 && d.IntervalSeconds == 15, "%s: %d series every %d s, want 4 every 15 s", q, len(d.Series), d.IntervalSeconds)
		for _, s := range d.Series {
			testutil.True(t, len(s.Points) > 0, "%s: %s has no point", q, s.Metric)
		}
	}
	if code, _, body := consoleGet(t, tn, "/api/v1/charts?kind=broker&name=1"); code != http.StatusBadRequest {
		t.Errorf("an unknown kind: %d %s, want 400", code, body)
	}
}
