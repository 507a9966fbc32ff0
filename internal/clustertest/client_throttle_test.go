package clustertest_test

import (
	"context"
	"testing"
	"time"

	"github.com/runnel-io/runnel/internal/clustertest"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestClientPoliciesThrottled slows a real node down instead of stopping it: a client
// quota (producer_byte_rate, AlterClientQuotas through kadm) of 128 KiB/s on the
// client id of a client.Producer offering 8 times as much (1,000 records of 1 KiB per
// second, buffer 100 records), under each OnFull policy at once, each on a topic and a
// client id of its own. While throttled: Block loses nothing and its send rate
// (Produce calls returning) falls to the quota; Block with a timeout (50 ms) refuses
// only after the timeout, each refusal counted; Drop counts every drop; Error fails at
// once. Once the quota is removed each gets its offered rate back. Afterwards every Produce call
// is accounted for in Stats and every acknowledged record is in the log once, at its
// offset, in order.
//
// The node measures rates over 2 windows of 1 s (the default is 11), so that the burst
// a client gets before its first throttle is about a second's worth; the rates are
// measured from 2 s after the quota applies.
func TestClientPoliciesThrottled(t *testing.T) {
	skipIfShort(t)
	const (
		quotaRate  = 128 << 10
		valueSize  = 1 << 10
		offered    = 1000 // records per second
		buffer     = 100
		throttled  = 6 * time.Second
		recovering = 4 * time.Second
	)
	c := clustertest.Start(t, clustertest.Options{Nodes: 1, StartTimeout: startTimeout,
		Sets: []string{"quota.window.num=2", "quota.window.size.seconds=1"}})
	adm := c.Admin(t)
	// Room comes back in bursts, as throttled responses arrive (a few hundred ms
	// apart); a 50 ms enqueue timeout is shorter than most gaps.
	specs := policySpecs(50 * time.Millisecond)
	runs := make([]*policyRun, len(specs))
	ids := make([]string, len(specs))
	for i, s := range specs {
		ids[i] = "throttled-" + s.name
		setProduceQuota(t, adm, ids[i], quotaRate)
	}
	for i, s := range specs {
		topic := topicName(t) + "-" + s.name
		createTopic(t, c, topic, 3, 1)
		runs[i] = startPolicyRun(t, topic, []int32{0, 1, 2}, s, buffer, offered, valueSize,
			append(c.ClientDefaults(), kgo.ClientID(ids[i]))...)
	}
	start := time.Now()
	time.Sleep(throttled)
	for i := range specs {
		setProduceQuota(t, adm, ids[i], 0)
	}
	lifted := time.Now()
	time.Sleep(recovering)
	end := time.Now()
	for _, r := range runs {
		name := r.spec.name
		// From 2 s in: the first second's burst and the first throttle are behind.
		_, bps := r.rateIn(start.Add(2*time.Second), lifted)
		sent := r.acceptRate(start.Add(2*time.Second), lifted)
		// From 1.5 s after the quota went: the connection may stay muted for the last
		// throttle time, up to about a window.
		after, _ := r.rateIn(lifted.Add(1500*time.Millisecond), end)
		st := r.prod.Stats()
		t.Logf("%s: throttled to %.0f KiB/s (quota %d KiB/s), Produce returning nil %.0f times/s; after the quota went %.0f records/s (offered %d); %d turned away, blocked %v",
			name, bps/1024, quotaRate>>10, sent, after, offered, r.notAccepted(), st.Blocked.Round(time.Millisecond))
		if bps < quotaRate/2 || bps > quotaRate*3/2 {
			t.Errorf("%s: %.0f KiB/s acknowledged under a quota of %d KiB/s", name, bps/1024, quotaRate>>10)
		}
		if want := float64(quotaRate) / valueSize; sent > 1.5*want {
			t.Errorf("%s: Produce returned nil %.0f times/s under a quota of %.0f records/s: the send rate did not fall to the quota", name, sent, want)
		}
		if after < 0.7*offered {
			t.Errorf("%s: %.0f records/s acknowledged after the quota was removed, %d offered", name, after, offered)
		}
		if r.spec.timeout >= 0 && r.notAccepted() == 0 {
			t.Errorf("%s: no record was turned away while throttled", name)
		}
	}
	for _, r := range runs {
		st := r.finish(t)
		t.Logf("%s: %+v", r.spec.name, st)
		checkOrder(t, r.spec.name, r.h)
		if res := r.h.Check(t, c, r.topic); res.Problems > 0 {
			t.Errorf("%s: %d problems in the logs of %s", r.spec.name, res.Problems, r.topic)
		}
	}
}

// setProduceQuota sets (rate > 0) or removes (0) producer_byte_rate on a client id.
func setProduceQuota(t *testing.T, adm *kadm.Client, clientID string, rate float64) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	entry := kadm.AlterClientQuotaEntry{
		Entity: kadm.ClientQuotaEntity{{Type: "client-id", Name: &clientID}},
		Ops:    []kadm.AlterClientQuotaOp{{Key: "producer_byte_rate", Value: rate, Remove: rate == 0}},
	}
	res, err := adm.AlterClientQuotas(ctx, []kadm.AlterClientQuotaEntry{entry})
	if err == nil && len(res) == 1 && res[0].Err != nil {
		err = res[0].Err
	}
	if err != nil {
		t.Fatalf("AlterClientQuotas client-id=%s producer_byte_rate=%v: %v", clientID, rate, err)
	}
}
