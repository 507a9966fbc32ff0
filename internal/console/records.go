package console

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/runnel-io/runnel/internal/auth"
	"github.com/runnel-io/runnel/internal/httpd"
	"github.com/runnel-io/runnel/internal/metadata"
)

// The records of a partition (GET /api/v1/topics/T/records) and one produced record
// (POST). A page is read with one client of the node's own listener from the asked
// position up to the partition's high watermark as it was when the page began, in
// fetches of at most fetchBytes: a topic is never loaded whole, whatever its size.

const (
	// writeTimeout bounds one request of the console's own endpoints.
	writeTimeout = 8 * time.Second
	// defaultLimit and maxLimit bound the records of one page.
	defaultLimit, maxLimit = 50, 500
	// maxScan bounds the records a filtered page reads looking for matches: the page
	// ends there, and next_offset says where the next one starts.
	maxScan = 20000
	// fetchBytes bounds one fetch of the partition.
	fetchBytes = 1 << 20
	// quietPoll is how long a page waits for more records below the high watermark
	// it started with: the records left may be control records (transaction
	// markers), which a consumer never sees.
	quietPoll = time.Second
)

// Records is GET /api/v1/topics/T/records.
type Records struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	// LogStart and HighWatermark are the partition's offsets when the page began.
	LogStart      int64 `json:"log_start"`
	HighWatermark int64 `json:"high_watermark"`
	// From is the first offset the page read.
	From int64 `json:"from"`
	// NextOffset is where the next page starts (offset=NextOffset).
	NextOffset int64 `json:"next_offset"`
	// Scanned counts the records read: more than len(Records) with a filter.
	Scanned int `json:"scanned"`
	// Filter is the text the records were filtered on, "" for none.
	Filter  string   `json:"filter,omitempty"`
	Records []Record `json:"records"`
}

// Record is one record. Key and value are UTF-8 text when they are valid UTF-8,
// else base64 with KeyEncoding / ValueEncoding "base64"; a null key or value is null.
type Record struct {
	Partition     int32          `json:"partition"`
	Offset        int64          `json:"offset"`
	Timestamp     int64          `json:"timestamp"`
	Key           *string        `json:"key"`
	KeyEncoding   string         `json:"key_encoding,omitempty"`
	Value         *string        `json:"value"`
	ValueEncoding string         `json:"value_encoding,omitempty"`
	Headers       []RecordHeader `json:"headers"`
	// Size is the bytes of the key, the value and the headers' keys and values.
	Size int `json:"size"`
}

// RecordHeader is one header; its value is encoded as a record's.
type RecordHeader struct {
	Key           string  `json:"key"`
	Value         *string `json:"value"`
	ValueEncoding string  `json:"value_encoding,omitempty"`
}

// encodeBytes is b as text when it is valid UTF-8, else base64 with the encoding's name.
func encodeBytes(b []byte) (*string, string) {
	if b == nil {
		return nil, ""
	}
	if utf8.Valid(b) {
		s := string(b)
		return &s, ""
	}
	s := base64.StdEncoding.EncodeToString(b)
	return &s, "base64"
}

// decodeBytes reverses encodeBytes for a produced record's fields.
func decodeBytes(field string, s *string, encoding string) ([]byte, error) {
	if s == nil {
		return nil, nil
	}
	switch encoding {
	case "", "text", "utf8":
		return []byte(*s), nil
	case "base64":
		b, err := base64.StdEncoding.DecodeString(*s)
		if err != nil {
			return nil, fmt.Errorf("%w: %s is not base64: %v", ErrBadRequest, field, err)
		}
		return b, nil
	}
	return nil, fmt.Errorf("%w: %s_encoding %q: want \"base64\" or none (text)", ErrBadRequest, field, encoding)
}

