package kafka

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// frame encodes a request with kmsg (correlation id 7) as the server reads it after
// the 4-byte size: header v1/v2 then the body.
func frame(req kmsg.Request, version int16, clientID string) []byte {
	req.SetVersion(version)
	return kmsg.NewRequestFormatter(kmsg.FormatterClientID(clientID)).AppendRequest(nil, req, 7)[4:]
}

func TestParseFrame(t *testing.T) {
	c := &conn{}
	md := kmsg.NewPtrMetadataRequest()
	p, err := c.parse(frame(md, 12, "cli"))
	if err != nil {
		t.Fatalf("parse metadata v12: %v", err)
	}
	if p.req.key != 3 || p.req.version != 12 || p.req.correlationID != 7 || p.req.clientID != "cli" {
		t.Fatalf("header parsed as %+v", p.req)
	}
	if _, err := c.parse([]byte{0x7f, 0x7f, 0, 0, 0, 0, 0, 1, 0, 0}); err == nil {
		t.Fatal("unknown API key accepted")
	}
	if _, err := c.parse(frame(kmsg.NewPtrMetadataRequest(), 12, "")[:9]); err == nil {
		t.Fatal("truncated header accepted")
	}
}

// FuzzRequestFrame: arbitrary frames never panic the parser; they parse or fail with an
// error (which closes only that connection).
func FuzzRequestFrame(f *testing.F) {
	f.Add(frame(kmsg.NewPtrMetadataRequest(), 12, "c"))
	f.Add(frame(kmsg.NewPtrApiVersionsRequest(), 3, "c"))
	f.Add(frame(kmsg.NewPtrProduceRequest(), 9, ""))
	f.Add(frame(kmsg.NewPtrFetchRequest(), 13, "x"))
	f.Add([]byte{0, 0, 0, 0, 0, 0, 0, 0})
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) < 8 {
			return // the reader rejects frames shorter than a header before parse
		}
		c := &conn{}
		half := len(data) / 2
		_, _ = c.parse(data)
		_, _ = c.parse(data[:max(8, half)])
	})
}

// A fetch response is encoded into a buffer sized for it: no growth, one copy.
func TestFetchResponseSizeHint(t *testing.T) {
	resp := kmsg.NewPtrFetchResponse()
	rt := kmsg.NewFetchResponseTopic()
	rt.Topic = "orders"
	for i := range 3 {
		rp := kmsg.NewFetchResponseTopicPartition()
		rp.Partition = int32(i)
		rp.RecordBatches = make([]byte, 100_000)
		rt.Partitions = append(rt.Partitions, rp)
	}
	resp.Topics = append(resp.Topics, rt)
	for _, v := range []int16{4, 11, 12, 16} {
		r := &request{key: 1, version: v, correlationID: 1}
		buf := encodeResponse(r, resp)
		if hint := responseSizeHint(resp); len(buf) > hint {
			t.Errorf("v%d: encoded %d bytes, hint %d: the buffer grew", v, len(buf), hint)
		}
	}
}
