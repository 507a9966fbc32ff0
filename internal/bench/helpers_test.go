package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/runnel-io/runnel/client"
	"github.com/runnel-io/runnel/internal/benchfmt"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

var topicSeq atomic.Int64

// testConfig is a run on a new topic of partitions partitions at bootstrap, with
// runnel bench e2e's defaults: one producer, 100-byte records, no linger, acks=all
// and idempotent, a buffer of 100,000 records, --timeout 1m.
func testConfig(t *testing.T, bootstrap string, partitions int32) Config {
	t.Helper()
	base := []kgo.Opt{kgo.SeedBrokers(strings.Split(bootstrap, ",")...)}
	cl, err := kgo.NewClient(base...)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	topic := fmt.Sprintf("bench-test-%d", topicSeq.Add(1))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	resp, err := kadm.NewClient(cl).CreateTopic(ctx, partitions, -1, nil, topic)
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		t.Fatalf("create topic %q: %v", topic, err)
	}
	return Config{Client: base, Topic: topic, Partitions: int(partitions), RecordSize: 100, Producers: 1,
		Producer:      []kgo.Opt{kgo.ProducerLinger(0), kgo.RequiredAcks(kgo.AllISRAcks()), kgo.RecordDeliveryTimeout(time.Minute)},
		Overload:      []client.Option{client.WithMaxBufferedRecords(100000)},
		BufferRecords: 100000, Timeout: time.Minute, Out: io.Discard, Log: io.Discard}
}

// runJSON runs the generator, which must succeed, and decodes its JSON report.
func runJSON(t *testing.T, run func(context.Context, Config) error, cfg Config) benchfmt.Report {
	t.Helper()
	var out bytes.Buffer
	cfg.Out, cfg.JSON = &out, true
	if err := run(context.Background(), cfg); err != nil {
		t.Fatalf("bench run on %q: %v", cfg.Topic, err)
	}
	var rep benchfmt.Report
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
		t.Fatalf("bench report: %v in %q", err, out.String())
	}
	return rep
}
