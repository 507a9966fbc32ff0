package auth

// What an ACL may be (CreateAcls' validation) and which ACLs a filter selects
// (DescribeAcls, DeleteAcls), as Kafka's AclControlManager, AclBindingFilter and
// AclEntry.supportedOperations define them. The errors wrap ErrInvalidACL; the caller
// answers INVALID_REQUEST with the error's text.

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/runnel-io/runnel/internal/metadata"
)

// ErrInvalidACL is wrapped by every refusal of an ACL or a filter.
var ErrInvalidACL = errors.New("invalid ACL")

// supportedOperations are the operations an ACL may name per resource type (plus
// ALL): Kafka's AclEntry.supportedOperations. Any other is a mistake, not a rule that
// could ever match a request.
var supportedOperations = map[metadata.ACLResourceType][]metadata.ACLOperation{
	metadata.ACLResourceTopic: {metadata.ACLOpRead, metadata.ACLOpWrite, metadata.ACLOpCreate, metadata.ACLOpDescribe,
		metadata.ACLOpDelete, metadata.ACLOpAlter, metadata.ACLOpDescribeConfigs, metadata.ACLOpAlterConfigs},
	metadata.ACLResourceGroup: {metadata.ACLOpRead, metadata.ACLOpDescribe, metadata.ACLOpDelete},
	metadata.ACLResourceCluster: {metadata.ACLOpCreate, metadata.ACLOpClusterAction, metadata.ACLOpDescribeConfigs,
		metadata.ACLOpAlterConfigs, metadata.ACLOpIdempotentWrite, metadata.ACLOpAlter, metadata.ACLOpDescribe},
	metadata.ACLResourceTransactionalID: {metadata.ACLOpDescribe, metadata.ACLOpWrite},
	metadata.ACLResourceDelegationToken: {metadata.ACLOpDescribe},
	metadata.ACLResourceUser:            {metadata.ACLOpCreateTokens, metadata.ACLOpDescribeTokens},
}

// ValidatePrincipal checks that p is a principal, Type:Name with neither empty
// (User:alice, User:CN=alice,O=example, User:*).
func ValidatePrincipal(p string) error {
	typ, name, ok := strings.Cut(p, ":")
	if !ok || typ == "" || name == "" {
		return fmt.Errorf("%w: principal %q is not of the form Type:Name (e.g. User:alice)", ErrInvalidACL, p)
	}
	return nil
}

// ValidateACL checks an ACL to create: a concrete resource type, LITERAL or PREFIXED,
// a non-empty name (kafka-cluster for the cluster), a principal, a host, a concrete
// operation the resource type supports, ALLOW or DENY. The error names the ACL.
func ValidateACL(a metadata.ACL) error {
	if err := validateACL(a); err != nil {
		return fmt.Errorf("%w (in %s)", err, a)
	}
	return nil
}

func validateACL(a metadata.ACL) error {
	ops, known := supportedOperations[a.ResourceType]
	switch {
	case !known:
		return fmt.Errorf("%w: resource type %s cannot be given an ACL", ErrInvalidACL, a.ResourceType)
	case a.PatternType != metadata.ACLPatternLiteral && a.PatternType != metadata.ACLPatternPrefixed:
		return fmt.Errorf("%w: pattern type %s (an ACL is LITERAL or PREFIXED)", ErrInvalidACL, a.PatternType)
	case a.ResourceName == "":
		return fmt.Errorf("%w: empty resource name", ErrInvalidACL)
	case a.ResourceType == metadata.ACLResourceCluster && a.ResourceName != metadata.ClusterResourceName:
		return fmt.Errorf("%w: the only valid name for the CLUSTER resource is %s", ErrInvalidACL, metadata.ClusterResourceName)
	case a.Host == "":
		return fmt.Errorf("%w: empty host (use * for any host)", ErrInvalidACL)
	case a.Permission != metadata.ACLPermissionAllow && a.Permission != metadata.ACLPermissionDeny:
		return fmt.Errorf("%w: permission %s (an ACL is ALLOW or DENY)", ErrInvalidACL, a.Permission)
	case a.Operation != metadata.ACLOpAll && !slices.Contains(ops, a.Operation):
		return fmt.Errorf("%w: resource type %s supports operations ALL, %s, not %s", ErrInvalidACL, a.ResourceType, opNames(ops), a.Operation)
	}
	return ValidatePrincipal(a.Principal)
}

