package log

import (
	"bytes"
	"encoding/binary"
	"os"
	"testing"

	"github.com/runnel-io/runnel/internal/log/logtest"
	"github.com/runnel-io/runnel/internal/recordbatch"
	"github.com/runnel-io/runnel/internal/vfs"
)

// FuzzRecoverSegment writes arbitrary bytes as a segment and opens the log. The
// recovered log is never larger than the file, its batches have increasing offsets,
// and recovering again changes nothing.
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
		var got []byte
		if l.LogEndOffset() > 0 {
			ri, err := l.Read(0, 1<<30, l.LogEndOffset(), true)
			if err != nil {
				t.Fatalf("Read: %v", err)
			}
			got, _ = ri.AppendTo(nil)
		}
		if !bytes.Equal(got, data[:len(got)]) || int64(len(got)) != l.Size() {
			t.Fatalf("the recovered log (%d bytes, read %d) is not a prefix of the file", l.Size(), len(got))
		}
		next := int64(0)
		for rest := got; len(rest) > 0; {
			b, r, err := recordbatch.Next(rest, 0)
			if err != nil || b.Verify() != nil || b.BaseOffset() < next {
				t.Fatalf("recovered an invalid or out of order batch: %v", err)
			}
			next, rest = b.NextOffset(), r
		}
		if next != l.LogEndOffset() {
			t.Fatalf("log end %d, last batch ends at %d", l.LogEndOffset(), next)
		}
		size, leo := l.Size(), l.LogEndOffset()
		l.Close()
		again := openLog(t, env, DefaultConfig())
		if again.Size() != size || again.LogEndOffset() != leo {
			t.Fatalf("second recovery: %d bytes, end %d; first: %d, %d", again.Size(), again.LogEndOffset(), size, leo)
		}
	})
}
