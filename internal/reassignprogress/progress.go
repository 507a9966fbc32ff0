package reassignprogress

import "time"

// Progress is one moving partition's measure. Sizes are bytes; Copied and Left are
// summed over the adding replicas.
type Progress struct {
	// Size is the target: the leader's log size, or the largest copy when the leader
	// did not answer.
	Size   int64
	Copied int64 // what the adding replicas hold
	Left   int64 // what they still lack of Size (never negative)
	// Rate is the bytes per second Copied grew since the earlier sample, never
	// negative; meaningful only when HasRate.
	Rate    float64
	HasRate bool
}

// Measure is the progress of a partition whose leader is leader, whose replicas
// (while it moves: the old and the new) are replicas and whose adding replicas are
// adding, from now, a sample of its log size per node that answered, and earlier, a
// sample taken dt before (dt <= 0: none, so no rate). ok is false when no replica's
// size is known.
func Measure(leader int32, replicas, adding []int32, now, earlier map[int32]int64, dt time.Duration) (p Progress, ok bool) {
	p.Size, ok = now[leader]
	if !ok {
		// The leader did not answer, or the move completed between the samples and
		// the old leader deleted its copy: the largest copy is the target.
		for _, id := range replicas {
			if n, has := now[id]; has && (!ok || n > p.Size) {
				p.Size, ok = n, true
			}
		}
	}
	if !ok {
		return Progress{}, false
	}
	var before int64
	for _, a := range adding {
		p.Copied += now[a]
		p.Left += max(0, p.Size-now[a])
		before += earlier[a]
	}
	if dt > 0 {
		p.Rate, p.HasRate = max(0, float64(p.Copied-before)/dt.Seconds()), true
	}
	return p, true
}

// ETA is the seconds to copy left bytes at rate bytes per second: 0 when nothing is
// left; ok is false when it cannot be said (something is left and no progress was
// measured).
func ETA(left int64, rate float64) (eta float64, ok bool) {
	switch {
	case left == 0:
		return 0, true
	case rate > 0:
		return float64(left) / rate, true
	}
	return 0, false
}
