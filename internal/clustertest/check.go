package clustertest

import (
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/runnel-io/runnel/internal/log"
	"github.com/runnel-io/runnel/internal/log/logtest"
	"github.com/runnel-io/runnel/internal/recordbatch"
	"github.com/runnel-io/runnel/internal/vfs"
)

// maxProblems is how many problems of one partition Check prints.
const maxProblems = 20

// ReplicaLog is the content of one node's copy of a partition log, as Check and
// ReadReplica read it.
type ReplicaLog struct {
	Node       int32
	Start, End int64              // log start and end offsets
	Values     map[int64]string   // offset -> value of every data record
	Epochs     map[int64]int32    // offset -> partition leader epoch of its batch
	OffsetsOf  map[string][]int64 // value -> the offsets holding it
}

// Check proves the history against the on-disk logs of topic: for every partition,
// every node in the ISR (as the partition's live leader reports it) must hold every
// acknowledged record at its offset with its value, and no value of this history
// twice. It pauses the live nodes for the moment it copies their partition
// directories, then reads the copies with internal/log, as recovery after a crash
// would. Stop the producers first. The result tells the leader epoch each offset was
// written in, for tests that check who acknowledged what.
func (h *History) Check(t testing.TB, c *Cluster, topic string) *CheckResult {
	t.Helper()
	parts := c.Partitions(t, topic)
	isr := map[int32][]int32{}
	for _, p := range parts {
		st := c.waitPartition(t, 30*time.Second, topic, p, func(PartitionState) error { return nil })
		isr[p] = slices.Sorted(slices.Values(st.ISR))
	}
	dirs := c.copyPartitions(t, topic, isr)
	acks := byPartition(h.Acks())
	res := &CheckResult{ISR: isr, Epochs: map[int32]map[int64]int32{}, Replicas: map[int32]map[int32]*ReplicaLog{}}
	for _, p := range parts {
		var bad int
		bad, res.Replicas[p] = h.checkPartition(t, topic, p, isr[p], dirs[p], acks[p])
		res.Problems += bad
		for _, node := range isr[p] {
			if rl := res.Replicas[p][node]; rl != nil {
				res.Epochs[p] = rl.Epochs
				break
			}
		}
	}
	if res.Problems > 0 {
		t.Errorf("history check of %s: %d problems (%d records acknowledged)", topic, res.Problems, h.Len())
	}
	return res
}

// CheckResult is what Check found.
type CheckResult struct {
	ISR      map[int32][]int32         // partition -> the ISR whose copies were read
	Epochs   map[int32]map[int64]int32 // partition -> offset -> leader epoch of its batch, in the first ISR copy
	Problems int                       // lost, changed, duplicated or doubly acknowledged records
	// Replicas holds every ISR copy read: partition -> node -> its content.
	Replicas map[int32]map[int32]*ReplicaLog
}

// checkPartition compares one partition's acknowledgements with each ISR copy and
// returns the number of problems and the copies read, by node.
func (h *History) checkPartition(t testing.TB, topic string, p int32, isr []int32, dirs map[int32]string, acks []Ack) (int, map[int32]*ReplicaLog) {
	t.Helper()
	var problems []string
	problems = append(problems, conflictingAcks(acks)...)
	var summary []string
	copies := map[int32]*ReplicaLog{}
	for _, node := range isr {
		rl, err := readReplicaLog(topic, p, node, dirs[node])
		if err != nil {
			problems = append(problems, err.Error())
			continue
		}
		copies[node] = rl
		summary = append(summary, fmt.Sprintf("node %d [%d,%d)", node, rl.Start, rl.End))
		problems = append(problems, h.compare(rl, acks)...)
	}
	t.Logf("%s-%d: %d acknowledged, ISR %v: %s; %d problems", topic, p, len(acks), isr, strings.Join(summary, ", "), len(problems))
	for i, s := range problems {
		if i == maxProblems {
			t.Errorf("%s-%d: ... and %d more problems", topic, p, len(problems)-maxProblems)
			break
		}
		t.Errorf("%s-%d: %s", topic, p, s)
	}
	return len(problems), copies
}

// conflictingAcks reports two acknowledgements of one offset.
func conflictingAcks(acks []Ack) []string {
	var out []string
	seen := map[int64]Ack{}
	for _, a := range acks {
		if b, ok := seen[a.Offset]; ok {
			out = append(out, fmt.Sprintf("offset %d acknowledged twice: %q at %s and %q at %s",
				a.Offset, b.Value, b.At.Format(time.StampMilli), a.Value, a.At.Format(time.StampMilli)))
		}
		seen[a.Offset] = a
	}
	return out
}

// compare returns what rl lacks or holds wrongly.
func (h *History) compare(rl *ReplicaLog, acks []Ack) []string {
	var out []string
	for _, a := range acks {
		got, ok := rl.Values[a.Offset]
		switch {
		case !ok:
			out = append(out, fmt.Sprintf("node %d: acknowledged %q (at %s) missing at offset %d; log is [%d,%d), value found at %v",
				rl.Node, a.Value, a.At.Format(time.StampMilli), a.Offset, rl.Start, rl.End, rl.OffsetsOf[a.Value]))
		case got != a.Value:
			out = append(out, fmt.Sprintf("node %d: offset %d holds %q (epoch %d), acknowledged was %q (at %s), found at %v",
				rl.Node, a.Offset, got, rl.Epochs[a.Offset], a.Value, a.At.Format(time.StampMilli), rl.OffsetsOf[a.Value]))
		}
	}
	for v, offs := range rl.OffsetsOf {
		if len(offs) > 1 && strings.HasPrefix(v, h.run) {
			out = append(out, fmt.Sprintf("node %d: value %q stored %d times, at offsets %v", rl.Node, v, len(offs), offs))
		}
	}
	return out
}

