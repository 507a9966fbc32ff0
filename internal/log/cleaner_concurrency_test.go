package log

import (
	"bytes"
	"fmt"
	"math/rand"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// readToHighWatermark reads l from its start until it catches up with the high
// watermark, which moves while it reads. It returns the records and the high
// watermark it caught up with.
func readToHighWatermark(t *testing.T, l *Log) ([]decoded, int64) {
	var out []decoded
	for off := l.LogStartOffset(); ; {
		hw := l.highWatermark.Load()
		if off >= hw {
			return out, hw
		}
		ri, err := l.Read(off, 4096, hw, true)
		if err != nil {
			t.Errorf("Read(%d): %v", off, err)
			return out, hw
		}
		if ri.Size == 0 {
			return out, hw // the batches left in [off, hw) were all cleaned away
		}
		data, err := ri.AppendTo(nil)
		if err != nil {
			t.Errorf("AppendTo: %v", err)
			return out, hw
		}
		recs, batches := decodeBatches(t, data)
		for _, r := range recs {
			if r.offset >= off {
				if len(out) > 0 && r.offset <= out[len(out)-1].offset {
					t.Errorf("offset %d after %d", r.offset, out[len(out)-1].offset)
				}
				out = append(out, r)
			}
		}
		off = batches[len(batches)-1].NextOffset()
	}
}

// checkConsistentRead checks a read made while the log was appended to and
// cleaned: every record is the one appended at its offset, and the last value read
// for each key is the latest appended below the high watermark the read reached.
func checkConsistentRead(t *testing.T, m *model, got []decoded, hw int64) {
	last := map[string]int64{}
	m.mu.Lock()
	for _, r := range got {
		want, ok := m.recs[r.offset]
		if !ok || !bytes.Equal(want.key, r.key) || !bytes.Equal(want.value, r.value) {
			t.Errorf("read %v, appended %q=%q (%v)", r, want.key, want.value, ok)
		}
		last[string(r.key)] = r.offset
	}
	m.mu.Unlock()
	for k, off := range m.latest(hw) {
		if last[k] != off {
			t.Errorf("read to %d: key %q last read at %d, latest at %d", hw, k, last[k], off)
		}
	}
}

func TestCleanerConcurrentReadsSeeAConsistentLog(t *testing.T) {
	for name, env := range map[string]func() testEnv{"mem": memEnv, "os": func() testEnv { return osEnv(t) }} {
		t.Run(name, func(t *testing.T) {
			cfg := compactConfig(DefaultConfig())
			cfg.SegmentBytes = 3000
			l := openLog(t, env(), cfg)
			m := newModel()
			var writing atomic.Bool
			var swaps atomic.Int64
			writing.Store(true)
			var wg sync.WaitGroup
			wg.Add(1)
			go func() { // the cleaner
				defer wg.Done()
				r := newCleanerResources(30*offsetMapSlotSize, nil, nil) // partial passes too
				for after := 0; after < 10000; {
					done := !writing.Load()
					s, ok, err := l.clean(r, time.Now())
					if err != nil {
						t.Errorf("clean: %v", err)
						return
					}
					swaps.Add(int64(s.Segments))
					switch {
					case !ok && done:
						return // everything appended is clean
					case !ok:
						time.Sleep(100 * time.Microsecond)
					case done:
						after++
					}
				}
			}()
			reads := make(chan struct{}, 100)
			for i := 0; i < 2; i++ {
				wg.Add(1)
				go func() { // readers
					defer wg.Done()
					for writing.Load() {
						got, hw := readToHighWatermark(t, l)
						checkConsistentRead(t, m, got, hw)
						select {
						case reads <- struct{}{}:
						default:
						}
					}
				}()
			}
			rng := rand.New(rand.NewSource(31))
			for i := 0; i < 600 && !t.Failed(); i++ {
				recs := []kv{rec(fmt.Sprintf("k%d", rng.Intn(25)), fmt.Sprint(i), int64(i)), rec(fmt.Sprintf("k%d", rng.Intn(25)), fmt.Sprint(i), int64(i))}
				m.appendKV(t, l, batchSpec{recs: recs})
				l.Flush(l.LogEndOffset())
				l.SetHighWatermark(l.LogEndOffset()) // after the model knows the records
			}
			for len(reads) < 4 && !t.Failed() { // let the readers finish a few reads
				time.Sleep(time.Millisecond)
			}
			l.Roll()
			writing.Store(false)
			wg.Wait()
			got, hw := readToHighWatermark(t, l)
			checkConsistentRead(t, m, got, hw)
			if keys := len(m.latest(hw)); len(got) != keys || swaps.Load() < 10 {
				t.Fatalf("%d records left after %d swaps, want one per key (%d)", len(got), swaps.Load(), keys)
			}
		})
	}
}
