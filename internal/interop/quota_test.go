package interop_test

// Client quotas with real clients over real sockets: franz-go sees throttle_time_ms
// and is held to its rate, librdkafka (kcat) is held to it by the muted connection,
// a consumer is held to consumer_byte_rate and a throttled fetch is answered empty,
// precedence end to end, and kadm's and sarama's admin calls.
//
// The nodes run with the defaults: a quota is a token bucket holding one second of its
// rate (quota.window.size.seconds), so a client may burst one second's worth before it
// is throttled, and over T seconds it moves at most bound*(T+1) plus one request (the
// one that crosses the bound is answered before the throttle). TestQuotaReport, behind
// RUNNEL_REPORT=1, measures the rate over 20 s and a minute.

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/runnel-io/runnel/internal/testutil"
)

// throttles is a kgo hook that remembers the throttle times the brokers reported.
type throttles struct {
	n   atomic.Int64
	max atomic.Int64 // ms
	by  sync.Map     // node id -> true
}

func (h *throttles) OnBrokerThrottle(meta kgo.BrokerMetadata, d time.Duration, _ bool) {
	if d <= 0 {
		return
	}
	h.n.Add(1)
	h.by.Store(meta.NodeID, true)
	for {
		cur := h.max.Load()
		if d.Milliseconds() <= cur || h.max.CompareAndSwap(cur, d.Milliseconds()) {
			return
		}
	}
}

// setQuota sets (or, with value 0, removes) key on the entity given as type, name
// pairs (a nil name is the default), and fails the test unless the node accepted it.
func setQuota(t *testing.T, adm *kadm.Client, key string, value float64, entity ...kadm.ClientQuotaEntityComponent) {
	t.Helper()
	op := kadm.AlterClientQuotaOp{Key: key, Value: value, Remove: value == 0}
	res, err := adm.AlterClientQuotas(ctxT(t), []kadm.AlterClientQuotaEntry{{Entity: entity, Ops: []kadm.AlterClientQuotaOp{op}}})
	testutil.NoError(t, err, "AlterClientQuotas")
	for _, r := range res {
		testutil.NoError(t, r.Err, "AlterClientQuotas %v: %s", r.Entity, r.ErrMessage)
	}
}

func clientIDEntity(name string) kadm.ClientQuotaEntityComponent {
	return kadm.ClientQuotaEntityComponent{Type: "client-id", Name: &name}
}

func userEntity(name string) kadm.ClientQuotaEntityComponent {
	return kadm.ClientQuotaEntityComponent{Type: "user", Name: &name}
}

// noise returns n random bytes: quotas count the bytes on the wire, and franz-go
// compresses (snappy) by default, so the tests send what does not compress.
func noise(n int) []byte {
	b := make([]byte, n)
	rand.Read(b)
	return b
}

// produceFor produces 4 KiB records as fast as cl takes them for d and returns the
// record bytes acknowledged within d.
func produceFor(t *testing.T, cl *kgo.Client, topic string, d time.Duration) int64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	// Records differ from each other, or snappy would compress a batch of them.
	pool := noise(4 << 20)
	var acked atomic.Int64
	for off := 0; ctx.Err() == nil; off = (off + 4093) % (len(pool) - 4<<10) {
		cl.Produce(ctx, &kgo.Record{Topic: topic, Value: pool[off : off+4<<10]}, func(r *kgo.Record, err error) {
			if err == nil && ctx.Err() == nil {
				acked.Add(int64(len(r.Value)))
			}
		})
	}
	return acked.Load()
}

// TestQuotaProduceFranz: a franz-go producer with default settings limited to
// producer_byte_rate moves about that rate and is told throttle_time_ms; an unlimited
// producer beside it is not slowed.
func TestQuotaProduceFranz(t *testing.T) {
	t.Parallel()
	n := startNode(t)
	addr := bootstrap(n)
	adm := newAdmin(t, addr)
	topic := topicName(t)
	createTopic(t, adm, topic, 1)
	const rate, secs = 1 << 20, 5
	setQuota(t, adm, "producer_byte_rate", rate, clientIDEntity("limited"))

	h := &throttles{}
	limited := newClient(t, addr, kgo.ClientID("limited"), kgo.WithHooks(h))
	moved := produceFor(t, limited, topic, secs*time.Second)
	// Before the first throttle a client sends the bucket's one second's worth; plus
	// the one batch (franz-go's 1 MiB at most) that crosses the bound, answered
	// before its throttle.
	most := int64(rate*(secs+1) + 1<<20)
	t.Logf("limited to %d B/s: %d B acknowledged in %d s (%.0f B/s), %d throttles, longest %d ms",
		rate, moved, secs, float64(moved)/secs, h.n.Load(), h.max.Load())
	testutil.True(t, moved <= most, "moved %d B in %d s at %d B/s, more than %d", moved, secs, rate, most)
	testutil.True(t, moved >= rate*secs/2, "moved %d B in %d s at %d B/s: throttled far below the rate", moved, secs, rate)
	testutil.True(t, h.n.Load() > 0, "franz-go saw no throttle_time_ms")

	free := newClient(t, addr, kgo.ClientID("unlimited"))
	fast := produceFor(t, free, topic, time.Second)
	t.Logf("unlimited beside it: %d B in 1 s", fast)
	testutil.True(t, fast > 4*rate, "an unlimited client moved only %d B in 1 s", fast)
}

