package gcfloor

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"testing"
)

func TestRunRaisesTheCollectionTarget(t *testing.T) {
	if _, tuned := os.LookupEnv("GOGC"); tuned {
		t.Skip("GOGC is set: Run keeps no ballast")
	}
	const floor = 128 << 20
	want := errors.New("from fn")
	var nextGC uint64
	err := Run(floor, func() error {
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		nextGC = ms.NextGC
		return want
	})
	if !errors.Is(err, want) {
		t.Fatalf("Run returned %v, want fn's error", err)
	}
	if nextGC < floor {
		t.Fatalf("next collection at %d bytes with a %d-byte floor", nextGC, floor)
	}
}

func TestRunWithGOGCKeepsNoBallast(t *testing.T) {
	t.Setenv("GOGC", "100")
	var nextGC uint64
	_ = Run(128<<20, func() error {
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		nextGC = ms.NextGC
		return nil
	})
	if nextGC >= 128<<20 {
		t.Fatalf("next collection at %d bytes: a ballast was kept although GOGC is set", nextGC)
	}
}

// RunPrefaulted must start fn with the floor's worth of heap already resident (touched
// and kept by the runtime for the allocations that follow, not returned to the
// operating system), which Run alone does not: its ballast is never touched.
func TestRunPrefaultedStartsWithTheFloorResident(t *testing.T) {
	if _, tuned := os.LookupEnv("GOGC"); tuned {
		t.Skip("GOGC is set: RunPrefaulted only runs fn")
	}
	const floor = 96 << 20
	var resident int64
	if err := RunPrefaulted(floor, floor, func() error { resident = residentBytes(t); return nil }); err != nil {
		t.Fatal(err)
	}
	if resident < floor*3/4 {
		t.Fatalf("fn started with %d MiB resident, want at least %d MiB of a %d MiB prefaulted floor",
			resident>>20, floor*3/4>>20, floor>>20)
	}
}

// residentBytes is the process's resident set size, from /proc/self/statm.
func residentBytes(t *testing.T) int64 {
	b, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		t.Skipf("no /proc/self/statm: %v", err)
	}
	var size, resident int64
	if _, err := fmt.Sscan(string(b), &size, &resident); err != nil {
		t.Fatalf("parse /proc/self/statm %q: %v", b, err)
	}
	return resident * int64(os.Getpagesize())
}
