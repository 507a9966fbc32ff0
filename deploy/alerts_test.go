// Package deploy holds the monitoring files shipped with Runnel: the Prometheus alert
// rules (prometheus/runnel-alerts.yml) and the Grafana dashboard
// (grafana/runnel-dashboard.json), documented in docs/monitoring.md. It has no code:
// its tests check those files against live nodes.
package deploy

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/runnel-io/runnel/internal/cli"
	"github.com/runnel-io/runnel/internal/clustertest"
	"github.com/runnel-io/runnel/internal/testutil"
	"github.com/runnel-io/runnel/mirror"
)

const (
	rulesFile     = "prometheus/runnel-alerts.yml"
	dashboardFile = "grafana/runnel-dashboard.json"
	// The scrape jobs the rules and the dashboard expect (docs/monitoring.md).
	nodeJob   = "runnel"
	mirrorJob = "runnel-mirror"
	// evalTime is when promtool looks at the alerts: past every rule's `for` plus its
	// range window (10m + 10m for the lag rule), within the series' length.
	evalTime = 30 * time.Minute
	// steps is the number of one-minute samples each input series holds.
	steps = 40
)

// metricName is how the rules and the dashboard name Runnel's series.
var metricName = regexp.MustCompile(`runnel_[a-z_]+`)

// promtool returns the path of promtool. It skips the test where promtool is missing,
// except in CI (CI=true), where scripts/install-deps.sh installs it and its absence
// is a failure.
func promtool(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("promtool")
	if err == nil {
		return p
	}
	if os.Getenv("CI") == "true" {
		t.Fatal("promtool is not on PATH; in CI scripts/install-deps.sh installs it (Debian's prometheus package)")
	}
	testutil.Missing(t, "promtool is not on PATH (Debian: apt-get install --no-install-recommends prometheus; scripts/install-deps.sh does it)")
	return ""
}

// TestAlertRulesAreValid: promtool parses the rules file (expressions, durations,
// annotation templates).
func TestAlertRulesAreValid(t *testing.T) {
	pt := promtool(t)
	if out, err := exec.Command(pt, "check", "rules", rulesFile).CombinedOutput(); err != nil {
		t.Fatalf("promtool check rules %s: %v\n%s", rulesFile, err, out)
	}
}

// TestDashboardQueriesParse: every query of the dashboard is PromQL that promtool
// accepts, once Grafana's variables are replaced by values they may take.
func TestDashboardQueriesParse(t *testing.T) {
	pt := promtool(t)
	vars := strings.NewReplacer("$__rate_interval", "1m", "$job", nodeJob, "$mirror_job", mirrorJob, "$topic", ".*", "$group", ".*")
	var b strings.Builder
	b.WriteString("groups:\n  - name: dashboard\n    rules:\n")
	exprs := dashboardExprs(t)
	for i, e := range exprs {
		fmt.Fprintf(&b, "      - record: dashboard_query_%d\n        expr: %s\n", i, quote(vars.Replace(e)))
	}
	file := filepath.Join(t.TempDir(), "dashboard-queries.yml")
	testutil.NoError(t, os.WriteFile(file, []byte(b.String()), 0o644), "write the queries")
	if out, err := exec.Command(pt, "check", "rules", file).CombinedOutput(); err != nil {
		t.Fatalf("%s: promtool refuses a query (%v):\n%s", dashboardFile, err, out)
	}
	t.Logf("%d queries of %s parse", len(exprs), dashboardFile)
}

// TestAlertsFireOnLiveNodes puts live nodes into each state an alert is about, scrapes
// their /metrics, and has promtool evaluate the rules file on series built from the
// scrapes: each alert must fire, with the labels naming the node, group, topic,
// partition, link or mirror, in its state, and none on the healthy cluster. Along
// the way runnel_consumer_group_lag must equal kadm's lag of a group that stopped
// consuming while records kept coming, and runnel_offline_partitions must rise when
// every replica of a partition is down. Finally every Runnel metric the rules and the
// dashboard name must be among those the scrapes saw.
func TestAlertsFireOnLiveNodes(t *testing.T) {
	pt := promtool(t)
	seen := map[string]bool{}
	var states int // subtests that went through every state
	t.Run("cluster", func(t *testing.T) { clusterStates(t, pt, seen); states++ })
	t.Run("links", func(t *testing.T) { linkAndMirrorStates(t, pt, seen); states++ })
	if t.Failed() || states < 2 {
		return // the names are checked against the scrapes of every state
	}
	rulesText, err := os.ReadFile(rulesFile)
	testutil.NoError(t, err, "read the rules")
	checkNames(t, rulesFile, metricName.FindAllString(string(rulesText), -1), seen)
	checkNames(t, dashboardFile, dashboardMetrics(t), seen)
}

