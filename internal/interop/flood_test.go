package interop_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/binary"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// floodRSSBound is the resident set (VmRSS) a node with default settings stays under
// while producers push at full speed, whatever the volume written (issue 16;
// docs/overload.md, "What the broker does at its bounds"). The resident memory under a
// flood is about queued.max.request.bytes (256 MiB: the request bytes held until
// answered) plus 70 MiB; this flood's peak was 150-200 MiB (docs/benchmarks.md).
const floodRSSBound = 512 << 20

// Flood shape: 8 producers, each at full speed into a partition of its own, 16 KiB
// records, acks=all, 16 produce requests in flight per producer.
const (
	floodProducers  = 8
	floodRecordSize = 16 << 10
	floodInflight   = 16
	// floodRetention keeps the disk use of a run small (a 60 s run writes tens of GB):
	// each partition keeps the last ~64 MiB in 16 MiB segments, checked for deletion
	// every second. The memory bound is about what the node holds in memory, not on
	// disk; the check after the flood covers every acknowledged offset (contiguous,
	// each once) and the exact value of every record still in retention.
	floodSegmentBytes   = 16 << 20
	floodRetentionBytes = 64 << 20
)

// TestFloodMemory runs a `runnel server` process with default settings and floods it:
// 8 franz-go producers at full speed (16 KiB records, acks=all, 16 requests in
// flight each, no idempotence, so that the window is not capped at 5) for 10 s (60 s
// with RUNNEL_REPORT=1, which also prints the RSS curve), sampling the node's VmRSS
// every 100 ms. The peak (and the kernel's high-water mark, VmHWM, which sees between
// the samples) must stay under floodRSSBound from the start, and afterwards every
// acknowledged offset must be in the log once, contiguous from 0 to the log end, with
// the exact value acknowledged for every record still in retention.
func TestFloodMemory(t *testing.T) {
	dur := 10 * time.Second
	report := os.Getenv("RUNNEL_REPORT") == "1"
	if report {
		dur = 60 * time.Second
	}
	// RUNNEL_FLOOD_SECONDS and RUNNEL_FLOOD_RETENTION (retention.bytes of the topic)
	// change the run for measurements.
	if s := os.Getenv("RUNNEL_FLOOD_SECONDS"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil {
			t.Fatalf("RUNNEL_FLOOD_SECONDS=%q: %v", s, err)
		}
		dur = time.Duration(n) * time.Second
	}
	res := flood(t, dur)
	t.Logf("flood of %v: %.2f GB acknowledged (%.0f MB/s), peak VmRSS %d MiB, VmHWM %d MiB (bound %d MiB)",
		dur, float64(res.bytes)/1e9, float64(res.bytes)/1e6/dur.Seconds(), res.peak>>20, res.hwm>>20, floodRSSBound>>20)
	if report {
		t.Logf("peak VmRSS up to each volume written:\n%s", res.curve())
	}
	if res.peak >= floodRSSBound || res.hwm >= floodRSSBound {
		t.Errorf("node RSS went over %d MiB during the flood: peak sampled %d MiB, VmHWM %d MiB, after %.2f GB\n%s",
			floodRSSBound>>20, res.peak>>20, res.hwm>>20, float64(res.bytes)/1e9, res.curve())
	}
}

// floodResult is what one flood measured.
type floodResult struct {
	bytes     int64         // value bytes acknowledged
	peak, hwm int64         // highest VmRSS sampled; VmHWM at the end
	samples   []floodSample // every 100 ms
}

type floodSample struct {
	at         time.Duration
	acked, rss int64
}

// curve lists the peak RSS up to 0.5, 1, 2, 5, 10, 15, 20, 30, 40... GB written.
func (r *floodResult) curve() string {
	var b strings.Builder
	marks := []float64{0.5, 1, 2, 5, 10, 15, 20, 30, 40, 50, 60, 80, 100}
	var peak int64
	m := 0
	for _, s := range r.samples {
		for m < len(marks) && float64(s.acked) >= marks[m]*1e9 {
			fmt.Fprintf(&b, "  %5.1f GB at %5.1fs: peak %d MiB\n", marks[m], s.at.Seconds(), peak>>20)
			m++
		}
		peak = max(peak, s.rss)
	}
	if n := len(r.samples); n > 0 {
		s := r.samples[n-1]
		fmt.Fprintf(&b, "  %5.1f GB at %5.1fs: peak %d MiB (end)", float64(s.acked)/1e9, s.at.Seconds(), peak>>20)
	}
	return b.String()
}

