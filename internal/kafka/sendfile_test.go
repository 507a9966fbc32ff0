package kafka

import (
	"bytes"
	"encoding/binary"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestSplicePlanRoundTrip encodes fetch responses with tokens in place of some
// partitions' records, assembles what the writer would send (file ranges read back
// from the file) and decodes it with kmsg: every partition must carry exactly its
// records, at every version, flexible or not.
func TestSplicePlanRoundTrip(t *testing.T) {
	data := make([]byte, 300<<10)
	for i := range data {
		data[i] = byte(rand.Uint32())
	}
	path := filepath.Join(t.TempDir(), "00000000000000000000.log")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()

	ranges := []struct {
		topic  string
		pos    int64
		size   int
		splice bool
	}{
		{"a", 0, 100 << 10, true},
		{"a", 100 << 10, 50, false},
		{"b", 120 << 10, 130 << 10, true},
		{"a", 250 << 10, 127, true}, // a varint length of one byte
		{"c", 0, 0, false},
	}
	for _, v := range []int16{4, 11, 12, 16} {
		resp := kmsg.NewPtrFetchResponse()
		var splices []*splice
		want := map[string][][]byte{}
		for i, rg := range ranges {
			rp := kmsg.NewFetchResponseTopicPartition()
			rp.Partition = int32(i)
			records := data[rg.pos : rg.pos+int64(rg.size)]
			want[rg.topic] = append(want[rg.topic], records)
			if rg.splice {
				token := make([]byte, 16)
				binary.LittleEndian.PutUint64(token, rand.Uint64())
				binary.LittleEndian.PutUint64(token[8:], rand.Uint64())
				splices = append(splices, &splice{token: token, file: f, pos: rg.pos, size: rg.size})
				rp.RecordBatches = token
			} else {
				rp.RecordBatches = bytes.Clone(records)
			}
			appendToTopic(resp, rg.topic, rp)
		}
		r := &request{key: 1, version: v, correlationID: 42}
		frame := encodeResponse(r, resp)
		parts, err := splicePlan(frame, spliceOrder(resp, splices), resp.IsFlexible())
		if err != nil {
			t.Fatalf("v%d: %v", v, err)
		}
		var out []byte
		for _, p := range parts {
			if p.sp == nil {
				out = append(out, p.b...)
				continue
			}
			b := make([]byte, p.sp.size)
			if _, err := f.ReadAt(b, p.sp.pos); err != nil {
				t.Fatal(err)
			}
			out = append(out, b...)
		}
		if size := int(binary.BigEndian.Uint32(out)); size != len(out)-4 {
			t.Fatalf("v%d: frame size %d, frame is %d bytes", v, size, len(out)-4)
		}
		if id := int32(binary.BigEndian.Uint32(out[4:])); id != 42 {
			t.Fatalf("v%d: correlation id %d", v, id)
		}
		body := out[8:]
		got := kmsg.NewPtrFetchResponse()
		got.SetVersion(v)
		if got.IsFlexible() {
			body = body[1:]
		}
		if err := got.ReadFrom(body); err != nil {
			t.Fatalf("v%d: decoding the spliced response: %v", v, err)
		}
		if len(got.Topics) != len(resp.Topics) {
			t.Fatalf("v%d: %d topics decoded, %d sent", v, len(got.Topics), len(resp.Topics))
		}
		for ti, gt := range got.Topics {
			topic := resp.Topics[ti].Topic // v13+ carry topic ids, not names
			for i, gp := range gt.Partitions {
				if !bytes.Equal(gp.RecordBatches, want[topic][i]) {
					t.Fatalf("v%d: topic %s partition %d: %d record bytes differ from the %d expected",
						v, topic, gp.Partition, len(gp.RecordBatches), len(want[topic][i]))
				}
			}
		}
	}
}

func appendToTopic(resp *kmsg.FetchResponse, topic string, rp kmsg.FetchResponseTopicPartition) {
	for i := range resp.Topics {
		if resp.Topics[i].Topic == topic {
			resp.Topics[i].Partitions = append(resp.Topics[i].Partitions, rp)
			return
		}
	}
	rt := kmsg.NewFetchResponseTopic()
	rt.Topic = topic
	rt.Partitions = append(rt.Partitions, rp)
	resp.Topics = append(resp.Topics, rt)
}
