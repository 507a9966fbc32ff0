package server_test

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/runnel-io/runnel/internal/testutil"
)

// The replication metrics the cluster issue names are exported, with values.
func TestReplicationMetrics(t *testing.T) {
	nodes := startCluster(t, 1)
	n := nodes[0]
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	_, err := adminOf(t, n).CreateTopic(ctx, 2, 1, nil, "metrics")
	testutil.NoError(t, err, "create topic")
	resp, err := http.Get("http://" + n.c.Node(1).HTTPAddr + "/metrics")
	testutil.NoError(t, err, "GET /metrics")
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	for _, want := range []string{
		"runnel_under_replicated_partitions 0",
		"runnel_under_min_isr_partitions 0",
		"runnel_isr_shrinks_total 0",
		"runnel_isr_expands_total 0",
		`runnel_log_end_offset{partition="1",topic="metrics"} 0`,
		"runnel_controller_active 1",
	} {
		if !strings.Contains(string(body), want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
}
