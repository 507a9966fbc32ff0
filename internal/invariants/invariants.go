// Package invariants turns on expensive self-checks in test builds: with the
// `invariants` build tag (scripts/test.sh sets it) or under the race detector, Enabled is
// true, and code guarded by `if invariants.Enabled` verifies what its comments promise
// (the high watermark never moving backwards within a leader epoch, for one). In a
// production build Enabled is a false constant and the compiler drops the checks.
//
// A failed check panics: it means the code broke a rule that data safety rests on, and
// a test must stop there, at the cause, not later at a symptom.
package invariants

import "fmt"

// Failf panics with the formatted message, naming the broken invariant. Call it only
// inside `if invariants.Enabled { ... }`, so that production builds pay nothing.
func Failf(format string, args ...any) {
	panic("invariant violated: " + fmt.Sprintf(format, args...))
}
