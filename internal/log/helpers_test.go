package log

import (
	"bytes"
	"errors"
	"log/slog"
	"sync"
	"testing"

	"github.com/runnel-io/runnel/internal/log/logtest"
	"github.com/runnel-io/runnel/internal/vfs"
)

// testEnv is a filesystem and a partition directory on it.
type testEnv struct {
	fs  vfs.FS
	mem *vfs.Mem // nil on the OS filesystem
	dir string
}

func memEnv() testEnv {
	m := vfs.NewMem()
	return testEnv{fs: m, mem: m, dir: "/data/topic-0"}
}

func osEnv(t *testing.T) testEnv {
	return testEnv{fs: vfs.OS(), dir: t.TempDir() + "/topic-0"}
}

// testConfigs are the log settings every shared test runs under: tiny segments and
// indexes (many rolls, full indexes), an index entry per batch, and Kafka's defaults
// with relaxed flushing.
func testConfigs() map[string]Config {
	tiny := DefaultConfig()
	tiny.SegmentBytes, tiny.SegmentIndexBytes, tiny.IndexIntervalBytes = 1500, 64, 1
	tiny.FileDeleteDelayMs = 0
	index1 := DefaultConfig()
	index1.IndexIntervalBytes, index1.SegmentBytes = 1, 16<<10
	relaxed := DefaultConfig()
	relaxed.FlushMessages = 100
	return map[string]Config{"tiny": tiny, "index1": index1, "default-flush100": relaxed}
}

// forEachLogConfig runs fn for every configuration on the memory and the OS
// filesystems.
func forEachLogConfig(t *testing.T, fn func(t *testing.T, env testEnv, cfg Config)) {
	for name, cfg := range testConfigs() {
		t.Run(name+"/mem", func(t *testing.T) { fn(t, memEnv(), cfg) })
		t.Run(name+"/os", func(t *testing.T) { fn(t, osEnv(t), cfg) })
	}
}

// logBuffer collects log output for assertions.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *logBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func (b *logBuffer) logger() *slog.Logger {
	return slog.New(slog.NewTextHandler(b, &slog.HandlerOptions{Level: slog.LevelInfo}))
}

type openOpt func(*Options)

func withRecoveryPoint(rp int64) openOpt { return func(o *Options) { o.RecoveryPoint = rp } }
func withLogger(lg *slog.Logger) openOpt { return func(o *Options) { o.Logger = lg } }
func withLogStart(off int64) openOpt     { return func(o *Options) { o.LogStartOffset = off } }
func withFS(fs vfs.FS) openOpt           { return func(o *Options) { o.FS = fs } }

// openLog opens a log in env and closes it at the end of the test.
func openLog(t *testing.T, env testEnv, cfg Config, opts ...openOpt) *Log {
	t.Helper()
	o := Options{FS: env.fs, Dir: env.dir, TP: TopicPartition{Topic: "topic"}, Config: cfg,
		Logger: slog.New(slog.DiscardHandler)}
	for _, f := range opts {
		f(&o)
	}
	l, err := Open(o)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { l.Close() })
	return l
}

// reopen closes l and opens it again with its recovery point.
func reopen(t *testing.T, env testEnv, l *Log, cfg Config) *Log {
	t.Helper()
	if err := l.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	return openLog(t, env, cfg, withRecoveryPoint(l.RecoveryPoint()), withLogStart(l.LogStartOffset()))
}

func mustAppend(t *testing.T, l *Log, batch []byte) AppendInfo {
	t.Helper()
	info, err := l.AppendAsLeader(batch, 1)
	if err != nil {
		t.Fatalf("AppendAsLeader: %v", err)
	}
	return info
}

// appendRecords appends n batches of 1..maxRecords records (varying) and returns the
// log end offset.
func appendRecords(t *testing.T, l *Log, n, maxRecords, valueSize int) int64 {
	t.Helper()
	for i := 0; i < n; i++ {
		mustAppend(t, l, logtest.BatchWith(logtest.BatchOptions{Records: 1 + i%maxRecords, ValueSize: valueSize, Timestamp: 1000 + int64(i)}))
	}
	return l.LogEndOffset()
}

// readAll reads [from, to) batch range by range and decodes the records.
func readAll(t *testing.T, l *Log, from, to int64, maxBytes int32) []logtest.Record {
	t.Helper()
	var out []logtest.Record
	for off := from; off < to; {
		ri, err := l.Read(off, maxBytes, to, true)
		if err != nil {
			t.Fatalf("Read(%d): %v", off, err)
		}
		if ri.Size == 0 {
			t.Fatalf("Read(%d, max %d) returned nothing before %d", off, maxBytes, to)
		}
		data, err := ri.AppendTo(nil)
		if err != nil {
			t.Fatalf("AppendTo: %v", err)
		}
		recs, err := logtest.Decode(data)
		if err != nil {
			t.Fatalf("decoding the read at %d: %v", off, err)
		}
		if recs[0].Offset > off || ri.FirstOffset != recs[0].Offset {
			t.Fatalf("Read(%d) starts at %d (FirstOffset %d)", off, recs[0].Offset, ri.FirstOffset)
		}
		for _, r := range recs {
			if r.Offset >= off {
				out = append(out, r)
			}
		}
		off = recs[len(recs)-1].Offset + 1
	}
	return out
}

// checkContiguous fails unless recs hold exactly the offsets [from, to).
func checkContiguous(t *testing.T, recs []logtest.Record, from, to int64) {
	t.Helper()
	if int64(len(recs)) != to-from {
		t.Fatalf("got %d records, want %d ([%d, %d))", len(recs), to-from, from, to)
	}
	for i, r := range recs {
		if r.Offset != from+int64(i) {
			t.Fatalf("record %d has offset %d, want %d", i, r.Offset, from+int64(i))
		}
	}
}

func wantErr(t *testing.T, err, target error) {
	t.Helper()
	if !errors.Is(err, target) {
		t.Fatalf("error %v, want %v", err, target)
	}
}