func toRecord(r *kgo.Record) Record {
	out := Record{Partition: r.Partition, Offset: r.Offset, Timestamp: r.Timestamp.UnixMilli(), Headers: []RecordHeader{},
		Size: len(r.Key) + len(r.Value)}
	out.Key, out.KeyEncoding = encodeBytes(r.Key)
	out.Value, out.ValueEncoding = encodeBytes(r.Value)
	for _, h := range r.Headers {
		rh := RecordHeader{Key: h.Key}
		rh.Value, rh.ValueEncoding = encodeBytes(h.Value)
		if rh.Value == nil {
			empty := ""
			rh.Value = &empty // kgo reads an empty header value as nil
		}
		out.Headers = append(out.Headers, rh)
		out.Size += len(h.Key) + len(h.Value)
	}
	return out
}

// matches reports whether the record's key, value or a header key or value holds
// text (compared as bytes, so a binary value matches its bytes).
func matches(r *kgo.Record, text []byte) bool {
	if bytes.Contains(r.Key, text) || bytes.Contains(r.Value, text) {
		return true
	}
	for _, h := range r.Headers {
		if strings.Contains(h.Key, string(text)) || bytes.Contains(h.Value, text) {
			return true
		}
	}
	return false
}

// recordsQuery is a records request's query string.
type recordsQuery struct {
	partition int32
	offset    int64 // -1: not given
	timestamp int64 // -1: not given
	limit     int
	filter    string
}

func parseRecordsQuery(r *http.Request) (recordsQuery, error) {
	q := recordsQuery{offset: -1, timestamp: -1, limit: defaultLimit}
	v := r.URL.Query()
	num := func(name string, min int64) (int64, bool, error) {
		s := v.Get(name)
		if s == "" {
			return 0, false, nil
		}
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil || n < min {
			return 0, false, fmt.Errorf("%w: %s=%q: want an integer of at least %d", ErrBadRequest, name, s, min)
		}
		return n, true, nil
	}
	if p, ok, err := num("partition", 0); err != nil {
		return q, err
	} else if ok {
		if p > 1<<31-1 {
			return q, fmt.Errorf("%w: partition=%d is not a partition number", ErrBadRequest, p)
		}
		q.partition = int32(p)
	}
	off, okOff, err := num("offset", 0)
	if err != nil {
		return q, err
	}
	ts, okTS, err := num("timestamp", 0)
	if err != nil {
		return q, err
	}
	if okOff && okTS {
		return q, fmt.Errorf("%w: give offset or timestamp, not both", ErrBadRequest)
	}
	if okOff {
		q.offset = off
	}
	if okTS {
		q.timestamp = ts
	}
	if n, ok, err := num("limit", 1); err != nil {
		return q, err
	} else if ok {
		q.limit = int(min(n, maxLimit))
	}
	q.filter = v.Get("filter")
	return q, nil
}

// topicPartition checks that the request may do op on topic and that its partition
// exists, and returns the image it read.
func (s *source) topicPartition(ctx context.Context, op metadata.ACLOperation, topic string, partition int32) (*metadata.Image, error) {
	// Refused before the lookup, so that a refusal does not tell whether it exists.
	v, err := s.requireOn(ctx, op, auth.Topic(topic))
	if err != nil {
		return nil, err
	}
	t := v.im.Topic(topic)
	if t == nil {
		return nil, fmt.Errorf("%w: topic %q does not exist (metadata offset %d on node %d)", httpd.ErrNotFound, topic, v.im.Offset, s.n.ID())
	}
	if partition < 0 || int(partition) >= len(t.Partitions) {
		return nil, fmt.Errorf("%w: topic %q has no partition %d (it has %d)", httpd.ErrNotFound, topic, partition, len(t.Partitions))
	}
	return v.im, nil
}

