package auth

// The ACL decision, as Kafka's StandardAuthorizer makes it (StandardAuthorizerData):
//
//  1. A super user is allowed everything.
//  2. The ACLs that apply to the resource are those of its type whose pattern matches
//     its name: LITERAL with the same name, LITERAL *, or PREFIXED with a prefix of it.
//  3. Of those, the ones for the principal (or User:*) and host (or *) decide: a DENY
//     for the operation (or ALL) denies, whatever else allows; else an ALLOW for the
//     operation, for ALL, or for an operation that implies it allows.
//  4. If none applies to the resource at all (whoever it names), the operation is
//     allowed only with allow.everyone.if.no.acl.found; if some apply but none
//     allows, it is denied.
//
// Implied operations hold for ALLOW only: READ, WRITE, DELETE and ALTER imply DESCRIBE,
// ALTER_CONFIGS implies DESCRIBE_CONFIGS. A DENY of READ does not deny DESCRIBE.
//
// The decision is pure: no clock, no I/O, no state beyond its arguments, so it is
// tested as a table (authorizer_test.go).

import (
	"fmt"
	"strings"

	"github.com/runnel-io/runnel/internal/metadata"
)

// Resource is what a request acts on: a topic, group, transactional id or the cluster.
type Resource struct {
	Type metadata.ACLResourceType
	Name string
}

// The resources requests name.
func Topic(name string) Resource { return Resource{metadata.ACLResourceTopic, name} }
func Group(name string) Resource { return Resource{metadata.ACLResourceGroup, name} }
func TransactionalID(id string) Resource {
	return Resource{metadata.ACLResourceTransactionalID, id}
}

// Cluster is the cluster resource (Kafka's kafka-cluster).
var Cluster = Resource{metadata.ACLResourceCluster, metadata.ClusterResourceName}

// String reads like Kafka's authorizer log: Topic:orders.
func (r Resource) String() string { return resourceLabel(r.Type) + ":" + r.Name }

func resourceLabel(t metadata.ACLResourceType) string {
	switch t {
	case metadata.ACLResourceTopic:
		return "Topic"
	case metadata.ACLResourceGroup:
		return "Group"
	case metadata.ACLResourceCluster:
		return "Cluster"
	case metadata.ACLResourceTransactionalID:
		return "TransactionalId"
	}
	return t.String()
}

// Authorizer holds the settings of the decision: super.users and
// allow.everyone.if.no.acl.found. The ACLs come with each call (the image's), so one
// Authorizer serves every image. Read-only after NewAuthorizer: safe for concurrent use.
type Authorizer struct {
	superUsers  map[string]bool
	allowIfNone bool
}

// NewAuthorizer parses superUsers (super.users: principals separated by ';').
func NewAuthorizer(superUsers string, allowIfNone bool) (*Authorizer, error) {
	sup, err := ParseSuperUsers(superUsers)
	if err != nil {
		return nil, err
	}
	return &Authorizer{superUsers: sup, allowIfNone: allowIfNone}, nil
}

// ParseSuperUsers reads super.users: "User:a;User:b", spaces around each ignored, empty
// entries skipped. Each must be a principal (Type:Name); the error names the bad one.
func ParseSuperUsers(s string) (map[string]bool, error) {
	sup := map[string]bool{}
	for _, p := range strings.Split(s, ";") {
		p = strings.TrimSpace(p)
		if p == "" {
			continue
		}
		if err := ValidatePrincipal(p); err != nil {
			return nil, fmt.Errorf("super.users: %w", err)
		}
		sup[p] = true
	}
	return sup, nil
}

// IsSuperUser reports whether principal is one of super.users.
func (a *Authorizer) IsSuperUser(principal string) bool { return a.superUsers[principal] }

// Authorize decides whether principal, connected from host, may do op on res under
// acls (the image's; nil: none).
func (a *Authorizer) Authorize(acls *metadata.ACLs, principal, host string, op metadata.ACLOperation, res Resource) bool {
	if a.superUsers[principal] {
		return true
	}
	return Decide(acls.All(), principal, host, op, res, a.allowIfNone)
}

