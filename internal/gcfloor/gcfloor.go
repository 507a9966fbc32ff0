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
	if _, tuned := os.LookupEnv("GOGC"); tuned {
		return fn()
	}
	ballast := make([]byte, floor)
	err := fn()
	runtime.KeepAlive(ballast)
	return err
}