// readRecords serves GET /api/v1/topics/T/records: READ on the topic, as a Fetch.
func (s *source) readRecords(ctx context.Context, r *http.Request) (any, error) {
	topic := r.PathValue("name")
	q, err := parseRecordsQuery(r)
	if err != nil {
		return nil, err
	}
	if _, err := s.topicPartition(ctx, metadata.ACLOpRead, topic, q.partition); err != nil {
		return nil, err
	}
	out := &Records{Topic: topic, Partition: q.partition, Filter: q.filter, Records: []Record{}}
	cl, err := s.kafkaClient()
	if err != nil {
		return nil, fmt.Errorf("%w: %v", httpd.ErrUnavailable, err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	start, end, err := partitionBounds(ctx, adm, topic, q.partition)
	if err != nil {
		return nil, err
	}
	out.LogStart, out.HighWatermark = start, end
	// Newest: the last page; with a filter, the last matches among the last maxScan
	// records.
	newest := q.offset < 0 && q.timestamp < 0
	from := max(end-int64(q.limit), start)
	if newest && q.filter != "" {
		from = max(end-maxScan, start)
	}
	switch {
	case q.offset >= 0:
		from = min(max(q.offset, start), end)
	case q.timestamp >= 0:
		listed, err := adm.ListOffsetsAfterMilli(ctx, q.timestamp, topic)
		if err != nil {
			return nil, fmt.Errorf("topic %s partition %d: the offset at time %d: %w", topic, q.partition, q.timestamp, err)
		}
		o, ok := listed.Lookup(topic, q.partition)
		switch {
		case !ok:
			return nil, fmt.Errorf("topic %s partition %d: no answer for the offset at time %d", topic, q.partition, q.timestamp)
		case o.Err != nil:
			return nil, fmt.Errorf("topic %s partition %d: the offset at time %d: %w", topic, q.partition, q.timestamp, o.Err)
		}
		from = end // no record at or after the time
		if o.Offset >= 0 {
			from = min(max(o.Offset, start), end)
		}
	}
	out.From, out.NextOffset = from, from
	if from >= end {
		return out, nil
	}
	scan := q.limit
	if q.filter != "" || q.timestamp >= 0 {
		scan = maxScan
	}
	// From a time, records before it are skipped: ListOffsets answers the first record
	// at or after it, but another Kafka-compatible node, or a batch that would not
	// decompress, may answer the batch's first offset.
	reached := q.timestamp < 0
	err = s.scan(ctx, topic, q.partition, from, end, scan, func(rec *kgo.Record) bool {
		out.Scanned++
		out.NextOffset = rec.Offset + 1
		if reached = reached || rec.Timestamp.UnixMilli() >= q.timestamp; !reached {
			return true
		}
		if q.filter == "" || matches(rec, []byte(q.filter)) {
			out.Records = append(out.Records, toRecord(rec))
		}
		if newest && len(out.Records) > q.limit {
			out.Records = out.Records[1:] // newest matches: keep the last limit
		}
		return (newest || len(out.Records) < q.limit) && out.Scanned < scan
	})
	return out, err
}

// partitionBounds are a partition's log start offset and high watermark, from its leader.
func partitionBounds(ctx context.Context, adm *kadm.Client, topic string, partition int32) (int64, int64, error) {
	starts, err := adm.ListStartOffsets(ctx, topic)
	if err != nil {
		return 0, 0, fmt.Errorf("topic %s partition %d: the log start offset: %w", topic, partition, err)
	}
	ends, err := adm.ListEndOffsets(ctx, topic)
	if err != nil {
		return 0, 0, fmt.Errorf("topic %s partition %d: the high watermark: %w", topic, partition, err)
	}
	so, sok := starts.Lookup(topic, partition)
	eo, eok := ends.Lookup(topic, partition)
	switch {
	case !sok || !eok:
		return 0, 0, fmt.Errorf("topic %s partition %d: its leader did not answer ListOffsets", topic, partition)
	case so.Err != nil:
		return 0, 0, fmt.Errorf("topic %s partition %d: the log start offset: %w", topic, partition, so.Err)
	case eo.Err != nil:
		return 0, 0, fmt.Errorf("topic %s partition %d: the high watermark: %w", topic, partition, eo.Err)
	}
	return so.Offset, eo.Offset, nil
}

// scan reads topic/partition from offset from up to end (exclusive), giving each
// record to each until it returns false, at most fetchBytes per fetch. It stops early,
// without an error, when no record comes for quietPoll (what is left below end is
// not for consumers: control records, or aborted ones).
func (s *source) scan(ctx context.Context, topic string, partition int32, from, end int64, limit int, each func(*kgo.Record) bool) error {
	cl, err := s.kafkaClient(
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {partition: kgo.NewOffset().At(from)}}),
		kgo.FetchMaxBytes(fetchBytes), kgo.FetchMaxPartitionBytes(fetchBytes), kgo.FetchMaxWait(quietPoll/2),
		kgo.MaxConcurrentFetches(1), kgo.FetchMinBytes(1))
	if err != nil {
		return fmt.Errorf("%w: %v", httpd.ErrUnavailable, err)
	}
	defer cl.Close()
	for seen := 0; seen < limit; {
		pctx, cancel := context.WithTimeout(ctx, quietPoll)
		fs := cl.PollRecords(pctx, limit-seen)
		cancel()
		if ctx.Err() != nil {
			return fmt.Errorf("topic %s partition %d: reading from offset %d: %w", topic, partition, from, ctx.Err())
		}
		var ferr error
		fs.EachError(func(_ string, _ int32, err error) {
			if !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, context.Canceled) {
				ferr = err
			}
		})
		if ferr != nil {
			return fmt.Errorf("topic %s partition %d: fetching from offset %d: %w", topic, partition, from, ferr)
		}
		recs := fs.Records()
		if len(recs) == 0 {
			return nil
		}
		for _, rec := range recs {
			if rec.Offset >= end {
				return nil
			}
			seen++
			if !each(rec) {
				return nil
			}
			if rec.Offset == end-1 {
				return nil
			}
		}
	}
	return nil
}

