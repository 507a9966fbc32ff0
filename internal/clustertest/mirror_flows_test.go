package clustertest_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/runnel-io/runnel/internal/clustertest"
	"github.com/runnel-io/runnel/internal/testutil"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestMirrorProcessConfigFlowsAndLag runs one `runnel mirror run --config FILE`
// process with two flows (topic a as x.a, topic b as y.b, into the same target) and
// --http-listen. Each flow copies only its topic. With the target's only node paused
// (SIGSTOP) while records are produced, the process's /metrics and /status show each
// flow's lag in records (exactly what was produced meanwhile) and in seconds (growing
// while the pause lasts); once the target is resumed the lag falls to 0, and
// `runnel mirror status --json` on the target agrees.
func TestMirrorProcessConfigFlowsAndLag(t *testing.T) {
	t.Parallel() // the mirror tests mostly wait on sessions and timers: they overlap
	src := startCluster(t, 1)
	tgt := startCluster(t, 1)
	createTopic(t, src, "a", 1, 1)
	createTopic(t, src, "b", 1, 1)
	file := filepath.Join(t.TempDir(), "mirrors.json")
	cfg := fmt.Sprintf(`{"mirrors": [
  {"name": "fa", "source": %[1]q, "target": %[2]q, "topics": ["a"], "source_alias": "x"},
  {"name": "fb", "source": %[1]q, "target": %[2]q, "topics": ["b"], "source_alias": "y"}
]}`, src.Bootstrap(), tgt.Bootstrap())
	testutil.NoError(t, os.WriteFile(file, []byte(cfg), 0o644), "write the config file")
	httpAddr := testutil.FreeAddr(t)
	startMirrorProc(t, "--config", file, "--http-listen", httpAddr)

	produceTo(t, src, "a", 100)
	produceTo(t, src, "b", 100)
	waitMetrics(t, httpAddr, 60*time.Second, map[string]float64{
		`runnel_mirror_records_total{name="fa"}`: 100, `runnel_mirror_records_total{name="fb"}`: 100,
		`runnel_mirror_lag_records{name="fa"}`: 0, `runnel_mirror_lag_records{name="fb"}`: 0})
	td, err := tgt.Admin(t).ListTopics(context.Background())
	testutil.NoError(t, err, "list target topics")
	for _, name := range []string{"x.b", "y.a"} {
		if td.Has(name) {
			t.Fatalf("target has %s: a flow copied a topic it does not select", name)
		}
	}

	tgt.Pause(1)
	paused := true
	defer func() {
		if paused {
			tgt.Resume(1)
		}
	}()
	produceTo(t, src, "a", 300)
	produceTo(t, src, "b", 200)
	producedAt := time.Now()
	m := waitMetrics(t, httpAddr, 30*time.Second, map[string]float64{
		`runnel_mirror_lag_records{name="fa"}`: 300, `runnel_mirror_lag_records{name="fb"}`: 200})
	first := m[`runnel_mirror_lag_seconds{name="fa"}`]
	// Lag in seconds grows with the pause, with no commit on the target.
	testutil.Eventually(t, 20*time.Second, func() error {
		m, err := scrape(httpAddr)
		if err != nil {
			return err
		}
		for _, n := range []string{"fa", "fb"} {
			s := m[fmt.Sprintf(`runnel_mirror_lag_seconds{name=%q}`, n)]
			if s < time.Since(producedAt).Seconds()-1 || s < first+2 {
				return fmt.Errorf("flow %s lag %.2f s, %.1f s after the records were produced (first seen %.2f s)", n, s, time.Since(producedAt).Seconds(), first)
			}
		}
		return nil
	})
	var live []struct {
		Partitions []struct {
			Topic      string  `json:"topic"`
			LagRecords int64   `json:"lag_records"`
			LagSeconds float64 `json:"lag_seconds"`
		} `json:"partitions"`
	}
	body, err := mirrorHTTPGet(httpAddr, "/status")
	testutil.NoError(t, err, "/status")
	testutil.NoError(t, json.Unmarshal(body, &live), "/status JSON "+string(body))
	lag := map[string]int64{}
	for _, fl := range live {
		for _, p := range fl.Partitions {
			lag[p.Topic] = p.LagRecords
			if p.LagSeconds < 2 {
				t.Fatalf("/status: %s lag %.2f s while the target is paused", p.Topic, p.LagSeconds)
			}
		}
	}
	testutil.Equal(t, lag, map[string]int64{"a": 300, "b": 200}, "/status lag in records while the target is paused")

	tgt.Resume(1)
	paused = false
	waitMetrics(t, httpAddr, 60*time.Second, map[string]float64{
		`runnel_mirror_records_total{name="fa"}`: 400, `runnel_mirror_records_total{name="fb"}`: 300,
		`runnel_mirror_lag_records{name="fa"}`: 0, `runnel_mirror_lag_records{name="fb"}`: 0,
		`runnel_mirror_lag_seconds{name="fa"}`: 0, `runnel_mirror_lag_seconds{name="fb"}`: 0})
	for name, records := range map[string]int64{"fa": 400, "fb": 300} {
		out, err := exec.Command(mirrorBinary(t), "mirror", "status", "--target", tgt.Bootstrap(), "--name", name, "--json").CombinedOutput()
		testutil.NoError(t, err, "mirror status: "+string(out))
		var st struct {
			Partitions []struct {
				LagRecords int64 `json:"lag_records"`
				Records    int64 `json:"records"`
			} `json:"partitions"`
		}
		testutil.NoError(t, json.Unmarshal(out, &st), "status JSON "+string(out))
		if len(st.Partitions) != 1 || st.Partitions[0].LagRecords != 0 || st.Partitions[0].Records != records {
			t.Fatalf("mirror status of %s: %s; want one partition, lag 0, %d records", name, out, records)
		}
	}
}

