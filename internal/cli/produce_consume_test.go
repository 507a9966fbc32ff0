package cli

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
)

func lines(s string) []string {
	ls := strings.Split(strings.TrimSuffix(s, "\n"), "\n")
	slices.Sort(ls)
	return ls
}

func TestProduceConsumeAllPartitions(t *testing.T) {
	_, b := newCluster(t, kfake.SeedTopics(3, "t"))
	r := mustRun(t, "k1:v1\nk2:v2\nk3:v3\n", "produce", "t", "-b", b, "-k", ":", "-H", "h=x", "-H", "n=2", "-v")
	if !strings.Contains(r.stderr, "produced 3 records") {
		t.Errorf("-v summary = %q", r.stderr)
	}
	r = mustRun(t, "", "consume", "t", "-b", b, "--from-beginning", "-n", "3", "--format", `%k=%s [%h] %K/%S\n`)
	want := []string{"k1=v1 [h=x,n=2] 2/2", "k2=v2 [h=x,n=2] 2/2", "k3=v3 [h=x,n=2] 2/2"}
	if got := lines(r.stdout); !slices.Equal(got, want) {
		t.Errorf("consumed %q, want %q", got, want)
	}
}

func TestConsumeOffsets(t *testing.T) {
	_, b := newCluster(t, kfake.SeedTopics(2, "t"))
	mustRun(t, "a\nb\nc\nd\n", "produce", "t", "-b", b, "--partition", "1")
	// Records stamped strictly before `before`, and strictly after it.
	time.Sleep(3 * time.Millisecond)
	before := time.Now().UnixMilli()
	time.Sleep(3 * time.Millisecond)
	mustRun(t, "e\nf\n", "produce", "t", "-b", b, "--partition", "1", "--acks", "1", "--compression", "zstd")
	tests := []struct {
		offset string
		n      string
		want   string
	}{
		{"0", "6", "a@0 b@1 c@2 d@3 e@4 f@5 "},
		{"earliest", "2", "a@0 b@1 "},
		{"4", "2", "e@4 f@5 "},
		{"-2", "2", "e@4 f@5 "},
		{"-100", "1", "a@0 "},
		{fmt.Sprintf("@%d", before), "2", "e@4 f@5 "},
		{"@" + time.UnixMilli(before).UTC().Format(time.RFC3339Nano), "1", "e@4 "},
	}
	for _, tt := range tests {
		r := mustRun(t, "", "consume", "t", "-b", b, "--partition", "1", "--offset", tt.offset, "-n", tt.n, "--format", `%s@%o `)
		if r.stdout != tt.want {
			t.Errorf("--offset %s -n %s printed %q, want %q", tt.offset, tt.n, r.stdout, tt.want)
		}
	}
	// latest and past-the-end wait for new records: the idle timeout ends them cleanly.
	for _, off := range []string{"latest", "6", "@99999999999999"} {
		r := run(t, "", "consume", "t", "-b", b, "--partition", "1", "--offset", off, "--idle-timeout", "200ms")
		if r.code != 0 || r.stdout != "" {
			t.Errorf("--offset %s: exit %d, stdout %q, stderr %q; want a quiet exit 0", off, r.code, r.stdout, r.stderr)
		}
	}
}

func TestConsumeErrors(t *testing.T) {
	_, b := newCluster(t, kfake.SeedTopics(2, "t"))
	mustRun(t, "a\nb\n", "produce", "t", "-b", b, "--partition", "0")
	start := time.Now()
	expectFailureIn(t, "a\nb\nc\nd\ne\n", 1, `topic "nope" does not exist`,
		"consume", "nope", "-b", b)
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("a missing topic took %v to report", d)
	}
	expectFailure(t, 1, `topic "t" has no partition 7 (it has 2)`, "consume", "t", "-b", b, "--partition", "7")
	expectFailure(t, 1, `topic "t" partition 0: offset 9 is out of range (log start 0, log end 2)`,
		"consume", "t", "-b", b, "--partition", "0", "--offset", "9")
	for _, args := range [][]string{
		{"--offset", "soon"},
		{"--format", "%z"},
		{"--isolation", "dirty"},
		{"--group", "g", "--partition", "0"},
		{"--offset", "1", "--from-beginning"},
		{"-n", "-1"},
	} {
		expectFailure(t, 2, "", append([]string{"consume", "t", "-b", b}, args...)...)
	}
}

