package cli

import (
	"context"
	"encoding/json"
	"maps"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
)

func describeGroupJSON(t *testing.T, b, group string) groupDescription {
	t.Helper()
	var d groupDescription
	r := mustRun(t, "", "group", "describe", group, "-b", b, "--json")
	if err := json.Unmarshal([]byte(r.stdout), &d); err != nil {
		t.Fatalf("group describe --json: %v in %q", err, r.stdout)
	}
	return d
}

func committed(d groupDescription) map[int32]int64 {
	m := map[int32]int64{}
	for _, p := range d.Partitions {
		m[p.Partition] = p.CommittedOffset
	}
	return m
}

func TestGroupDescribeAndReset(t *testing.T) {
	_, b := newCluster(t, kfake.SeedTopics(2, "t"))
	mustRun(t, "a\nb\nc\nd\ne\nf\n", "produce", "t", "-b", b, "--partition", "0")
	mustRun(t, "g\nh\ni\nj\n", "produce", "t", "-b", b, "--partition", "1")
	mustRun(t, "", "consume", "t", "-b", b, "--group", "g", "--from-beginning", "-n", "10")

	var rows []groupRow
	r := mustRun(t, "", "group", "list", "-b", b, "--json")
	if err := json.Unmarshal([]byte(r.stdout), &rows); err != nil || len(rows) != 1 || rows[0].Group != "g" {
		t.Fatalf("group list --json = %q (%v)", r.stdout, err)
	}

	d := describeGroupJSON(t, b, "g")
	if d.TotalLag != 0 || len(d.Partitions) != 2 || committed(d)[0] != 6 || committed(d)[1] != 4 {
		t.Fatalf("after consuming everything: %+v", d)
	}

	r = mustRun(t, "", "group", "reset-offsets", "g", "-b", b, "--topic", "t", "--to", "earliest")
	if !strings.Contains(r.stderr, "Dry run") || !strings.Contains(r.stdout, "NEW-OFFSET") {
		t.Errorf("dry run printed %q / %q", r.stdout, r.stderr)
	}
	if d = describeGroupJSON(t, b, "g"); d.TotalLag != 0 {
		t.Errorf("a dry run changed the commits: %+v", d)
	}

	steps := []struct {
		args []string
		want map[int32]int64
	}{
		{[]string{"--to", "earliest"}, map[int32]int64{0: 0, 1: 0}},
		{[]string{"--shift-by", "2"}, map[int32]int64{0: 2, 1: 2}},
		{[]string{"--to", "latest", "--shift-by", "-1"}, map[int32]int64{0: 5, 1: 3}},
		{[]string{"--to", "5"}, map[int32]int64{0: 5, 1: 4}}, // clamped to partition 1's end
		{[]string{"--to", "@99999999999999"}, map[int32]int64{0: 6, 1: 4}},
		{[]string{"--to", "@0"}, map[int32]int64{0: 0, 1: 0}},
	}
	for _, s := range steps {
		args := append([]string{"group", "reset-offsets", "g", "-b", b, "--topic", "t", "--execute"}, s.args...)
		mustRun(t, "", args...)
		d = describeGroupJSON(t, b, "g")
		if got := committed(d); got[0] != s.want[0] || got[1] != s.want[1] {
			t.Errorf("after %v: committed %v, want %v", s.args, got, s.want)
		}
	}
	if d.TotalLag != 10 {
		t.Errorf("total lag %d at the start of the log, want 10", d.TotalLag)
	}

	r = mustRun(t, "", "group", "describe", "g", "-b", b)
	for _, want := range []string{"Group: g", "CURRENT-OFFSET", "LOG-END-OFFSET", "LAG", "Total lag: 10"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("describe lacks %q:\n%s", want, r.stdout)
		}
	}

	mustRun(t, "", "group", "delete", "g", "-b", b)
	expectFailure(t, 1, `group "g" does not exist`, "group", "describe", "g", "-b", b)
	expectFailure(t, 1, `group "g" does not exist`, "group", "delete", "g", "-b", b)
}