func opNames(ops []metadata.ACLOperation) string {
	s := make([]string, len(ops))
	for i, o := range ops {
		s[i] = o.String()
	}
	return strings.Join(s, ", ")
}

// Filter selects ACLs (Kafka's AclBindingFilter): each field ANY or nil matches
// everything. PatternType MATCH selects the ACLs that apply to the resource named
// ResourceName (its LITERAL ACLs, the LITERAL * ones and the PREFIXED ones that are a
// prefix of it); ANY selects those of any pattern type with exactly that name.
type Filter struct {
	ResourceType metadata.ACLResourceType
	ResourceName *string
	PatternType  metadata.ACLPatternType
	Principal    *string
	Host         *string
	Operation    metadata.ACLOperation
	Permission   metadata.ACLPermission
}

// String names the filter in errors and logs.
func (f Filter) String() string {
	opt := func(p *string) string {
		if p == nil {
			return "<any>"
		}
		return *p
	}
	return fmt.Sprintf("(principal=%s, host=%s, operation=%s, permission=%s) on %s:%s:%s",
		opt(f.Principal), opt(f.Host), f.Operation, f.Permission, f.ResourceType, f.PatternType, opt(f.ResourceName))
}

// ValidateFilter refuses a filter with an UNKNOWN field (a code this node does not
// know), as Kafka does: it could match nothing or, worse, be read as ANY.
func ValidateFilter(f Filter) error {
	bad := func(what string, v fmt.Stringer) error {
		return fmt.Errorf("%w: filter %s: unknown %s %s", ErrInvalidACL, f, what, v)
	}
	switch {
	case f.ResourceType <= metadata.ACLResourceUnknown || f.ResourceType > metadata.ACLResourceUser:
		return bad("resource type", f.ResourceType)
	case f.PatternType <= metadata.ACLPatternUnknown || f.PatternType > metadata.ACLPatternPrefixed:
		return bad("pattern type", f.PatternType)
	case f.Operation <= metadata.ACLOpUnknown || f.Operation > metadata.ACLOpDescribeTokens:
		return bad("operation", f.Operation)
	case f.Permission <= metadata.ACLPermissionUnknown || f.Permission > metadata.ACLPermissionAllow:
		return bad("permission", f.Permission)
	}
	return nil
}

// Matches reports whether f selects a.
func (f Filter) Matches(a metadata.ACL) bool {
	return f.patternMatches(a) &&
		(f.Principal == nil || *f.Principal == a.Principal) &&
		(f.Host == nil || *f.Host == a.Host) &&
		(f.Operation == metadata.ACLOpAny || f.Operation == a.Operation) &&
		(f.Permission == metadata.ACLPermissionAny || f.Permission == a.Permission)
}

func (f Filter) patternMatches(a metadata.ACL) bool {
	if f.ResourceType != metadata.ACLResourceAny && f.ResourceType != a.ResourceType {
		return false
	}
	if f.PatternType != metadata.ACLPatternAny && f.PatternType != metadata.ACLPatternMatch && f.PatternType != a.PatternType {
		return false
	}
	if f.ResourceName == nil {
		return true
	}
	name := *f.ResourceName
	if f.PatternType != metadata.ACLPatternMatch {
		return name == a.ResourceName
	}
	switch a.PatternType {
	case metadata.ACLPatternLiteral:
		return name == a.ResourceName || a.ResourceName == metadata.ACLWildcard
	case metadata.ACLPatternPrefixed:
		return strings.HasPrefix(name, a.ResourceName)
	}
	return false
}

// Select returns the entries f matches, in the entries' order.
func Select(entries []metadata.ACL, f Filter) []metadata.ACL {
	var out []metadata.ACL
	for _, a := range entries {
		if f.Matches(a) {
			out = append(out, a)
		}
	}
	return out
}