// Decide is steps 2 to 4 of the decision (no super users) over entries.
func Decide(entries []metadata.ACL, principal, host string, op metadata.ACLOperation, res Resource, allowIfNone bool) bool {
	anyForResource, allowed := false, false
	for i := range entries {
		acl := &entries[i]
		if !patternMatches(acl, res) {
			continue
		}
		anyForResource = true
		if !entryMatches(acl, principal, host) {
			continue
		}
		switch acl.Permission {
		case metadata.ACLPermissionDeny:
			if acl.Operation == op || acl.Operation == metadata.ACLOpAll {
				return false
			}
		case metadata.ACLPermissionAllow:
			if implies(acl.Operation, op) {
				allowed = true
			}
		}
	}
	if !anyForResource {
		return allowIfNone
	}
	return allowed
}

// patternMatches reports whether acl's resource pattern covers res.
func patternMatches(acl *metadata.ACL, res Resource) bool {
	if acl.ResourceType != res.Type {
		return false
	}
	switch acl.PatternType {
	case metadata.ACLPatternLiteral:
		return acl.ResourceName == res.Name || acl.ResourceName == metadata.ACLWildcard
	case metadata.ACLPatternPrefixed:
		return strings.HasPrefix(res.Name, acl.ResourceName)
	}
	return false
}

// entryMatches reports whether acl names principal (or every user) and host (or any).
func entryMatches(acl *metadata.ACL, principal, host string) bool {
	return (acl.Principal == principal || acl.Principal == metadata.ACLWildcardPrincipal && strings.HasPrefix(principal, "User:")) &&
		(acl.Host == host || acl.Host == metadata.ACLWildcard)
}

// implies reports whether an ALLOW of granted allows op.
func implies(granted, op metadata.ACLOperation) bool {
	if granted == op || granted == metadata.ACLOpAll {
		return true
	}
	switch op {
	case metadata.ACLOpDescribe:
		switch granted {
		case metadata.ACLOpRead, metadata.ACLOpWrite, metadata.ACLOpDelete, metadata.ACLOpAlter:
			return true
		}
	case metadata.ACLOpDescribeConfigs:
		return granted == metadata.ACLOpAlterConfigs
	}
	return false
}

// AuthorizeAny decides whether principal may do op on at least one resource of type
// rt (Kafka's Authorizer.authorizeByResourceType, which InitProducerId uses for an
// idempotent producer's WRITE on some topic, KIP-679). As Kafka's: a super user may;
// so may a principal allowed op on a resource of that type named "hardcode" (Kafka's
// own probe, through which allow.everyone.if.no.acl.found applies when no ACL covers
// that name); else some ALLOW for the operation (or one implying it) must not be
// shadowed by a DENY of the same principal and host whose pattern covers it: a LITERAL
// * DENY covers all, a LITERAL DENY its own name, a PREFIXED DENY every name and
// prefix that starts with it.
func (a *Authorizer) AuthorizeAny(acls *metadata.ACLs, principal, host string, op metadata.ACLOperation, rt metadata.ACLResourceType) bool {
	if a.superUsers[principal] {
		return true
	}
	if Decide(acls.All(), principal, host, op, Resource{rt, anyResourceProbe}, a.allowIfNone) {
		return true
	}
	entries := acls.All()
	var denies []*metadata.ACL
	for i := range entries {
		acl := &entries[i]
		if acl.ResourceType != rt {
			continue
		}
		if acl.Permission == metadata.ACLPermissionDeny && entryMatches(acl, principal, host) &&
			(acl.Operation == op || acl.Operation == metadata.ACLOpAll) {
			denies = append(denies, acl)
		}
	}
	for i := range entries {
		acl := &entries[i]
		if acl.ResourceType != rt || acl.Permission != metadata.ACLPermissionAllow ||
			!entryMatches(acl, principal, host) || !implies(acl.Operation, op) {
			continue
		}
		if !shadowed(acl, denies) {
			return true
		}
	}
	return false
}

// anyResourceProbe is the resource name Kafka's authorizeByResourceType first
// authorizes (AuthorizerUtils: "hardcode").
const anyResourceProbe = "hardcode"

// shadowed reports whether one of denies covers every name allow matches.
func shadowed(allow *metadata.ACL, denies []*metadata.ACL) bool {
	for _, d := range denies {
		switch d.PatternType {
		case metadata.ACLPatternLiteral:
			if d.ResourceName == metadata.ACLWildcard ||
				allow.PatternType == metadata.ACLPatternLiteral && d.ResourceName == allow.ResourceName {
				return true
			}
		case metadata.ACLPatternPrefixed:
			if strings.HasPrefix(allow.ResourceName, d.ResourceName) {
				return true
			}
		}
	}
	return false
}
