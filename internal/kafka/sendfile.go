package kafka

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math/rand/v2"

	"github.com/runnel-io/runnel/internal/replica"
	"github.com/runnel-io/runnel/internal/vfs"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Zero-copy fetch. A partition with at least sendfileMinBytes of records in a fetch
// response is not read into memory: kmsg encodes the response with a 16-byte random
// token in place of those records, and the writer sends the encoded bytes around each
// token, and in its place the segment's byte range with sendfile(2), from the page
// cache straight to the socket. The records field of a fetch response is
// a length followed by the bytes (Kafka's RECORDS type: an int32 length up to v11, an
// unsigned varint of length+1 from v12, the flexible versions), so only that length
// changes when the token is swapped for the records; the frame's size is adjusted to
// match. Small partitions are still copied: for them one write beats a write, a
// sendfile and another write.
//
// The bytes are checked nowhere on the way: they were verified (CRC) when appended,
// and a consumer checks them again.

// sendfileMinBytes is the smallest record range of one partition sent with sendfile.
const sendfileMinBytes = 32 << 10

// splice is a partition's records, sent from the segment file.
type splice struct {
	token    []byte // 16 random bytes standing in for the records in the encoded response
	tokenBuf [16]byte
	file     vfs.File
	pos      int64
	size     int
}

// outPart is a piece of an encoded response: bytes, or a file range.
type outPart struct {
	b  []byte
	sp *splice
}

// spliceRecords puts a token for info's range in rp (instead of reading it) when the
// connection and the file allow sendfile and the range is large enough. It reports
// whether it did.
func (r *request) spliceRecords(rp *kmsg.FetchResponseTopicPartition, info replica.ReadInfo) bool {
	if r.conn == nil || r.conn.raw == nil || int(info.Size) < sendfileMinBytes || !vfs.CanSendFile(info.File) {
		return false
	}
	sp := &splice{file: info.File, pos: info.Position, size: int(info.Size)}
	binary.LittleEndian.PutUint64(sp.tokenBuf[:], rand.Uint64())
	binary.LittleEndian.PutUint64(sp.tokenBuf[8:], rand.Uint64())
	sp.token = sp.tokenBuf[:]
	r.splices = append(r.splices, sp)
	rp.RecordBatches = sp.token
	return true
}

// splicePlan cuts an encoded fetch response frame (size prefix included) around its
// tokens. It fixes each records length and the frame size, and returns the pieces to
// write in order. splices must be in the order kmsg encoded them (see spliceOrder).
func splicePlan(frame []byte, splices []*splice, flexible bool) ([]outPart, error) {
	// parts[0] is the new frame size, filled in at the end. prefixes has room for
	// every length (at most 5 bytes each) and the size, so it never moves.
	parts := make([]outPart, 1, 3*len(splices)+2)
	prefixes := make([]byte, 0, 5*len(splices)+4)
	total := len(frame) - 4
	from := 4 // the frame size is rewritten below and goes out with the first piece
	for _, sp := range splices {
		i := bytes.Index(frame[from:], sp.token)
		if i < 0 {
			return nil, fmt.Errorf("fetch response: the token of %d record bytes at position %d of %s is not in the encoded response", sp.size, sp.pos, sp.file.Name())
		}
		at := from + i
		// The token's own length prefix: 17 as a one-byte uvarint (flexible), or the
		// int32 16.
		oldPrefix := 4
		if flexible {
			oldPrefix = 1
		}
		if at-oldPrefix < from {
			return nil, fmt.Errorf("fetch response: the token of %d record bytes at position %d of %s has no length before it", sp.size, sp.pos, sp.file.Name())
		}
		n := len(prefixes)
		if flexible {
			prefixes = binary.AppendUvarint(prefixes, uint64(sp.size)+1)
		} else {
			prefixes = binary.BigEndian.AppendUint32(prefixes, uint32(sp.size))
		}
		prefix := prefixes[n:len(prefixes):len(prefixes)]
		parts = append(parts, outPart{b: frame[from : at-oldPrefix]}, outPart{b: prefix}, outPart{sp: sp})
		total += len(prefix) - oldPrefix + sp.size - len(sp.token)
		from = at + len(sp.token)
	}
	parts = append(parts, outPart{b: frame[from:]})
	n := len(prefixes)
	prefixes = binary.BigEndian.AppendUint32(prefixes, uint32(total))
	parts[0] = outPart{b: prefixes[n:]}
	return parts, nil
}

// spliceOrder returns r.splices in the order kmsg encodes their partitions: topic by
// topic, partition by partition, as they sit in resp.
func spliceOrder(resp *kmsg.FetchResponse, splices []*splice) []*splice {
	if len(splices) == 1 {
		return splices
	}
	out := make([]*splice, 0, len(splices))
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			if len(p.RecordBatches) != 16 {
				continue
			}
			for _, sp := range splices {
				if &sp.token[0] == &p.RecordBatches[0] {
					out = append(out, sp)
					break
				}
			}
		}
	}
	return out
}