// TestQuotaProduceKcat: librdkafka ignores throttle_time_ms, but the muted connection
// holds its producer and its consumer to their rates all the same.
func TestQuotaProduceKcat(t *testing.T) {
	if _, err := exec.LookPath("kcat"); err != nil {
		testutil.Missing(t, "kcat is not on PATH (scripts/install-deps.sh installs it)")
	}
	t.Parallel()
	n := startNode(t)
	addr := bootstrap(n)
	adm := newAdmin(t, addr)
	topic := topicName(t)
	createTopic(t, adm, topic, 1)
	const rate, size = 1 << 20, 5 << 20
	setQuota(t, adm, "producer_byte_rate", rate, clientIDEntity("kcat-limited"))
	var lines strings.Builder
	for lines.Len() < size {
		lines.WriteString(base64.StdEncoding.EncodeToString(noise(765)) + "\n") // 1 KiB lines
	}
	input := lines.String()
	start := time.Now()
	kcat(t, addr, input, "-P", "-t", topic, "-X", "client.id=kcat-limited")
	took := time.Since(start)
	// At most the bound over T plus 1 s worth (the burst) plus one request
	// (librdkafka's 1 MB batch) go through in T seconds; the bound below allows a
	// third second's worth for a request already read when the throttle began.
	least := time.Duration(float64(len(input)-3*rate) / rate * float64(time.Second))
	total := len(input)
	t.Logf("kcat moved %d B at %d B/s in %v (at least %v expected)", total, rate, took, least)
	testutil.True(t, took >= least, "kcat moved %d B limited to %d B/s in %v, faster than %v", total, rate, took, least)
	start = time.Now()
	got := kcatConsume(t, addr, topic, "beginning")
	testutil.Equal(t, len(got), strings.Count(input, "\n"), "records consumed back")
	unlimited := time.Since(start) // kcat's own start and end take about a second
	t.Logf("kcat consumed them without a quota in %v", unlimited)

	// And a librdkafka consumer held to consumer_byte_rate.
	setQuota(t, adm, "consumer_byte_rate", rate, clientIDEntity("kcat-reader"))
	start = time.Now()
	got = kcatConsume(t, addr, topic, "beginning", "-X", "client.id=kcat-reader")
	took = time.Since(start)
	t.Logf("kcat consumed %d B at %d B/s in %v (at least %v expected)", total, rate, took, unlimited+least)
	testutil.Equal(t, len(got), strings.Count(input, "\n"), "records consumed by the limited reader")
	testutil.True(t, took >= unlimited+least, "kcat consumed %d B limited to %d B/s in %v, faster than %v", total, rate, took, unlimited+least)
}

