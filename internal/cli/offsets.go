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
	return parseResetSpec(s)
}

// parseResetSpec parses reset-offsets' --to: earliest | latest | OFFSET | @TIMESTAMP.
func parseResetSpec(s string) (offsetSpec, error) {
	switch s {
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
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < 0 {
		return offsetSpec{}, fmt.Errorf("bad offset %q: want N, earliest, latest or @TIMESTAMP", s)
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
	if to == nil {
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
