package kafka

// Group config resources (type 32, Kafka 4's GROUP): DescribeConfigs answers every
// group config (config/group.go) with the group's own value (GROUP_CONFIG) or the
// broker's default (DEFAULT_CONFIG), for any group id, existing or not, as Kafka;
// AlterConfigs and IncrementalAlterConfigs store them (a GROUP resource needs
// DESCRIBE_CONFIGS, resp. ALTER_CONFIGS, on the group: GROUP_AUTHORIZATION_FAILED
// otherwise). A change is checked, as Kafka's GroupConfig.validate, on the group's
// whole resulting set: unknown names, types, the broker's bounds and each session
// timeout above its heartbeat interval are INVALID_CONFIG with Kafka's message.
// consumer.session.timeout.ms and consumer.heartbeat.interval.ms govern KIP-848
// consumer groups (68_consumer_group_heartbeat.go); the share.* configs are stored and
// described, and act on nothing yet.

import (
	"context"
	"fmt"

	"github.com/runnel-io/runnel/internal/config"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

const resourceGroup = 32

// describeGroupConfigs is DescribeConfigs of the group resource named group.
func (s *Server) describeGroupConfigs(group string) ([]config.Entry, error) {
	if group == "" {
		return nil, fmt.Errorf("%w: Group name must not be empty", kerr.InvalidRequest)
	}
	return config.DescribeGroup(config.GroupOwnConfigs(s.leadership.Image().Configs, group)), nil
}

// alterGroupResource applies set to the group resource named group (replaceAll: the
// legacy AlterConfigs, whose set replaces the group's).
func (s *Server) alterGroupResource(ctx context.Context, group string, set map[string]*string, replaceAll, validateOnly bool) error {
	if group == "" {
		return fmt.Errorf("%w: Group name must not be empty", kerr.InvalidRequest)
	}
	// Checked here too for Kafka's answer (the controller checks again against its own
	// image, which a concurrent change may have moved on).
	current := config.GroupOwnConfigs(s.leadership.Image().Configs, group)
	if err := config.ValidateGroupConfigs(config.MergeConfigs(current, set, replaceAll)); err != nil {
		return fmt.Errorf("%w: %s", kerr.InvalidConfig, err.Error())
	}
	return s.admin.AlterGroupConfigs(ctx, group, set, replaceAll, validateOnly)
}

// groupIncrementalSet is incrementalSet for a group resource: no group config is a
// list, so APPEND and SUBTRACT are refused as Kafka's controller refuses them.
func groupIncrementalSet(ops []kmsg.IncrementalAlterConfigsRequestResourceConfig, current map[string]string) (map[string]*string, error) {
	for _, op := range ops {
		switch op.Op {
		case 2:
			return nil, fmt.Errorf("%w: Can't APPEND to key %s because its type is not LIST.", kerr.InvalidConfig, op.Name)
		case 3:
			return nil, fmt.Errorf("%w: Can't SUBTRACT to key %s because its type is not LIST.", kerr.InvalidConfig, op.Name)
		}
	}
	return incrementalSet(ops, current, nil)
}