// TestQuotaConsumeFranz: a consumer limited by consumer_byte_rate is held to it and told
// throttle_time_ms; a throttled fetch is answered empty.
func TestQuotaConsumeFranz(t *testing.T) {
	t.Parallel()
	n := startNode(t)
	addr := bootstrap(n)
	adm := newAdmin(t, addr)
	topic := topicName(t)
	createTopic(t, adm, topic, 1)
	// Batches of 64 KiB, so that the consumer's first fetch (at most the quota's one
	// window, 512 KiB, but always one whole batch) is within its quota.
	loader := newClient(t, addr, kgo.ClientID("loader"), kgo.ProducerBatchMaxBytes(64<<10))
	for produced := int64(0); produced < 6<<20; {
		produced += produceFor(t, loader, topic, 500*time.Millisecond)
	}
	const rate, secs = 512 << 10, 3
	setQuota(t, adm, "consumer_byte_rate", rate, clientIDEntity("reader"))

	topics, err := adm.ListTopics(ctxT(t), topic)
	testutil.NoError(t, err, "ListTopics")
	topicID := topics[topic].ID
	t.Run("EmptyWhenThrottled", func(t *testing.T) {
		cl := newClient(t, addr, kgo.ClientID("reader"))
		fetch := func() *kmsg.FetchResponse {
			req := kmsg.NewPtrFetchRequest()
			req.ReplicaID, req.MaxWaitMillis, req.MaxBytes, req.SessionEpoch = -1, 100, 50<<20, -1
			rt := kmsg.NewFetchRequestTopic()
			rt.Topic, rt.TopicID = topic, topicID
			rp := kmsg.NewFetchRequestTopicPartition()
			rp.PartitionMaxBytes = 50 << 20
			rt.Partitions = append(rt.Partitions, rp)
			req.Topics = append(req.Topics, rt)
			resp, err := req.RequestWith(ctxT(t), cl.Broker(1))
			testutil.NoError(t, err, "fetch")
			return resp
		}
		recordBytes := func(r *kmsg.FetchResponse) int {
			n := 0
			for _, t := range r.Topics {
				for _, p := range t.Partitions {
					n += len(p.RecordBatches)
				}
			}
			return n
		}
		first := fetch()
		// The fetch asks for 50 MiB; the node caps it at what the quota takes in one
		// window (512 KiB) and lets it through.
		testutil.True(t, first.ThrottleMillis == 0 && recordBytes(first) > 0 && recordBytes(first) <= rate+(64<<10),
			"first fetch: throttle %d ms, %d record bytes (want up to %d)", first.ThrottleMillis, recordBytes(first), rate)
		second := fetch()
		testutil.True(t, second.ThrottleMillis > 0, "second fetch within the window: no throttle_time_ms")
		testutil.True(t, len(second.Topics) == 0, "a throttled fetch carried %d topics, %d record bytes", len(second.Topics), recordBytes(second))
	})

	h := &throttles{}
	cl := newClient(t, addr, kgo.ClientID("reader"), kgo.WithHooks(h),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().AtStart()}}))
	ctx, cancel := context.WithTimeout(context.Background(), secs*time.Second)
	defer cancel()
	var got int64
	for ctx.Err() == nil {
		fs := cl.PollFetches(ctx)
		fs.EachRecord(func(r *kgo.Record) { got += int64(len(r.Value)) })
		fs.EachError(func(_ string, _ int32, err error) {
			if !errors.Is(err, context.DeadlineExceeded) {
				t.Errorf("fetch: %v", err)
			}
		})
	}
	most := int64(rate * (secs + 1))
	t.Logf("consumer limited to %d B/s: %d record bytes in %d s, %d throttles, longest %d ms", rate, got, secs, h.n.Load(), h.max.Load())
	testutil.True(t, got <= most, "consumed %d B in %d s at %d B/s, more than %d", got, secs, rate, most)
	testutil.True(t, got >= rate*secs/3, "consumed %d B in %d s at %d B/s: far below the rate", got, secs, rate)
	testutil.True(t, h.n.Load() > 0, "franz-go saw no throttle_time_ms on fetches")
}

// TestQuotaPrecedence: a user quota (ANONYMOUS, the user of every unauthenticated
// client) wins over a client-id quota; once it is removed the client-id one applies.
func TestQuotaPrecedence(t *testing.T) {
	t.Parallel()
	n := startNode(t)
	addr := bootstrap(n)
	adm := newAdmin(t, addr)
	topic := topicName(t)
	createTopic(t, adm, topic, 1)
	setQuota(t, adm, "producer_byte_rate", 100<<20, clientIDEntity("app"))
	setQuota(t, adm, "producer_byte_rate", 10<<10, userEntity("ANONYMOUS"))
	oneBatch := func() int64 {
		h := &throttles{}
		cl := newClient(t, addr, kgo.ClientID("app"), kgo.WithHooks(h))
		r := cl.ProduceSync(ctxT(t), &kgo.Record{Topic: topic, Value: noise(64 << 10)})
		testutil.NoError(t, r.FirstErr(), "produce")
		cl.Close()
		return h.max.Load()
	}
	// 64 KiB against 10 KiB/s over one window: about 5 s of throttle.
	d := oneBatch()
	testutil.True(t, d >= 4000, "user ANONYMOUS at 10 KiB/s over client-id app at 100 MiB/s: throttle %d ms, want about 5400", d)
	// The throttle is counted against the entity whose rate it is: user ANONYMOUS, any
	// client id.
	code, metrics, err := httpGet(n.HTTPAddr().String() + "/metrics")
	testutil.NoError(t, err, "GET /metrics")
	testutil.Equal(t, code, 200, "GET /metrics")
	const series = `runnel_throttle_time_seconds_total{client_id="",quota="produce",user="ANONYMOUS"} `
	i := strings.Index(metrics, series)
	testutil.True(t, i >= 0 && !strings.HasPrefix(metrics[i+len(series):], "0\n"), "no %s> 0 in /metrics", series)
	setQuota(t, adm, "producer_byte_rate", 0, userEntity("ANONYMOUS"))
	testutil.Equal(t, oneBatch(), int64(0), "throttle ms once only the client-id quota is left")
}

