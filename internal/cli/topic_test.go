package cli

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kfake"
)

func TestTopicLifecycle(t *testing.T) {
	_, b := newCluster(t)
	r := mustRun(t, "", "topic", "create", "orders", "-b", b, "-p", "3", "-r", "1", "-c", "retention.ms=60000")
	if !strings.Contains(r.stdout, `Created topic "orders" (partitions 3, replication factor 1)`) {
		t.Errorf("create printed %q", r.stdout)
	}

	var rows []topicRow
	r = mustRun(t, "", "topic", "list", "-b", b, "--json")
	if err := json.Unmarshal([]byte(r.stdout), &rows); err != nil {
		t.Fatalf("list --json: %v in %q", err, r.stdout)
	}
	if len(rows) != 1 || rows[0].Topic != "orders" || rows[0].Partitions != 3 || rows[0].ReplicationFactor != 1 {
		t.Errorf("list --json = %+v", rows)
	}
	r = mustRun(t, "", "topic", "list", "-b", b)
	if !strings.Contains(r.stdout, "orders") || !strings.Contains(r.stdout, "PARTITIONS") {
		t.Errorf("list printed %q", r.stdout)
	}

	d := describe(t, b, "orders")
	if len(d.Partitions) != 3 || d.Configs["retention.ms"] != "60000" {
		t.Errorf("describe = %+v", d)
	}
	for _, p := range d.Partitions {
		if p.Leader < 0 || len(p.Replicas) != 1 || len(p.ISR) != 1 || p.LogStartOffset != 0 || p.LogEndOffset != 0 {
			t.Errorf("partition %+v", p)
		}
	}

	mustRun(t, "", "topic", "alter", "orders", "-b", b, "-c", "cleanup.policy=compact", "-c", "retention.ms=")
	d = describe(t, b, "orders")
	if _, ok := d.Configs["retention.ms"]; ok || d.Configs["cleanup.policy"] != "compact" {
		t.Errorf("configs after alter = %v", d.Configs)
	}
	mustRun(t, "", "topic", "alter", "orders", "-b", b, "--delete-config", "cleanup.policy")
	if d = describe(t, b, "orders"); len(d.Configs) != 0 {
		t.Errorf("configs after --delete-config = %v", d.Configs)
	}

	mustRun(t, "", "topic", "add-partitions", "orders", "-b", b, "-p", "5")
	if d = describe(t, b, "orders"); len(d.Partitions) != 5 {
		t.Errorf("%d partitions after add-partitions -p 5", len(d.Partitions))
	}

	r = mustRun(t, "", "topic", "describe", "orders", "-b", b)
	for _, want := range []string{"Topic: orders", "LEADER", "EPOCH", "ISR", "LOG-START", "LOG-END"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("describe output lacks %q:\n%s", want, r.stdout)
		}
	}

	mustRun(t, "", "topic", "delete", "orders", "-b", b)
	expectFailure(t, 1, `topic "orders" does not exist`, "topic", "describe", "orders", "-b", b)
}

func describe(t *testing.T, bootstrap, topic string) topicDescription {
	t.Helper()
	var d topicDescription
	r := mustRun(t, "", "topic", "describe", topic, "-b", bootstrap, "--json")
	if err := json.Unmarshal([]byte(r.stdout), &d); err != nil {
		t.Fatalf("describe --json: %v in %q", err, r.stdout)
	}
	return d
}

// expectFailure runs the command line and checks its exit status and that stderr
// holds want (and, for failures, is a single line).
func expectFailure(t *testing.T, code int, want string, args ...string) result {
	t.Helper()
	return expectFailureIn(t, "", code, want, args...)
}

// expectFailureIn is expectFailure with stdin.
func expectFailureIn(t *testing.T, stdin string, code int, want string, args ...string) result {
	t.Helper()
	r := run(t, stdin, args...)
	if r.code != code || !strings.Contains(r.stderr, want) || !strings.HasPrefix(r.stderr, "runnel: ") {
		t.Errorf("runnel %s: exit %d, stderr %q; want exit %d and %q",
			strings.Join(args, " "), r.code, r.stderr, code, want)
	}
	if code == 1 && strings.Count(r.stderr, "\n") != 1 {
		t.Errorf("runnel %s: stderr is not one line: %q", strings.Join(args, " "), r.stderr)
	}
	return r
}

func TestTopicErrors(t *testing.T) {
	_, b := newCluster(t)
	mustRun(t, "", "topic", "create", "orders", "-b", b)
	expectFailure(t, 1, `create topic "orders": TOPIC_ALREADY_EXISTS`, "topic", "create", "orders", "-b", b)
	expectFailure(t, 1, `topic "nope" does not exist`, "topic", "delete", "nope", "-b", b)
	expectFailure(t, 1, `topic "nope" does not exist`, "topic", "alter", "nope", "-b", b, "-c", "retention.ms=1")
	expectFailure(t, 1, `topic "nope" does not exist`, "topic", "add-partitions", "nope", "-b", b, "-p", "3")
	expectFailure(t, 1, `add partitions to topic "orders": INVALID_PARTITIONS`, "topic", "add-partitions", "orders", "-b", b, "-p", "1")
	expectFailure(t, 1, "connection refused", "topic", "list", "-b", "127.0.0.1:1")
}

