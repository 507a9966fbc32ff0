package kafka

import (
	"math/bits"
	"sync"
)

// Byte buffers of the hot paths (request frames of produce and fetch, records read for
// a fetch, encoded responses) come from size-classed pools instead of the heap: at
// hundreds of MB/s, fresh buffers were most of the broker's garbage (and Go zeroes
// every fresh buffer, a second pass over the bytes). A buffer returns to its pool only
// once nothing refers to it any more; the owner of each kind says when that is.

const (
	minPoolClass = 10 // 1 KiB: smaller buffers are cheap to allocate
	maxPoolClass = 26 // 64 MiB: larger ones are rare; keeping them would pin memory
)

// bufPools[c] holds buffers with a capacity of at least 1<<c.
var bufPools [maxPoolClass + 1]sync.Pool

// getBuf returns an empty buffer with a capacity of at least n. Its bytes are not
// zeroed: callers overwrite what they use.
func getBuf(n int) []byte {
	c := max(bits.Len(uint(n-1)), minPoolClass) // ceil(log2 n)
	if n <= 0 || c > maxPoolClass {
		return make([]byte, 0, max(n, 0))
	}
	if p, ok := bufPools[c].Get().(*[]byte); ok {
		return (*p)[:0]
	}
	return make([]byte, 0, 1<<c)
}

// putBuf gives b back for reuse; the caller must hold no reference to it afterwards.
// A buffer of any capacity is filed under the largest class it can serve.
func putBuf(b []byte) {
	c := bits.Len(uint(cap(b))) - 1 // floor(log2 cap)
	if c < minPoolClass || c > maxPoolClass {
		return
	}
	b = b[:0]
	bufPools[c].Put(&b)
}
