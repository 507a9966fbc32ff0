package offsetspec

import "fmt"

// Partition is what a reset knows about one partition.
type Partition struct {
	Start     int64 // log start offset
	End       int64 // log end offset
	Committed int64 // the group's committed offset, -1 if none
	AtTime    int64 // first offset at or after the Timestamp asked, -1 if none or not asked
}

// Target is the new committed offset of one partition: the position to (nil means
// the current commit), plus shift, clamped to [Start, End] as
// kafka-consumer-groups does.
func Target(to *Spec, shift int64, p Partition) (int64, error) {
	base, err := base(to, p)
	if err != nil {
		return 0, err
	}
	return min(max(base+shift, p.Start), p.End), nil
}

func base(to *Spec, p Partition) (int64, error) {
	if to != nil && to.Kind == Current && p.Committed < 0 {
		return p.End, nil // as kafka-consumer-groups --to-current: no commit, the log end
	}
	if to == nil || to.Kind == Current {
		if p.Committed < 0 {
			return 0, fmt.Errorf("no committed offset to shift from")
		}
		return p.Committed, nil
	}
	switch to.Kind {
	case Earliest:
		return p.Start, nil
	case Latest:
		return p.End, nil
	case Timestamp:
		if p.AtTime < 0 {
			return p.End, nil
		}
		return p.AtTime, nil
	case FromEnd:
		return p.End - to.N, nil
	}
	return to.N, nil
}