func TestUsageErrors(t *testing.T) {
	for _, args := range [][]string{
		{},
		{"nope"},
		{"topic"},
		{"topic", "nope"},
		{"topic", "create"},
		{"topic", "create", "a", "b"},
		{"topic", "create", "a", "--bogus"},
		{"topic", "create", "a", "-p", "many"},
		{"topic", "create", "a", "-c", "novalue"},
		{"topic", "alter", "a"},
		{"topic", "add-partitions", "a"},
		{"topic", "list", "-b", "nohostport"},
		{"topic", "list", "extra"},
	} {
		r := run(t, "", args...)
		if r.code != 2 || !strings.HasPrefix(r.stderr, "runnel: ") || !strings.Contains(r.stderr, "--help") {
			t.Errorf("runnel %s: exit %d, stderr %q; want exit 2 with a usage hint", strings.Join(args, " "), r.code, r.stderr)
		}
	}
}

func TestHelpExitsZero(t *testing.T) {
	r := mustRun(t, "", "topic", "create", "--help")
	if !strings.Contains(r.stdout, "--partitions") {
		t.Errorf("help printed %q", r.stdout)
	}
}

// A missing or extra positional argument names what is missing, not cobra's
// "accepts 1 arg(s), received 0".
func TestMissingArgumentMessages(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"topic", "create"}, "runnel: missing topic name\nRun 'runnel topic create --help' for usage.\n"},
		{[]string{"topic", "describe"}, "runnel: missing topic name\nRun 'runnel topic describe --help' for usage.\n"},
		{[]string{"topic", "delete"}, "runnel: missing topic name\nRun 'runnel topic delete --help' for usage.\n"},
		{[]string{"topic", "alter"}, "runnel: missing topic name\nRun 'runnel topic alter --help' for usage.\n"},
		{[]string{"topic", "add-partitions"}, "runnel: missing topic name\nRun 'runnel topic add-partitions --help' for usage.\n"},
		{[]string{"produce"}, "runnel: missing topic name\nRun 'runnel produce --help' for usage.\n"},
		{[]string{"consume"}, "runnel: missing topic name\nRun 'runnel consume --help' for usage.\n"},
		{[]string{"group", "delete"}, "runnel: missing group name\nRun 'runnel group delete --help' for usage.\n"},
		{[]string{"group", "reset-offsets"}, "runnel: missing group name\nRun 'runnel group reset-offsets --help' for usage.\n"},
		{[]string{"topic", "create", "a", "b"},
			"runnel: unexpected argument \"b\": runnel topic create takes one topic name\nRun 'runnel topic create --help' for usage.\n"},
	} {
		r := run(t, "", tc.args...)
		if r.code != exitUsage || r.stderr != tc.want {
			t.Errorf("runnel %s: exit %d, stderr %q; want exit 2, stderr %q", strings.Join(tc.args, " "), r.code, r.stderr, tc.want)
		}
	}
}

// delete-records moves a partition's log start (DeleteRecords) and prints it.
func TestTopicDeleteRecords(t *testing.T) {
	_, b := newCluster(t, kfake.SeedTopics(2, "t"))
	mustRun(t, "a\nb\nc\nd\ne\n", "produce", "t", "-b", b, "--partition", "1")
	r := mustRun(t, "", "topic", "delete-records", "t", "-b", b, "--partition", "1", "--before", "3")
	if want := "Topic \"t\" partition 1: log start offset is now 3.\n"; r.stdout != want {
		t.Errorf("printed %q, want %q", r.stdout, want)
	}
	d := describe(t, b, "t")
	if p := d.Partitions[1]; p.LogStartOffset != 3 || p.LogEndOffset != 5 || d.Partitions[0].LogStartOffset != 0 {
		t.Errorf("after delete-records: %+v", d.Partitions)
	}
	r = mustRun(t, "", "consume", "t", "-b", b, "--partition", "1", "--from-beginning", "-n", "1", "--format", `%o:%s`)
	if r.stdout != "3:d" {
		t.Errorf("first record after delete-records %q, want 3:d", r.stdout)
	}
	r = mustRun(t, "", "topic", "delete-records", "t", "-b", b, "--partition", "1", "--before", "latest")
	if !strings.Contains(r.stdout, "log start offset is now 5.") {
		t.Errorf("--before latest printed %q", r.stdout)
	}
	expectFailure(t, 1, `delete records of topic "t" partition 0 before offset 9: the offset is past the high watermark`,
		"topic", "delete-records", "t", "-b", b, "--partition", "0", "--before", "9")
	expectFailure(t, 1, `delete records: topic "nope" does not exist`, "topic", "delete-records", "nope", "-b", b, "--partition", "0", "--before", "1")
	expectFailure(t, 1, `delete records: topic "t" has no partition 7 (it has 2)`, "topic", "delete-records", "t", "-b", b, "--partition", "7", "--before", "1")
	for _, args := range [][]string{{"--before", "1"}, {"--partition", "0"}, {"--partition", "0", "--before", "x"}} {
		expectFailure(t, 2, "", append([]string{"topic", "delete-records", "t", "-b", b}, args...)...)
	}
}
