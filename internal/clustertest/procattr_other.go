//go:build !linux

package clustertest

import "os/exec"

// dieWithParent does nothing where there is no parent-death signal; the deadline
// watchdog (see Start) still ends the nodes before a test binary times out.
func dieWithParent(cmd *exec.Cmd) {}