// flood starts a node, floods it for dur, checks the log and returns the figures.
func flood(t *testing.T, dur time.Duration) *floodResult {
	t.Helper()
	// The retention check every second instead of every 5 minutes keeps the disk use
	// small; it touches no memory budget.
	node := startProcess(t, t.TempDir(), freeAddrs(t), "--set", "log.retention.check.interval.ms=1000")
	adm := newAdmin(t, node.kafka)
	topic := topicName(t)
	retention := strconv.Itoa(floodRetentionBytes)
	if s := os.Getenv("RUNNEL_FLOOD_RETENTION"); s != "" {
		retention = s // -1: keep everything (size the run to the free disk space)
	}
	createTopic(t, adm, topic, floodProducers, "segment.bytes", strconv.Itoa(floodSegmentBytes), "retention.bytes", retention)
	pool := make([]byte, 4<<20)
	rand.Read(pool)

	res := &floodResult{}
	var acked atomic.Int64
	stop := make(chan struct{})
	sampled := make(chan struct{})
	pid := node.cmd.Process.Pid
	start := time.Now()
	go func() {
		defer close(sampled)
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for {
			rss, _, err := procMemory(pid)
			if err != nil {
				t.Errorf("reading the node's memory: %v", err)
				return
			}
			res.samples = append(res.samples, floodSample{at: time.Since(start), acked: acked.Load(), rss: rss})
			res.peak = max(res.peak, rss)
			select {
			case <-stop:
				return
			case <-tick.C:
			}
		}
	}()
	producers := make([]*floodProducer, floodProducers)
	var wg sync.WaitGroup
	for i := range producers {
		producers[i] = newFloodProducer(t, node.kafka, topic, int32(i), pool, &acked)
		wg.Add(1)
		go func() { defer wg.Done(); producers[i].run(stop) }()
	}
	time.Sleep(dur)
	close(stop)
	wg.Wait()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for _, p := range producers {
		if err := p.cl.Flush(ctx); err != nil {
			t.Fatalf("flushing producer of partition %d: %v", p.partition, err)
		}
	}
	<-sampled
	_, hwm, err := procMemory(pid)
	if err != nil {
		t.Fatal(err)
	}
	res.hwm, res.bytes = hwm, acked.Load()
	checkFlood(t, node.kafka, topic, producers)
	return res
}

// procMemory reads VmRSS and VmHWM of pid, in bytes.
func procMemory(pid int) (rss, hwm int64, err error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		k, v, ok := strings.Cut(line, ":")
		if !ok || (k != "VmRSS" && k != "VmHWM") {
			continue
		}
		kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
		if err != nil {
			return 0, 0, fmt.Errorf("/proc/%d/status %s: %v", pid, line, err)
		}
		if k == "VmRSS" {
			rss = kb << 10
		} else {
			hwm = kb << 10
		}
	}
	return rss, hwm, nil
}

// floodProducer writes records numbered 0, 1, 2... into one partition and keeps the
// offset each was acknowledged at.
type floodProducer struct {
	cl        *kgo.Client
	topic     string
	partition int32
	pool      []byte
	acked     *atomic.Int64

	mu      sync.Mutex // guards offsets and errs
	offsets []int64    // offsets[seq]: where record seq was acknowledged; -1 until then
	errs    map[string]int
}

func newFloodProducer(t *testing.T, addr, topic string, partition int32, pool []byte, acked *atomic.Int64) *floodProducer {
	cl := newClient(t, addr,
		kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.DisableIdempotentWrite(),
		kgo.MaxProduceRequestsInflightPerBroker(floodInflight),
		kgo.ProducerBatchCompression(kgo.NoCompression()),
		kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.MaxBufferedRecords(2*floodInflight*(1<<20)/floodRecordSize), // twice the window
		kgo.ProduceRequestTimeout(30*time.Second))
	return &floodProducer{cl: cl, topic: topic, partition: partition, pool: pool, acked: acked, errs: map[string]int{}}
}

