package cli

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/runnel-io/runnel/internal/offsetspec"
)

// Positions (consume --offset, group reset-offsets --to) are offsetspec's language;
// what is here is only the CLI's: --by-duration, and the position as kgo takes it.

// parseISODuration reads an ISO 8601 duration as Java's Duration.parse (and
// kafka-consumer-groups' --by-duration) takes: [-]PnDTnHnMn.nS, e.g. PT10M, P1DT2H;
// a Go duration (10m) is accepted too.
func parseISODuration(s string) (time.Duration, error) {
	bad := fmt.Errorf("bad duration %q: want ISO 8601 such as PT10M, PT1H30M, P1D (or 10m)", s)
	if d, err := time.ParseDuration(s); err == nil {
		return d, nil
	}
	rest, neg := strings.CutPrefix(strings.ToUpper(s), "-")
	rest, ok := strings.CutPrefix(rest, "P")
	if !ok || rest == "" {
		return 0, bad
	}
	datePart, timePart, hasT := strings.Cut(rest, "T")
	if hasT && timePart == "" {
		return 0, bad
	}
	var total time.Duration
	for _, part := range []struct {
		s     string
		units map[byte]time.Duration
	}{
		{datePart, map[byte]time.Duration{'D': 24 * time.Hour}},
		{timePart, map[byte]time.Duration{'H': time.Hour, 'M': time.Minute, 'S': time.Second}},
	} {
		str := part.s
		for str != "" {
			i := strings.IndexFunc(str, func(r rune) bool { return (r < '0' || r > '9') && r != '.' })
			if i <= 0 {
				return 0, bad
			}
			unit, ok := part.units[str[i]]
			if !ok {
				return 0, bad
			}
			n, err := strconv.ParseFloat(str[:i], 64)
			if err != nil {
				return 0, bad
			}
			total += time.Duration(n * float64(unit))
			str = str[i+1:]
		}
	}
	if neg {
		total = -total
	}
	return total, nil
}

// kgoOffset is the position s for kgo.ConsumePartitions.
func kgoOffset(s offsetspec.Spec) kgo.Offset {
	switch s.Kind {
	case offsetspec.Earliest:
		return kgo.NewOffset().AtStart()
	case offsetspec.Latest:
		return kgo.NewOffset().AtEnd()
	case offsetspec.FromEnd:
		return kgo.NewOffset().AtEnd().Relative(-s.N)
	case offsetspec.Timestamp:
		return kgo.NewOffset().AfterMilli(s.N)
	}
	return kgo.NewOffset().At(s.N)
}
