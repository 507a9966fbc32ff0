package kafka

// AlterConfigs: v0-2 (legacy, non-incremental).
//
// For a topic, the given set REPLACES all of the topic's overrides (configs not named
// return to their defaults), as Kafka's legacy AlterConfigs does. For a broker
// resource the named configs are set, the others kept (not replaced): with an empty
// name in the cluster-wide dynamic defaults, with a broker id in that broker's own
// dynamic configs (DYNAMIC_BROKER_CONFIG, which win over the defaults there).
// Unknown or malformed configs are INVALID_CONFIG naming the key. A broker resource
// takes what Kafka takes (config/kafka_dynamic.go; Kafka's refusals are
// INVALID_REQUEST with Kafka's text). For a group resource the set replaces the
// group's configs (group_configs.go).

import (
	"context"

	"github.com/runnel-io/runnel/internal/metadata"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() { regKey(33, 0, 2, handleAlterConfigs) }

func handleAlterConfigs(ctx context.Context, s *Server, r *request) (kmsg.Response, error) {
	req := r.kreq.(*kmsg.AlterConfigsRequest)
	resp := req.ResponseKind().(*kmsg.AlterConfigsResponse)
	for _, rr := range req.Resources {
		set := map[string]*string{}
		for _, c := range rr.Configs {
			set[c.Name] = c.Value
		}
		err := s.configDenial(r, metadata.ACLOpAlterConfigs, rr.ResourceType, rr.ResourceName)
		switch {
		case err != nil:
		case rr.ResourceType == resourceTopic:
			if err = s.mirrorConfigDenial(rr.ResourceName, set, true); err == nil { // links.go
				err = s.admin.AlterTopicConfigs(ctx, rr.ResourceName, set, true, req.ValidateOnly)
			}
		case rr.ResourceType == resourceBroker:
			err = s.alterBrokerConfigs(ctx, rr.ResourceName, set, req.ValidateOnly)
		case rr.ResourceType == resourceGroup:
			err = s.alterGroupResource(ctx, rr.ResourceName, set, true, req.ValidateOnly)
		default:
			err = kerr.InvalidRequest
		}
		res := kmsg.NewAlterConfigsResponseResource()
		res.ResourceType, res.ResourceName = rr.ResourceType, rr.ResourceName
		res.ErrorCode, res.ErrorMessage = errorCode(err), reasonMessage(err)
		resp.Resources = append(resp.Resources, res)
	}
	return resp, nil
}