// value is record seq's value: the partition and seq, then bytes of the pool at a place
// that depends on seq, so that every value can be checked exactly.
func (p *floodProducer) value(seq int) []byte {
	v := make([]byte, floodRecordSize)
	binary.BigEndian.PutUint32(v, uint32(p.partition))
	binary.BigEndian.PutUint32(v[4:], uint32(seq))
	off := (seq * 4099) % (len(p.pool) - floodRecordSize)
	copy(v[8:], p.pool[off:])
	return v
}

func (p *floodProducer) run(stop <-chan struct{}) {
	for seq := 0; ; seq++ {
		select {
		case <-stop:
			return
		default:
		}
		p.mu.Lock()
		p.offsets = append(p.offsets, -1)
		p.mu.Unlock()
		r := &kgo.Record{Topic: p.topic, Partition: p.partition, Value: p.value(seq)}
		// Produce blocks while kgo's buffer is full: the producer goes as fast as the
		// node acknowledges.
		p.cl.Produce(context.Background(), r, func(r *kgo.Record, err error) {
			seq := int(binary.BigEndian.Uint32(r.Value[4:]))
			p.mu.Lock()
			defer p.mu.Unlock()
			if err != nil {
				p.errs[err.Error()]++
				return
			}
			p.offsets[seq] = r.Offset
			p.acked.Add(int64(len(r.Value)))
		})
	}
}

// checkFlood checks every producer's acknowledgements against the log: record seq
// acknowledged at offset seq (one producer per partition, no failures, so the
// acknowledged offsets are 0..n-1, each once), the log ending at n, and every record
// from the log start on holding exactly its value.
func checkFlood(t *testing.T, addr, topic string, producers []*floodProducer) {
	t.Helper()
	adm := newAdmin(t, addr)
	// Retention runs once more after the last write; wait for it, so that the log
	// start read below stays put while the records are read.
	time.Sleep(2 * time.Second)
	ends, starts := endOffsets(t, adm, topic), startOffsets(t, adm, topic)
	offsets := map[int32]kgo.Offset{}
	for _, p := range producers {
		p.mu.Lock()
		if len(p.errs) > 0 {
			t.Errorf("partition %d: produce failures %v", p.partition, p.errs)
		}
		bad := 0
		for seq, off := range p.offsets {
			if off != int64(seq) {
				if bad++; bad <= 5 {
					t.Errorf("partition %d: record %d acknowledged at offset %d, want %d", p.partition, seq, off, seq)
				}
			}
		}
		if n := int64(len(p.offsets)); ends[p.partition] != n {
			t.Errorf("partition %d: log end %d, want %d (the records acknowledged)", p.partition, ends[p.partition], n)
		}
		p.mu.Unlock()
		offsets[p.partition] = kgo.NewOffset().At(starts[p.partition])
	}
	if t.Failed() {
		return
	}
	cl := newClient(t, addr, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: offsets}),
		kgo.FetchMaxBytes(64<<20))
	next := map[int32]int64{}
	left := 0
	for p := range ends {
		next[p] = starts[p]
		left += int(ends[p] - starts[p])
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	for left > 0 {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("reading %s back: %d records left (next offsets %v, ends %v)", topic, left, next, ends)
		}
		fs.EachError(func(tp string, p int32, err error) { t.Fatalf("reading %s[%d] back: %v", tp, p, err) })
		fs.EachRecord(func(r *kgo.Record) {
			p := producers[r.Partition]
			if r.Offset != next[r.Partition] {
				t.Fatalf("partition %d: offset %d read after %d", r.Partition, r.Offset, next[r.Partition]-1)
			}
			if !bytes.Equal(r.Value, p.value(int(r.Offset))) {
				t.Fatalf("partition %d offset %d: the value differs from record %d's", r.Partition, r.Offset, r.Offset)
			}
			next[r.Partition]++
			left--
		})
	}
	kept := 0
	for p := range ends {
		kept += int(ends[p] - starts[p])
	}
	t.Logf("checked: every acknowledged offset once; %d records still in retention read back exact (log starts %v, ends %v)", kept, starts, ends)
}
