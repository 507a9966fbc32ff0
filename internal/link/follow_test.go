package link

import (
	"context"
	"errors"
	"maps"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

func TestGroupCommit(t *testing.T) {
	for _, c := range []struct {
		name           string
		src, end, cur  int64
		want           int64
		commit, synced bool
	}{
		{"new group", 600, 1000, -1, 600, true, true},
		{"moves forward", 700, 1000, 600, 700, true, true},
		{"already there", 700, 1000, 700, 700, false, true},
		{"clamped to the destination's end", 1050, 1000, 700, 1000, true, true},
		{"clamped, already there", 1050, 1000, 1000, 1000, false, true},
		{"never backwards", 650, 1000, 700, 650, false, false},
		{"never backwards past the end either", 1200, 1000, 1100, 1000, false, false},
		{"nothing committed at the source", -1, 1000, -1, -1, false, false},
	} {
		want, commit, synced := groupCommit(c.src, c.end, c.cur)
		if want != c.want || commit != c.commit || synced != c.synced {
			t.Errorf("%s: groupCommit(%d, %d, %d) = %d, %v, %v; want %d, %v, %v", c.name, c.src, c.end, c.cur,
				want, commit, synced, c.want, c.commit, c.synced)
		}
	}
}

func TestConfigChanges(t *testing.T) {
	cfg := func(name, value string, source kmsg.ConfigSource, sensitive bool) kmsg.DescribeConfigsResponseResourceConfig {
		c := kmsg.NewDescribeConfigsResponseResourceConfig()
		c.Name, c.Source, c.IsSensitive = name, source, sensitive
		if value != "" {
			c.Value = kmsg.StringPtr(value)
		}
		return c
	}
	described := []kmsg.DescribeConfigsResponseResourceConfig{
		cfg("retention.ms", "3600000", kmsg.ConfigSourceDynamicTopicConfig, false),   // changed
		cfg("cleanup.policy", "compact", kmsg.ConfigSourceDynamicTopicConfig, false), // unchanged
		cfg("segment.bytes", "1073741824", kmsg.ConfigSourceDefaultConfig, false),    // dropped at the source
		cfg("max.message.bytes", "1048588", kmsg.ConfigSourceDefaultConfig, false),   // default on both
		cfg("bad.config", "x", kmsg.ConfigSourceDynamicTopicConfig, false),           // refused here
		cfg("secret", "", kmsg.ConfigSourceDynamicTopicConfig, true),                 // sensitive
	}
	cur := map[string]string{"retention.ms": "86400000", "cleanup.policy": "compact", "segment.bytes": "1048576",
		"secret": "kept", "runnel.only": "kept"}
	validate := func(k, _ string) error {
		if k == "bad.config" {
			return errors.New("unknown")
		}
		return nil
	}
	got := configChanges(cur, described, validate)
	want := map[string]*string{"retention.ms": kmsg.StringPtr("3600000"), "segment.bytes": nil}
	if !maps.EqualFunc(got, want, func(a, b *string) bool { return (a == nil) == (b == nil) && (a == nil || *a == *b) }) {
		t.Fatalf("configChanges = %v, want %v", got, want)
	}
}

func TestThrottleBoundsRate(t *testing.T) {
	if th := newThrottle(0); th != nil {
		t.Fatal("a zero rate throttles")
	}
	const rate = 1 << 20
	th := newThrottle(rate)
	// A second of the rate per request, and no partition asks for more.
	if req, part := th.fetchBytes(); req != rate || part != min(rate, partitionMaxBytes) {
		t.Fatalf("fetchBytes = %d, %d, want %d, %d", req, part, rate, min(rate, partitionMaxBytes))
	}
	if req, part := newThrottle(16 << 20).fetchBytes(); req != 16<<20 || part != partitionMaxBytes {
		t.Fatalf("fetchBytes at 16 MiB/s = %d, %d, want %d, %d", req, part, 16<<20, partitionMaxBytes)
	}
	if req, _ := newThrottle(100).fetchBytes(); req != minThrottledFetch {
		t.Fatalf("a tiny rate asks for %d bytes, want %d", req, minThrottledFetch)
	}
	ctx := context.Background()
	start := time.Now()
	// One second's burst, then 3/4 MiB in debt: the next wait is about 3/4 s.
	th.take(rate)
	th.take(rate * 3 / 4)
	if err := th.wait(ctx); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took < 600*time.Millisecond {
		t.Fatalf("waited %v after 1.75 s worth at the rate with a 1 s burst, want about 0.75 s", took)
	}
	cctx, cancel := context.WithCancel(ctx)
	th.take(10 * rate)
	cancel()
	if err := th.wait(cctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("wait with an ended context: %v", err)
	}
}