// ProduceRequest is the body of POST /api/v1/topics/T/records. Key, value and the
// headers' values are text, or base64 with the encoding "base64".
type ProduceRequest struct {
	Partition     *int32         `json:"partition"`
	Key           *string        `json:"key"`
	KeyEncoding   string         `json:"key_encoding"`
	Value         *string        `json:"value"`
	ValueEncoding string         `json:"value_encoding"`
	Headers       []RecordHeader `json:"headers"`
}

// Produced is the answer of POST /api/v1/topics/T/records.
type Produced struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	Offset    int64  `json:"offset"`
	Timestamp int64  `json:"timestamp"`
}

// produceRecord serves POST /api/v1/topics/T/records: WRITE on the topic, as a
// Produce. Without a partition the record is partitioned as a Kafka producer
// would (by its key's murmur2 hash, or any partition without a key).
func (s *source) produceRecord(ctx context.Context, r *http.Request) (any, error) {
	topic := r.PathValue("name")
	var req ProduceRequest
	if err := decodeBody(r, &req); err != nil {
		return nil, err
	}
	partition := int32(0)
	if req.Partition != nil {
		partition = *req.Partition
	}
	if _, err := s.topicPartition(ctx, metadata.ACLOpWrite, topic, partition); err != nil {
		return nil, err
	}
	rec := &kgo.Record{Topic: topic, Partition: partition}
	var err error
	if rec.Key, err = decodeBytes("key", req.Key, req.KeyEncoding); err != nil {
		return nil, err
	}
	if rec.Value, err = decodeBytes("value", req.Value, req.ValueEncoding); err != nil {
		return nil, err
	}
	for i, h := range req.Headers {
		if h.Key == "" {
			return nil, fmt.Errorf("%w: header %d has no key", ErrBadRequest, i)
		}
		v, err := decodeBytes(fmt.Sprintf("header %q's value", h.Key), h.Value, h.ValueEncoding)
		if err != nil {
			return nil, err
		}
		rec.Headers = append(rec.Headers, kgo.RecordHeader{Key: h.Key, Value: v})
	}
	partitioner := kgo.StickyKeyPartitioner(nil)
	if req.Partition != nil {
		partitioner = kgo.ManualPartitioner()
	}
	return s.withClient(func(cl *kgo.Client) (any, error) {
		got, err := cl.ProduceSync(ctx, rec).First()
		if err != nil {
			return nil, fmt.Errorf("producing to topic %s: %w", topic, err)
		}
		return &Produced{Topic: topic, Partition: got.Partition, Offset: got.Offset, Timestamp: got.Timestamp.UnixMilli()}, nil
	}, kgo.RecordPartitioner(partitioner), kgo.DefaultProduceTopic(topic), kgo.RecordDeliveryTimeout(writeTimeout-time.Second), kgo.ProducerLinger(0))
}