func produceTo(t *testing.T, c *clustertest.Cluster, topic string, n int) {
	t.Helper()
	cl := c.Client(t, kgo.DefaultProduceTopic(topic))
	var rs []*kgo.Record
	for i := range n {
		rs = append(rs, &kgo.Record{Key: []byte(fmt.Sprint(i)), Value: []byte(fmt.Sprintf("%s-%d", topic, i))})
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	testutil.NoError(t, cl.ProduceSync(ctx, rs...).FirstErr(), "produce to "+topic)
}

func mirrorHTTPGet(addr, path string) ([]byte, error) {
	c := http.Client{Timeout: 5 * time.Second}
	resp, err := c.Get("http://" + addr + path)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	return io.ReadAll(resp.Body)
}

// scrape reads the mirror's /metrics and sums the runnel_mirror_* samples by metric
// and name label, keyed as `metric{name="N"}`.
func scrape(addr string) (map[string]float64, error) {
	body, err := mirrorHTTPGet(addr, "/metrics")
	if err != nil {
		return nil, err
	}
	out := map[string]float64{}
	for _, l := range strings.Split(string(body), "\n") {
		if !strings.HasPrefix(l, "runnel_mirror_") {
			continue
		}
		i, j := strings.IndexByte(l, '{'), strings.LastIndexByte(l, ' ')
		if i < 0 || j < i {
			continue
		}
		v, err := strconv.ParseFloat(l[j+1:], 64)
		if err != nil {
			continue
		}
		name := ""
		for _, kv := range strings.Split(l[i+1:strings.IndexByte(l, '}')], ",") {
			if k, val, _ := strings.Cut(kv, "="); k == "name" {
				name = strings.Trim(val, `"`)
			}
		}
		out[fmt.Sprintf("%s{name=%q}", l[:i], name)] += v
	}
	return out, nil
}

// waitMetrics waits until every sample in want has its value on /metrics, and
// returns the last scrape.
func waitMetrics(t *testing.T, addr string, d time.Duration, want map[string]float64) map[string]float64 {
	t.Helper()
	var m map[string]float64
	testutil.Eventually(t, d, func() error {
		var err error
		if m, err = scrape(addr); err != nil {
			return err
		}
		for k, v := range want {
			if got, ok := m[k]; !ok || got != v {
				return fmt.Errorf("/metrics %s = %v (present %v), want %v", k, got, ok, v)
			}
		}
		return nil
	})
	return m
}
