package interop_test

import (
	"strings"
	"testing"

	"github.com/IBM/sarama"

	"github.com/runnel-io/runnel/internal/testutil"
)

// TestQuotaSarama: sarama's ClusterAdmin sets, lists and removes client quotas
// unchanged, defaults included, and gets the node's message for a bad key.
func TestQuotaSarama(t *testing.T) {
	t.Parallel()
	n := startNode(t)
	a := newClusterAdmin(t, bootstrap(n))
	user := []sarama.QuotaEntityComponent{{EntityType: sarama.QuotaEntityUser, MatchType: sarama.QuotaMatchExact, Name: "alice"},
		{EntityType: sarama.QuotaEntityClientID, MatchType: sarama.QuotaMatchDefault}}
	testutil.NoError(t, a.AlterClientQuotas(user, sarama.ClientQuotasOp{Key: "producer_byte_rate", Value: 1 << 20}, false), "set")
	testutil.NoError(t, a.AlterClientQuotas(user, sarama.ClientQuotasOp{Key: "request_percentage", Value: 25}, false), "set")
	got, err := a.DescribeClientQuotas([]sarama.QuotaFilterComponent{
		{EntityType: sarama.QuotaEntityUser, MatchType: sarama.QuotaMatchExact, Match: "alice"}}, false)
	testutil.NoError(t, err, "DescribeClientQuotas")
	testutil.Equal(t, len(got), 1, "entities of user alice")
	testutil.Equal(t, got[0].Values, map[string]float64{"producer_byte_rate": 1 << 20, "request_percentage": 25}, "values")
	testutil.Equal(t, len(got[0].Entity), 2, "components")
	testutil.Equal(t, got[0].Entity[1].MatchType, sarama.QuotaMatchDefault, "client-id component is the default")
	// Strict with only the user named: the entity also has a client id, so none.
	got, err = a.DescribeClientQuotas([]sarama.QuotaFilterComponent{
		{EntityType: sarama.QuotaEntityUser, MatchType: sarama.QuotaMatchAny}}, true)
	testutil.NoError(t, err, "DescribeClientQuotas strict")
	testutil.Equal(t, len(got), 0, "strict user-only entities")

	err = a.AlterClientQuotas(user, sarama.ClientQuotasOp{Key: "consumer_bytes_rate", Value: 5}, false)
	testutil.True(t, err != nil && strings.Contains(err.Error(), "consumer_bytes_rate"), "unknown key: %v", err)
	testutil.NoError(t, a.AlterClientQuotas(user, sarama.ClientQuotasOp{Key: "producer_byte_rate", Remove: true}, false), "remove")
	got, err = a.DescribeClientQuotas(nil, false)
	testutil.NoError(t, err, "DescribeClientQuotas all")
	testutil.True(t, len(got) == 1 && len(got[0].Values) == 1, "after the removal: %+v", got)
}
