package kafka

import "testing"

func TestBufPoolCapacities(t *testing.T) {
	for _, n := range []int{0, 1, 1000, 1024, 1025, 1 << 20, 1<<20 + 1, 1 << 26, 1<<26 + 1} {
		b := getBuf(n)
		if len(b) != 0 || cap(b) < n {
			t.Fatalf("getBuf(%d): len %d cap %d", n, len(b), cap(b))
		}
		putBuf(b)
	}
	// A buffer grown to an odd capacity serves requests up to the class below it.
	odd := make([]byte, 0, 3000)
	putBuf(odd)
	for range 100 { // sync.Pool may drop it; it must never hand out less than asked
		if b := getBuf(2048); cap(b) < 2048 {
			t.Fatalf("getBuf(2048) returned capacity %d", cap(b))
		}
	}
	if b := getBuf(2049); cap(b) < 2049 {
		t.Fatalf("getBuf(2049) returned capacity %d", cap(b))
	}
}
