package offsetspec

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Kind says how a Spec picks a position in a partition.
type Kind uint8

const (
	Exact     Kind = iota // N is the offset
	Earliest              // the log start offset
	Latest                // the log end offset
	FromEnd               // N records before the log end offset (N > 0)
	Timestamp             // the first record at or after N ms since the epoch
	Current               // the group's committed offset (reset-offsets only)
)

// Spec is a parsed position.
type Spec struct {
	Kind Kind
	N    int64 // the offset, the count before the end, or the timestamp in ms; per Kind
}

// ParseOffset parses consume's --offset: N | earliest | latest | -N | @TIMESTAMP,
// where TIMESTAMP is milliseconds since the epoch or RFC 3339.
func ParseOffset(s string) (Spec, error) {
	if strings.HasPrefix(s, "-") {
		n, err := strconv.ParseInt(s[1:], 10, 64)
		if err != nil || n <= 0 {
			return Spec{}, fmt.Errorf("bad offset %q: -N needs a positive count", s)
		}
		return Spec{Kind: FromEnd, N: n}, nil
	}
	if s == "current" {
		return Spec{}, fmt.Errorf("bad offset %q: want N, earliest, latest, -N or @TIMESTAMP", s)
	}
	return ParseReset(s)
}

// ParseReset parses reset-offsets' --to: earliest | latest | current | OFFSET |
// @TIMESTAMP | an RFC 3339 time (without the @, as kafka-consumer-groups'
// --to-datetime).
func ParseReset(s string) (Spec, error) {
	switch s {
	case "current":
		return Spec{Kind: Current}, nil
	case "earliest", "beginning", "start":
		return Spec{Kind: Earliest}, nil
	case "latest", "end":
		return Spec{Kind: Latest}, nil
	}
	if ts, ok := strings.CutPrefix(s, "@"); ok {
		ms, err := ParseTimestamp(ts)
		if err != nil {
			return Spec{}, fmt.Errorf("bad offset %q: %w", s, err)
		}
		return Spec{Kind: Timestamp, N: ms}, nil
	}
	if strings.Contains(s, "T") {
		ms, err := ParseDatetime(s)
		if err != nil {
			return Spec{}, fmt.Errorf("bad offset %q: %w", s, err)
		}
		return Spec{Kind: Timestamp, N: ms}, nil
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < 0 {
		return Spec{}, fmt.Errorf("bad offset %q: want N, earliest, latest, @TIMESTAMP or an RFC 3339 time", s)
	}
	return Spec{Kind: Exact, N: n}, nil
}

// ParseTimestamp reads milliseconds since the epoch, or an RFC 3339 time.
func ParseTimestamp(s string) (int64, error) {
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

// ParseDatetime reads an RFC 3339 time, or one without a zone (local time) as
// kafka-consumer-groups' --to-datetime YYYY-MM-DDTHH:mm:SS.sss takes.
func ParseDatetime(s string) (int64, error) {
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

// String is s as ParseOffset or ParseReset read it (a time as @MS).
func (s Spec) String() string {
	switch s.Kind {
	case Earliest:
		return "earliest"
	case Latest:
		return "latest"
	case FromEnd:
		return "-" + strconv.FormatInt(s.N, 10)
	case Timestamp:
		return "@" + strconv.FormatInt(s.N, 10)
	case Current:
		return "current"
	}
	return strconv.FormatInt(s.N, 10)
}
