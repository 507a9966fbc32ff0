package clustertest_test

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"testing"
	"time"

	"github.com/runnel-io/runnel/internal/testutil"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestMirrorProcessesKillAtLeastOnce is TestMirrorProcessesKill with `--delivery
// at-least-once` (no transactions: records first, then the position), a throttled
// mirror (--rate) and five kill -9
// of the two mirror processes during the copy (at 15%, 30%, 45%, 60% and 75%). A kill
// between a batch's records and its position leaves records on the target that the
// next owner writes again. The target must hold every source record (nothing lost),
// each partition in source order except where the mirror went back to its last
// position and wrote a range again, and exactly as many extra copies as the mirror
// counted as possibly duplicated (maybe_duplicated in `runnel mirror status --json`):
// the mirror counts, on its first write after a start, the target records between
// its committed position and that write, which are all copies it is about to write
// again. No one else writes the target topic here, so the count is exact.
//
// 20,000 records always; 100,000 with RUNNEL_REPORT=1.
func TestMirrorProcessesKillAtLeastOnce(t *testing.T) {
	t.Parallel() // the mirror tests mostly wait on sessions and timers: they overlap
	total, over := 20000, 10*time.Second
	if os.Getenv("RUNNEL_REPORT") == "1" {
		total, over = 100000, 30*time.Second
	}
	src := startCluster(t, 1)
	tgt := startCluster(t, 3)
	topic := "orders"
	createTopic(t, src, topic, 4, 1)
	// --rate 2000 (records/s per source partition, against 500-750/s produced into
	// each) keeps the mirror writing most of the time, so that most kills land
	// between a batch's records and its state, which is what leaves duplicates: an
	// unthrottled mirror is idle, caught up, at almost every kill.
	args := []string{"--source", src.Bootstrap(), "--target", tgt.Bootstrap(), "--name", "alo", "--source-alias", "east",
		"--delivery", "at-least-once", "--rate", "2000"}
	a := startMirrorProc(t, args...)
	b := startMirrorProc(t, args...)

	start := time.Now()
	produced := make(chan error, 1)
	go func() { produced <- produceSlowly(src, topic, total, over) }()
	kills := 0
	for i, frac := range []float64{0.15, 0.30, 0.45, 0.60, 0.75} {
		p := []*mirrorProc{a, b}[i%2]
		// Set-up: the copy has reached frac of the records.
		testutil.Eventually(t, 120*time.Second, func() error {
			n, err := mirroredRecords(tgt, "alo")
			if err != nil {
				return err
			}
			if n < int64(frac*float64(total)) {
				return fmt.Errorf("%d of %d records mirrored, waiting for %.0f%% before kill %d", n, total, frac*100, i+1)
			}
			return nil
		})
		p.kill()
		kills++
		p.start()
	}
	if err := <-produced; err != nil {
		t.Fatalf("producing: %v", err)
	}
	want := readTopic(t, src, topic, total)
	// Set-up: the mirror has copied up to every source partition's end.
	testutil.Eventually(t, 120*time.Second, func() error {
		n, err := mirroredRecords(tgt, "alo")
		if err != nil {
			return err
		}
		if n < int64(total) {
			return fmt.Errorf("%d of %d records mirrored", n, total)
		}
		return nil
	})
	took := time.Since(start)
	got := readTopicAll(t, tgt, "east."+topic)

	out, err := exec.Command(mirrorBinary(t), "mirror", "status", "--target", tgt.Bootstrap(), "--name", "alo", "--json").CombinedOutput()
	testutil.NoError(t, err, "mirror status: "+string(out))
	var st struct {
		Partitions []struct {
			Partition       int32 `json:"partition"`
			Records         int64 `json:"records"`
			MaybeDuplicated int64 `json:"maybe_duplicated"`
		} `json:"partitions"`
	}
	testutil.NoError(t, json.Unmarshal(out, &st), "status JSON "+string(out))
	testutil.Equal(t, len(st.Partitions), 4, "partitions in status")
	counted := map[int32]int64{}
	var records int64
	for _, p := range st.Partitions {
		counted[p.Partition] = p.MaybeDuplicated
		records += p.Records
	}
	testutil.Equal(t, records, int64(total), "records in status (each source record counted once)")

	var dupTotal, countedTotal int64
	for part, ws := range want {
		dups := checkAtLeastOnce(t, part, ws, got[part])
		t.Logf("partition %d: %d records, %d extra copies on the target, %d counted as possibly duplicated",
			part, len(ws), dups, counted[part])
		if dups != counted[part] {
			t.Errorf("partition %d: the target holds %d extra copies, the mirror counted %d as possibly duplicated",
				part, dups, counted[part])
		}
		dupTotal += dups
		countedTotal += counted[part]
	}
	for part := range got {
		if _, ok := want[part]; !ok {
			t.Fatalf("partition %d: %d records on the target, none on the source", part, len(got[part]))
		}
	}
	t.Logf("%d records over 4 partitions to a 3-node target, at-least-once, %d kill -9 of the mirror processes: nothing lost, %d extra copies, %d counted, in %v",
		total, kills, dupTotal, countedTotal, took.Round(100*time.Millisecond))
}

// checkAtLeastOnce checks one target partition against its source records and
// returns how many extra copies it holds. Each target record must be a source record
// (same key, value, headers, timestamp) that is either the next one after the record
// before it, or a step back (the mirror restarted from a position it had committed
// and writes on from there): never a skip forward. Every source record must be there.
func checkAtLeastOnce(t *testing.T, part int32, ws, gs []*kgo.Record) int64 {
	t.Helper()
	index := make(map[string]int, len(ws)) // seq header -> index in ws
	for i, r := range ws {
		index[seqOf(r)] = i
	}
	prev, high := -1, -1 // index of the record before; highest index seen
	var dups int64
	for j, g := range gs {
		i, ok := index[seqOf(g)]
		if !ok {
			t.Fatalf("partition %d, target offset %d: seq %q is not a source record of this partition", part, g.Offset, seqOf(g))
		}
		if err := sameMirrored(ws[i], g); err != nil {
			t.Fatalf("partition %d, target offset %d (source offset %d): %v", part, g.Offset, ws[i].Offset, err)
		}
		if i != prev+1 && i > prev {
			t.Fatalf("partition %d, target offset %d (record %d on the target): source record %d follows %d: records %d..%d skipped or out of order",
				part, g.Offset, j, i, prev, prev+1, i-1)
		}
		if i <= high {
			dups++
		}
		prev, high = i, max(high, i)
	}
	if high != len(ws)-1 {
		t.Fatalf("partition %d: the target holds source records up to %d of %d: the rest is missing", part, high, len(ws))
	}
	return dups
}

func seqOf(r *kgo.Record) string {
	for _, h := range r.Headers {
		if h.Key == "seq" {
			return string(h.Value)
		}
	}
	return "none:" + strconv.FormatInt(r.Offset, 10)
}
