package cli

import (
	"testing"
	"time"
)

func TestParseOffsetSpec(t *testing.T) {
	rfc := time.Date(2024, 1, 2, 3, 4, 5, 0, time.UTC).UnixMilli()
	tests := []struct {
		in   string
		want offsetSpec
	}{
		{"0", offsetSpec{offsetExact, 0}},
		{"42", offsetSpec{offsetExact, 42}},
		{"earliest", offsetSpec{offsetEarliest, 0}},
		{"beginning", offsetSpec{offsetEarliest, 0}},
		{"latest", offsetSpec{offsetLatest, 0}},
		{"end", offsetSpec{offsetLatest, 0}},
		{"-10", offsetSpec{offsetFromEnd, 10}},
		{"@1700000000000", offsetSpec{offsetTimestamp, 1700000000000}},
		{"@2024-01-02T03:04:05Z", offsetSpec{offsetTimestamp, rfc}},
		{"@2024-01-02T04:04:05+01:00", offsetSpec{offsetTimestamp, rfc}},
	}
	for _, tt := range tests {
		got, err := parseOffsetSpec(tt.in)
		if err != nil || got != tt.want {
			t.Errorf("parseOffsetSpec(%q) = %+v, %v; want %+v", tt.in, got, err, tt.want)
		}
	}
	for _, bad := range []string{"", "-", "-0", "--1", "x", "1.5", "@", "@yesterday", "@-5", "earliest ", "9999999999999999999"} {
		if got, err := parseOffsetSpec(bad); err == nil {
			t.Errorf("parseOffsetSpec(%q) = %+v, want an error", bad, got)
		}
	}
}

func TestParseResetSpecRejectsFromEnd(t *testing.T) {
	if _, err := parseResetSpec("-5"); err == nil {
		t.Error("parseResetSpec(-5) succeeded; --to takes no -N (use --shift-by)")
	}
}

func TestOffsetSpecStringRoundTrip(t *testing.T) {
	for _, in := range []string{"7", "earliest", "latest", "-3", "@1700000000000"} {
		s, err := parseOffsetSpec(in)
		if err != nil {
			t.Fatal(err)
		}
		if s.String() != in {
			t.Errorf("String() = %q, want %q", s.String(), in)
		}
	}
}

func TestResetTarget(t *testing.T) {
	p := partitionOffsets{Start: 10, End: 100, Committed: 50, AtTime: 70}
	spec := func(s string) *offsetSpec {
		o, err := parseOffsetSpec(s)
		if err != nil {
			t.Fatal(err)
		}
		return &o
	}
	tests := []struct {
		name  string
		to    *offsetSpec
		shift int64
		p     partitionOffsets
		want  int64
	}{
		{"earliest", spec("earliest"), 0, p, 10},
		{"latest", spec("latest"), 0, p, 100},
		{"exact", spec("60"), 0, p, 60},
		{"exact below start clamps", spec("3"), 0, p, 10},
		{"exact past end clamps", spec("500"), 0, p, 100},
		{"timestamp", spec("@5"), 0, p, 70},
		{"timestamp after last record", spec("@5"), 0, partitionOffsets{Start: 10, End: 100, AtTime: -1}, 100},
		{"shift current back", nil, -20, p, 30},
		{"shift current forward clamps", nil, 1000, p, 100},
		{"earliest shifted", spec("earliest"), 5, p, 15},
		{"latest shifted back", spec("latest"), -5, p, 95},
		{"from end", spec("-30"), 0, p, 70},
		{"empty partition", spec("latest"), 0, partitionOffsets{Committed: -1, AtTime: -1}, 0},
	}
	for _, tt := range tests {
		got, err := resetTarget(tt.to, tt.shift, tt.p)
		if err != nil || got != tt.want {
			t.Errorf("%s: resetTarget = %d, %v; want %d", tt.name, got, err, tt.want)
		}
	}
	if _, err := resetTarget(nil, 1, partitionOffsets{Committed: -1}); err == nil {
		t.Error("shifting a partition with no commit succeeded, want an error")
	}
}

func TestParseISODuration(t *testing.T) {
	for in, want := range map[string]time.Duration{
		"PT10M": 10 * time.Minute, "PT1H30M": 90 * time.Minute, "P1D": 24 * time.Hour, "P1DT2H": 26 * time.Hour,
		"PT0.5S": 500 * time.Millisecond, "pt15s": 15 * time.Second, "PT0S": 0, "10m": 10 * time.Minute, "-PT1M": -time.Minute,
	} {
		if got, err := parseISODuration(in); err != nil || got != want {
			t.Errorf("parseISODuration(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "P", "PT", "10", "PT10", "P1H", "PT1D", "PTM", "10 minutes"} {
		if got, err := parseISODuration(bad); err == nil {
			t.Errorf("parseISODuration(%q) = %v, want an error", bad, got)
		}
	}
}

func TestParseResetSpecTimes(t *testing.T) {
	rfc := time.Date(2024, 1, 2, 3, 4, 5, 0, time.UTC).UnixMilli()
	for in, want := range map[string]offsetSpec{
		"2024-01-02T03:04:05Z":      {offsetTimestamp, rfc},
		"2024-01-02T04:04:05+01:00": {offsetTimestamp, rfc},
		"current":                   {offsetCurrent, 0},
	} {
		if got, err := parseResetSpec(in); err != nil || got != want {
			t.Errorf("parseResetSpec(%q) = %+v, %v; want %+v", in, got, err, want)
		}
	}
	if _, err := parseOffsetSpec("current"); err == nil {
		t.Error("consume --offset current succeeded; current is a group's commit")
	}
}
