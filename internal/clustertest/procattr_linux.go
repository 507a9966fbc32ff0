package clustertest

import (
	"os/exec"
	"syscall"
)

// dieWithParent makes the kernel kill the node if the test process dies first (a test
// binary that panics on -timeout runs no cleanup), so that no node outlives its test.
func dieWithParent(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
