package cli

import (
	"context"
	"slices"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/runnel-io/runnel/internal/kafka"
)

// isRunnel reports whether every node that answers ApiVersions is a Runnel node (it
// lists the runnel.version supported feature), so that a command may use Runnel's
// tagged fields (which another Kafka implementation would ignore) instead of the
// steps Kafka's tools take. A cluster that does not answer counts as not Runnel: the
// Kafka way then runs, and fails where the cluster is unreachable anyway.
func isRunnel(ctx context.Context, adm *kadm.Client) bool {
	vs, err := adm.ApiVersions(ctx)
	if err != nil || len(vs) == 0 {
		return false
	}
	answered := 0
	for _, v := range vs {
		if v.Err != nil || v.Raw() == nil {
			continue
		}
		answered++
		if !slices.ContainsFunc(v.Raw().SupportedFeatures, func(f kmsg.ApiVersionsResponseSupportedFeature) bool {
			return f.Name == kafka.RunnelFeature && f.MaxVersion >= 1
		}) {
			return false
		}
	}
	return answered > 0
}
