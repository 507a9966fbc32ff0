package doctest

import (
	"fmt"
	"strings"
	"testing"

	"github.com/runnel-io/runnel/internal/cli"
	"github.com/runnel-io/runnel/internal/clustertest"
)

// linkRoles names the cluster each address of the link pages stands for: the link's
// source (0: src1, src2, A, SRC) or its destination (1: dst, B, DST). In
// docs/cluster-links.md's failback and switchover, A is the link's source and B its
// destination, so the page's commands, in page order, are one story on one pair of
// clusters: create, list, status, resume, promote on B, fail A back to follow B,
// promote A, fail B back to follow A, switch over to B.
var linkRoles = map[string]int{
	"src1:9092,src2:9092": 0, "src1:9092": 0, "A:9092": 0, "SRC": 0,
	"dst:9092": 1, "B:9092": 1, "DST": 1,
}

// linkSourceTopics are what the source cluster holds before a link is created: the
// topics the pages' `link create --topics` filters select, with records.
var linkSourceTopics = []string{"orders", "payments", "data"}

// linkClusters runs the pages' `runnel link` commands for real on two nodes of their
// own (the source and the destination), out of the way of the other pages' topics.
type linkClusters struct {
	boot [2]string
}

// args returns c's arguments pointed at the link clusters: its -b and --source
// addresses replaced by the bootstraps of the clusters they stand for. Each `link
// create` starts a fresh pair (the pages show alternative creates of the same link
// name), with linkSourceTopics on the source.
func (lc *linkClusters) args(t *testing.T, c docCommand) ([]string, error) {
	t.Helper()
	if len(c.args) > 1 && c.args[1] == "create" {
		lc.boot = [2]string{clustertest.StartOne(t), clustertest.StartOne(t)}
		for _, topic := range linkSourceTopics {
			lc.run(t, strings.NewReader(""), "topic", "create", topic, "-p", "2", "-b", lc.boot[0])
			lc.run(t, strings.NewReader("one\ntwo\nthree\nfour\n"), "produce", topic, "-b", lc.boot[0])
		}
	}
	if lc.boot[0] == "" {
		return nil, fmt.Errorf("a link command before any link create: the test has no clusters for it")
	}
	out := append([]string(nil), c.args...)
	sawB := false
	for i := 0; i < len(out); i++ {
		if out[i] != "-b" && out[i] != "--bootstrap" && out[i] != "--source" {
			continue
		}
		if i+1 == len(out) {
			return nil, fmt.Errorf("%s without a value", out[i])
		}
		role, ok := linkRoles[out[i+1]]
		if !ok {
			return nil, fmt.Errorf("address %q of %s: linkRoles does not say which cluster it stands for", out[i+1], out[i])
		}
		sawB = sawB || out[i] != "--source"
		out[i+1] = lc.boot[role]
		i++
	}
	if !sawB {
		return nil, fmt.Errorf("no -b: which cluster the command runs on is not shown")
	}
	return out, nil
}

func (lc *linkClusters) run(t *testing.T, stdin *strings.Reader, args ...string) {
	t.Helper()
	var stdout, stderr strings.Builder
	if code := cli.MainIO(args, stdin, &stdout, &stderr); code != 0 {
		t.Fatalf("setting up the link clusters: runnel %s: exit %d\n%s%s", strings.Join(args, " "), code, stdout.String(), stderr.String())
	}
}
