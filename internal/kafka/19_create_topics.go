package kafka

// CreateTopics: v2-7.
//
// Each topic is validated and created on its own (one topic's error does not fail the
// others): name rules, partitions and replication factor (-1 = broker defaults, v4+),
// manual assignments, and configs (unknown or malformed keys are INVALID_CONFIG naming
// the key). ValidateOnly checks without creating. v5+ returns the topic's partitions,
// replication factor and configs; v7+ its topic id. The call returns once this node has
// applied the new metadata, so the topic is immediately produceable on a single node.
// With ACLs on, the configs and layout are returned only to a principal with
// DESCRIBE_CONFIGS on the topic (ConfigErrorCode TOPIC_AUTHORIZATION_FAILED otherwise).

import (
	"context"

	"github.com/runnel-io/runnel/internal/auth"
	"github.com/runnel-io/runnel/internal/metadata"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() { regKey(19, 2, 7, handleCreateTopics) }

func handleCreateTopics(ctx context.Context, s *Server, r *request) (kmsg.Response, error) {
	req := r.kreq.(*kmsg.CreateTopicsRequest)
	resp := req.ResponseKind().(*kmsg.CreateTopicsResponse)
	specs := make([]metadata.TopicSpec, len(req.Topics))
	for i, rt := range req.Topics {
		spec := metadata.TopicSpec{Name: rt.Topic, NumPartitions: rt.NumPartitions, ReplicationFactor: rt.ReplicationFactor, Configs: map[string]string{}}
		if len(rt.ReplicaAssignment) > 0 {
			spec.Assignments = map[int32][]metadata.NodeID{}
			for _, a := range rt.ReplicaAssignment {
				ids := make([]metadata.NodeID, len(a.Replicas))
				for j, id := range a.Replicas {
					ids[j] = metadata.NodeID(id)
				}
				spec.Assignments[a.Partition] = ids
			}
		}
		for _, c := range rt.Configs {
			if c.Value != nil {
				spec.Configs[c.Name] = *c.Value
			}
		}
		specs[i] = spec
	}
	ctx, cancel := withRequestTimeout(ctx, req.TimeoutMillis)
	defer cancel()
	errs := s.createAuthorizedTopics(ctx, r, specs, req.ValidateOnly)
	im := s.leadership.Image()
	for i, rt := range req.Topics {
		st := kmsg.NewCreateTopicsResponseTopic()
		st.Topic = rt.Topic
		st.ErrorCode, st.ErrorMessage = errorCode(errs[i]), reasonMessage(errs[i])
		st.NumPartitions, st.ReplicationFactor = -1, -1
		switch t := im.Topics[rt.Topic]; {
		case errs[i] != nil:
		case req.ValidateOnly:
			// Nothing was created: answer with what would have been (KIP-525).
			st.NumPartitions, st.ReplicationFactor = s.wouldCreate(specs[i])
			st.Configs = s.createdConfigs(specs[i].Configs)
		case t != nil:
			st.TopicID = t.ID
			st.NumPartitions = int32(len(t.Partitions))
			if len(t.Partitions) > 0 {
				st.ReplicationFactor = int16(len(t.Partitions[0].Replicas))
			}
			st.Configs = s.createdConfigs(t.Configs)
		}
		if errs[i] == nil && !s.allowedQuiet(r, metadata.ACLOpDescribeConfigs, auth.Topic(rt.Topic)) {
			// As Kafka: a principal that may create a topic but not describe its
			// configs gets neither them nor the layout, and ConfigErrorCode says why.
			st.Configs, st.NumPartitions, st.ReplicationFactor = nil, -1, -1
			st.ConfigErrorCode = kerr.TopicAuthorizationFailed.Code
		}
		resp.Topics = append(resp.Topics, st)
	}
	return resp, nil
}

// wouldCreate gives the partitions and replication factor spec asks for, the broker
// defaults standing in for -1.
// createAuthorizedTopics creates the topics r's principal may create (CREATE on the
// cluster, or on the topic, as Kafka) and refuses the others with
// TOPIC_AUTHORIZATION_FAILED; one error per spec, in order.
func (s *Server) createAuthorizedTopics(ctx context.Context, r *request, specs []metadata.TopicSpec, validateOnly bool) []error {
	if s.authz == nil || s.allowedQuiet(r, metadata.ACLOpCreate, auth.Cluster) {
		return s.admin.CreateTopics(ctx, specs, validateOnly)
	}
	errs := make([]error, len(specs))
	var allowed []metadata.TopicSpec
	var at []int
	for i, spec := range specs {
		if errs[i] = s.authorize(r, metadata.ACLOpCreate, auth.Topic(spec.Name)); errs[i] == nil {
			allowed, at = append(allowed, spec), append(at, i)
		}
	}
	if len(allowed) > 0 {
		for j, err := range s.admin.CreateTopics(ctx, allowed, validateOnly) {
			errs[at[j]] = err
		}
	}
	return errs
}

func (s *Server) wouldCreate(spec metadata.TopicSpec) (int32, int16) {
	if len(spec.Assignments) > 0 {
		for _, replicas := range spec.Assignments {
			return int32(len(spec.Assignments)), int16(len(replicas))
		}
	}
	partitions, rf := spec.NumPartitions, spec.ReplicationFactor
	if partitions <= 0 {
		partitions = s.cfg.Broker.NumPartitions
	}
	if rf <= 0 {
		rf = s.cfg.Broker.DefaultReplicationFactor
	}
	return partitions, rf
}

// createdConfigs lists a topic's effective configs given its overrides.
func (s *Server) createdConfigs(overrides map[string]string) []kmsg.CreateTopicsResponseTopicConfig {
	var out []kmsg.CreateTopicsResponseTopicConfig
	for _, e := range s.cfg.Broker.DescribeTopic(overrides) {
		c := kmsg.NewCreateTopicsResponseTopicConfig()
		v := e.Value
		c.Name, c.Value, c.ReadOnly, c.Source, c.IsSensitive = e.Name, &v, e.ReadOnly, int8(e.Source), e.Sensitive
		out = append(out, c)
	}
	return out
}
