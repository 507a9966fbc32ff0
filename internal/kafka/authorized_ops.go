package kafka

// Authorized operations (KIP-430).
//
// Metadata (v8+ IncludeTopicAuthorizedOperations, v8-10
// IncludeClusterAuthorizedOperations), DescribeCluster
// (IncludeClusterAuthorizedOperations) and DescribeGroups (v3+
// IncludeAuthorizedOperations) answer, when asked, the ACL operations the principal
// may perform on the resource as a bit field: bit n set for the operation of code n
// (READ is 3, so READ alone is 1<<3). As Kafka (AuthHelper.authorizedOperations), the
// operations considered are those of the resource type (AclEntry.supportedOperations)
// and each is decided by the authorizer as a request would be, implied operations
// included (READ implies DESCRIBE); with ACLs off every one of them is allowed. Not
// asked, the field keeps Kafka's "not requested", math.MinInt32.

import (
	"github.com/runnel-io/runnel/internal/auth"
	"github.com/runnel-io/runnel/internal/metadata"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// supportedOperations is Kafka 4's AclEntry.supportedOperations: the operations an ACL
// on a resource of each type can grant.
var supportedOperations = map[metadata.ACLResourceType][]metadata.ACLOperation{
	metadata.ACLResourceTopic: {metadata.ACLOpRead, metadata.ACLOpWrite, metadata.ACLOpCreate, metadata.ACLOpDescribe,
		metadata.ACLOpDelete, metadata.ACLOpAlter, metadata.ACLOpDescribeConfigs, metadata.ACLOpAlterConfigs},
	// DESCRIBE_CONFIGS and ALTER_CONFIGS: group configs (KIP-848, Kafka 4.0).
	metadata.ACLResourceGroup: {metadata.ACLOpRead, metadata.ACLOpDescribe, metadata.ACLOpDelete,
		metadata.ACLOpDescribeConfigs, metadata.ACLOpAlterConfigs},
	metadata.ACLResourceCluster: {metadata.ACLOpCreate, metadata.ACLOpClusterAction, metadata.ACLOpDescribeConfigs,
		metadata.ACLOpAlterConfigs, metadata.ACLOpIdempotentWrite, metadata.ACLOpAlter, metadata.ACLOpDescribe},
	metadata.ACLResourceTransactionalID: {metadata.ACLOpDescribe, metadata.ACLOpWrite},
	metadata.ACLResourceDelegationToken: {metadata.ACLOpDescribe},
	metadata.ACLResourceUser:            {metadata.ACLOpCreateTokens, metadata.ACLOpDescribeTokens},
}

// authorizedOperations is the bit field of the operations of res's type that r's
// principal may perform on res. Nothing is logged: the answer is a listing, not a
// refusal.
func (s *Server) authorizedOperations(r *request, res auth.Resource) int32 {
	var bits int32
	for _, op := range supportedOperations[res.Type] {
		if s.allowedQuiet(r, op, res) {
			bits |= 1 << op
		}
	}
	return bits
}

// clusterAuthorizedOperations is the cluster's field as Kafka answers it in Metadata
// and DescribeCluster: 0 unless the principal may DESCRIBE the cluster.
func (s *Server) clusterAuthorizedOperations(r *request) int32 {
	if !s.allowed(r, metadata.ACLOpDescribe, auth.Cluster) {
		return 0
	}
	return s.authorizedOperations(r, auth.Cluster)
}

// setMetadataAuthorizedOperations fills a Metadata response's authorized operations
// when the request asks (v8+): the cluster's (v8-10 only; later versions dropped the
// field in favour of DescribeCluster) and each topic's, except for the topics it
// answers TOPIC_AUTHORIZATION_FAILED or does not name (an unknown topic id), as Kafka.
func (s *Server) setMetadataAuthorizedOperations(r *request, req *kmsg.MetadataRequest, resp *kmsg.MetadataResponse) {
	if req.Version < 8 {
		return
	}
	if req.Version <= 10 && req.IncludeClusterAuthorizedOperations {
		resp.AuthorizedOperations = s.clusterAuthorizedOperations(r)
	}
	if !req.IncludeTopicAuthorizedOperations {
		return
	}
	for i := range resp.Topics {
		t := &resp.Topics[i]
		if t.Topic == nil || t.ErrorCode == kerr.TopicAuthorizationFailed.Code {
			continue
		}
		t.AuthorizedOperations = s.authorizedOperations(r, auth.Topic(*t.Topic))
	}
}