// clusterStates runs a 3-node cluster through: healthy, a consumer group falling
// behind, a nearly full then full disk (where the test may mount a filesystem), a
// node down.
func clusterStates(t *testing.T, pt string, seen map[string]bool) {
	// Each node's data directory on a small filesystem of its own where the test can
	// mount one (diskDirs[id]), so that the disk node can be one that is not the
	// active controller when its disk fills.
	diskDirs := map[int32]string{}
	c := clustertest.Start(t, clustertest.Options{Nodes: 3, InProcess: true, Sets: clustertest.FastFailureDetection, StartTimeout: 30 * time.Second,
		Prepare: func(n *clustertest.Node) error {
			if d := smallDisk(t, n.DataDir); d != "" {
				diskDirs[n.ID] = d
			}
			return nil
		}})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	adm := c.Admin(t)
	str := func(s string) *string { return &s }
	// events: one replica out leaves it at min ISR; strict: under it; solo: one
	// replica per partition, so a partition has none left when its node goes.
	for _, tc := range []struct {
		topic      string
		partitions int32
		rf         int16
		minISR     string
	}{{"events", 3, 3, "2"}, {"strict", 1, 3, "3"}, {"solo", 3, 1, "1"}, {"orders", 1, 3, "1"}} {
		_, err := adm.CreateTopic(ctx, tc.partitions, tc.rf, map[string]*string{"min.insync.replicas": str(tc.minISR)}, tc.topic)
		testutil.NoError(t, err, "create topic "+tc.topic)
	}
	targets := make([]target, 3)
	for i := range targets {
		targets[i] = target{instance: c.Node(i + 1).HTTPAddr, job: nodeJob, url: "http://" + c.Node(i+1).HTTPAddr + "/metrics"}
	}
	inst := func(id int) string { return c.Node(id).HTTPAddr }

	// Healthy: no alert fires.
	cl := c.Client(t)
	produce(t, cl, "orders", 1300)
	waitFor(t, targets, "the cluster's metrics settled (every ISR full, no partition offline)", func(r round) error {
		if v := r.sum("runnel_under_replicated_partitions", nil); v != 0 {
			return fmt.Errorf("%v under-replicated partitions", v)
		}
		if v := r.sum("runnel_offline_partitions", nil); v != 0 {
			return fmt.Errorf("runnel_offline_partitions %v", v)
		}
		return nil
	})
	healthy := scrapeTwice(t, targets, seen, time.Second)
	promtoolTest(t, pt, "healthy", healthy, nil, nil)

	// A group that consumed 200 records, committed and stopped while the producers go
	// on: its lag is kadm's, and grows.
	stopped := "stopped"
	consumer := c.Client(t, kgo.ConsumerGroup(stopped), kgo.ConsumeTopics("orders"), kgo.DisableAutoCommit())
	pollCtx, pollCancel := context.WithTimeout(ctx, 20*time.Second)
	for n := 0; n == 0; {
		fs := consumer.PollFetches(pollCtx)
		if err := fs.Err0(); err != nil {
			t.Fatalf("group %s polling orders: %v", stopped, err)
		}
		n = fs.NumRecords()
	}
	pollCancel()
	var commitErr error
	consumer.CommitOffsetsSync(ctx, map[string]map[int32]kgo.EpochOffset{"orders": {0: {Epoch: -1, Offset: 200}}},
		func(_ *kgo.Client, _ *kmsg.OffsetCommitRequest, resp *kmsg.OffsetCommitResponse, err error) {
			for _, tr := range resp.Topics {
				for _, pr := range tr.Partitions {
					err = errors.Join(err, kerr.ErrorForCode(pr.ErrorCode))
				}
			}
			commitErr = err
		})
	testutil.NoError(t, commitErr, "commit offset 200 of orders-0 for group "+stopped)
	consumer.Close()
	lag1 := waitLagIsKadms(t, adm, targets, stopped)
	first := scrapeOnce(t, targets, seen)
	produce(t, cl, "orders", 500)
	lag2 := waitLagIsKadms(t, adm, targets, stopped)
	if lag2 != lag1+500 {
		t.Fatalf("group %s: lag %d after 500 more records, was %d", stopped, lag2, lag1)
	}
	second := scrapeOnce(t, targets, seen)
	t.Logf("group %q, stopped: runnel_consumer_group_lag equals kadm's lag, %d, then %d after 500 more records", stopped, lag1, lag2)
	coordinator := ""
	for _, s := range second.samples {
		if s.name == "runnel_consumer_group_lag" && s.labels["group"] == stopped {
			coordinator = s.labels["instance"]
		}
	}
	promtoolTest(t, pt, "lag growing", phase{first, second}, []string{"runnel_consumer_group_lag"}, []alert{
		{"RunnelConsumerLagGrowing", "warning", map[string]string{"group": stopped, "topic": "orders", "partition": "0", "instance": coordinator, "job": nodeJob}},
	})

	// A nearly full disk: the filesystem mounted on a node's data directory filled to
	// 95 %.
	if len(diskDirs) == 3 {
		diskNode, diskDir := nodeToFill(t, targets, diskDirs)
		filler := filepath.Join(diskDir, "filler")
		fillTo(t, diskDir, filler, 0.95)
		full := scrapeTwice(t, targets, seen, time.Second)
		abs, _ := filepath.Abs(diskDir)
		usable, _ := full[1].find("runnel_disk_usable_bytes", map[string]string{"dir": abs})
		total, _ := full[1].find("runnel_disk_total_bytes", map[string]string{"dir": abs})
		t.Logf("node %d's data directory filled: runnel_disk_usable_bytes %v of runnel_disk_total_bytes %v", diskNode, usable, total)
		nearlyFull := alert{"RunnelDiskNearlyFull", "warning", map[string]string{"dir": abs, "instance": inst(diskNode), "job": nodeJob}}
		promtoolTest(t, pt, "disk nearly full", full, nil, []alert{nearlyFull})

		// Then full: the rest taken while records come, so that the node's appends
		// fail; it leaves the ISRs, which the partitions' leaders report.
		rest := filepath.Join(diskDir, "rest")
		fillDisk(t, rest)
		loader := c.Client(t)
		waitFor(t, targets, fmt.Sprintf("node %d's appends finding its disk full", diskNode), func(r round) error {
			loader.Produce(ctx, &kgo.Record{Topic: "events", Value: make([]byte, 1024)}, nil)
			if v := r.value("runnel_disk_full", inst(diskNode)); v != 1 {
				return fmt.Errorf("node %d: runnel_disk_full %v", diskNode, v)
			}
			return nil
		})
		full = scrapeTwice(t, targets, seen, time.Second)
		want := append([]alert{nearlyFull, {"RunnelDiskFull", "critical", map[string]string{"instance": inst(diskNode), "job": nodeJob}}},
			partitionAlerts(full[1])...)
		promtoolTest(t, pt, "disk full", full, nil, want)
		testutil.NoError(t, errors.Join(os.Remove(filler), os.Remove(rest)), "remove the fillers")
		waitFor(t, targets, fmt.Sprintf("node %d back in every ISR with room on its disk", diskNode), func(r round) error {
			if v := r.value("runnel_disk_full", inst(diskNode)); v != 0 {
				return fmt.Errorf("node %d: runnel_disk_full %v", diskNode, v)
			}
			if v := r.sum("runnel_under_replicated_partitions", nil); v != 0 {
				return fmt.Errorf("%v under-replicated partitions", v)
			}
			return nil
		})
	}

	// Node 3 down: its solo partition is offline, the others lose a replica.
	md, err := adm.Metadata(ctx, "solo")
	testutil.NoError(t, err, "metadata of solo")
	onNode3 := -1
	for _, p := range md.Topics["solo"].Partitions.Sorted() {
		if slices.Equal(p.Replicas, []int32{3}) {
			onNode3 = int(p.Partition)
		}
	}
	if onNode3 < 0 {
		t.Fatalf("no partition of solo has node 3 as its only replica: %+v", md.Topics["solo"].Partitions)
	}
	c.Kill(3)
	live := targets[:2]
	waitFor(t, live, "node 3's absence in the metrics (offline, under min ISR, fenced)", func(r round) error {
		var problems []string
		if v := r.sum("runnel_offline_partitions", nil); v < 1 {
			problems = append(problems, fmt.Sprintf("runnel_offline_partitions %v (solo-%d is on node 3 alone)", v, onNode3))
		}
		if v := r.sum("runnel_under_min_isr_partitions", nil); v < 1 {
			problems = append(problems, fmt.Sprintf("runnel_under_min_isr_partitions %v (strict needs 3 in sync)", v))
		}
		if v := r.sum("runnel_at_min_isr_partitions", nil); v < 1 {
			problems = append(problems, fmt.Sprintf("runnel_at_min_isr_partitions %v (events needs 2 in sync)", v))
		}
		if v := r.max("runnel_controller_fenced_brokers"); v < 1 {
			problems = append(problems, fmt.Sprintf("runnel_controller_fenced_brokers %v", v))
		}
		return errIf(problems)
	})
	down := scrapeTwice(t, targets, seen, time.Second)
	t.Logf("node 3 down: runnel_offline_partitions %v, under-replicated %v, under min ISR %v, at min ISR %v, fenced brokers %v",
		down[1].sum("runnel_offline_partitions", nil), down[1].sum("runnel_under_replicated_partitions", nil),
		down[1].sum("runnel_under_min_isr_partitions", nil), down[1].sum("runnel_at_min_isr_partitions", nil),
		down[1].max("runnel_controller_fenced_brokers"))
	want := []alert{
		{"RunnelNodeDown", "critical", map[string]string{"instance": inst(3), "job": nodeJob}},
		{"RunnelOfflinePartitions", "critical", map[string]string{"job": nodeJob}},
		{"RunnelBrokerFenced", "warning", map[string]string{"job": nodeJob}},
	}
	want = append(want, partitionAlerts(down[1])...)
	promtoolTest(t, pt, "node 3 down", down, nil, want)
}

