package clustertest_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/runnel-io/runnel/internal/clustertest"
	"github.com/runnel-io/runnel/internal/testutil"
	"github.com/runnel-io/runnel/mirror"
	"github.com/twmb/franz-go/pkg/kgo"
)

// mirrorBin is a runnel binary for the mirror processes, built once per test
// binary (the harness's own binary path is not exported).
var mirrorBin struct {
	once sync.Once
	path string
	err  error
}

func mirrorBinary(t *testing.T) string {
	t.Helper()
	mirrorBin.once.Do(func() {
		dir, err := os.MkdirTemp("", "mirror-bin-")
		if err != nil {
			mirrorBin.err = err
			return
		}
		mirrorBin.path = filepath.Join(dir, "mirrorproc")
		out, err := exec.Command("go", "build", "-o", mirrorBin.path, "github.com/runnel-io/runnel/cmd/runnel").CombinedOutput()
		if err != nil {
			mirrorBin.err = fmt.Errorf("%w\n%s", err, out)
		}
	})
	if mirrorBin.err != nil {
		t.Fatalf("building the runnel binary: %v", mirrorBin.err)
	}
	return mirrorBin.path
}

// mirrorProc is a `runnel mirror run` process.
type mirrorProc struct {
	t    *testing.T
	args []string
	cmd  *exec.Cmd
	out  *syncBuf
	all  *syncBuf // every incarnation's output
	done chan struct{}
}

type syncBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuf) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuf) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func startMirrorProc(t *testing.T, args ...string) *mirrorProc {
	t.Helper()
	p := &mirrorProc{t: t, args: args, all: &syncBuf{}}
	p.start()
	t.Cleanup(func() {
		p.kill()
		if t.Failed() {
			t.Logf("mirror process %v output:\n%s", args, tailLines(p.all.String(), 80))
		}
	})
	return p
}

func (p *mirrorProc) start() {
	p.cmd = exec.Command(mirrorBinary(p.t), append([]string{"mirror", "run"}, p.args...)...)
	p.out = &syncBuf{}
	p.cmd.Stdout, p.cmd.Stderr = p.out, p.all
	if err := p.cmd.Start(); err != nil {
		p.t.Fatalf("start mirror: %v", err)
	}
	p.done = make(chan struct{})
	go func() { _ = p.cmd.Wait(); close(p.done) }()
}

func (p *mirrorProc) signal(sig syscall.Signal) {
	if err := p.cmd.Process.Signal(sig); err != nil {
		p.t.Logf("signal %v: %v", sig, err)
	}
}

func (p *mirrorProc) kill() {
	p.signal(syscall.SIGCONT)
	p.signal(syscall.SIGKILL)
	<-p.done
}

func tailLines(s string, n int) string {
	ls := strings.Split(s, "\n")
	if len(ls) > n {
		ls = ls[len(ls)-n:]
	}
	return strings.Join(ls, "\n")
}

