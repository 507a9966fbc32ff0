package link_test

import (
	"bytes"
	"encoding/json"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/runnel-io/runnel/internal/cli"
	"github.com/runnel-io/runnel/internal/clustertest"
)

// BenchmarkLinkCatchUp measures docs/benchmarks.md's "Cluster link catch-up" in one
// process: a topic of 3 partitions filled on a source node by `runnel bench produce`
// (direct produce, default durability), then a link created on a destination node,
// timed from the start of `link create` until `link status` shows every partition's
// end at the source's end. Run it once per measurement:
//
//	go test ./internal/link -run '^$' -bench LinkCatchUp -benchtime 1x
//
// RUNNEL_LINK_BENCH_RECORDS and RUNNEL_LINK_BENCH_SIZE set the records and their
// size (default 300000 of 1024 bytes).
func BenchmarkLinkCatchUp(b *testing.B) {
	n, size := envInt("RUNNEL_LINK_BENCH_RECORDS", 300000), envInt("RUNNEL_LINK_BENCH_SIZE", 1024)
	for range b.N {
		b.StopTimer()
		start := func() *clustertest.Cluster {
			return clustertest.Start(b, clustertest.Options{Nodes: 1, InProcess: true, StartTimeout: 30 * time.Second,
				Sets: []string{"num.partitions=1", "default.replication.factor=1", "offsets.topic.replication.factor=1"}})
		}
		src, dst := start(), start()
		t0 := time.Now()
		benchCLI(b, "bench", "produce", "-b", src.Bootstrap(), "--topic", "data", "-p", "3", "-n", strconv.Itoa(n), "--record-size", strconv.Itoa(size))
		direct := time.Since(t0)
		logBytes := dirBytes(b, src.Node(1).DataDir, "data-")
		b.StartTimer()
		t0 = time.Now()
		benchCLI(b, "link", "create", "dr", "--source", src.Bootstrap(), "--topics", "data", "-b", dst.Bootstrap())
		for {
			var st struct {
				Partitions []struct {
					SourceEnd int64 `json:"source_end"`
					End       int64 `json:"end"`
				} `json:"partitions"`
			}
			if err := json.Unmarshal([]byte(benchCLI(b, "link", "status", "dr", "--json", "-b", dst.Bootstrap())), &st); err != nil {
				b.Fatal(err)
			}
			var copied int64
			done := len(st.Partitions) == 3
			for _, p := range st.Partitions {
				copied += p.End
				done = done && p.End == p.SourceEnd
			}
			if done && copied == int64(n) {
				break
			}
			if time.Since(t0) > 5*time.Minute {
				b.Fatalf("not caught up after 5 minutes: %+v", st.Partitions)
			}
			time.Sleep(50 * time.Millisecond)
		}
		link := time.Since(t0)
		b.StopTimer()
		b.ReportMetric(float64(logBytes)/direct.Seconds()/1e6, "direct-MB/s")
		b.ReportMetric(float64(logBytes)/link.Seconds()/1e6, "link-MB/s")
		b.Logf("%d records of %d B (%d MB of log): direct produce %v, link catch-up %v", n, size, logBytes/1e6, direct.Round(time.Millisecond), link.Round(time.Millisecond))
		_, _ = src.Stop(1), dst.Stop(1)
	}
}

func benchCLI(b *testing.B, args ...string) string {
	b.Helper()
	var out, errb bytes.Buffer
	if code := cli.MainIO(args, strings.NewReader(""), &out, &errb); code != 0 {
		b.Fatalf("runnel %s: exit %d: %s%s", strings.Join(args, " "), code, errb.String(), out.String())
	}
	return out.String()
}

func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}

// dirBytes is the size of the files under the directories of dir whose names start
// with prefix (a topic's partition directories).
func dirBytes(b *testing.B, dir, prefix string) int64 {
	b.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		b.Fatal(err)
	}
	var total int64
	for _, e := range entries {
		if !e.IsDir() || !strings.HasPrefix(e.Name(), prefix) {
			continue
		}
		files, err := os.ReadDir(dir + "/" + e.Name())
		if err != nil {
			b.Fatal(err)
		}
		for _, f := range files {
			if fi, err := f.Info(); err == nil && strings.HasSuffix(f.Name(), ".log") {
				total += fi.Size()
			}
		}
	}
	if total == 0 {
		b.Fatalf("no %s* log bytes under %s", prefix, dir)
	}
	return total
}