// nodeToFill picks the node whose disk the test fills: node 1 or 2 (node 3 is killed
// later), not the active controller. The metadata quorum's Raft leader must write
// every entry to its own log first: on a full disk it could commit nothing, not even
// the ISR changes of the node's partitions, and the state would not be the one the
// alerts are about.
func nodeToFill(t *testing.T, targets []target, dirs map[int32]string) (int, string) {
	t.Helper()
	var id int
	waitFor(t, targets, "an active controller", func(r round) error {
		for i := 1; i <= 3; i++ {
			if r.value("runnel_controller_active", targets[i-1].instance) == 1 {
				id = 1 + i%2 // 1 → 2, 2 → 1, 3 → 1
				return nil
			}
		}
		return errors.New("no node has runnel_controller_active 1")
	})
	return id, dirs[int32(id)]
}

// partitionAlerts are the alerts on the partitions a node leads that r calls for:
// under-replicated, under min ISR, and at min ISR while under-replicated.
func partitionAlerts(r round) []alert {
	var out []alert
	for _, s := range r.samples {
		if s.value <= 0 {
			continue
		}
		lbl := map[string]string{"instance": s.labels["instance"], "job": nodeJob}
		switch s.name {
		case "runnel_under_replicated_partitions":
			out = append(out, alert{"RunnelUnderReplicatedPartitions", "warning", lbl})
			if r.value("runnel_at_min_isr_partitions", s.labels["instance"]) > 0 {
				out = append(out, alert{"RunnelAtMinISR", "warning", lbl})
			}
		case "runnel_under_min_isr_partitions":
			out = append(out, alert{"RunnelUnderMinISR", "critical", lbl})
		}
	}
	return out
}

