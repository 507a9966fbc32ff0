package cli

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// offsetKind says how an offsetSpec picks a position in a partition.
type offsetKind uint8

const (
	offsetExact     offsetKind = iota // n is the offset
	offsetEarliest                    // the log start offset
	offsetLatest                      // the log end offset
	offsetFromEnd                     // n records before the log end offset (n > 0)
	offsetTimestamp                   // the first record at or after n ms since the epoch
	offsetCurrent                     // the group's committed offset (reset-offsets only)
)

// offsetSpec is a parsed --offset (consume) or --to (group reset-offsets) value.
type offsetSpec struct {
	kind offsetKind
	n    int64 // the offset, the count before the end, or the timestamp in ms; per kind
}

// parseOffsetSpec parses consume's --offset: N | earliest | latest | -N | @TIMESTAMP,
// where TIMESTAMP is milliseconds since the epoch or RFC 3339.
func parseOffsetSpec(s string) (offsetSpec, error) {
	if strings.HasPrefix(s, "-") {
		n, err := strconv.ParseInt(s[1:], 10, 64)
		if err != nil || n <= 0 {
			return offsetSpec{}, fmt.Errorf("bad offset %q: -N needs a positive count", s)
		}
		return offsetSpec{kind: offsetFromEnd, n: n}, nil
	}
	if s == "current" {
		return offsetSpec{}, fmt.Errorf("bad offset %q: want N, earliest, latest, -N or @TIMESTAMP", s)
	}
	return parseResetSpec(s)
}

// parseResetSpec parses reset-offsets' --to: earliest | latest | current | OFFSET |
// @TIMESTAMP | an RFC 3339 time (without the @, as kafka-consumer-groups'
// --to-datetime).
func parseResetSpec(s string) (offsetSpec, error) {
	switch s {
	case "current":
		return offsetSpec{kind: offsetCurrent}, nil
	case "earliest", "beginning", "start":
		return offsetSpec{kind: offsetEarliest}, nil
	case "latest", "end":
		return offsetSpec{kind: offsetLatest}, nil
	}
	if ts, ok := strings.CutPrefix(s, "@"); ok {
		ms, err := parseTimestamp(ts)
		if err != nil {
			return offsetSpec{}, fmt.Errorf("bad offset %q: %w", s, err)
		}
		return offsetSpec{kind: offsetTimestamp, n: ms}, nil
	}
	if strings.Contains(s, "T") {
		ms, err := parseDatetime(s)
		if err != nil {
			return offsetSpec{}, fmt.Errorf("bad offset %q: %w", s, err)
		}
		return offsetSpec{kind: offsetTimestamp, n: ms}, nil
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < 0 {
		return offsetSpec{}, fmt.Errorf("bad offset %q: want N, earliest, latest, @TIMESTAMP or an RFC 3339 time", s)
	}
	return offsetSpec{kind: offsetExact, n: n}, nil
}

// parseTimestamp reads milliseconds since the epoch, or an RFC 3339 time.
func parseTimestamp(s string) (int64, error) {
	if ms, err := strconv.ParseInt(s, 10, 64); err == nil {
		if ms < 0 {
			return 0, fmt.Errorf("timestamp %d is before the epoch", ms)
		}
		return ms, nil
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return 0, fmt.Errorf("timestamp %q is neither milliseconds since the epoch nor RFC 3339", s)
	}
	return t.UnixMilli(), nil
}

// parseDatetime reads an RFC 3339 time, or one without a zone (local time) as
// kafka-consumer-groups' --to-datetime YYYY-MM-DDTHH:mm:SS.sss takes.
func parseDatetime(s string) (int64, error) {
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return t.UnixMilli(), nil
	}
	for _, layout := range []string{"2006-01-02T15:04:05.999999999", "2006-01-02T15:04"} {
		if t, err := time.ParseInLocation(layout, s, time.Local); err == nil {
			return t.UnixMilli(), nil
		}
	}
	return 0, fmt.Errorf("time %q is not RFC 3339 (2006-01-02T15:04:05Z) nor YYYY-MM-DDTHH:mm:SS.sss", s)
}

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

// kgoOffset is the position for kgo.ConsumePartitions.
func (s offsetSpec) kgoOffset() kgo.Offset {
	switch s.kind {
	case offsetEarliest:
		return kgo.NewOffset().AtStart()
	case offsetLatest:
		return kgo.NewOffset().AtEnd()
	case offsetFromEnd:
		return kgo.NewOffset().AtEnd().Relative(-s.n)
	case offsetTimestamp:
		return kgo.NewOffset().AfterMilli(s.n)
	}
	return kgo.NewOffset().At(s.n)
}

func (s offsetSpec) String() string {
	switch s.kind {
	case offsetEarliest:
		return "earliest"
	case offsetLatest:
		return "latest"
	case offsetFromEnd:
		return "-" + strconv.FormatInt(s.n, 10)
	case offsetTimestamp:
		return "@" + strconv.FormatInt(s.n, 10)
	case offsetCurrent:
		return "current"
	}
	return strconv.FormatInt(s.n, 10)
}

// partitionOffsets is what reset-offsets knows about one partition.
type partitionOffsets struct {
	Start     int64 // log start offset
	End       int64 // log end offset
	Committed int64 // the group's committed offset, -1 if none
	AtTime    int64 // first offset at or after the --to timestamp, -1 if none or not asked
}

// resetTarget computes the new committed offset for one partition: the --to position
// (to == nil means the current commit), plus shift, clamped to [Start, End] as Kafka's
// kafka-consumer-groups does.
func resetTarget(to *offsetSpec, shift int64, p partitionOffsets) (int64, error) {
	base, err := resetBase(to, p)
	if err != nil {
		return 0, err
	}
	return min(max(base+shift, p.Start), p.End), nil
}

func resetBase(to *offsetSpec, p partitionOffsets) (int64, error) {
	if to != nil && to.kind == offsetCurrent && p.Committed < 0 {
		return p.End, nil // as kafka-consumer-groups --to-current: no commit, the log end
	}
	if to == nil || to.kind == offsetCurrent {
		if p.Committed < 0 {
			return 0, fmt.Errorf("no committed offset to shift from")
		}
		return p.Committed, nil
	}
	switch to.kind {
	case offsetEarliest:
		return p.Start, nil
	case offsetLatest:
		return p.End, nil
	case offsetTimestamp:
		if p.AtTime < 0 {
			return p.End, nil
		}
		return p.AtTime, nil
	case offsetFromEnd:
		return p.End - to.n, nil
	}
	return to.n, nil
}
