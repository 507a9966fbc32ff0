package mirror

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// TestMirrorReport measures, with RUNNEL_REPORT=1, what docs/benchmarks.md's Mirror
// section reports: the mirror's throughput at 100 B and 1 KiB against `runnel
// bench produce` into the same target, and the end-to-end latency a record sees
// from its produce on the source to its consume on the target at 10,000 records/s.
// Both clusters are single in-process nodes on this machine.
func TestMirrorReport(t *testing.T) {
	if os.Getenv("RUNNEL_REPORT") != "1" {
		t.Skip("a measurement: set RUNNEL_REPORT=1")
	}
	src, tgt := startRunnel(t), startRunnel(t)
	for _, size := range []int{100, 1024} {
		n := 300000
		if size > 100 {
			n = 100000
		}
		base := benchProduce(t, tgt, fmt.Sprintf("base-%d", size), n, size)
		srcRep := benchProduce(t, src, fmt.Sprintf("load-%d", size), n, size)
		_ = srcRep
		name := fmt.Sprintf("bench%d", size)
		m, stop := runMirror(t, Config{Name: name, Source: []string{src}, Target: []string{tgt}, SourceAlias: "east",
			Topics: []string{fmt.Sprintf("load-%d", size)}})
		rate, mb := mirrorRate(t, m, int64(n), int64(size))
		stop()
		t.Logf("REPORT size=%d bench-produce=%.0f rec/s %.1f MB/s mirror=%.0f rec/s %.1f MB/s (%.0f%%)",
			size, base.RecordsPerSec, base.MBPerSec, rate, mb, 100*rate/base.RecordsPerSec)
	}
	p50, p99 := mirrorLatency(t, src, tgt, 10000, 10*time.Second)
	t.Logf("REPORT e2e latency source produce -> target consume at 10000 rec/s: p50=%v p99=%v", p50, p99)
}

type benchRep struct {
	RecordsPerSec float64 `json:"records_per_sec"`
	MBPerSec      float64 `json:"mb_per_sec"`
}

// benchProduce runs `runnel bench produce` (a binary built from this checkout: the
// cli package imports this one, so it cannot be called in-process here).
func benchProduce(t *testing.T, addr, topic string, n, size int) benchRep {
	bin := filepath.Join(os.TempDir(), "runnel-mirror-report")
	if _, err := os.Stat(bin); err != nil {
		if out, err := exec.Command("go", "build", "-o", bin, "../cmd/runnel").CombinedOutput(); err != nil {
			t.Fatalf("build: %v\n%s", err, out)
		}
	}
	var out, errb bytes.Buffer
	cmd := exec.Command(bin, "bench", "produce", "-b", addr, "--topic", topic, "-n", fmt.Sprint(n),
		"--record-size", fmt.Sprint(size), "-p", "3", "--json")
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("bench produce: %v %s", err, errb.String())
	}
	var r benchRep
	if err := json.Unmarshal(out.Bytes(), &r); err != nil {
		t.Fatalf("bench output %q: %v", out.String(), err)
	}
	return r
}

// mirrorRate times the copy of n records from the first committed transaction on.
func mirrorRate(t *testing.T, m *Mirror, n, size int64) (float64, float64) {
	var t0 time.Time
	var r0 int64
	deadline := time.Now().Add(5 * time.Minute)
	for time.Now().Before(deadline) {
		var recs int64
		for _, s := range m.Status(time.Now()) {
			recs += s.Records
		}
		if recs > 0 && t0.IsZero() {
			t0, r0 = time.Now(), recs
		}
		if recs >= n {
			secs := time.Since(t0).Seconds()
			rate := float64(recs-r0) / secs
			return rate, rate * float64(size) / 1e6
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("mirror did not copy %d records in time", n)
	return 0, 0
}

// mirrorLatency produces at rate records/s for d on the source while a mirror runs,
// and measures, on a target consumer, now minus each record's (kept) timestamp.
func mirrorLatency(t *testing.T, src, tgt string, rate int, d time.Duration) (time.Duration, time.Duration) {
	createTopic(t, src, "lat", 3, nil)
	m, _ := runMirror(t, Config{Name: "lat", Source: []string{src}, Target: []string{tgt}, SourceAlias: "east", Topics: []string{"lat"}})
	waitCaughtUp(t, m)
	cons := newClient(t, tgt, kgo.ConsumeTopics("east.lat"), kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(100*time.Millisecond))
	prod := newClient(t, src, kgo.DefaultProduceTopic("lat"), kgo.ProducerLinger(0))
	total := rate * int(d/time.Second)
	go func() {
		tick := time.NewTicker(time.Millisecond)
		defer tick.Stop()
		per := rate / 1000
		for i := 0; i < total; i += per {
			<-tick.C
			for j := 0; j < per; j++ {
				prod.Produce(context.Background(), &kgo.Record{Value: make([]byte, 100), Timestamp: time.Now()}, nil)
			}
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), d+time.Minute)
	defer cancel()
	var lats []time.Duration
	for len(lats) < total && ctx.Err() == nil {
		fs := cons.PollFetches(ctx)
		now := time.Now()
		fs.EachRecord(func(r *kgo.Record) { lats = append(lats, now.Sub(r.Timestamp)) })
	}
	sort.Slice(lats, func(i, j int) bool { return lats[i] < lats[j] })
	if len(lats) == 0 {
		t.Fatal("no record arrived")
	}
	return lats[len(lats)/2], lats[len(lats)*99/100]
}
