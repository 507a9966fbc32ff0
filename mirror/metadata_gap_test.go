package mirror_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestCreateThenMetadataGap measures, on a single-node Runnel, how long after a
// successful CreateTopics a Metadata request naming the topic still answers
// UNKNOWN_TOPIC_OR_PARTITION (a plain kmsg request each time: no client cache), and
// what kadm.ListTopics (the mirror's topic sync) sees. It reports the gaps; Kafka's
// CreateTopics answers once the controller committed the topic, and a broker may lag
// behind its metadata for a moment, so a gap is not in itself a failure. It fails only
// if the topic never shows up within 10 s.
func TestCreateThenMetadataGap(t *testing.T) {
	t.Parallel()
	addr := startRunnel(t)
	cl := newClient(t, addr)
	adm := kadm.NewClient(cl)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var worstRaw, worstAdm time.Duration
	for i := range 10 {
		topic := fmt.Sprintf("gap-%d", i)
		if i%2 == 1 {
			// As the mirror's topic sync does: ask for the topic before creating it.
			if td, err := adm.ListTopics(ctx, topic); err != nil || td.Has(topic) && td[topic].Err == nil {
				t.Fatalf("%s before creation: %v %+v", topic, err, td)
			}
			_, _ = adm.ListEndOffsets(ctx, topic) // a sharded request: kgo's metadata cache

		}
		req := kmsg.NewPtrCreateTopicsRequest()
		rt := kmsg.NewCreateTopicsRequestTopic()
		rt.Topic, rt.NumPartitions, rt.ReplicationFactor = topic, 2, -1
		req.Topics = append(req.Topics, rt)
		req.TimeoutMillis = 10000
		resp, err := req.RequestWith(ctx, cl)
		if err != nil || kerr.ErrorForCode(resp.Topics[0].ErrorCode) != nil {
			t.Fatalf("create %s: %v %v", topic, err, kerr.ErrorForCode(resp.Topics[0].ErrorCode))
		}
		created := time.Now()
		var rawSeen, admSeen time.Duration
		for rawSeen == 0 || admSeen == 0 {
			if time.Since(created) > 10*time.Second {
				t.Fatalf("%s: not in metadata 10 s after CreateTopics succeeded (raw seen %v, kadm seen %v)", topic, rawSeen, admSeen)
			}
			if rawSeen == 0 {
				mreq := kmsg.NewPtrMetadataRequest()
				mt := kmsg.NewMetadataRequestTopic()
				mt.Topic = kmsg.StringPtr(topic)
				mreq.Topics = append(mreq.Topics, mt)
				mresp, err := mreq.RequestWith(ctx, cl)
				if err == nil && len(mresp.Topics) == 1 && mresp.Topics[0].ErrorCode == 0 && len(mresp.Topics[0].Partitions) == 2 {
					rawSeen = time.Since(created)
				}
			}
			if admSeen == 0 {
				td, err := adm.ListTopics(ctx, topic)
				ends, eerr := adm.ListEndOffsets(ctx, topic)
				e, eok := ends.Lookup(topic, 1)
				if d, ok := td[topic]; err == nil && ok && d.Err == nil && len(d.Partitions) == 2 && eerr == nil && eok && e.Err == nil {
					admSeen = time.Since(created)
				}
			}
			time.Sleep(time.Millisecond) // a polling loop measuring a gap: the interval is the resolution
		}
		worstRaw, worstAdm = max(worstRaw, rawSeen), max(worstAdm, admSeen)
		t.Logf("%s (kadm asked before creation: %v): in Metadata by name after %v, in kadm.ListTopics and ListEndOffsets after %v", topic, i%2 == 1, rawSeen.Round(time.Microsecond), admSeen.Round(time.Microsecond))
	}
	t.Logf("worst gap after a successful CreateTopics: Metadata %v, kadm.ListTopics %v", worstRaw, worstAdm)
}