// TestQuotaAdminClients: kadm's describe filters, validation and validate-only.
func TestQuotaAdmin(t *testing.T) {
	t.Parallel()
	n := startNode(t)
	addr := bootstrap(n)
	adm := newAdmin(t, addr)
	setQuota(t, adm, "producer_byte_rate", 1000, clientIDEntity("app"))
	setQuota(t, adm, "consumer_byte_rate", 2000, userEntity("alice"), clientIDEntity("app"))
	setQuota(t, adm, "request_percentage", 50, kadm.ClientQuotaEntityComponent{Type: "user"}) // <default>
	describe := func(strict bool, cs ...kadm.DescribeClientQuotaComponent) []string {
		got, err := adm.DescribeClientQuotas(ctxT(t), strict, cs)
		testutil.NoError(t, err, "DescribeClientQuotas")
		var out []string
		for _, q := range got {
			var vals []string
			for _, v := range q.Values {
				vals = append(vals, v.String())
			}
			out = append(out, q.Entity.String()+" "+strings.Join(vals, ","))
		}
		return out
	}
	app := "app"
	exactApp := kadm.DescribeClientQuotaComponent{Type: "client-id", MatchName: &app, MatchType: kmsg.QuotasMatchTypeExact}
	testutil.Equal(t, strings.Join(describe(false, exactApp), "; "),
		"{client-id=app} producer_byte_rate=1000.000000; {user=alice, client-id=app} consumer_byte_rate=2000.000000", "non-strict exact client-id=app")
	testutil.Equal(t, strings.Join(describe(true, exactApp), "; "), "{client-id=app} producer_byte_rate=1000.000000", "strict exact client-id=app")
	testutil.Equal(t, strings.Join(describe(true, kadm.DescribeClientQuotaComponent{Type: "user", MatchType: kmsg.QuotasMatchTypeDefault}), "; "),
		"{user=<default>} request_percentage=50.000000", "default user")
	testutil.Equal(t, len(describe(false)), 3, "everything")

	bad := func(key string, value float64, want string) {
		t.Helper()
		res, err := adm.AlterClientQuotas(ctxT(t), []kadm.AlterClientQuotaEntry{{Entity: kadm.ClientQuotaEntity{clientIDEntity("x")},
			Ops: []kadm.AlterClientQuotaOp{{Key: key, Value: value}}}})
		testutil.NoError(t, err, "AlterClientQuotas")
		testutil.True(t, errors.Is(res[0].Err, kerr.InvalidRequest) && strings.Contains(res[0].ErrMessage, want),
			"%s=%v: %v %q, want INVALID_REQUEST naming %q", key, value, res[0].Err, res[0].ErrMessage, want)
	}
	bad("producer_byte_rat", 10, "producer_byte_rat")
	bad("producer_byte_rate", 1.5, "producer_byte_rate")
	bad("consumer_byte_rate", -1, "consumer_byte_rate")
	res, err := adm.ValidateAlterClientQuotas(ctxT(t), []kadm.AlterClientQuotaEntry{{Entity: kadm.ClientQuotaEntity{clientIDEntity("x")},
		Ops: []kadm.AlterClientQuotaOp{{Key: "producer_byte_rate", Value: 5}}}})
	testutil.NoError(t, err, "validate only")
	testutil.NoError(t, res[0].Err, "validate only: %s", res[0].ErrMessage)
	testutil.Equal(t, len(describe(false)), 3, "entities after a validate-only change")
}

// TestQuotaRequestPercentage: a client over its share of request handling time is
// throttled whatever it asks (Metadata here).
func TestQuotaRequestPercentage(t *testing.T) {
	t.Parallel()
	n := startNode(t)
	addr := bootstrap(n)
	adm := newAdmin(t, addr)
	// 0.01% of a core: 100 µs of handling per second.
	setQuota(t, adm, "request_percentage", 0.01, clientIDEntity("busy"))
	cl := newClient(t, addr, kgo.ClientID("busy"))
	var throttled int32
	for i := 0; i < 200 && throttled == 0; i++ {
		req := kmsg.NewPtrMetadataRequest()
		resp, err := req.RequestWith(ctxT(t), cl.Broker(1))
		testutil.NoError(t, err, "metadata")
		throttled = resp.ThrottleMillis
	}
	testutil.True(t, throttled > 0, "200 Metadata requests at request_percentage=0.01: never throttled")
	t.Logf("throttled %d ms", throttled)
}
