package cli

import (
	"testing"
	"time"
)

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
