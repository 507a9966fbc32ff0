package gcfloor

import (
	"errors"
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
