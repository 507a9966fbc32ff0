package reassignprogress

import (
	"testing"
	"time"
)

func TestMeasure(t *testing.T) {
	for _, tc := range []struct {
		name             string
		leader           int32
		replicas, adding []int32
		now, earlier     map[int32]int64
		dt               time.Duration
		want             Progress
		wantOK           bool
		wantETA          float64
		wantETAOK        bool
	}{
		{name: "leader's size is the target", leader: 1, replicas: []int32{1, 2, 3}, adding: []int32{3},
			now: map[int32]int64{1: 1000, 3: 400}, earlier: map[int32]int64{1: 1000, 3: 200}, dt: 2 * time.Second,
			want: Progress{Size: 1000, Copied: 400, Left: 600, Rate: 100, HasRate: true}, wantOK: true, wantETA: 6, wantETAOK: true},
		{name: "no leader: the largest copy", leader: 2, replicas: []int32{2, 4, 5}, adding: []int32{5},
			now: map[int32]int64{4: 600, 5: 500}, dt: time.Second,
			want: Progress{Size: 600, Copied: 500, Left: 100, Rate: 500, HasRate: true}, wantOK: true, wantETA: 0.2, wantETAOK: true},
		{name: "one sample: no rate", leader: 1, replicas: []int32{1, 2}, adding: []int32{2},
			now:  map[int32]int64{1: 10, 2: 4},
			want: Progress{Size: 10, Copied: 4, Left: 6}, wantOK: true},
		{name: "a copy that shrank: rate 0, a copy above the target: nothing left", leader: 1, replicas: []int32{1, 2}, adding: []int32{2},
			now: map[int32]int64{1: 10, 2: 12}, earlier: map[int32]int64{2: 20}, dt: time.Second,
			want: Progress{Size: 10, Copied: 12, Left: 0, Rate: 0, HasRate: true}, wantOK: true, wantETA: 0, wantETAOK: true},
		{name: "nobody answered", leader: 1, replicas: []int32{1, 2}, adding: []int32{2}, now: map[int32]int64{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := Measure(tc.leader, tc.replicas, tc.adding, tc.now, tc.earlier, tc.dt)
			if got != tc.want || ok != tc.wantOK {
				t.Fatalf("Measure = %+v, %v; want %+v, %v", got, ok, tc.want, tc.wantOK)
			}
			if !ok {
				return
			}
			eta, etaOK := ETA(got.Left, got.Rate)
			if eta != tc.wantETA || etaOK != tc.wantETAOK {
				t.Errorf("ETA(%d, %v) = %v, %v; want %v, %v", got.Left, got.Rate, eta, etaOK, tc.wantETA, tc.wantETAOK)
			}
		})
	}
}
