package log

import (
	"testing"

	"github.com/runnel-io/runnel/internal/log/logtest"
	"github.com/runnel-io/runnel/internal/vfs"
)

func benchLog(b *testing.B) *Log {
	b.Helper()
	l, err := Open(Options{FS: vfs.OS(), Dir: b.TempDir() + "/bench-0", Config: DefaultConfig()})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { l.Close() })
	return l
}

// benchAppend appends batches of 100 records of valueSize bytes, fsyncing each one
// when flush (one producer, no group commit).
func benchAppend(b *testing.B, valueSize int, flush bool) {
	l := benchLog(b)
	batch := logtest.Batch(100, valueSize)
	b.SetBytes(int64(len(batch)))
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		info, err := l.AppendAsLeader(batch, 1)
		if err != nil {
			b.Fatal(err)
		}
		if flush && l.NeedsFlush(info) {
			if err := l.Flush(info.LastOffset + 1); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.ReportMetric(float64(b.N)*100/b.Elapsed().Seconds(), "records/s")
}

func BenchmarkAppend100B(b *testing.B) {
	b.Run("nosync", func(b *testing.B) { benchAppend(b, 100, false) })
	b.Run("flush", func(b *testing.B) { benchAppend(b, 100, true) })
	b.Run("flush-parallel", func(b *testing.B) { benchAppendParallel(b, 100) })
}

func BenchmarkAppend1KiB(b *testing.B) {
	b.Run("nosync", func(b *testing.B) { benchAppend(b, 1024, false) })
	b.Run("flush", func(b *testing.B) { benchAppend(b, 1024, true) })
	b.Run("flush-parallel", func(b *testing.B) { benchAppendParallel(b, 1024) })
}

// benchAppendParallel has many producers append and flush at once: concurrent
// flushes share one fsync (group commit).
func benchAppendParallel(b *testing.B, valueSize int) {
	l := benchLog(b)
	b.SetBytes(int64(len(logtest.Batch(100, valueSize))))
	b.SetParallelism(16)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		batch := logtest.Batch(100, valueSize)
		for pb.Next() {
			info, err := l.AppendAsLeader(batch, 1)
			if err != nil {
				b.Fatal(err)
			}
			if err := l.Flush(info.LastOffset + 1); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.ReportMetric(float64(b.N)*100/b.Elapsed().Seconds(), "records/s")
}

func BenchmarkRead(b *testing.B) {
	l := benchLog(b)
	for i := 0; i < 1000; i++ {
		if _, err := l.AppendAsLeader(logtest.Batch(100, 100), 1); err != nil {
			b.Fatal(err)
		}
	}
	leo := l.LogEndOffset()
	buf := make([]byte, 0, 1<<20)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		ri, err := l.Read(int64(i*997)%leo, 1<<20, leo, true)
		if err != nil {
			b.Fatal(err)
		}
		if buf, err = ri.AppendTo(buf[:0]); err != nil {
			b.Fatal(err)
		}
	}
}

// TestAppendAllocs holds AppendAsLeader to at most two allocations per append.
func TestAppendAllocs(t *testing.T) {
	for name, env := range map[string]testEnv{"os": osEnv(t), "mem": memEnv()} {
		l := openLog(t, env, DefaultConfig())
		batch := logtest.Batch(100, 100)
		for i := 0; i < 100; i++ { // warm up: grow the index and file buffers
			mustAppend(t, l, batch)
		}
		allocs := testing.AllocsPerRun(200, func() {
			if _, err := l.AppendAsLeader(batch, 1); err != nil {
				t.Fatal(err)
			}
		})
		if allocs > 2 {
			t.Fatalf("%s: AppendAsLeader makes %.1f allocations per append, want <= 2", name, allocs)
		}
		readAllocs := testing.AllocsPerRun(200, func() {
			if _, err := l.Read(l.LogEndOffset()/2, 1<<20, l.LogEndOffset(), true); err != nil {
				t.Fatal(err)
			}
		})
		if readAllocs > 1 {
			t.Fatalf("%s: Read makes %.1f allocations, want <= 1", name, readAllocs)
		}
	}
}