// linkAndMirrorStates: a cluster link and a `runnel mirror` from a source cluster
// (kfake) fall behind: the link's source goes away, the mirror's target does.
func linkAndMirrorStates(t *testing.T, pt string, seen map[string]bool) {
	src, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "clicks"))
	testutil.NoError(t, err, "start the source (kfake)")
	closed := false
	t.Cleanup(func() {
		if !closed {
			src.Close()
		}
	})
	sets := []string{"num.partitions=1", "default.replication.factor=1", "offsets.topic.replication.factor=1",
		"transaction.state.log.replication.factor=1", "transaction.state.log.min.isr=1"}
	dst := clustertest.Start(t, clustertest.Options{Nodes: 1, InProcess: true, Sets: sets, StartTimeout: 30 * time.Second})
	tgt := clustertest.Start(t, clustertest.Options{Nodes: 1, InProcess: true, Sets: sets, StartTimeout: 30 * time.Second})
	srcCl, err := kgo.NewClient(kgo.SeedBrokers(src.ListenAddrs()...))
	testutil.NoError(t, err, "source client")
	defer srcCl.Close()
	produce(t, srcCl, "clicks", 10)

	runCLI(t, "link", "create", "dr", "--source", strings.Join(src.ListenAddrs(), ","), "-b", dst.Bootstrap())
	m, err := mirror.New(mirror.Config{Name: "west", Source: src.ListenAddrs(), Target: []string{tgt.Bootstrap()}, Topics: []string{"clicks"},
		TopicRefresh: 300 * time.Millisecond, Logger: slog.New(slog.DiscardHandler)})
	testutil.NoError(t, err, "mirror west")
	mctx, stopMirror := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = m.Run(mctx) }()
	defer func() {
		stopMirror()
		select { // with its target down the mirror may take a while to give up
		case <-done:
		case <-time.After(5 * time.Second):
		}
	}()
	ms := httptest.NewServer(promhttp.HandlerFor(m.Registry(), promhttp.HandlerOpts{}))
	defer ms.Close()
	targets := []target{
		{instance: dst.Node(1).HTTPAddr, job: nodeJob, url: "http://" + dst.Node(1).HTTPAddr + "/metrics"},
		{instance: strings.TrimPrefix(ms.URL, "http://"), job: mirrorJob, url: ms.URL + "/metrics"},
	}
	caughtUp := func(r round) error {
		var problems []string
		if v, ok := r.find("runnel_link_lag_records", map[string]string{"link": "dr", "topic": "clicks"}); !ok || v != 0 {
			problems = append(problems, fmt.Sprintf("link dr: runnel_link_lag_records %v (exported: %v)", v, ok))
		}
		if v, ok := r.find("runnel_mirror_records_total", map[string]string{"name": "west", "topic": "clicks"}); !ok || v != 10 {
			problems = append(problems, fmt.Sprintf("mirror west: runnel_mirror_records_total %v (exported: %v)", v, ok))
		}
		return errIf(problems)
	}
	waitFor(t, targets, "link dr and mirror west caught up with clicks", caughtUp)
	throttle(t, dst, targets[0])
	healthy := scrapeTwice(t, targets, seen, time.Second)
	promtoolTest(t, pt, "link and mirror caught up", healthy, nil, nil)

	// The mirror's target goes down and records keep coming: the mirror falls behind
	// (the link, whose source is up, copies them).
	if err := tgt.Stop(1); err != nil {
		t.Logf("stopping the mirror's target: %v", err)
	}
	produce(t, srcCl, "clicks", 5)
	waitFor(t, targets, "mirror west behind with its target down, link dr caught up", func(r round) error {
		var problems []string
		if v, _ := r.find("runnel_mirror_lag_seconds", map[string]string{"name": "west"}); v <= 0 {
			problems = append(problems, fmt.Sprintf("mirror west: runnel_mirror_lag_seconds %v", v))
		}
		if v, _ := r.find("runnel_link_lag_records", map[string]string{"link": "dr"}); v != 0 {
			problems = append(problems, fmt.Sprintf("link dr: runnel_link_lag_records %v", v))
		}
		return errIf(problems)
	})
	mirrorBehind := scrapeTwice(t, targets, seen, 2*time.Second)
	promtoolTest(t, pt, "mirror behind", mirrorBehind, []string{"runnel_mirror_lag_seconds"}, []alert{
		{"RunnelMirrorLag", "warning", map[string]string{"name": "west", "topic": "clicks", "partition": "0", "instance": targets[1].instance, "job": mirrorJob}},
	})

	// The link's source goes away: the link is behind by the time since its last
	// fetch. (The mirror, which lost its source too, is no longer scraped.)
	src.Close()
	closed = true
	waitFor(t, targets[:1], "link dr behind with its source down", func(r round) error {
		if v, _ := r.find("runnel_link_lag_seconds", map[string]string{"link": "dr"}); v < 1 {
			return fmt.Errorf("runnel_link_lag_seconds %v", v)
		}
		return nil
	})
	linkBehind := scrapeTwice(t, targets[:1], seen, 2*time.Second)
	promtoolTest(t, pt, "link behind", linkBehind, []string{"runnel_link_lag_seconds"}, []alert{
		{"RunnelLinkLag", "warning", map[string]string{"link": "dr", "topic": "clicks", "partition": "0", "instance": targets[0].instance, "job": nodeJob}},
	})
}

