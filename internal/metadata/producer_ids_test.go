package metadata

import "testing"

func TestApplyProducerIDs(t *testing.T) {
	im := Empty()
	for _, tc := range []struct {
		start, next int64
		want        int64
	}{
		{0, 1000, 1000},    // first block
		{0, 1000, 1000},    // replayed from a stale image: ignored
		{1000, 900, 1000},  // going backwards: ignored
		{1000, 2000, 2000}, // next block
		{5000, 6000, 2000}, // gap: ignored
	} {
		im = im.Apply(Record{Type: ProducerIDsType, ProducerIDBlockStart: tc.start, NextProducerID: tc.next}, 1)
		if im.NextProducerID != tc.want {
			t.Fatalf("block [%d,%d): NextProducerID = %d, want %d", tc.start, tc.next, im.NextProducerID, tc.want)
		}
	}
	b, _ := Encode([]Record{{Type: ProducerIDsType, ProducerIDBlockStart: 7, NextProducerID: 8}})
	recs, err := Decode(b)
	if err != nil || recs[0].ProducerIDBlockStart != 7 || recs[0].NextProducerID != 8 {
		t.Fatalf("round trip %+v %v", recs, err)
	}
}
