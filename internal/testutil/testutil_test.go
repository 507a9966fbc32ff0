package testutil

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
)

// recorder is a testing.TB that records a fatal failure instead of stopping.
type recorder struct {
	testing.TB
	failed bool
	msg    string
}

func (r *recorder) Helper() {}
func (r *recorder) Fatalf(format string, args ...any) {
	r.failed, r.msg = true, fmt.Sprintf(format, args...)
}

func TestEventuallySucceedsOnceTrue(t *testing.T) {
	r := &recorder{TB: t}
	calls := 0
	Eventually(r, 5*time.Second, func() error {
		calls++
		if calls < 3 {
			return fmt.Errorf("call %d", calls)
		}
		return nil
	})
	if r.failed || calls != 3 {
		t.Fatalf("failed=%v (%s) calls=%d, want success on the third call", r.failed, r.msg, calls)
	}
}

func TestEventuallyNamesWhatNeverHappened(t *testing.T) {
	r := &recorder{TB: t}
	start := time.Now()
	Eventually(r, 100*time.Millisecond, func() error { return errors.New("offset 3 never committed") })
	if !r.failed || !strings.Contains(r.msg, "offset 3 never committed") {
		t.Fatalf("failed=%v msg=%q, want a failure naming the last error", r.failed, r.msg)
	}
	if el := time.Since(start); el < 100*time.Millisecond || el > 2*time.Second {
		t.Fatalf("gave up after %v, want about 100ms", el)
	}
}

func TestChecks(t *testing.T) {
	for _, tc := range []struct {
		name string
		run  func(r *recorder)
		fail string // "" for success, else a substring of the message
	}{
		{"NoError nil", func(r *recorder) { NoError(r, nil) }, ""},
		{"NoError err", func(r *recorder) { NoError(r, errors.New("boom"), "produce %d", 7) }, "produce 7: unexpected error: boom"},
		{"Equal same", func(r *recorder) { Equal(r, []int{1, 2}, []int{1, 2}) }, ""},
		{"Equal differs", func(r *recorder) { Equal(r, 3, 4, "offset") }, "offset:\n got: 3\nwant: 4"},
		{"ErrorIs wrapped", func(r *recorder) {
			ErrorIs(r, fmt.Errorf("x: %w", errSentinel), errSentinel)
		}, ""},
		{"ErrorIs other", func(r *recorder) { ErrorIs(r, errors.New("other"), errSentinel) }, "want sentinel"},
		{"True", func(r *recorder) { True(r, false, "leader elected") }, "leader elected: condition is false"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := &recorder{TB: t}
			tc.run(r)
			if tc.fail == "" && r.failed {
				t.Fatalf("unexpected failure: %s", r.msg)
			}
			if tc.fail != "" && (!r.failed || !strings.Contains(r.msg, tc.fail)) {
				t.Fatalf("failed=%v msg=%q, want a failure containing %q", r.failed, r.msg, tc.fail)
			}
		})
	}
}

var errSentinel = errors.New("sentinel")

func TestFreeAddr(t *testing.T) {
	a := FreeAddr(t)
	if !strings.HasPrefix(a, "127.0.0.1:") || strings.HasSuffix(a, ":0") {
		t.Fatalf("FreeAddr() = %q", a)
	}
}