// throttle has a client exceed a produce quota on dst, for the throttle metrics the
// dashboard charts (a counter vector has no series before its first count).
func throttle(t *testing.T, dst *clustertest.Cluster, node target) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, err := dst.Admin(t).CreateTopic(ctx, 1, 1, nil, "throttled")
	testutil.NoError(t, err, "create topic throttled")
	runCLI(t, "quota", "alter", "-b", dst.Bootstrap(), "--client-id", "throttled", "--set", "producer_byte_rate=1024")
	cl := dst.Client(t, kgo.ClientID("throttled"))
	waitFor(t, []target{node}, "client throttled over its produce quota", func(r round) error {
		cl.Produce(ctx, &kgo.Record{Topic: "throttled", Value: make([]byte, 16<<10)}, nil)
		if v, _ := r.find("runnel_throttle_time_seconds_total", map[string]string{"client_id": "throttled"}); v <= 0 {
			return fmt.Errorf("runnel_throttle_time_seconds_total{client_id=\"throttled\"} %v", v)
		}
		return nil
	})
}

// runCLI runs `runnel ARGS...`; a non-zero exit fails the test.
func runCLI(t *testing.T, args ...string) {
	t.Helper()
	var out, errb bytes.Buffer
	if code := cli.MainIO(args, strings.NewReader(""), &out, &errb); code != 0 {
		t.Fatalf("runnel %s: exit %d: %s%s", strings.Join(args, " "), code, errb.String(), out.String())
	}
}