// TestMirrorProcessesKill copies a topic from a one-node cluster to a 3-node cluster
// with two `runnel mirror run` processes sharing the work while records are
// produced; the processes are killed with SIGKILL three times during the copy (when
// the target holds 20%, 45% and 70% of the records) and restarted. The target must
// hold every source record exactly once, in order, with its partition, key, value,
// headers and timestamp. (A paused process is TestMirrorProcessesZombieFenced.)
//
// 20,000 records always; the 100,000 with RUNNEL_REPORT=1:
//
//	RUNNEL_REPORT=1 go test -run TestMirrorProcessesKill -v ./internal/clustertest/
func TestMirrorProcessesKill(t *testing.T) {
	t.Parallel() // the mirror tests mostly wait on sessions and timers: they overlap
	total, over := 20000, 8*time.Second
	if os.Getenv("RUNNEL_REPORT") == "1" {
		total, over = 100000, 30*time.Second
	}
	src := startCluster(t, 1)
	tgt := startCluster(t, 3)
	topic := "orders"
	createTopic(t, src, topic, 4, 1)
	args := []string{"--source", src.Bootstrap(), "--target", tgt.Bootstrap(), "--name", "dr", "--source-alias", "east"}
	a := startMirrorProc(t, args...)
	b := startMirrorProc(t, args...)

	start := time.Now()
	produced := make(chan error, 1)
	go func() { produced <- produceSlowly(src, topic, total, over) }()
	kills := 0
	for i, frac := range []float64{0.20, 0.45, 0.70} {
		p := []*mirrorProc{a, b, a}[i]
		// Set-up: the copy has reached frac of the records.
		testutil.Eventually(t, 120*time.Second, func() error {
			n, err := mirroredRecords(tgt, "dr")
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
		n, err := mirroredRecords(tgt, "dr")
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
	compareMirrored(t, want, got)
	t.Logf("%d records over 4 partitions to a 3-node target, %d kill -9 of the mirror processes: each record once, in order, in %v",
		total, kills, took.Round(100*time.Millisecond))
	// runnel mirror status reads the same from the target alone.
	out, err := exec.Command(mirrorBinary(t), "mirror", "status", "--target", tgt.Bootstrap(), "--name", "dr", "--json").CombinedOutput()
	testutil.NoError(t, err, "mirror status: "+string(out))
	var st struct {
		Partitions []struct {
			Topic      string `json:"topic"`
			LagRecords int64  `json:"lag_records"`
			Records    int64  `json:"records"`
		} `json:"partitions"`
	}
	testutil.NoError(t, json.Unmarshal(out, &st), "status JSON "+string(out))
	var records int64
	for _, p := range st.Partitions {
		records += p.Records
	}
	testutil.Equal(t, len(st.Partitions), 4, "partitions in status")
	testutil.Equal(t, records, int64(total), "records in status")
}

// mirroredRecords is the sum of the records the mirror's states count on the target.
func mirroredRecords(tgt *clustertest.Cluster, name string) (int64, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	p, err := mirror.ReadProgress(ctx, strings.Split(tgt.Bootstrap(), ","), nil, name)
	if err != nil {
		return 0, err
	}
	var n int64
	for _, st := range p.States {
		n += st.Records
	}
	return n, nil
}

// produceSlowly produces n keyed records with headers over d.
func produceSlowly(c *clustertest.Cluster, topic string, n int, d time.Duration) error {
	cl, err := kgo.NewClient(append(c.ClientDefaults(), kgo.DefaultProduceTopic(topic))...)
	if err != nil {
		return err
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	const chunk = 500
	for i := 0; i < n; i += chunk {
		var rs []*kgo.Record
		for j := i; j < i+chunk && j < n; j++ {
			rs = append(rs, &kgo.Record{Key: []byte(fmt.Sprintf("k%d", j%97)), Value: []byte(fmt.Sprintf("v%06d", j)),
				Headers: []kgo.RecordHeader{{Key: "seq", Value: []byte(fmt.Sprint(j))}}})
		}
		if err := cl.ProduceSync(ctx, rs...).FirstErr(); err != nil {
			return err
		}
		time.Sleep(d / time.Duration(n/chunk)) // a steady load, not a client behaviour
	}
	return nil
}

// readTopic reads n records of topic, read_committed, by partition.
func readTopic(t *testing.T, c *clustertest.Cluster, topic string, n int) map[int32][]*kgo.Record {
	t.Helper()
	cl := c.Client(t, kgo.ConsumeTopics(topic), kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	out := map[int32][]*kgo.Record{}
	for got := 0; got < n; {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("read %d of %d records of %s", got, n, topic)
		}
		fs.EachRecord(func(r *kgo.Record) { out[r.Partition] = append(out[r.Partition], r); got++ })
	}
	return out
}

func sameMirrored(src, tgt *kgo.Record) error {
	var hs []kgo.RecordHeader
	for _, h := range tgt.Headers {
		if h.Key != "runnel.mirror.path" {
			hs = append(hs, h)
		}
	}
	switch {
	case !bytes.Equal(src.Key, tgt.Key), !bytes.Equal(src.Value, tgt.Value):
		return fmt.Errorf("record %s=%s, want %s=%s", tgt.Key, tgt.Value, src.Key, src.Value)
	case !src.Timestamp.Equal(tgt.Timestamp):
		return fmt.Errorf("timestamp %v, want %v", tgt.Timestamp, src.Timestamp)
	case len(hs) != len(src.Headers) || hs[0].Key != src.Headers[0].Key || !bytes.Equal(hs[0].Value, src.Headers[0].Value):
		return fmt.Errorf("headers %v, want %v", hs, src.Headers)
	}
	return nil
}