// joinGroup starts a real group member consuming topic, and waits until it has an
// assignment.
func joinGroup(t *testing.T, b, group, topic string) {
	t.Helper()
	var assigned atomic.Bool
	onAssigned := kgo.OnPartitionsAssigned(func(context.Context, *kgo.Client, map[string][]int32) { assigned.Store(true) })
	cl := newProducer(t, b, kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic), kgo.ClientID("member-1"), onAssigned)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for !assigned.Load() && ctx.Err() == nil {
		pctx, pcancel := context.WithTimeout(ctx, 50*time.Millisecond)
		cl.PollFetches(pctx)
		pcancel()
	}
	if ctx.Err() != nil {
		t.Fatal("the group member never got an assignment")
	}
}

func TestGroupWithActiveMember(t *testing.T) {
	_, b := newCluster(t, kfake.SeedTopics(2, "t"))
	joinGroup(t, b, "g", "t")
	d := describeGroupJSON(t, b, "g")
	if d.State != "Stable" || len(d.Members) != 1 || d.Members[0].ClientID != "member-1" ||
		len(d.Members[0].Assignment["t"]) != 2 {
		t.Errorf("describe with one member: %+v", d)
	}
	expectFailure(t, 1, `group "g" has active members (state Stable, 1 member)`,
		"group", "reset-offsets", "g", "-b", b, "--topic", "t", "--to", "earliest", "--execute")
	mustRun(t, "", "group", "reset-offsets", "g", "-b", b, "--topic", "t", "--to", "earliest") // a plan is fine
	expectFailure(t, 1, `delete group "g": NON_EMPTY_GROUP`, "group", "delete", "g", "-b", b)
}

func TestGroupUsage(t *testing.T) {
	for _, args := range [][]string{
		{"group", "reset-offsets", "g", "--to", "earliest"},
		{"group", "reset-offsets", "g", "--topic", "t"},
		{"group", "reset-offsets", "g", "--topic", "t", "--to", "-5"},
		{"group", "reset-offsets", "g", "--topic", "t", "--to", "soon"},
	} {
		expectFailure(t, 2, "", args...)
	}
}

// reset-offsets as kafka-consumer-groups.sh: --all-topics, some partitions (T:0,1),
// --to-current, --by-duration, --shift-by, RFC 3339 times without the @, and Kafka's
// --to-* spellings.
func TestResetOffsetsSelections(t *testing.T) {
	_, b := newCluster(t, kfake.SeedTopics(2, "t", "u"))
	for _, tp := range []string{"t", "u"} {
		mustRun(t, "a\nb\nc\nd\n", "produce", tp, "-b", b, "--partition", "0")
		mustRun(t, "a\nb\nc\n", "produce", tp, "-b", b, "--partition", "1")
	}
	mustRun(t, "", "group", "reset-offsets", "g", "-b", b, "--topic", "t", "--topic", "u", "--to", "1", "--execute")
	type tp struct {
		topic string
		p     int32
	}
	commits := func() map[tp]int64 {
		adm := kadm.NewClient(newProducer(t, b))
		os, err := adm.FetchOffsets(ctxTimeout(t, 5*time.Second), "g")
		if err != nil {
			t.Fatal(err)
		}
		m := map[tp]int64{}
		os.Each(func(o kadm.OffsetResponse) { m[tp{o.Topic, o.Partition}] = o.At })
		return m
	}
	for _, s := range []struct {
		args []string
		want map[tp]int64
	}{
		{[]string{"--topic", "t:1", "--to", "earliest"}, map[tp]int64{{"t", 0}: 1, {"t", 1}: 0, {"u", 0}: 1, {"u", 1}: 1}},
		{[]string{"--topic", "t:0,1", "--topic", "u:1", "--to-latest"}, map[tp]int64{{"t", 0}: 4, {"t", 1}: 3, {"u", 0}: 1, {"u", 1}: 3}},
		{[]string{"--all-topics", "--to-current", "--shift-by", "-1"}, map[tp]int64{{"t", 0}: 3, {"t", 1}: 2, {"u", 0}: 0, {"u", 1}: 2}},
		{[]string{"--all-topics", "--to", "current"}, map[tp]int64{{"t", 0}: 3, {"t", 1}: 2, {"u", 0}: 0, {"u", 1}: 2}},
		{[]string{"--all-topics", "--by-duration", "PT10M"}, map[tp]int64{{"t", 0}: 0, {"t", 1}: 0, {"u", 0}: 0, {"u", 1}: 0}},
		{[]string{"--topic", "u", "--by-duration", "PT0S"}, map[tp]int64{{"t", 0}: 0, {"t", 1}: 0, {"u", 0}: 4, {"u", 1}: 3}},
		{[]string{"--topic", "u", "--to", "2000-01-01T00:00:00Z"}, map[tp]int64{{"t", 0}: 0, {"t", 1}: 0, {"u", 0}: 0, {"u", 1}: 0}},
		{[]string{"--all-topics", "--to", "2999-01-01T00:00:00+02:00"}, map[tp]int64{{"t", 0}: 4, {"t", 1}: 3, {"u", 0}: 4, {"u", 1}: 3}},
		{[]string{"--all-topics", "--to-datetime", "2000-01-01T00:00:00.000", "--shift-by", "2"}, map[tp]int64{{"t", 0}: 2, {"t", 1}: 2, {"u", 0}: 2, {"u", 1}: 2}},
		{[]string{"--topic", "t:0", "--to-offset", "3"}, map[tp]int64{{"t", 0}: 3, {"t", 1}: 2, {"u", 0}: 2, {"u", 1}: 2}},
	} {
		r := mustRun(t, "", append([]string{"group", "reset-offsets", "g", "-b", b, "--execute"}, s.args...)...)
		if got := commits(); !maps.Equal(got, s.want) {
			t.Errorf("after %v: committed %v, want %v\n%s", s.args, got, s.want, r.stdout)
		}
	}
	expectFailure(t, 1, `reset offsets: topic "t" has no partition 5 (it has 2)`, "group", "reset-offsets", "g", "-b", b, "--topic", "t:5", "--to", "earliest")
	expectFailure(t, 1, `group "none" has no committed offsets; name the topics with --topic`, "group", "reset-offsets", "none", "-b", b, "--all-topics", "--to", "earliest")
	for _, args := range [][]string{
		{"--all-topics", "--topic", "t", "--to", "earliest"},
		{"--topic", "t:", "--to", "earliest"},
		{"--topic", "t:x", "--to", "earliest"},
		{"--topic", "t", "--to", "earliest", "--to-latest"},
		{"--topic", "t", "--by-duration", "10 minutes"},
		{"--topic", "t", "--to-datetime", "yesterday"},
		{"--topic", "t"},
	} {
		expectFailure(t, 2, "", append([]string{"group", "reset-offsets", "g", "-b", b}, args...)...)
	}
}