// target is a /metrics endpoint as Prometheus would scrape it.
type target struct{ instance, job, url string }

// sample is one series of a scrape, with the instance and job labels a scrape adds.
type sample struct {
	name   string
	labels map[string]string
	value  float64
}

// round is one scrape of every target.
type round struct {
	at      time.Time
	samples []sample
}

// phase is two rounds of one state, a little time apart.
type phase [2]round

func (r round) find(name string, match map[string]string) (float64, bool) {
	for _, s := range r.samples {
		if s.name == name && matches(s.labels, match) {
			return s.value, true
		}
	}
	return 0, false
}

func (r round) sum(name string, match map[string]string) float64 {
	v := 0.0
	for _, s := range r.samples {
		if s.name == name && matches(s.labels, match) {
			v += s.value
		}
	}
	return v
}

func (r round) max(name string) float64 {
	v := math.Inf(-1)
	for _, s := range r.samples {
		if s.name == name {
			v = math.Max(v, s.value)
		}
	}
	return v
}

func (r round) value(name, instance string) float64 {
	v, _ := r.find(name, map[string]string{"instance": instance})
	return v
}

func matches(labels, match map[string]string) bool {
	for k, v := range match {
		if labels[k] != v {
			return false
		}
	}
	return true
}

// scrapeOnce scrapes every target; one that does not answer has up 0.
func scrapeOnce(t *testing.T, targets []target, seen map[string]bool) round {
	t.Helper()
	r := round{at: time.Now()}
	for _, tg := range targets {
		fams, err := scrape(tg.url)
		up := 1.0
		if err != nil {
			up = 0
		}
		r.samples = append(r.samples, sample{"up", map[string]string{"instance": tg.instance, "job": tg.job}, up})
		for name, f := range fams {
			for _, m := range f.GetMetric() {
				lbl := map[string]string{"instance": tg.instance, "job": tg.job}
				for _, lp := range m.GetLabel() {
					lbl[lp.GetName()] = lp.GetValue()
				}
				switch f.GetType() {
				case dto.MetricType_GAUGE:
					r.samples = append(r.samples, sample{name, lbl, m.GetGauge().GetValue()})
				case dto.MetricType_COUNTER:
					r.samples = append(r.samples, sample{name, lbl, m.GetCounter().GetValue()})
				case dto.MetricType_UNTYPED:
					r.samples = append(r.samples, sample{name, lbl, m.GetUntyped().GetValue()})
				case dto.MetricType_HISTOGRAM:
					// No rule reads a histogram: only its names are kept.
					seen[name+"_bucket"], seen[name+"_sum"], seen[name+"_count"] = true, true, true
				}
				seen[name] = true
			}
		}
	}
	return r
}

func scrape(url string) (map[string]*dto.MetricFamily, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(resp.Body)
		return nil, fmt.Errorf("GET %s: %s: %s", url, resp.Status, body)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	return parser.TextToMetricFamilies(resp.Body)
}

func scrapeTwice(t *testing.T, targets []target, seen map[string]bool, gap time.Duration) phase {
	t.Helper()
	first := scrapeOnce(t, targets, seen)
	time.Sleep(gap) // the gap is what the growing series' rates are measured over
	return phase{first, scrapeOnce(t, targets, seen)}
}