// copyPartitions pauses every live node, copies the directory of each ISR member's
// replica of each partition into a temporary directory, and resumes the nodes it
// paused. It returns the copies by partition and node.
func (c *Cluster) copyPartitions(t testing.TB, topic string, isr map[int32][]int32) map[int32]map[int32]string {
	t.Helper()
	var paused []int
	for _, n := range c.nodes {
		if n.Alive() && n.virt == nil { // an in-process node cannot be paused; see virtual.go
			c.Pause(int(n.ID))
			paused = append(paused, int(n.ID))
		}
	}
	defer func() {
		for _, i := range paused {
			c.Resume(i)
		}
	}()
	root := t.TempDir()
	out := map[int32]map[int32]string{}
	for p, nodes := range isr {
		out[p] = map[int32]string{}
		for _, id := range nodes {
			dst := filepath.Join(root, fmt.Sprintf("node-%d", id), fmt.Sprintf("%s-%d", topic, p))
			if err := copyDir(c.Node(int(id)).PartitionDir(topic, p), dst); err != nil {
				t.Fatalf("copying node %d's replica of %s-%d: %v", id, topic, p, err)
			}
			out[p][id] = dst
		}
	}
	return out
}

// ReadReplica reads node's copy of topic-partition as Check does: it pauses the node
// (if it runs) for the moment it copies the partition directory, and opens the copy
// with internal/log. It fails the test if the node has no such replica.
func (c *Cluster) ReadReplica(t testing.TB, node int, topic string, p int32) *ReplicaLog {
	t.Helper()
	n := c.Node(node)
	dst := filepath.Join(t.TempDir(), fmt.Sprintf("%s-%d", topic, p))
	pause := n.Alive() && n.virt == nil // an in-process node cannot be paused; see virtual.go
	if pause {
		c.Pause(node)
	}
	err := copyDir(n.PartitionDir(topic, p), dst)
	if pause {
		c.Resume(node)
	}
	if err != nil {
		t.Fatalf("copying node %d's replica of %s-%d: %v", node, topic, p, err)
	}
	rl, err := readReplicaLog(topic, p, n.ID, dst)
	if err != nil {
		t.Fatal(err)
	}
	return rl
}

// copyDir copies the regular files of src into a new directory dst.
func copyDir(src, dst string) error {
	if err := os.MkdirAll(dst, 0o755); err != nil {
		return err
	}
	entries, err := os.ReadDir(src)
	if err != nil {
		return err
	}
	for _, e := range entries {
		if !e.Type().IsRegular() {
			continue
		}
		b, err := os.ReadFile(filepath.Join(src, e.Name()))
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(dst, e.Name()), b, 0o644); err != nil {
			return err
		}
	}
	return nil
}

// readReplicaLog opens the copy in dir with internal/log (recovering it from offset 0,
// as after a crash) and decodes every record.
func readReplicaLog(topic string, p, node int32, dir string) (*ReplicaLog, error) {
	l, err := log.Open(log.Options{FS: vfs.OS(), Dir: dir, TP: log.TopicPartition{Topic: topic, Partition: p},
		Config: log.DefaultConfig(), Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		return nil, fmt.Errorf("node %d: opening its log copy: %w", node, err)
	}
	defer l.Close()
	rl := &ReplicaLog{Node: node, Start: l.LogStartOffset(), End: l.LogEndOffset(),
		Values: map[int64]string{}, Epochs: map[int64]int32{}, OffsetsOf: map[string][]int64{}}
	var buf []byte
	for off := rl.Start; off < rl.End; {
		ri, err := l.Read(off, 1<<20, rl.End, true)
		if err == nil {
			buf, err = ri.AppendTo(buf[:0])
		}
		if err != nil {
			return nil, fmt.Errorf("node %d: reading offset %d: %w", node, off, err)
		}
		if ri.Size == 0 {
			return nil, fmt.Errorf("node %d: empty read at offset %d below the log end %d", node, off, rl.End)
		}
		if off, err = rl.addBatches(buf, off); err != nil {
			return nil, fmt.Errorf("node %d: %w", node, err)
		}
	}
	return rl, nil
}

// addBatches decodes the batches in buf, keeping records at from or later, and
// returns the offset after the last batch.
func (rl *ReplicaLog) addBatches(buf []byte, from int64) (int64, error) {
	next := from
	for len(buf) > 0 {
		b, rest, err := recordbatch.Next(buf, 0)
		if err != nil {
			return next, fmt.Errorf("batch at offset %d: %w", next, err)
		}
		buf, next = rest, b.NextOffset()
		if b.IsControl() {
			continue
		}
		if b.Compression() != 0 {
			return next, fmt.Errorf("batch at offset %d is compressed (codec %d); Check reads uncompressed batches only", b.BaseOffset(), b.Compression())
		}
		recs, err := logtest.Decode(b)
		if err != nil {
			return next, fmt.Errorf("decoding batch at offset %d: %w", b.BaseOffset(), err)
		}
		for _, r := range recs {
			if r.Offset < from {
				continue
			}
			v := string(r.Value)
			rl.Values[r.Offset], rl.Epochs[r.Offset] = v, b.PartitionLeaderEpoch()
			rl.OffsetsOf[v] = append(rl.OffsetsOf[v], r.Offset)
		}
	}
	return next, nil
}