// group describe with no name describes every group; several names, several groups.
func TestGroupDescribeAll(t *testing.T) {
	_, b := newCluster(t, kfake.SeedTopics(1, "t"))
	if r := mustRun(t, "", "group", "describe", "-b", b); r.stdout != "No consumer groups.\n" {
		t.Errorf("describe with no groups printed %q", r.stdout)
	}
	if r := mustRun(t, "", "group", "describe", "-b", b, "-o", "json"); r.stdout != "[]\n" {
		t.Errorf("describe --output json with no groups printed %q", r.stdout)
	}
	mustRun(t, "a\nb\nc\n", "produce", "t", "-b", b)
	mustRun(t, "", "consume", "t", "-b", b, "--group", "g2", "--from-beginning", "-n", "3")
	mustRun(t, "", "consume", "t", "-b", b, "--group", "g1", "--from-beginning", "-n", "1")
	for _, args := range [][]string{{}, {"g1", "g2"}} {
		var ds []groupDescription
		r := mustRun(t, "", append(append([]string{"group", "describe"}, args...), "-b", b, "--json")...)
		if err := json.Unmarshal([]byte(r.stdout), &ds); err != nil {
			t.Fatalf("group describe %v --json: %v in %q", args, err, r.stdout)
		}
		if len(ds) != 2 || ds[0].Group != "g1" || ds[0].TotalLag != 2 || ds[1].Group != "g2" || ds[1].TotalLag != 0 {
			t.Errorf("group describe %v = %+v", args, ds)
		}
	}
	r := mustRun(t, "", "group", "describe", "-b", b)
	if strings.Count(r.stdout, "Group: ") != 2 || !strings.Contains(r.stdout, "Group: g1 ") || !strings.Contains(r.stdout, "Group: g2 ") {
		t.Errorf("group describe (all):\n%s", r.stdout)
	}
	expectFailure(t, 1, `group "nope" does not exist`, "group", "describe", "g1", "nope", "-b", b)
}
