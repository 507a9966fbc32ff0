package main

import (
	"os/exec"
	"testing"
)

// TestReadmeTour runs scripts/readme-tour.sh: the README's five-minute tour and its
// local-cluster demo, read out of README.md and run word for word with a binary built
// from this checkout, then a kill -9 of one dev-cluster node under which writes must
// go on (issue 12: the README cannot drift from the program). It needs the README's
// default ports (9092-9114, 9644) free.
func TestReadmeTour(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and runs a node and a 3-node dev cluster")
	}
	out, err := exec.Command("bash", "../../scripts/readme-tour.sh").CombinedOutput()
	if err != nil {
		t.Fatalf("scripts/readme-tour.sh: %v\n%s", err, out)
	}
	t.Logf("%s", out)
}
