//go:build !invariants && !race

package invariants

// Enabled is true in builds with the invariants tag or the race detector.
const Enabled = false
