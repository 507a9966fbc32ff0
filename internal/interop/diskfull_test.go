package interop_test

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/runnel-io/runnel/internal/testutil"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestSingleNodeDiskFull runs one node on a 16 MiB tmpfs, fills the filesystem with
// another file, and checks that produce then fails with KAFKA_STORAGE_ERROR while the
// node stays up and serves what it stored; that once the file is removed the same
// partition takes writes again without a restart, at the next offsets; and that every
// acknowledged record is there exactly once. It needs root to mount the tmpfs, and skips
// otherwise.
func TestSingleNodeDiskFull(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a process on a tmpfs")
	}
	if os.Geteuid() != 0 {
		t.Skip("needs root to mount a small filesystem")
	}
	mnt := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=16m", "tmpfs", mnt).CombinedOutput(); err != nil {
		t.Skipf("cannot mount a tmpfs on %s: %v: %s", mnt, err, out)
	}
	t.Cleanup(func() { _ = exec.Command("umount", "-l", mnt).Run() })
	p, _ := startFreshIn(t, filepath.Join(mnt, "data"))
	topic := topicName(t)
	createTopic(t, newAdmin(t, p.kafka), topic, 1)

	// Uncompressed, so that every record needs new pages of the segment file.
	noCompression := kgo.ProducerBatchCompression(kgo.NoCompression())
	value := bytes.Repeat([]byte("v"), 8<<10)
	produce := func(cl *kgo.Client, i int) error {
		v := append([]byte(fmt.Sprintf("%06d", i)), value...)
		return cl.ProduceSync(ctxT(t), &kgo.Record{Topic: topic, Value: v}).FirstErr()
	}
	cl := newClient(t, p.kafka, kgo.RecordPartitioner(kgo.ManualPartitioner()), noCompression)
	const before = 50
	for i := range before {
		testutil.NoError(t, produce(cl, i), "record %d, before the disk fills", i)
	}

	// Take every free byte with another file, as a neighbour on the disk would.
	filler := filepath.Join(mnt, "filler")
	fillDisk(t, filler)

	// A client that gives up at once sees the broker's answer rather than its retries.
	failing := newClient(t, p.kafka, kgo.RecordPartitioner(kgo.ManualPartitioner()), noCompression, kgo.RecordRetries(0))
	err := produce(failing, before)
	if !errors.Is(err, kerr.KafkaStorageError) {
		t.Fatalf("produce to a full disk: %v, want KAFKA_STORAGE_ERROR", err)
	}
	testutil.Eventually(t, 10*time.Second, func() error {
		if !strings.Contains(p.output.String(), "disk full: appends to this partition fail until space is freed") {
			return errors.New("the node has not logged the full disk")
		}
		return nil
	})
	select {
	case <-p.exited:
		t.Fatalf("the only node exited on a full disk: %v", p.waitErr)
	default:
	}
	// What was stored is still served.
	checkValues(t, consumePartitions(t, p.kafka, topic, map[int32]int{0: before})[0], 0, before)

	// Free the space: the same partition takes writes again, no restart.
	testutil.NoError(t, os.Remove(filler), "removing the filler")
	const after = 50
	for i := before; i < before+after; i++ {
		testutil.NoError(t, produce(cl, i), "record %d, after space was freed", i)
	}
	testutil.Eventually(t, 10*time.Second, func() error {
		if !strings.Contains(p.output.String(), "disk has room again: appends resumed") {
			return errors.New("the node has not logged that appends resumed")
		}
		return nil
	})
	got := consumePartitions(t, p.kafka, topic, map[int32]int{0: before + after})
	checkContiguous(t, got, 0)
	checkValues(t, got[0], 0, before+after)
}

// fillDisk writes path until the filesystem has no room left.
func fillDisk(t *testing.T, path string) {
	t.Helper()
	f, err := os.Create(path)
	testutil.NoError(t, err, "creating %s", path)
	defer f.Close()
	chunk := make([]byte, 64<<10)
	for {
		if _, err := f.Write(chunk); err != nil {
			if !errors.Is(err, syscall.ENOSPC) {
				t.Fatalf("filling the disk: %v", err)
			}
			return
		}
	}
}

// checkValues fails unless records hold the numbered values first, first+1, ... in
// order (each value starts with its six-digit number).
func checkValues(t *testing.T, records []*kgo.Record, first, n int) {
	t.Helper()
	if len(records) != n {
		t.Fatalf("%d records, want %d", len(records), n)
	}
	for i, r := range records {
		if want := fmt.Sprintf("%06d", first+i); !bytes.HasPrefix(r.Value, []byte(want)) {
			t.Fatalf("record at offset %d starts %q, want %q", r.Offset, r.Value[:min(6, len(r.Value))], want)
		}
	}
}
