package clustertest_test

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/runnel-io/runnel/internal/clustertest"
)

// TestFailoverReport measures, with the DEFAULT liveness settings (no --set), how long
// a partition refuses acks=all writes after kill -9 of its leader: once for a leader
// that is not the active controller, once for the controller's node. A measurement,
// not a test:
//
//	RUNNEL_REPORT=1 go test -run TestFailoverReport -v ./internal/clustertest/
func TestFailoverReport(t *testing.T) {
	if os.Getenv("RUNNEL_REPORT") != "1" {
		t.Skip("a measurement, not a test: set RUNNEL_REPORT=1")
	}
	for _, killController := range []bool{false, true} {
		c := clustertest.Start(t, clustertest.Options{Nodes: 3, StartTimeout: startTimeout})
		topic := topicName(t)
		createTopic(t, c, topic, 3, 3)
		h := clustertest.NewHistory()
		fo := c.Client(t, clustertest.LoadDefaults()...)
		ctrl := c.WaitController(t, -1, waitTimeout)
		// Pick the partition whose leader is (or is not) the controller's node.
		var part int32 = -1
		var leader int32
		for p := range int32(3) {
			l, _ := c.WaitLeader(t, topic, p, waitTimeout)
			if (l == ctrl) == killController {
				part, leader = p, l
				break
			}
		}
		if part < 0 {
			t.Logf("killController=%v: no partition led by the right node; skipped", killController)
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
		if err := produceSync(ctx, fo, h, topic, part); err != nil {
			t.Fatalf("produce before the kill: %v", err)
		}
		killed := time.Now()
		c.Kill(int(leader))
		err := produceSync(ctx, fo, h, topic, part)
		took := time.Since(killed)
		cancel()
		if err != nil {
			t.Fatalf("no write accepted after killing leader %d: %v", leader, err)
		}
		t.Logf("defaults: kill -9 of leader %d (controller node: %v): partition %d accepts acks=all writes again after %s",
			leader, killController, part, ms(took))
	}
}
