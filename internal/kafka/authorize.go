package kafka

// Authorization of requests (ACLs, Kafka's per-API rules from KafkaApis and AuthHelper).
//
// With authorizer.class.name unset s.authz is nil and every check is one nil test:
// nothing else changes. With it set, each handler asks s.allowed / s.authorize for
// what its request touches, with the principal "User:" + the connection's user and
// the host the connection's remote IP, against the ACLs of the image this node has
// applied (so a change is enforced here once this node applied it; CreateAcls and
// DeleteAcls answer only once every live node has). The decision itself is
// auth.Authorizer's and is pure.
//
// A denial answers the API's authorization error for the resource's type
// (TOPIC_AUTHORIZATION_FAILED, GROUP_AUTHORIZATION_FAILED,
// TRANSACTIONAL_ID_AUTHORIZATION_FAILED, CLUSTER_AUTHORIZATION_FAILED) with a message
// naming the principal, host, operation and resource, and is logged at Info, at most
// denialLogBurst a second (the rest are counted in the next line logged).
//
// Node-to-node requests (follower fetches, AlterPartition, broker registration and
// heartbeats, transaction markers, producer id blocks, forwarded admin requests) are
// authorized as any other: by their connection's principal, which must be a super
// user (or hold CLUSTER_ACTION and the admin operations). Until the inter-broker
// listener authenticates (SASL/mTLS), nodes connect as User:ANONYMOUS, the same
// principal as every unauthenticated client: docs/security-acls.md says what to grant.

import (
	"fmt"
	"net"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/runnel-io/runnel/internal/auth"
	"github.com/runnel-io/runnel/internal/config"
	"github.com/runnel-io/runnel/internal/metadata"
)

// authorizer is the node's ACL settings and the limiter of its denial logs.
type authorizer struct {
	*auth.Authorizer
	logs denialLog
}

// newAuthorizer is nil when authorizer.class.name is empty (ACLs off). super.users is
// validated at start-up (internal/config, principalList); a value that failed here
// anyway would turn every request down rather than open the cluster.
func newAuthorizer(b *config.Broker) *authorizer {
	if b == nil || b.AuthorizerClassName == "" {
		return nil
	}
	a, err := auth.NewAuthorizer(b.SuperUsers, b.AllowEveryoneIfNoACLFound)
	if err != nil {
		a, _ = auth.NewAuthorizer("", false)
	}
	return &authorizer{Authorizer: a}
}

// principal is the request's principal for ACLs: User:<authenticated user>.
func (r *request) principal() string { return "User:" + r.conn.user }

// host is the client's IP address, as ACL hosts name it.
func (r *request) host() string {
	h, _, err := net.SplitHostPort(r.conn.remote)
	if err != nil {
		return r.conn.remote
	}
	return h
}

// allowed reports whether r's principal may do op on res (true with ACLs off). A
// denial is logged; use allowedQuiet where a denial only filters a listing.
func (s *Server) allowed(r *request, op metadata.ACLOperation, res auth.Resource) bool {
	if s.authz == nil {
		return true
	}
	if s.authz.Authorize(s.leadership.Image().ACLs, r.principal(), r.host(), op, res) {
		return true
	}
	s.logDenial(r, op, res.String())
	return false
}

// allowedQuiet is allowed without the log: Kafka logs the topics an all-topics
// Metadata request leaves out at debug level only.
func (s *Server) allowedQuiet(r *request, op metadata.ACLOperation, res auth.Resource) bool {
	return s.authz == nil || s.authz.Authorize(s.leadership.Image().ACLs, r.principal(), r.host(), op, res)
}

// allowedAny reports whether r's principal may do op on some resource of type rt
// (auth.Authorizer.AuthorizeAny).
func (s *Server) allowedAny(r *request, op metadata.ACLOperation, rt metadata.ACLResourceType) bool {
	if s.authz == nil {
		return true
	}
	if s.authz.AuthorizeAny(s.leadership.Image().ACLs, r.principal(), r.host(), op, rt) {
		return true
	}
	s.logDenial(r, op, "any "+rt.String())
	return false
}

// topicCheck returns the check of op on the topics one request names, each decided
// once however many of its partitions the request names; nil with ACLs off, so that
// a handler skips the lookups altogether. The check is for one goroutine.
func (s *Server) topicCheck(r *request, op metadata.ACLOperation) func(topic string) error {
	if s.authz == nil {
		return nil
	}
	decided := map[string]error{}
	return func(topic string) error {
		err, ok := decided[topic]
		if !ok {
			err = s.authorize(r, op, auth.Topic(topic))
			decided[topic] = err
		}
		return err
	}
}

// configDenial is the check of a config resource (DescribeConfigs, AlterConfigs,
// IncrementalAlterConfigs): op on the topic for a topic, on the group for a group, on
// the cluster for a broker or the broker default, as Kafka; other resource types are
// left to the handler.
func (s *Server) configDenial(r *request, op metadata.ACLOperation, rtype kmsg.ConfigResourceType, name string) error {
	switch rtype {
	case resourceTopic:
		return s.authorize(r, op, auth.Topic(name))
	case resourceGroup:
		return s.authorize(r, op, auth.Group(name))
	case resourceBroker, resourceBrokerLogger:
		return s.authorize(r, op, auth.Cluster)
	}
	return nil
}

// authorize is nil when allowed, else the authorization error for res's type.
func (s *Server) authorize(r *request, op metadata.ACLOperation, res auth.Resource) error {
	if s.allowed(r, op, res) {
		return nil
	}
	return denied(r, op, res)
}

// denied is the error of a denial: the resource type's code and a message naming
// the principal, operation and resource.
func denied(r *request, op metadata.ACLOperation, res auth.Resource) error {
	return fmt.Errorf("%w: %s (host %s) is not authorized to %s %s", authzCode(res.Type), r.principal(), r.host(), op, res)
}

// authzCode is the authorization error of a resource type.
func authzCode(t metadata.ACLResourceType) *kerr.Error {
	switch t {
	case metadata.ACLResourceTopic:
		return kerr.TopicAuthorizationFailed
	case metadata.ACLResourceGroup:
		return kerr.GroupAuthorizationFailed
	case metadata.ACLResourceTransactionalID:
		return kerr.TransactionalIDAuthorizationFailed
	}
	return kerr.ClusterAuthorizationFailed
}

// denialLogBurst is how many denials are logged per second; more are counted.
const denialLogBurst = 10

// denialLog rate-limits the denial logs: a flood of refused requests (a client
// retrying in a loop) must not flood the log.
type denialLog struct {
	mu         sync.Mutex
	second     time.Time // start of the current one-second window
	logged     int       // denials logged in it
	suppressed int       // denials not logged since the last one that was
}

func (s *Server) logDenial(r *request, op metadata.ACLOperation, res string) {
	l := &s.authz.logs
	now := time.Now()
	l.mu.Lock()
	if now.Sub(l.second) >= time.Second {
		l.second, l.logged = now, 0
	}
	if l.logged >= denialLogBurst {
		l.suppressed++
		l.mu.Unlock()
		return
	}
	l.logged++
	suppressed := l.suppressed
	l.suppressed = 0
	l.mu.Unlock()
	s.logger.Info("authorization denied", "principal", r.principal(), "host", r.host(), "operation", op.String(),
		"resource", res, "api", apiName(r.key), "client_id", r.clientID, "denials_not_logged", suppressed)
}