func TestConsumeGroupCommits(t *testing.T) {
	_, b := newCluster(t, kfake.SeedTopics(1, "t"))
	mustRun(t, "a\nb\nc\n", "produce", "t", "-b", b)
	r := mustRun(t, "", "consume", "t", "-b", b, "--group", "g", "--from-beginning", "-n", "2")
	if r.stdout != "a\nb\n" {
		t.Fatalf("first group member printed %q", r.stdout)
	}
	r = mustRun(t, "", "consume", "t", "-b", b, "--group", "g", "--from-beginning", "-n", "1")
	if r.stdout != "c\n" {
		t.Errorf("second group member printed %q, want the record after the commit", r.stdout)
	}
}

func TestProduceLongLine(t *testing.T) {
	_, b := newCluster(t, kfake.SeedTopics(1, "t"))
	long := strings.Repeat("x", 1000_000)
	mustRun(t, long+"\r\nshort", "produce", "t", "-b", b)
	r := mustRun(t, "", "consume", "t", "-b", b, "--from-beginning", "-n", "2", "--format", `%S\n`)
	if r.stdout != "1000000\n5\n" {
		t.Errorf("value lengths %q, want 1000000 and 5 (\\r\\n stripped)", r.stdout)
	}
}

func TestProduceErrors(t *testing.T) {
	_, b := newCluster(t, kfake.SeedTopics(1, "t"))
	expectFailureIn(t, "k:v\nnokey\n", 1, `produce to "t": line 2 has no key separator ":"`, "produce", "t", "-b", b, "-k", ":")
	for _, args := range [][]string{
		{"--acks", "2"}, {"--compression", "brotli"}, {"-H", "nokv"}, {"--on-full", "wait"},
		{"--enqueue-timeout", "soon"}, {"--rate", "-1"}, {"--buffer-records", "0"}, {"--delivery-timeout", "0s"},
	} {
		expectFailure(t, 2, "", append([]string{"produce", "t", "-b", b}, args...)...)
	}
	start := time.Now()
	expectFailureIn(t, "x\n", 1, `produce: topic "nope" does not exist (UNKNOWN_TOPIC_OR_PARTITION`, "produce", "nope", "-b", b)
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("a missing topic took %v to report", d)
	}
	expectFailureIn(t, "x\n", 1, `produce: topic "t" has no partition 5 (it has 1)`, "produce", "t", "-b", b, "--partition", "5")
	expectFailureIn(t, "x\n", 1, `produce to "t": unable to dial`, "produce", "t", "-b", "127.0.0.1:1")
}

func TestProduceOnFullDropReported(t *testing.T) {
	c, b := newCluster(t, kfake.SeedTopics(1, "t"))
	release := holdProduce(c)
	time.AfterFunc(300*time.Millisecond, release)
	r := mustRun(t, "a\nb\nc\nd\ne\n", "produce", "t", "-b", b, "--buffer-records", "1", "--on-full", "drop")
	if !strings.Contains(r.stderr, "runnel: dropped ") || !strings.Contains(r.stderr, "of 5 records") {
		t.Errorf("stderr %q does not report the dropped records", r.stderr)
	}
}

func TestProduceOnFullError(t *testing.T) {
	c, b := newCluster(t, kfake.SeedTopics(1, "t"))
	release := holdProduce(c)
	time.AfterFunc(300*time.Millisecond, release)
	expectFailureIn(t, "a\nb\nc\nd\ne\n", 1, `produce to "t": producer buffer full (--on-full error)`,
		"produce", "t", "-b", b, "--buffer-records", "1", "--on-full", "error")
}

// -Z sends an empty value (and an empty key) as null, a tombstone, as kcat -Z; without
// it an empty line is an empty value.
func TestProduceNullValues(t *testing.T) {
	_, b := newCluster(t, kfake.SeedTopics(1, "t"))
	mustRun(t, "a:1\nb:\n:\n", "produce", "t", "-b", b, "-k", ":", "-Z")
	mustRun(t, "\nx\n", "produce", "t", "-b", b, "-Z")
	mustRun(t, "\n", "produce", "t", "-b", b)
	r := mustRun(t, "", "consume", "t", "-b", b, "--from-beginning", "-n", "6", "--format", `%K/%S `)
	if want := "1/1 1/-1 -1/-1 -1/-1 -1/1 -1/0 "; r.stdout != want {
		t.Errorf("key/value lengths %q, want %q (-1: null)", r.stdout, want)
	}
}

