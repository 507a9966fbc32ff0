package offsetspec

import (
	"testing"
	"time"
)

func TestParseOffset(t *testing.T) {
	rfc := time.Date(2024, 1, 2, 3, 4, 5, 0, time.UTC).UnixMilli()
	tests := []struct {
		in   string
		want Spec
	}{
		{"0", Spec{Exact, 0}},
		{"42", Spec{Exact, 42}},
		{"earliest", Spec{Earliest, 0}},
		{"beginning", Spec{Earliest, 0}},
		{"latest", Spec{Latest, 0}},
		{"end", Spec{Latest, 0}},
		{"-10", Spec{FromEnd, 10}},
		{"@1700000000000", Spec{Timestamp, 1700000000000}},
		{"@2024-01-02T03:04:05Z", Spec{Timestamp, rfc}},
		{"@2024-01-02T04:04:05+01:00", Spec{Timestamp, rfc}},
	}
	for _, tt := range tests {
		got, err := ParseOffset(tt.in)
		if err != nil || got != tt.want {
			t.Errorf("ParseOffset(%q) = %+v, %v; want %+v", tt.in, got, err, tt.want)
		}
	}
	for _, bad := range []string{"", "-", "-0", "--1", "x", "1.5", "@", "@yesterday", "@-5", "earliest ", "9999999999999999999"} {
		if got, err := ParseOffset(bad); err == nil {
			t.Errorf("ParseOffset(%q) = %+v, want an error", bad, got)
		}
	}
}

func TestParseResetRejectsFromEnd(t *testing.T) {
	if _, err := ParseReset("-5"); err == nil {
		t.Error("ParseReset(-5) succeeded; --to takes no -N (use --shift-by)")
	}
}

func TestSpecStringRoundTrip(t *testing.T) {
	for _, in := range []string{"7", "earliest", "latest", "-3", "@1700000000000"} {
		s, err := ParseOffset(in)
		if err != nil {
			t.Fatal(err)
		}
		if s.String() != in {
			t.Errorf("String() = %q, want %q", s.String(), in)
		}
	}
}

func TestTarget(t *testing.T) {
	p := Partition{Start: 10, End: 100, Committed: 50, AtTime: 70}
	spec := func(s string) *Spec {
		o, err := ParseOffset(s)
		if err != nil {
			t.Fatal(err)
		}
		return &o
	}
	tests := []struct {
		name  string
		to    *Spec
		shift int64
		p     Partition
		want  int64
	}{
		{"earliest", spec("earliest"), 0, p, 10},
		{"latest", spec("latest"), 0, p, 100},
		{"exact", spec("60"), 0, p, 60},
		{"exact below start clamps", spec("3"), 0, p, 10},
		{"exact past end clamps", spec("500"), 0, p, 100},
		{"timestamp", spec("@5"), 0, p, 70},
		{"timestamp after last record", spec("@5"), 0, Partition{Start: 10, End: 100, AtTime: -1}, 100},
		{"shift current back", nil, -20, p, 30},
		{"shift current forward clamps", nil, 1000, p, 100},
		{"earliest shifted", spec("earliest"), 5, p, 15},
		{"latest shifted back", spec("latest"), -5, p, 95},
		{"from end", spec("-30"), 0, p, 70},
		{"empty partition", spec("latest"), 0, Partition{Committed: -1, AtTime: -1}, 0},
	}
	for _, tt := range tests {
		got, err := Target(tt.to, tt.shift, tt.p)
		if err != nil || got != tt.want {
			t.Errorf("%s: Target = %d, %v; want %d", tt.name, got, err, tt.want)
		}
	}
	if _, err := Target(nil, 1, Partition{Committed: -1}); err == nil {
		t.Error("shifting a partition with no commit succeeded, want an error")
	}
}

func TestParseResetTimes(t *testing.T) {
	rfc := time.Date(2024, 1, 2, 3, 4, 5, 0, time.UTC).UnixMilli()
	for in, want := range map[string]Spec{
		"2024-01-02T03:04:05Z":      {Timestamp, rfc},
		"2024-01-02T04:04:05+01:00": {Timestamp, rfc},
		"current":                   {Current, 0},
	} {
		if got, err := ParseReset(in); err != nil || got != want {
			t.Errorf("ParseReset(%q) = %+v, %v; want %+v", in, got, err, want)
		}
	}
	if _, err := ParseOffset("current"); err == nil {
		t.Error("consume --offset current succeeded; current is a group's commit")
	}
}
