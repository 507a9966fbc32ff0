package kafka

// Metadata: v0-12.
//
// Brokers are the registered, unfenced nodes. Topics are all topics (nil topic list, or
// v0's empty list) or the requested ones; a requested topic that does not exist is
// created when auto.create.topics.enable is on and the request allows it (v4+
// AllowAutoTopicCreation; always for v0-3), and answered LEADER_NOT_AVAILABLE until its
// leaders are elected, as Kafka does. Topic ids (v10+) are returned and may be used to
// ask (v12 lookups by id). Cluster (v8-10) and topic (v8+) authorized operations are
// answered when asked (authorized_ops.go), else -2147483648 ("not requested").
//
// With ACLs on (as Kafka): an all-topics request lists only the topics the principal
// may DESCRIBE; a named topic it may not describe is answered TOPIC_AUTHORIZATION_FAILED,
// whether it exists or not (the answer does not tell which); a missing topic is
// auto-created only with CREATE on the cluster or on the topic, else
// TOPIC_AUTHORIZATION_FAILED.

import (
	"context"
	"errors"
	"net"
	"strconv"

	"github.com/runnel-io/runnel/internal/auth"
	"github.com/runnel-io/runnel/internal/metadata"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() { regKey(3, 0, 12, handleMetadata) }

func handleMetadata(ctx context.Context, s *Server, r *request) (kmsg.Response, error) {
	req := r.kreq.(*kmsg.MetadataRequest)
	im := s.leadership.Image()
	resp := s.metadataFor(ctx, r, req, im)
	// Never name a leader whose process is gone while its partitions are about to get
	// new ones: a client sent there keeps failing until its next refresh.
	if newer := s.leadership.LiveLeaders(ctx, im, leadersOf(resp, s.cfg.NodeID)); newer != im {
		resp = s.metadataFor(ctx, r, req, newer)
	}
	s.setMetadataAuthorizedOperations(r, req, resp)
	return resp, nil
}

func (s *Server) metadataFor(ctx context.Context, r *request, req *kmsg.MetadataRequest, im *metadata.Image) *kmsg.MetadataResponse {
	resp := req.ResponseKind().(*kmsg.MetadataResponse)
	resp.ClusterID = &im.ClusterID
	resp.ControllerID = int32(s.admin.ControllerID())
	for _, id := range im.BrokerIDs() {
		b := im.Brokers[id]
		if b.Fenced {
			continue
		}
		host, port, ok := s.listenerEndpoint(ctx, b)
		if !ok {
			continue // b has no listener of the client's listener's name (listeners.go)
		}
		rb := kmsg.NewMetadataResponseBroker()
		rb.NodeID, rb.Host, rb.Port = int32(b.ID), host, port
		if b.Rack != "" {
			rack := b.Rack
			rb.Rack = &rack
		}
		resp.Brokers = append(resp.Brokers, rb)
	}
	all := req.Topics == nil || (req.Version == 0 && len(req.Topics) == 0)
	if all {
		for _, name := range im.TopicNames() {
			if s.allowedQuiet(r, metadata.ACLOpDescribe, auth.Topic(name)) {
				resp.Topics = append(resp.Topics, topicMetadata(im, im.Topics[name], req.Version))
			}
		}
		return resp
	}
	autoCreate := s.cfg.Broker.AutoCreateTopics && (req.Version < 4 || req.AllowAutoTopicCreation)
	for _, rt := range req.Topics {
		resp.Topics = append(resp.Topics, s.requestedTopic(ctx, r, im, rt, autoCreate, req.Version))
	}
	return resp
}

// leadersOf returns the distinct leaders named in resp other than self.
func leadersOf(resp *kmsg.MetadataResponse, self metadata.NodeID) []metadata.NodeID {
	var out []metadata.NodeID
	seen := map[int32]bool{int32(self): true, -1: true}
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			if !seen[p.Leader] {
				seen[p.Leader] = true
				out = append(out, metadata.NodeID(p.Leader))
			}
		}
	}
	return out
}

