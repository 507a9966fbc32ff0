package kafka

// IncrementalAlterConfigs: v0-1.
//
// Operations per config: SET (0), DELETE (1, back to the default), APPEND (2) and
// SUBTRACT (3) for list configs such as cleanup.policy. Only the named configs change.
// Topic and broker resources: a broker resource with an empty name is the cluster-wide
// default (DYNAMIC_DEFAULT_BROKER_CONFIG), one named by a broker id that broker's own
// (DYNAMIC_BROKER_CONFIG), taking what Kafka takes there (config/kafka_dynamic.go);
// group resources (type 32) a group's configs (group_configs.go). ValidateOnly checks
// only.

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/runnel-io/runnel/internal/config"
	"github.com/runnel-io/runnel/internal/metadata"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() { regKey(44, 0, 1, handleIncrementalAlterConfigs) }

func handleIncrementalAlterConfigs(ctx context.Context, s *Server, r *request) (kmsg.Response, error) {
	req := r.kreq.(*kmsg.IncrementalAlterConfigsRequest)
	resp := req.ResponseKind().(*kmsg.IncrementalAlterConfigsResponse)
	im := s.leadership.Image()
	for _, rr := range req.Resources {
		var current map[string]string
		if rr.ResourceType == resourceTopic {
			if t := im.Topics[rr.ResourceName]; t != nil {
				current = t.Configs
			}
		} else if rr.ResourceType == resourceGroup {
			current = config.GroupOwnConfigs(im.Configs, rr.ResourceName)
		} else if node, isDefault, err := brokerResourceNode(rr.ResourceName); err == nil && !isDefault {
			current = config.BrokerOwnConfigs(im.Configs, int32(node))
		} else {
			current = im.Configs
		}
		err := s.configDenial(r, metadata.ACLOpAlterConfigs, rr.ResourceType, rr.ResourceName)
		var set map[string]*string
		switch {
		case err != nil:
		case rr.ResourceType == resourceGroup:
			set, err = groupIncrementalSet(rr.Configs, current)
		default:
			set, err = incrementalSet(rr.Configs, current, s.cfg.Broker.TopicDefaults())
		}
		if err == nil {
			switch rr.ResourceType {
			case resourceTopic:
				if err = s.mirrorConfigDenial(rr.ResourceName, set, false); err == nil { // links.go
					err = s.admin.AlterTopicConfigs(ctx, rr.ResourceName, set, false, req.ValidateOnly)
				}
			case resourceBroker:
				err = s.alterBrokerConfigs(ctx, rr.ResourceName, set, req.ValidateOnly)
			case resourceGroup:
				err = s.alterGroupResource(ctx, rr.ResourceName, set, false, req.ValidateOnly)
			default:
				err = kerr.InvalidRequest
			}
		}
		res := kmsg.NewIncrementalAlterConfigsResponseResource()
		res.ResourceType, res.ResourceName = rr.ResourceType, rr.ResourceName
		res.ErrorCode, res.ErrorMessage = errorCode(err), reasonMessage(err)
		resp.Resources = append(resp.Resources, res)
	}
	return resp, nil
}

// incrementalSet turns the operations into the set of keys to change (nil = delete).
func incrementalSet(ops []kmsg.IncrementalAlterConfigsRequestResourceConfig, current, defaults map[string]string) (map[string]*string, error) {
	set := map[string]*string{}
	for _, op := range ops {
		switch op.Op {
		case 0:
			if op.Value == nil {
				return nil, fmt.Errorf("%w: SET of %q without a value", kerr.InvalidConfig, op.Name)
			}
			set[op.Name] = op.Value
		case 1:
			set[op.Name] = nil
		case 2, 3:
			base, ok := current[op.Name]
			if !ok {
				base = defaults[op.Name]
			}
			v := applyListOp(base, op)
			set[op.Name] = &v
		default:
			return nil, fmt.Errorf("%w: unknown operation %d on %q", kerr.InvalidRequest, op.Op, op.Name)
		}
	}
	return set, nil
}

func applyListOp(base string, op kmsg.IncrementalAlterConfigsRequestResourceConfig) string {
	var items []string
	for _, it := range strings.Split(base, ",") {
		if it = strings.TrimSpace(it); it != "" {
			items = append(items, it)
		}
	}
	if op.Value != nil {
		for _, v := range strings.Split(*op.Value, ",") {
			v = strings.TrimSpace(v)
			if op.Op == 2 && !slices.Contains(items, v) {
				items = append(items, v)
			} else if op.Op == 3 {
				items = slices.DeleteFunc(items, func(x string) bool { return x == v })
			}
		}
	}
	return strings.Join(items, ",")
}

var _ = metadata.Empty