// Keys and values from files: -l reads lines from a file, --value-file produces a
// file's whole content as one record, --key and --key-file give every record a key.
func TestProduceFromFiles(t *testing.T) {
	_, b := newCluster(t, kfake.SeedTopics(1, "t"))
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	lines := write("lines", "k1=v1\nk2=v2\n")
	blob := write("blob", "two\nlines\x00\n")
	key := write("key", "file-key")
	mustRun(t, "ignored\n", "produce", "t", "-b", b, "-l", lines, "-k", "=")
	mustRun(t, "", "produce", "t", "-b", b, "--value-file", blob, "--value-file", key, "--key-file", key)
	mustRun(t, "v3\n", "produce", "t", "-b", b, "--key", "k3")
	r := mustRun(t, "", "consume", "t", "-b", b, "--from-beginning", "-n", "5", "--format", `%k=%s|`)
	if want := "k1=v1|k2=v2|file-key=two\nlines\x00\n|file-key=file-key|k3=v3|"; r.stdout != want {
		t.Errorf("consumed %q, want %q", r.stdout, want)
	}
	expectFailure(t, 1, "produce: --file: open "+filepath.Join(dir, "nope")+": no such file or directory",
		"produce", "t", "-b", b, "-l", filepath.Join(dir, "nope"))
	expectFailure(t, 1, "produce: --value-file: stat "+filepath.Join(dir, "nope"),
		"produce", "t", "-b", b, "--value-file", filepath.Join(dir, "nope"))
	for _, args := range [][]string{
		{"-k", ":", "--key", "k"}, {"--key", "k", "--key-file", key}, {"-l", lines, "--value-file", blob},
		{"-k", ":", "--value-file", blob},
	} {
		expectFailure(t, 2, "", append([]string{"produce", "t", "-b", b}, args...)...)
	}
}

// consume takes several topics, or regular expressions matching whole topic names
// (--regex), with or without a group.
func TestConsumeSeveralTopics(t *testing.T) {
	_, b := newCluster(t, kfake.SeedTopics(1, "a1", "a2", "b", "xa1"))
	for _, tp := range []string{"a1", "a2", "b", "xa1"} {
		mustRun(t, tp+"-v\n", "produce", tp, "-b", b)
	}
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{"a1", "b"}, []string{"a1:a1-v", "b:b-v"}},
		{[]string{"--regex", "a."}, []string{"a1:a1-v", "a2:a2-v"}},
		{[]string{"--regex", "a1", "b|nothing"}, []string{"a1:a1-v", "b:b-v"}},
		{[]string{"--regex", "a.", "--group", "g"}, []string{"a1:a1-v", "a2:a2-v"}},
		{[]string{"a2", "xa1", "--offset", "0"}, []string{"a2:a2-v", "xa1:xa1-v"}},
	} {
		args := append([]string{"consume", "-b", b, "--from-beginning", "-n", fmt.Sprint(len(tc.want)), "--format", `%t:%s\n`}, tc.args...)
		if slices.Contains(tc.args, "--offset") {
			args = slices.DeleteFunc(args, func(s string) bool { return s == "--from-beginning" })
		}
		r := mustRun(t, "", args...)
		if got := lines(r.stdout); !slices.Equal(got, tc.want) {
			t.Errorf("consume %v printed %q, want %q", tc.args, got, tc.want)
		}
	}
	d := describeGroupJSON(t, b, "g")
	if len(d.Partitions) != 2 || d.TotalLag != 0 {
		t.Errorf("group g after consuming --regex a.: %+v", d)
	}
	expectFailure(t, 1, `no topic matches "z.*"`, "consume", "--regex", "z.*", "-b", b, "-n", "1")
	expectFailure(t, 1, `topic "nope" does not exist`, "consume", "a1", "nope", "-b", b, "-n", "1")
	expectFailure(t, 2, `--partition needs one topic, not 2 ("a1", "a2")`, "consume", "--regex", "a.", "--partition", "0", "-b", b, "-n", "1")
	expectFailure(t, 2, `bad topic regex "a("`, "consume", "--regex", "a(", "-b", b, "-n", "1")
}