func (s *Server) requestedTopic(ctx context.Context, r *request, im *metadata.Image, rt kmsg.MetadataRequestTopic, autoCreate bool, version int16) kmsg.MetadataResponseTopic {
	var t *metadata.Topic
	if rt.Topic != nil {
		t = im.Topics[*rt.Topic]
	} else {
		t = im.TopicByID(rt.TopicID)
	}
	mt := kmsg.NewMetadataResponseTopic()
	mt.Topic, mt.TopicID = rt.Topic, rt.TopicID
	if t != nil {
		if !s.allowed(r, metadata.ACLOpDescribe, auth.Topic(t.Name)) {
			mt.ErrorCode = kerr.TopicAuthorizationFailed.Code
			return mt
		}
		return topicMetadata(im, t, version)
	}
	mt.ErrorCode = kerr.UnknownTopicOrPartition.Code
	if rt.Topic == nil {
		mt.ErrorCode = kerr.UnknownTopicID.Code
		return mt
	}
	mayCreate := autoCreate && (s.allowedQuiet(r, metadata.ACLOpCreate, auth.Cluster) ||
		s.allowed(r, metadata.ACLOpCreate, auth.Topic(*rt.Topic)))
	if !mayCreate {
		if !s.allowed(r, metadata.ACLOpDescribe, auth.Topic(*rt.Topic)) || autoCreate {
			mt.ErrorCode = kerr.TopicAuthorizationFailed.Code
		}
		return mt
	}
	errs := s.admin.CreateTopics(ctx, []metadata.TopicSpec{{Name: *rt.Topic, NumPartitions: -1, ReplicationFactor: -1}}, false)
	switch err := errs[0]; {
	case err == nil, errors.Is(err, kerr.TopicAlreadyExists):
		if t := s.leadership.Image().Topics[*rt.Topic]; t != nil {
			return topicMetadata(s.leadership.Image(), t, version)
		}
		mt.ErrorCode = kerr.LeaderNotAvailable.Code
	default:
		mt.ErrorCode = errorCode(err)
		if errors.Is(err, kerr.InvalidTopicException) {
			mt.ErrorCode = kerr.InvalidTopicException.Code
		}
	}
	return mt
}

func topicMetadata(im *metadata.Image, t *metadata.Topic, version int16) kmsg.MetadataResponseTopic {
	mt := kmsg.NewMetadataResponseTopic()
	name := t.Name
	mt.Topic, mt.TopicID, mt.IsInternal = &name, t.ID, t.Internal
	for i, p := range t.Partitions {
		mp := kmsg.NewMetadataResponseTopicPartition()
		mp.Partition = int32(i)
		mp.Leader = int32(p.Leader)
		mp.LeaderEpoch = p.LeaderEpoch
		mp.Replicas = nodeIDs(p.Replicas)
		mp.ISR = nodeIDs(p.ISR)
		for _, r := range p.Replicas {
			if b, ok := im.Brokers[r]; !ok || b.Fenced {
				mp.OfflineReplicas = append(mp.OfflineReplicas, int32(r))
			}
		}
		if p.Leader == metadata.NoLeader {
			mp.ErrorCode = kerr.LeaderNotAvailable.Code
		}
		mt.Partitions = append(mt.Partitions, mp)
	}
	return mt
}

func nodeIDs(ids []metadata.NodeID) []int32 {
	out := make([]int32, len(ids))
	for i, id := range ids {
		out[i] = int32(id)
	}
	return out
}

// splitHostPort parses an advertised address for broker registration.
func splitHostPort(addr string) (string, int32, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "", 0, err
	}
	p, err := strconv.Atoi(port)
	if err != nil {
		return "", 0, err
	}
	return host, int32(p), nil
}

var _ = splitHostPort
