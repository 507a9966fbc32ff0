// Package gcfloor keeps a garbage-collector ballast: a heap floor below which Go does
// not start collections.
//
// Go starts a collection whenever the heap has doubled since the last one, with a
// 4 MB minimum. A broker's live heap is a few MB (record bytes live in the page cache),
// so at 10,000 requests/s it collected several times a second, and those collections
// showed up in its tail latency; the load generators had the same problem. A ballast
// is one never-written, pointer-free []byte: the collector counts it as live but never
// scans it, and its pages are never touched, so it costs address space, not memory.
// With a floor of F bytes a collection starts after about F bytes of garbage.
package gcfloor

import (
	"os"
	"runtime"
)

// Run runs fn with a ballast of floor bytes alive. GOGC set in the environment means
// the operator tuned the collector, and then no ballast is kept.
func Run(floor int, fn func() error) error {
	if tuned() {
		return fn()
	}
	ballast := make([]byte, floor)
	err := fn()
	runtime.KeepAlive(ballast)
	return err
}

// prefaultChunk is the size of the garbage Prefault allocates at a time: pointer-free
// and small enough to come from the same heap pages that the program's own small
// allocations are later carved from.
const prefaultChunk = 64 << 10

// Prefault allocates n bytes of garbage, touches every page of it and collects it, so
// that the heap the program then churns through is already mapped. A load generator
// with a ballast of floor bytes allocates about floor bytes of garbage before its first
// collection, all on memory it touches for the first time; on a virtual machine whose
// balloon device reports free pages to the host (free page reporting), each first touch
// is a host fault. Against franz-go's kfake with BlackholeProduce, bench produce's
// first second ran at a third of its rate (0.48 million records/s, then 1.2 million)
// until that first collection; prefaulted, 1.37 million from the first second.
//
// Meant for load generators, not the broker: it makes n bytes resident at once, where
// a ballast alone costs address space until garbage fills it.
func Prefault(n int) {
	keep := make([][]byte, 0, n/prefaultChunk+1)
	pageSize := os.Getpagesize()
	for done := 0; done < n; done += prefaultChunk {
		b := make([]byte, prefaultChunk)
		for i := 0; i < len(b); i += pageSize {
			b[i] = 1
		}
		keep = append(keep, b)
	}
	runtime.KeepAlive(keep) // keep is dead after this: the collection frees it all
	runtime.GC()
}

// RunPrefaulted is Run for a load generator: the ballast, and prefault bytes
// prefaulted (see Prefault) before fn starts. A collection starts once the garbage
// reaches the ballast plus the live heap, so a generator that keeps L bytes live
// touches about floor + 2L: that is what to prefault. With GOGC set it only runs fn,
// as Run does.
func RunPrefaulted(floor, prefault int, fn func() error) error {
	if tuned() {
		return fn()
	}
	return Run(floor, func() error {
		Prefault(prefault)
		return fn()
	})
}

// tuned reports whether GOGC is set: the operator tuned the collector, and then no
// ballast is kept.
func tuned() bool {
	_, set := os.LookupEnv("GOGC")
	return set
}
