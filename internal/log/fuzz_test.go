package log

import (
	"bytes"
	"encoding/binary"
	"errors"
	"os"
	"testing"

	"github.com/runnel-io/runnel/internal/log/logtest"
	"github.com/runnel-io/runnel/internal/recordbatch"
	"github.com/runnel-io/runnel/internal/vfs"
)

// FuzzRecoverSegment writes arbitrary bytes as a segment and opens the log. The
// recovered log is never larger than the file; what it serves (up to the first
// damaged range) is a prefix of the file, of valid batches with increasing offsets;
// a valid batch after bad bytes is never truncated away (damage.go); and recovering
// again changes nothing.
func FuzzRecoverSegment(f *testing.F) {
	one := logtest.BatchWith(logtest.BatchOptions{Records: 3, Timestamp: 1})
	two := append(append([]byte(nil), one...), logtest.BatchWith(logtest.BatchOptions{Records: 2, BaseOffset: 3, Timestamp: 2})...)
	maxLen := make([]byte, 12)
	binary.BigEndian.PutUint32(maxLen[8:], 1<<31-1)
	f.Add([]byte{})
	f.Add(make([]byte, 12)) // zero length
	f.Add(maxLen)           // maximum length
	f.Add(one)              // one valid batch
	f.Add(two)              // two
	f.Add(append(append([]byte(nil), one...), "garbage after a valid batch"...))
	f.Add(two[:len(two)-7])                                       // torn second batch
	f.Add(append(append([]byte(nil), two[len(one):]...), one...)) // offsets going backwards
	// A damaged batch with a valid one after it: damage, not a torn tail.
	flipped := append([]byte(nil), two...)
	flipped[len(one)/2] ^= 1
	f.Add(flipped)
	f.Add(append(append(append([]byte(nil), one...), "garbage"...), two[len(one):]...))
	f.Fuzz(func(t *testing.T, data []byte) {
		mem := vfs.NewMem()
		dir := "/d/t-0"
		mem.MkdirAll(dir, 0o755)
		file, _ := mem.OpenFile(MakeFilename(dir, FileTypeSegment, 0), os.O_CREATE|os.O_RDWR, 0o644)
		file.Write(data)
		file.Close()
		env := testEnv{fs: mem, mem: mem, dir: dir}
		l := openLog(t, env, DefaultConfig())
		if l.Size() > int64(len(data)) {
			t.Fatalf("recovered %d bytes from a %d-byte file", l.Size(), len(data))
		}
		served := l.LogEndOffset()
		ds := l.Damaged()
		if d, ok := l.firstBlockingDamage(); ok {
			served = d.FirstOffset
			if _, err := l.Read(d.FirstOffset, 1<<30, l.LogEndOffset(), true); !errors.Is(err, ErrKafkaStorage) {
				t.Fatalf("Read at the damage (%+v): %v", d, err)
			}
		}
		if len(ds) > 0 && l.Size() != int64(len(data)) && ds[len(ds)-1].end() > l.Size() {
			t.Fatalf("damage %+v past the recovered size %d", ds, l.Size())
		}
		var got []byte
		var from int64 // where the read starts: after garbage that held no offset
		if served > 0 {
			ri, err := l.Read(0, 1<<30, served, true)
			if err != nil {
				t.Fatalf("Read: %v", err)
			}
			got, _ = ri.AppendTo(nil)
			from = ri.Position
		}
		if !bytes.Equal(got, data[from:from+int64(len(got))]) || (from > 0 && len(ds) == 0) {
			t.Fatalf("the recovered log (%d bytes, read %d from %d) is not the file's", l.Size(), len(got), from)
		}
		if len(ds) == 0 && from+int64(len(got)) != l.Size() {
			t.Fatalf("read %d bytes of an undamaged %d-byte log", len(got), l.Size())
		}
		next := int64(0)
		for rest := got; len(rest) > 0; {
			b, r, err := recordbatch.Next(rest, 0)
			if err != nil || b.Verify() != nil || b.BaseOffset() < next {
				t.Fatalf("recovered an invalid or out of order batch: %v", err)
			}
			next, rest = b.NextOffset(), r
		}
		if len(ds) == 0 && next != l.LogEndOffset() {
			t.Fatalf("log end %d, last batch ends at %d", l.LogEndOffset(), next)
		}
		// Bytes after a damaged range were kept: the file is whole up to the end of
		// the last range that resynced.
		for _, d := range ds {
			if d.LastOffset >= d.FirstOffset && d.end() < int64(len(data)) && l.Size() < d.end() {
				t.Fatalf("the valid batch after damage %+v was truncated (size %d)", d, l.Size())
			}
		}
		size, leo := l.Size(), l.LogEndOffset()
		l.Close()
		again := openLog(t, env, DefaultConfig())
		if again.Size() != size || again.LogEndOffset() != leo || len(again.Damaged()) != len(ds) {
			t.Fatalf("second recovery: %d bytes, end %d, %d damaged; first: %d, %d, %d", again.Size(), again.LogEndOffset(),
				len(again.Damaged()), size, leo, len(ds))
		}
	})
}
