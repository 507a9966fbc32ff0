package cli

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/runnel-io/runnel/internal/benchfmt"
)

func TestBenchUsageErrors(t *testing.T) {
	for _, args := range [][]string{
		{"bench"},
		{"bench", "nope"},
		{"bench", "produce", "--acks", "2"},
		{"bench", "produce", "--record-size", "19"},
		{"bench", "produce", "--producers", "0"},
		{"bench", "produce", "--compression", "brotli"},
		{"bench", "produce", "--on-full", "sometimes"},
		{"bench", "produce", "--enqueue-timeout", "soon"},
		{"bench", "produce", "--rate", "-1"},
		{"bench", "produce", "--records", "-1"},
		{"bench", "produce", "--batch-max-bytes", "50"},
		{"bench", "produce", "--buffer-records", "0"},
		{"bench", "produce", "-b", "nohostport"},
		{"bench", "consume"},
		{"bench", "consume", "--topic", "t", "--timeout", "0s"},
		{"bench", "e2e", "--duration", "0s"},
		{"bench", "e2e", "--partitions", "0"},
	} {
		r := run(t, "", args...)
		if r.code != exitUsage {
			t.Errorf("runnel %s: exit %d, want %d; stderr %q", strings.Join(args, " "), r.code, exitUsage, r.stderr)
		}
	}
}

func TestBenchFlagDefaults(t *testing.T) {
	cmd := newBenchE2ECommand()
	if err := cmd.ParseFlags([]string{"--producers", "4", "--rate", "1000"}); err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]string{"record-size": "100", "acks": "all", "duration": "20s",
		"linger": "0s", "buffer-records": "100000", "partitions": "3", "on-full": "block"} {
		if got := cmd.Flags().Lookup(name).Value.String(); got != want {
			t.Errorf("--%s = %q, want %q", name, got, want)
		}
	}
	f := &benchFlags{producers: 4, recordSize: 100, partitions: 3, timeout: time.Minute, batchMaxBytes: 1000000,
		acks: "all", idempotence: true, compression: "none",
		overload: produceFlags{bufferRecords: 100000, onFull: "block", rate: 1000}}
	cfg, err := f.config(true)
	if err != nil {
		t.Fatal(err)
	}
	if got := cfg.ProducerRate(); got != 250 {
		t.Fatalf("each of 4 producers is limited to %v/s, want 250/s", got)
	}
}

// benchJSON runs a bench command that must succeed and decodes its --json report.
func benchJSON(t *testing.T, args ...string) benchfmt.Report {
	t.Helper()
	r := mustRun(t, "", append(args, "--json")...)
	var rep benchfmt.Report
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
		t.Fatalf("runnel %s: %v in %q", strings.Join(args, " "), err, r.stdout)
	}
	return rep
}

func TestBenchProduceConsumeKfake(t *testing.T) {
	_, bs := newCluster(t)
	p := benchJSON(t, "bench", "produce", "-b", bs, "--topic", "b1", "--records", "5000",
		"--producers", "2", "--partitions", "3", "--record-size", "64")
	if p.Records != 5000 || p.Bytes != 5000*64 || p.Partitions != 3 || p.Produce == nil || p.Produce.Count != 5000 {
		t.Fatalf("produce report %+v", p)
	}
	c := benchJSON(t, "bench", "consume", "-b", bs, "--topic", "b1", "--records", "5000")
	if c.Records != 5000 || c.Bytes != 5000*64 || c.Duplicates != 0 {
		t.Fatalf("consume report %+v", c)
	}
	r := run(t, "", "bench", "consume", "-b", bs, "--topic", "b1", "--records", "5001")
	if r.code != exitFailure || !strings.Contains(r.stderr, "records lost: 1 of 5001") || r.stdout != "" {
		t.Fatalf("a missing record: exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
	r = run(t, "", "bench", "consume", "-b", bs, "--topic", "nope")
	if r.code != exitFailure || !strings.Contains(r.stderr, `topic "nope" does not exist`) {
		t.Fatalf("missing topic: exit %d, stderr %q", r.code, r.stderr)
	}
}

func TestBenchConsumeForeignRecords(t *testing.T) {
	_, bs := newCluster(t)
	mustRun(t, "", "topic", "create", "-b", bs, "f1")
	mustRun(t, "a\nb\n", "produce", "-b", bs, "f1")
	r := run(t, "", "bench", "consume", "-b", bs, "--topic", "f1")
	if r.code != exitFailure || !strings.Contains(r.stderr, "not written by runnel bench") {
		t.Fatalf("exit %d, stderr %q", r.code, r.stderr)
	}
}

func TestBenchE2EKfake(t *testing.T) {
	_, bs := newCluster(t)
	rep := benchJSON(t, "bench", "e2e", "-b", bs, "--rate", "2000", "--duration", "1s", "--producers", "2")
	if rep.Records < 1000 || rep.Records > 2600 || rep.Consumed != rep.Records {
		t.Fatalf("e2e at 2000/s for 1s: %+v", rep)
	}
	if rep.EndToEnd == nil || rep.EndToEnd.Count != rep.Records || rep.EndToEnd.P50 <= 0 || rep.EndToEnd.P50 > 1000 {
		t.Fatalf("e2e latency %+v", rep.EndToEnd)
	}
}

// --timeout ends bench e2e and bench produce when nothing is acknowledged or consumed
// for that long: here the broker parks every Produce request.
func TestBenchTimeoutFires(t *testing.T) {
	for _, mode := range []string{"e2e", "produce"} {
		t.Run(mode, func(t *testing.T) {
			c, bs := newCluster(t)
			release := holdProduce(c)
			defer release()
			args := []string{"bench", mode, "-b", bs, "--topic", "stall", "--timeout", "1s"}
			want := "runnel: no record acknowledged for 1s (--timeout): 0 acknowledged so far\n"
			if mode == "e2e" {
				args = append(args, "--duration", "300ms")
				want = "runnel: no record acknowledged or consumed for 1s (--timeout): 0 acknowledged, 0 consumed so far\n"
			}
			done := make(chan result, 1)
			start := time.Now()
			go func() { done <- run(t, "", args...) }()
			select {
			case r := <-done:
				last := r.stderr[strings.LastIndex(strings.TrimSuffix(r.stderr, "\n"), "\n")+1:] // after the progress lines
				if took := time.Since(start); r.code != exitFailure || last != want || took > 5*time.Second {
					t.Fatalf("exit %d after %v, stderr %q; want exit 1 within 5s, stderr %q", r.code, took, r.stderr, want)
				}
			case <-time.After(15 * time.Second):
				release()
				t.Fatalf("bench %s --timeout 1s still runs after 15s with every Produce parked", mode)
			}
		})
	}
}
