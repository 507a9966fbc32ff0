package testutil

import (
	"os"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// KgoDebugLog returns the franz-go option that writes the client's own debug log to
// $RUNNEL_KGO_LOG (appended, one file for every client of the run), or nothing when
// the variable is unset: to see why a default client waits after a fault.
func KgoDebugLog(t testing.TB) []kgo.Opt {
	path := os.Getenv("RUNNEL_KGO_LOG")
	if path == "" {
		return nil
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return []kgo.Opt{kgo.WithLogger(kgo.BasicLogger(f, kgo.LogLevelDebug, func() string { return time.Now().Format("15:04:05.000 ") }))}
}
