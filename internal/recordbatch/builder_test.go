package recordbatch

import (
	"bytes"
	"encoding/binary"
	"hash/crc32"
	"math/rand/v2"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

type testRecord struct {
	key, value []byte
	headers    []Header
	ts         int64
}

// kmsgBatch encodes recs with franz-go's kmsg types, as an independent reference.
func kmsgBatch(recs []testRecord) []byte {
	var body []byte
	for i, r := range recs {
		kr := kmsg.NewRecord()
		kr.TimestampDelta64 = r.ts - recs[0].ts
		kr.OffsetDelta = int32(i)
		kr.Key, kr.Value = r.key, r.value
		for _, h := range r.headers {
			kr.Headers = append(kr.Headers, kmsg.Header{Key: h.Key, Value: h.Value})
		}
		kr.Length = 0
		enc := kr.AppendTo(nil)
		kr.Length = int32(len(enc) - 1) // the zero length took one byte
		body = kr.AppendTo(body)
	}
	maxTS := recs[0].ts
	for _, r := range recs {
		maxTS = max(maxTS, r.ts)
	}
	b := kmsg.RecordBatch{
		FirstOffset: 0, PartitionLeaderEpoch: -1, Magic: 2, Attributes: 0,
		LastOffsetDelta: int32(len(recs) - 1), FirstTimestamp: recs[0].ts, MaxTimestamp: maxTS,
		ProducerID: -1, ProducerEpoch: -1, FirstSequence: -1, NumRecords: int32(len(recs)),
		Records: body,
	}
	b.Length = int32(HeaderSize - LengthPrefixSize + len(body))
	out := b.AppendTo(nil)
	binary.BigEndian.PutUint32(out[offCRC:], crc32.Checksum(out[offAttributes:], castagnoli))
	return out
}

func TestBuilderMatchesReference(t *testing.T) {
	cases := map[string][]testRecord{
		"one":        {{key: []byte("k"), value: []byte("v"), ts: 1700000000000}},
		"null key":   {{key: nil, value: []byte("v"), ts: 5}},
		"tombstone":  {{key: []byte("k"), value: nil, ts: 5}},
		"empty":      {{key: []byte{}, value: []byte{}, ts: 0}},
		"headers":    {{key: []byte("k"), value: []byte("v"), ts: 7, headers: []Header{{"a", []byte("1")}, {"b", nil}, {"", []byte{}}}}},
		"ts go down": {{key: []byte("a"), ts: 1000}, {key: []byte("b"), ts: 10}, {key: []byte("c"), ts: 5000}},
		"big value":  {{key: []byte("k"), value: bytes.Repeat([]byte("x"), 300), ts: 1}, {value: bytes.Repeat([]byte("y"), 70000), ts: 2}},
	}
	for name, recs := range cases {
		t.Run(name, func(t *testing.T) {
			b := NewBuilder(0)
			for _, r := range recs {
				b.Add(r.key, r.value, r.headers, r.ts)
			}
			got := b.Build()
			if b.Size() != len(got) {
				t.Fatalf("Size %d, built %d bytes", b.Size(), len(got))
			}
			if err := got.Verify(); err != nil {
				t.Fatalf("Verify: %v", err)
			}
			if want := kmsgBatch(recs); !bytes.Equal(got, want) {
				t.Fatalf("batch differs from the reference encoding\n got %x\nwant %x", []byte(got), want)
			}
			if got.RecordCount() != int32(len(recs)) || got.LastOffsetDelta() != int32(len(recs)-1) {
				t.Fatalf("count %d delta %d", got.RecordCount(), got.LastOffsetDelta())
			}
		})
	}
}

func TestBuilderDecodesWithKmsg(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	b := NewBuilder(64)
	for round := 0; round < 50; round++ {
		b.Reset()
		n := 1 + rng.IntN(20)
		var recs []testRecord
		for i := 0; i < n; i++ {
			r := testRecord{ts: rng.Int64N(1 << 42)}
			if rng.IntN(4) > 0 {
				r.key = randBytes(rng, rng.IntN(40))
			}
			if rng.IntN(4) > 0 {
				r.value = randBytes(rng, rng.IntN(400))
			}
			for h := rng.IntN(3); h > 0; h-- {
				r.headers = append(r.headers, Header{Key: string(randBytes(rng, rng.IntN(5))), Value: randBytes(rng, rng.IntN(5))})
			}
			recs = append(recs, r)
			b.Add(r.key, r.value, r.headers, r.ts)
		}
		batch := b.Build()
		if err := batch.Verify(); err != nil {
			t.Fatal(err)
		}
		var kb kmsg.RecordBatch
		if err := kb.ReadFrom(batch); err != nil {
			t.Fatal(err)
		}
		rest := kb.Records
		for i, want := range recs {
			l, m := binary.Varint(rest)
			var kr kmsg.Record
			if err := kr.ReadFrom(rest[:m+int(l)]); err != nil {
				t.Fatalf("record %d: %v", i, err)
			}
			rest = rest[m+int(l):]
			if !bytes.Equal(kr.Key, want.key) || (kr.Key == nil) != (want.key == nil) ||
				!bytes.Equal(kr.Value, want.value) || (kr.Value == nil) != (want.value == nil) ||
				recs[0].ts+kr.TimestampDelta64 != want.ts || kr.OffsetDelta != int32(i) || len(kr.Headers) != len(want.headers) {
				t.Fatalf("round %d record %d decoded as %+v, want %+v", round, i, kr, want)
			}
		}
		if len(rest) != 0 {
			t.Fatalf("%d trailing bytes", len(rest))
		}
	}
}

func randBytes(rng *rand.Rand, n int) []byte {
	p := make([]byte, n)
	for i := range p {
		p[i] = byte(rng.Uint32())
	}
	return p
}

func TestBuilderEmptyAndReset(t *testing.T) {
	var b Builder
	if b.Build() != nil {
		t.Fatal("an empty builder must build no batch")
	}
	b.Add([]byte("k"), []byte("v"), nil, 1)
	first := append([]byte(nil), b.Build()...)
	b.Reset()
	if b.Len() != 0 || b.Build() != nil {
		t.Fatal("Reset must empty the builder")
	}
	b.Add([]byte("k"), []byte("v"), nil, 1)
	if !bytes.Equal(first, b.Build()) {
		t.Fatal("the same records after Reset must give the same batch")
	}
}

func TestBuilderAllocs(t *testing.T) {
	b := NewBuilder(4096)
	key, value := []byte("group-key"), bytes.Repeat([]byte("v"), 100)
	hdrs := []Header{{Key: "h", Value: []byte("x")}}
	allocs := testing.AllocsPerRun(100, func() {
		b.Reset()
		for i := 0; i < 10; i++ {
			b.Add(key, value, hdrs, int64(i))
		}
		if b.Build() == nil {
			t.Fatal("no batch")
		}
	})
	if allocs != 0 {
		t.Fatalf("%v allocations per batch with a warm builder, want 0", allocs)
	}
}