// waitFor scrapes targets until cond holds, for at most 30 s.
func waitFor(t *testing.T, targets []target, what string, cond func(round) error) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		err := cond(scrapeOnce(t, targets, map[string]bool{}))
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("waiting 30s for %s: %v", what, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// waitLagIsKadms waits until the cluster's runnel_consumer_group_lag of group (summed
// over the nodes: only its coordinator exports it) equals, partition by partition,
// the lag kadm computes, and returns the group's total lag.
func waitLagIsKadms(t *testing.T, adm *kadm.Client, targets []target, group string) int64 {
	t.Helper()
	var total int64
	waitFor(t, targets, "runnel_consumer_group_lag of group "+group+" to equal kadm's lag", func(r round) error {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		lags, err := adm.Lag(ctx, group)
		if err != nil {
			return err
		}
		gl, ok := lags[group]
		if !ok || gl.Error() != nil {
			return fmt.Errorf("kadm lag of %s: %v", group, gl.Error())
		}
		var problems []string
		total = 0
		for _, l := range gl.Lag.Sorted() {
			got := r.sum("runnel_consumer_group_lag", map[string]string{"group": group, "topic": l.Topic, "partition": strconv.Itoa(int(l.Partition))})
			if got != float64(l.Lag) {
				problems = append(problems, fmt.Sprintf("%s-%d: runnel_consumer_group_lag %v, kadm %d", l.Topic, l.Partition, got, l.Lag))
			}
			total += l.Lag
		}
		if total == 0 {
			problems = append(problems, "kadm sees no lag yet")
		}
		return errIf(problems)
	})
	return total
}

func produce(t *testing.T, cl *kgo.Client, topic string, n int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	recs := make([]*kgo.Record, n)
	for i := range recs {
		recs[i] = &kgo.Record{Topic: topic, Value: fmt.Appendf(nil, "record %d", i)}
	}
	testutil.NoError(t, cl.ProduceSync(ctx, recs...).FirstErr(), fmt.Sprintf("produce %d records to %s", n, topic))
}

// smallDisk mounts a 64 MiB tmpfs on dir and returns dir; "" where the test cannot
// mount one (not root, no tmpfs), which leaves the disk alerts' firing unchecked.
func smallDisk(t *testing.T, dir string) string {
	if os.Geteuid() != 0 {
		t.Log("not root: no small filesystem to fill, so RunnelDiskNearlyFull and RunnelDiskFull are checked not to fire only")
		return ""
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=64m", "tmpfs", dir).CombinedOutput(); err != nil {
		t.Logf("cannot mount a tmpfs on %s (%v: %s): RunnelDiskNearlyFull and RunnelDiskFull are checked not to fire only", dir, err, out)
		return ""
	}
	t.Cleanup(func() { _ = exec.Command("umount", "-l", dir).Run() })
	return dir
}

// fillTo writes path until dir's filesystem is the fraction used.
func fillTo(t *testing.T, dir, path string, used float64) {
	t.Helper()
	var st syscall.Statfs_t
	testutil.NoError(t, syscall.Statfs(dir, &st), "statfs "+dir)
	unit := int64(st.Frsize)
	total := int64(st.Blocks-st.Bfree)*unit + int64(st.Bavail)*unit
	n := int64(st.Bavail)*unit - int64((1-used)*float64(total))
	if n <= 0 {
		t.Fatalf("%s is already %.0f %% used", dir, 100*float64(total-int64(st.Bavail)*unit)/float64(total))
	}
	testutil.NoError(t, os.WriteFile(path, make([]byte, n), 0o644), "fill "+dir)
}

// fillDisk writes path until its filesystem has no room left, down to the last page.
func fillDisk(t *testing.T, path string) {
	t.Helper()
	f, err := os.Create(path)
	testutil.NoError(t, err, "create "+path)
	defer f.Close()
	for _, size := range []int{1 << 20, 64 << 10, 4 << 10} {
		chunk := make([]byte, size)
		for {
			if _, err := f.Write(chunk); err != nil {
				if !errors.Is(err, syscall.ENOSPC) {
					t.Fatalf("filling %s: %v", path, err)
				}
				break
			}
		}
	}
}

// alert is one firing alert promtool must find: its name, severity and the labels
// of its expression's result.
type alert struct {
	name, severity string
	labels         map[string]string
}

// promtoolTest has promtool evaluate the rules on the phase's series and checks that
// exactly the alerts want are firing at evalTime. Every series holds its value of the
// second round for steps minutes, but those named in grow, which go on at the rate
// measured between the two rounds (a lag that grew in the seconds between two scrapes
// keeps growing for as long as its state lasts, which the rules' `for` cannot be made
// to wait for here).
func promtoolTest(t *testing.T, pt, name string, p phase, grow []string, want []alert) {
	t.Helper()
	var b strings.Builder
	abs, err := filepath.Abs(rulesFile)
	testutil.NoError(t, err, "rules path")
	fmt.Fprintf(&b, "rule_files: [%s]\nevaluation_interval: 1m\ntests:\n  - interval: 1m\n    input_series:\n", quote(abs))
	elapsed := p[1].at.Sub(p[0].at).Seconds()
	firstValues := map[string]float64{}
	for _, s := range p[0].samples {
		firstValues[selector(s.name, s.labels)] = s.value
	}
	var series []string
	for _, s := range p[1].samples {
		sel := selector(s.name, s.labels)
		values := fmt.Sprintf("%sx%d", num(s.value), steps)
		if v0, ok := firstValues[sel]; ok && slices.Contains(grow, s.name) && elapsed > 0 {
			if step := (s.value - v0) / elapsed * 60; step != 0 {
				sign := "+"
				if step < 0 {
					sign = ""
				}
				values = fmt.Sprintf("%s%s%sx%d", num(s.value), sign, num(step), steps)
			}
		}
		series = append(series, fmt.Sprintf("      - series: %s\n        values: %s\n", quote(sel), quote(values)))
	}
	sort.Strings(series)
	b.WriteString(strings.Join(series, ""))
	fmt.Fprintf(&b, "    promql_expr_test:\n      - expr: 'ALERTS{alertstate=\"firing\"}'\n        eval_time: %s\n        exp_samples:", model.Duration(evalTime))
	if len(want) == 0 {
		b.WriteString(" []\n")
	} else {
		b.WriteString("\n")
	}
	for _, a := range want {
		lbl := maps.Clone(a.labels)
		lbl["alertname"], lbl["alertstate"], lbl["severity"] = a.name, "firing", a.severity
		fmt.Fprintf(&b, "          - labels: %s\n            value: 1\n", quote(selector("ALERTS", lbl)))
	}
	file := filepath.Join(t.TempDir(), strings.ReplaceAll(name, " ", "-")+".yml")
	testutil.NoError(t, os.WriteFile(file, []byte(b.String()), 0o644), "write the promtool test")
	out, err := exec.Command(pt, "test", "rules", file).CombinedOutput()
	var names []string
	for _, a := range want {
		names = append(names, a.name)
	}
	if err == nil {
		t.Logf("%s: promtool finds exactly %v firing", name, names)
	} else {
		t.Errorf("%s: the alerts firing are not %v (promtool test rules %s: %v):\n%s", name, names, file, err, out)
		if os.Getenv("KEEP_PROMTOOL_TESTS") != "" {
			t.Logf("%s", b.String())
		}
	}
}

// selector writes a series as PromQL does: name{label="value",...}, labels sorted.
func selector(name string, labels map[string]string) string {
	keys := slices.Sorted(maps.Keys(labels))
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		parts = append(parts, k+"="+strconv.Quote(labels[k]))
	}
	return name + "{" + strings.Join(parts, ",") + "}"
}

