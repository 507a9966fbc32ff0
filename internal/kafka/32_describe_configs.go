package kafka

// DescribeConfigs: v1-4.
//
// Topic resources (type 2) list every topic config with its effective value and
// source (topic override, broker default, Kafka default); broker resources (type 4)
// list the broker's configs: with this node's id every broker property with its
// effective value (this broker's own dynamic value, else the cluster-wide dynamic
// default, else static, else default) and source, with an empty name (Kafka's default
// broker resource) only the dynamic defaults set. Group resources (type 32) list
// Kafka 4's group configs (group_configs.go). ConfigNames filters; IncludeSynonyms (v1+) adds the
// chain of defaults; IncludeDocumentation (v3+) the docs. An unknown topic is
// UNKNOWN_TOPIC_OR_PARTITION, another node's broker resource INVALID_REQUEST.

import (
	"context"
	"fmt"
	"strconv"

	"github.com/runnel-io/runnel/internal/config"
	"github.com/runnel-io/runnel/internal/metadata"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() { regKey(32, 1, 4, handleDescribeConfigs) }

const (
	resourceTopic        = 2
	resourceBroker       = 4
	resourceBrokerLogger = 8
)

func handleDescribeConfigs(_ context.Context, s *Server, r *request) (kmsg.Response, error) {
	req := r.kreq.(*kmsg.DescribeConfigsRequest)
	resp := req.ResponseKind().(*kmsg.DescribeConfigsResponse)
	im := s.leadership.Image()
	for _, rr := range req.Resources {
		res := kmsg.NewDescribeConfigsResponseResource()
		res.ResourceType, res.ResourceName = rr.ResourceType, rr.ResourceName
		var entries []config.Entry
		if err := s.configDenial(r, metadata.ACLOpDescribeConfigs, rr.ResourceType, rr.ResourceName); err != nil {
			res.ErrorCode, res.ErrorMessage = errorCode(err), reasonMessage(err)
			resp.Resources = append(resp.Resources, res)
			continue
		}
		switch rr.ResourceType {
		case resourceTopic:
			t := im.Topics[rr.ResourceName]
			if t == nil {
				res.ErrorCode = kerr.UnknownTopicOrPartition.Code
				break
			}
			entries = s.cfg.Broker.DescribeTopic(t.Configs)
		case resourceBroker:
			switch rr.ResourceName {
			case "":
				// Kafka's default broker resource: the dynamic defaults that are set.
				entries = config.DescribeBrokerDefaults(config.BrokerDefaultConfigs(im.Configs))
			case strconv.Itoa(int(s.cfg.NodeID)):
				entries = s.cfg.Broker.DescribeBrokerScoped(im.Configs, config.BrokerOwnConfigs(im.Configs, int32(s.cfg.NodeID)))
			default:
				// Another broker's static configuration is known only there.
				res.ErrorCode = kerr.InvalidRequest.Code
				msg := fmt.Sprintf("broker resource %q: describe it on that broker (this is node %d)", rr.ResourceName, s.cfg.NodeID)
				res.ErrorMessage = &msg
			}
		case resourceGroup:
			var err error
			if entries, err = s.describeGroupConfigs(rr.ResourceName); err != nil {
				res.ErrorCode, res.ErrorMessage = errorCode(err), reasonMessage(err)
			}
		default:
			res.ErrorCode = kerr.InvalidRequest.Code
		}
		res.Configs = describedConfigs(entries, rr.ConfigNames, req.IncludeSynonyms, req.IncludeDocumentation)
		resp.Resources = append(resp.Resources, res)
	}
	return resp, nil
}

func describedConfigs(entries []config.Entry, names []string, synonyms, docs bool) []kmsg.DescribeConfigsResponseResourceConfig {
	want := map[string]bool{}
	for _, n := range names {
		want[n] = true
	}
	var out []kmsg.DescribeConfigsResponseResourceConfig
	for _, e := range entries {
		if len(want) > 0 && !want[e.Name] {
			continue
		}
		c := kmsg.NewDescribeConfigsResponseResourceConfig()
		c.Name, c.ReadOnly, c.IsSensitive = e.Name, e.ReadOnly, e.Sensitive
		if !e.Null && !e.Sensitive {
			v := e.Value
			c.Value = &v
		}
		c.Source = kmsg.ConfigSource(e.Source)
		c.IsDefault = e.Source == config.SourceDefault
		if t, err := kmsg.ParseConfigType(e.Type); err == nil {
			c.ConfigType = t
		}
		if docs && e.Doc != "" {
			d := e.Doc
			c.Documentation = &d
		}
		if synonyms {
			for _, syn := range e.Synonyms {
				sc := kmsg.NewDescribeConfigsResponseResourceConfigConfigSynonym()
				sv := syn.Value
				sc.Name, sc.Value, sc.Source = syn.Name, &sv, kmsg.ConfigSource(syn.Source)
				c.ConfigSynonyms = append(c.ConfigSynonyms, sc)
			}
		}
		out = append(out, c)
	}
	return out
}
