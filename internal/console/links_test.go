package console

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/runnel-io/runnel/internal/httpd"
	"github.com/runnel-io/runnel/internal/link"
	"github.com/runnel-io/runnel/internal/metadata"
)

// linksOf shows every link of the image, each with the partitions the brokers
// answered sorted and summed, and names what did not answer: a broker that refused
// in the link's error with the partitions it answered for missing, a link no broker
// answered for with its error and no partitions.
func TestLinksOf(t *testing.T) {
	im := metadata.Empty()
	im.Topics["orders"] = &metadata.Topic{Name: "orders", ID: [16]byte{1}}
	im.Topics["audit"] = &metadata.Topic{Name: "audit", ID: [16]byte{2}}
	im.Links = &metadata.Links{
		Links: map[string]*metadata.Link{"dr": {Name: "dr", Source: "src:9092"}, "cold": {Name: "cold", Source: "old:9092", Paused: true}},
		Mirrors: map[string]*metadata.MirrorTopic{"orders": {Topic: "orders", TopicID: [16]byte{1}, Link: "dr"},
			"audit": {Topic: "audit", TopicID: [16]byte{2}, Link: "dr"}},
	}
	v := &view{im: im, hdr: httpd.Header{ServedBy: 1}}
	got := linksOf(context.Background(), v, func(_ context.Context, name string) ([]link.PartitionStatus, []string, error) {
		if name == "cold" {
			return nil, nil, errors.New("node 2: connection refused")
		}
		return []link.PartitionStatus{
			{Topic: "orders", Partition: 1, State: "mirroring", End: 5, SourceEnd: 9, LagRecords: 4, LagSeconds: 2, Leader: 2},
			{Topic: "audit", Partition: 0, State: "failed", End: 1, SourceEnd: -1, Error: "source topic audit was deleted", Leader: 1},
			{Topic: "orders", Partition: 0, State: "mirroring", End: 7, SourceEnd: 10, LagRecords: 3, LagSeconds: 6.5, Leader: 1},
		}, []string{"node 3: i/o timeout"}, nil
	})
	if len(got.Links) != 2 || got.Header.ServedBy != 1 {
		t.Fatalf("links %+v, want cold and dr", got)
	}
	cold, dr := got.Links[0], got.Links[1]
	if cold.Name != "cold" || cold.Source != "old:9092" || cold.State != "paused" || cold.MirrorTopics != 0 || cold.Partitions == nil ||
		len(cold.Partitions) != 0 || !strings.Contains(cold.Error, "cold") || !strings.Contains(cold.Error, "node 2: connection refused") {
		t.Errorf("cold: %+v, want paused, no partitions, the error naming the link and the node", cold)
	}
	if dr.Name != "dr" || dr.Source != "src:9092" || dr.State != "active" || dr.MirrorTopics != 2 || dr.LagRecords != 7 ||
		dr.MaxLagSeconds != 6.5 || !strings.Contains(dr.Error, "node 3: i/o timeout") {
		t.Errorf("dr: %+v, want active, 2 mirror topics, 7 records and 6.5 s behind, node 3 named", dr)
	}
	var order []string
	for _, p := range dr.Partitions {
		order = append(order, fmt.Sprintf("%s-%d", p.Topic, p.Partition))
	}
	if strings.Join(order, " ") != "audit-0 orders-0 orders-1" {
		t.Fatalf("dr's partitions in order %v, want audit-0 orders-0 orders-1", order)
	}
	if p := dr.Partitions[0]; p.State != "failed" || p.SourceEnd != -1 || p.Error != "source topic audit was deleted" || p.Leader != 1 {
		t.Errorf("audit-0: %+v", p)
	}
	if p := dr.Partitions[2]; p.End != 5 || p.SourceEnd != 9 || p.LagRecords != 4 || p.LagSeconds != 2 || p.Leader != 2 {
		t.Errorf("orders-1: %+v", p)
	}
}