// quote is a YAML single-quoted scalar.
func quote(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }

func num(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }

func errIf(problems []string) error {
	if len(problems) == 0 {
		return nil
	}
	return errors.New(strings.Join(problems, "; "))
}

// dashboardMetrics returns the Runnel metric names the dashboard's queries (the
// panels' and the variables') use.
func dashboardMetrics(t *testing.T) []string {
	t.Helper()
	var names []string
	for _, q := range dashboardStrings(t, "expr", "query", "definition") {
		names = append(names, metricName.FindAllString(q, -1)...)
	}
	if len(names) == 0 {
		t.Fatalf("%s names no Runnel metric", dashboardFile)
	}
	return names
}

// dashboardExprs returns the PromQL of the dashboard's panels.
func dashboardExprs(t *testing.T) []string {
	t.Helper()
	exprs := dashboardStrings(t, "expr")
	if len(exprs) < 10 {
		t.Fatalf("%s: %d queries; is it the dashboard?", dashboardFile, len(exprs))
	}
	return exprs
}

// dashboardStrings parses the dashboard and returns every string under one of keys,
// at any depth.
func dashboardStrings(t *testing.T, keys ...string) []string {
	t.Helper()
	raw, err := os.ReadFile(dashboardFile)
	testutil.NoError(t, err, "read the dashboard")
	var d any
	if err := json.Unmarshal(raw, &d); err != nil {
		t.Fatalf("%s is not valid JSON: %v", dashboardFile, err)
	}
	var out []string
	var walk func(v any)
	walk = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			for k, x := range v {
				if s, ok := x.(string); ok && slices.Contains(keys, k) {
					out = append(out, s)
				}
				walk(x)
			}
		case []any:
			for _, x := range v {
				walk(x)
			}
		}
	}
	walk(d)
	return out
}

// checkNames fails for each name no scrape exported.
func checkNames(t *testing.T, file string, names []string, seen map[string]bool) {
	t.Helper()
	missing := map[string]bool{}
	for _, n := range names {
		if !seen[n] {
			missing[n] = true
		}
	}
	if len(missing) > 0 {
		t.Errorf("%s uses metrics no live node or mirror exported: %s", file, strings.Join(slices.Sorted(maps.Keys(missing)), ", "))
	}
}
