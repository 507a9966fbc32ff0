package log

import (
	"testing"

	"github.com/runnel-io/runnel/internal/log/logtest"
	"github.com/runnel-io/runnel/internal/vfs"
)

// countingFile counts the ReadAt calls made on a segment file.
type countingFile struct {
	vfs.File
	reads int
}

func (f *countingFile) ReadAt(p []byte, off int64) (int, error) {
	f.reads++
	return f.File.ReadAt(p, off)
}

// smallBatchSegment appends n one-record batches of 50 B and returns the first
// segment's file (counted) and published size.
func smallBatchSegment(t *testing.T, n int) (*countingFile, int64) {
	t.Helper()
	l := openLog(t, memEnv(), DefaultConfig())
	for i := range n {
		mustAppend(t, l, logtest.BatchWith(logtest.BatchOptions{Records: 1, ValueSize: 50, Timestamp: 1000 + int64(i)}))
	}
	seg := l.segs()[0]
	return &countingFile{File: seg.file}, seg.size.Load()
}

// Walking the headers of many small batches costs one read per headerReadAhead
// bytes, not one per batch, and finds the same headers as reading each one alone.
func TestHeaderWalkReadsAhead(t *testing.T) {
	const batches = 400
	f, size := smallBatchSegment(t, batches)
	h := getHdrBuf()
	defer hdrPool.Put(h)
	var walked int
	for pos := int64(0); pos < size; walked++ {
		hdr, err := readHeaderAt(f, pos, size, h)
		if err != nil {
			t.Fatalf("header %d at position %d: %v", walked, pos, err)
		}
		alone := getHdrBuf()
		want, err := readHeaderAt(f.File, pos, size, alone)
		hdrPool.Put(alone)
		if err != nil || hdr != want {
			t.Fatalf("header %d at position %d: read ahead %+v, alone %+v (%v)", walked, pos, hdr, want, err)
		}
		if hdr.base != int64(walked) {
			t.Fatalf("header %d at position %d has base offset %d", walked, pos, hdr.base)
		}
		pos += hdr.size
	}
	if walked != batches {
		t.Fatalf("walked %d batches, appended %d", walked, batches)
	}
	if most := int(size/headerReadAhead) + 2; f.reads > most {
		t.Fatalf("walking %d headers over %d bytes took %d reads, want at most %d", batches, size, f.reads, most)
	}
}

// The buffer holds only bytes below the limit of the read that filled it (bytes past
// the published size may be an append in progress), and only for the file it read.
func TestHeaderReadAheadStaysBelowLimitAndFile(t *testing.T) {
	f, size := smallBatchSegment(t, 10)
	h := getHdrBuf()
	defer hdrPool.Put(h)
	first, err := readHeaderAt(f, 0, size, h)
	if err != nil {
		t.Fatal(err)
	}

	h = getHdrBuf()
	defer hdrPool.Put(h)
	f.reads = 0
	if _, err := readHeaderAt(f, 0, first.size, h); err != nil {
		t.Fatal(err)
	}
	if _, err := readHeaderAt(f, first.size, size, h); err != nil {
		t.Fatal(err)
	}
	if f.reads != 2 {
		t.Fatalf("the header past the first read's limit took %d reads in all, want 2 (it must not come from the buffer)", f.reads)
	}

	other := &countingFile{File: f.File}
	if _, err := readHeaderAt(other, first.size, size, h); err != nil {
		t.Fatal(err)
	}
	if other.reads != 1 {
		t.Fatalf("a header of another file took %d reads, want 1 (the buffer holds the first file's bytes)", other.reads)
	}
}
