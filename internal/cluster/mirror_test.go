package cluster_test

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

	"github.com/runnel-io/runnel/internal/cluster"
	"github.com/runnel-io/runnel/internal/testutil"
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

// TestMirrorProcessesKillAndPause copies a topic between two real clusters with two
// `runnel mirror run` processes sharing the work, while records are produced: one
// process is killed with SIGKILL and restarted, then the other is paused with
// SIGSTOP until its partitions move (it is fenced) and resumed. The target must hold
// every source record exactly once, in order, with its partition, key, value,
// headers and timestamp.
func TestMirrorProcessesKillAndPause(t *testing.T) {
	src := startCluster(t, 1)
	tgt := startCluster(t, 1)
	topic := "orders"
	createTopic(t, src, topic, 4, 1)
	args := []string{"--source", src.Bootstrap(), "--target", tgt.Bootstrap(), "--name", "dr", "--source-alias", "east"}
	a := startMirrorProc(t, args...)
	b := startMirrorProc(t, args...)

	const total = 30000
	produced := make(chan error, 1)
	go func() { produced <- produceSlowly(src, topic, total, 12*time.Second) }()

	time.Sleep(3 * time.Second) // let the copy get going: this is the fault schedule
	a.kill()
	a.start()
	time.Sleep(2 * time.Second)
	b.signal(syscall.SIGSTOP)
	time.Sleep(9 * time.Second) // longer than the 6 s session: b's partitions move to a
	b.signal(syscall.SIGCONT)
	if err := <-produced; err != nil {
		t.Fatalf("producing: %v", err)
	}
	want := readTopic(t, src, topic, total)
	got := readTopic(t, tgt, "east."+topic, total)
	for part, ws := range want {
		gs := got[part]
		if len(gs) != len(ws) {
			t.Fatalf("partition %d: %d records on the target, want %d", part, len(gs), len(ws))
		}
		for i := range ws {
			if err := sameMirrored(ws[i], gs[i]); err != nil {
				t.Fatalf("partition %d, record %d (source offset %d): %v", part, i, ws[i].Offset, err)
			}
		}
	}
	// Nothing more arrives later (a zombie's late write would).
	time.Sleep(2 * time.Second)
	testutil.Equal(t, countTopic(t, tgt, "east."+topic), total, "records on the target after settling")
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

// produceSlowly produces n keyed records with headers over d.
func produceSlowly(c *cluster.Cluster, topic string, n int, d time.Duration) error {
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
func readTopic(t *testing.T, c *cluster.Cluster, topic string, n int) map[int32][]*kgo.Record {
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

// countTopic counts the committed records of topic (end offsets minus markers are
// not countable, so it reads them).
func countTopic(t *testing.T, c *cluster.Cluster, topic string) int {
	t.Helper()
	cl := c.Client(t, kgo.ConsumeTopics(topic), kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	n := 0
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		fs := cl.PollFetches(ctx)
		cancel()
		if fs.NumRecords() == 0 {
			return n
		}
		n += fs.NumRecords()
	}
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
