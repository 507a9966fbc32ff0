package server_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/runnel-io/runnel/internal/cli"
	"github.com/runnel-io/runnel/internal/server"
)

// runCLI runs the runnel command line in-process, the server commands included.
func runCLI(args ...string) (code int, stdout, stderr string) {
	var out, errb bytes.Buffer
	code = cli.MainIO(args, strings.NewReader(""), &out, &errb, server.NewCommand(), server.NewDevClusterCommand())
	return code, out.String(), errb.String()
}

// The command line's errors against a real node: one line, the cause from the broker's
// error message (the key, the topic, the reason), the code once.
func TestCLIErrorMessagesFromNode(t *testing.T) {
	b := startCluster(t, 1)[0].addr()
	if code, _, stderr := runCLI("topic", "create", "-b", b, "t1"); code != 0 {
		t.Fatalf("create t1: exit %d, %s", code, stderr)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"topic", "create", "t2", "-c", "retention.ms=abc"},
			`runnel: create topic "t2": invalid config: retention.ms: "abc" is not an integer (INVALID_CONFIG)`},
		{[]string{"topic", "create", "t2", "-c", "retention.mss=1"},
			`runnel: create topic "t2": invalid config: unknown topic config "retention.mss"; did you mean "retention.ms"? (INVALID_CONFIG)`},
		{[]string{"topic", "alter", "t1", "-c", "retention.ms=abc"},
			`runnel: alter topic "t1": invalid config: retention.ms: "abc" is not an integer (INVALID_CONFIG)`},
		{[]string{"topic", "create", "has space"},
			`runnel: create topic "has space": invalid topic: topic name "has space" contains ' '; only ASCII letters, digits, '.', '_' and '-' are allowed (INVALID_TOPIC_EXCEPTION)`},
		{[]string{"topic", "add-partitions", "t1", "-p", "1"},
			`runnel: add partitions to topic "t1": invalid partitions: topic "t1" has 1 partitions; the new total must be more than 1 and at most 100000, got 1 (INVALID_PARTITIONS)`},
		{[]string{"topic", "create", "t2", "-r", "3"},
			`runnel: create topic "t2": invalid replication factor: replication factor 3 is larger than the 1 available broker(s) (INVALID_REPLICATION_FACTOR)`},
		{[]string{"topic", "create", "t1"},
			`runnel: create topic "t1": topic already exists: "t1" (TOPIC_ALREADY_EXISTS)`},
	} {
		code, _, stderr := runCLI(append(tc.args, "-b", b)...)
		if code != 1 || stderr != tc.want+"\n" {
			t.Errorf("runnel %s:\n exit %d, stderr %q\nwant exit 1, stderr %q", strings.Join(tc.args, " "), code, stderr, tc.want+"\n")
		}
	}
}

// A bad value of a `runnel server` flag is blamed on the flag (not on --set, which
// the flags go through), as bad usage; a bad --set still names --set, and is bad
// usage too (exit 2, as the docs say).
func TestServerFlagErrors(t *testing.T) {
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"server", "--node-id", "abc"}, 2,
			"runnel: invalid --node-id \"abc\": not an integer\nRun 'runnel server --help' for usage.\n"},
		{[]string{"server", "--set", "node.id=abc"}, 2,
			"runnel: config: node.id: \"abc\" is not an integer (in --set)\nRun 'runnel server --help' for usage.\n"},
	} {
		code, _, stderr := runCLI(tc.args...)
		if code != tc.code || stderr != tc.want {
			t.Errorf("runnel %s:\n exit %d, stderr %q\nwant exit %d, stderr %q", strings.Join(tc.args, " "), code, stderr, tc.code, tc.want)
		}
	}
}
