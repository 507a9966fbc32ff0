package kafka

import (
	"context"
	"fmt"

	"github.com/runnel-io/runnel/internal/config"
	"github.com/twmb/franz-go/pkg/kerr"
)

// alterBrokerConfigs is AlterConfigs and IncrementalAlterConfigs of a broker resource:
// the names set must be ones Kafka takes there (config.CheckDynamicBrokerNames; Kafka
// refuses the others with INVALID_REQUEST and its own text, in ConfigAdminManager),
// then alterBrokerResource stores them. Each one stored that Runnel does not act on
// at run time is logged at Warn: DescribeConfigs reports it, nothing uses it.
func (s *Server) alterBrokerConfigs(ctx context.Context, name string, set map[string]*string, validateOnly bool) error {
	_, isDefault, err := brokerResourceNode(name)
	if err != nil {
		return err
	}
	var names []string
	for k, v := range set {
		if v != nil { // a deletion is always taken, as Kafka
			names = append(names, k)
		}
	}
	if err := config.CheckDynamicBrokerNames(names, !isDefault); err != nil {
		return fmt.Errorf("%w: %s", kerr.InvalidRequest, err.Error())
	}
	err = s.alterBrokerResource(ctx, name, set, validateOnly)
	if err == nil && !validateOnly {
		resource := name
		if isDefault {
			resource = "(default)"
		}
		for _, n := range names {
			if !config.DynamicBrokerConfigUsed(n, !isDefault) {
				s.logger.Warn("dynamic broker config stored but not used by Runnel: DescribeConfigs reports it, nothing acts on it",
					"config", n, "broker_resource", resource)
			}
		}
	}
	return err
}
