package link_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/runnel-io/runnel/internal/cli"
)

// TestLinkErrorsSayWhatHappened: a link command refused by the cluster prints the
// operation's own words and the code, not kerr's generic description of the code
// ("This most likely occurs because of a request being malformed...").
func TestLinkErrorsSayWhatHappened(t *testing.T) {
	dst := startNode(t)
	for _, args := range [][]string{
		{"link", "status", "nosuch", "--json"},
		{"link", "pause", "nosuch"},
	} {
		var out, errb bytes.Buffer
		code := cli.MainIO(append(args, "-b", dst.Bootstrap()), strings.NewReader(""), &out, &errb)
		msg := errb.String()
		if code == 0 || !strings.Contains(msg, `"nosuch"`) || !strings.Contains(msg, "(INVALID_REQUEST)") || strings.Contains(msg, "most likely") {
			t.Errorf("runnel %s: exit %d, stderr %q: want the link named and INVALID_REQUEST, without kerr's description", strings.Join(args, " "), code, msg)
		}
	}
}
