package testutil

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"reflect"
	"sync"
	"testing"
	"time"
)

// PollInterval is how long Eventually sleeps between two calls of its condition.
const PollInterval = 20 * time.Millisecond

// Eventually calls fn until it returns nil, sleeping PollInterval between calls. If fn
// has not returned nil within d, the test stops with fn's last error, which should say
// what never happened ("partition 0 end offset 3, want 10"). fn runs on the test's
// goroutine; it should not block for long, since d is checked only between calls.
func Eventually(t testing.TB, d time.Duration, fn func() error) {
	t.Helper()
	deadline := time.Now().Add(d)
	for {
		err := fn()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("still not true after %v: %v", d, err)
			return
		}
		time.Sleep(PollInterval)
	}
}

// NoError stops the test if err is not nil. what says what was being done
// (fmt.Sprint of its arguments).
func NoError(t testing.TB, err error, what ...any) {
	t.Helper()
	if err != nil {
		t.Fatalf("%s: unexpected error: %v", describe(what, "error"), err)
	}
}

// ErrorIs stops the test unless errors.Is(err, target).
func ErrorIs(t testing.TB, err, target error, what ...any) {
	t.Helper()
	if !errors.Is(err, target) {
		t.Fatalf("%s: got error %v, want %v", describe(what, "error"), err, target)
	}
}

// Equal stops the test unless got and want are reflect.DeepEqual.
func Equal[T any](t testing.TB, got, want T, what ...any) {
	t.Helper()
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("%s:\n got: %#v\nwant: %#v", describe(what, "value"), got, want)
	}
}

// True stops the test unless cond holds.
func True(t testing.TB, cond bool, what ...any) {
	t.Helper()
	if !cond {
		t.Fatalf("%s: condition is false", describe(what, "condition"))
	}
}

// FreeAddr returns "127.0.0.1:PORT" for a TCP port that was free a moment ago: for a
// process that must be given its address in advance. Another process may take the port
// in between, so prefer port 0 wherever the listener's owner can report what it bound.
// Ports are drawn below Linux's ephemeral range (32768-60999), so the outgoing
// connections of concurrently running tests cannot take them in the meantime; only
// another test drawing the same port can, which is rare.
func FreeAddr(t testing.TB) string {
	t.Helper()
	for range 100 {
		port := 20000 + rand.IntN(12000)
		if !claimPort(port) {
			continue // already handed out in this process, maybe not bound yet
		}
		l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port))
		if err != nil {
			continue
		}
		addr := l.Addr().String()
		if err := l.Close(); err != nil {
			t.Fatalf("finding a free port: %v", err)
		}
		return addr
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("finding a free port: %v", err)
	}
	addr := l.Addr().String()
	if err := l.Close(); err != nil {
		t.Fatalf("finding a free port: %v", err)
	}
	return addr
}

var (
	portsMu sync.Mutex
	ports   = map[int]bool{} // ports FreeAddr handed out in this process
)

// claimPort records port as handed out and reports whether it was not already: two
// addresses drawn for one cluster must never be the same port.
func claimPort(port int) bool {
	portsMu.Lock()
	defer portsMu.Unlock()
	if ports[port] {
		return false
	}
	ports[port] = true
	return true
}

// describe renders the caller's what, or dflt when there is none.
func describe(what []any, dflt string) string {
	if len(what) == 0 {
		return dflt
	}
	if f, ok := what[0].(string); ok && len(what) > 1 {
		return fmt.Sprintf(f, what[1:]...)
	}
	return fmt.Sprint(what...)
}

// RequireAllEnv is set by scripts/test.sh, which installs every tool the tests drive
// (kcat, Python's Kafka clients, KafkaJS, the Go modules) before it runs them.
const RequireAllEnv = "RUNNEL_TEST_REQUIRE_ALL"

// Missing reports a prerequisite of t that this machine lacks (a client tool, a
// module's source): t is skipped, so that `go test` runs where not everything is
// installed, unless RequireAllEnv is set: there the prerequisite was installed, and
// its absence is a failure rather than a test that silently never ran.
func Missing(t testing.TB, format string, args ...any) {
	t.Helper()
	if os.Getenv(RequireAllEnv) != "" {
		t.Fatalf("%s (%s is set: scripts/test.sh installed every prerequisite)", fmt.Sprintf(format, args...), RequireAllEnv)
	}
	t.Skipf(format, args...)
}
