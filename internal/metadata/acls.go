package metadata

// Access control entries (Kafka's StandardAuthorizer model, KIP-11, KIP-290 prefixes),
// kept in the image as KRaft keeps them (AccessControlEntryRecord). What an entry
// allows is decided in internal/auth; this file only holds them.

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
)

// ACLType adds or removes one access control entry (Kafka's AccessControlEntryRecord
// / RemoveAccessControlEntryRecord): Record.ACL.
const ACLType RecordType = "acl"

// ACLResourceType is what an entry protects, by Kafka's wire codes (kmsg.ACLResourceType).
type ACLResourceType int8

// ACLPatternType is how an entry's resource name is read (KIP-290), by Kafka's codes.
// Entries are LITERAL or PREFIXED; ANY and MATCH only appear in filters.
type ACLPatternType int8

// ACLOperation is what an entry allows or denies, by Kafka's codes.
type ACLOperation int8

// ACLPermission is ALLOW or DENY, by Kafka's codes.
type ACLPermission int8

// Kafka's codes. Unknown (0) is what a newer client may send: never stored.
const (
	ACLResourceUnknown         ACLResourceType = 0
	ACLResourceAny             ACLResourceType = 1
	ACLResourceTopic           ACLResourceType = 2
	ACLResourceGroup           ACLResourceType = 3
	ACLResourceCluster         ACLResourceType = 4
	ACLResourceTransactionalID ACLResourceType = 5
	ACLResourceDelegationToken ACLResourceType = 6
	ACLResourceUser            ACLResourceType = 7

	ACLPatternUnknown  ACLPatternType = 0
	ACLPatternAny      ACLPatternType = 1
	ACLPatternMatch    ACLPatternType = 2
	ACLPatternLiteral  ACLPatternType = 3
	ACLPatternPrefixed ACLPatternType = 4

	ACLOpUnknown         ACLOperation = 0
	ACLOpAny             ACLOperation = 1
	ACLOpAll             ACLOperation = 2
	ACLOpRead            ACLOperation = 3
	ACLOpWrite           ACLOperation = 4
	ACLOpCreate          ACLOperation = 5
	ACLOpDelete          ACLOperation = 6
	ACLOpAlter           ACLOperation = 7
	ACLOpDescribe        ACLOperation = 8
	ACLOpClusterAction   ACLOperation = 9
	ACLOpDescribeConfigs ACLOperation = 10
	ACLOpAlterConfigs    ACLOperation = 11
	ACLOpIdempotentWrite ACLOperation = 12
	ACLOpCreateTokens    ACLOperation = 13
	ACLOpDescribeTokens  ACLOperation = 14

	ACLPermissionUnknown ACLPermission = 0
	ACLPermissionAny     ACLPermission = 1
	ACLPermissionDeny    ACLPermission = 2
	ACLPermissionAllow   ACLPermission = 3
)

// ClusterResourceName is the only name of the cluster resource (Kafka's kafka-cluster).
const ClusterResourceName = "kafka-cluster"

// ACLWildcard is the resource name, principal name and host that match every one.
const ACLWildcard = "*"

// ACLWildcardPrincipal matches every user.
const ACLWildcardPrincipal = "User:*"

// Kafka's names, indexed by code: what kafka-acls.sh prints and what the JSON of an
// image holds, so that a snapshot reads like the ACLs a user created.
var (
	aclResourceNames   = []string{"UNKNOWN", "ANY", "TOPIC", "GROUP", "CLUSTER", "TRANSACTIONAL_ID", "DELEGATION_TOKEN", "USER"}
	aclPatternNames    = []string{"UNKNOWN", "ANY", "MATCH", "LITERAL", "PREFIXED"}
	aclOperationNames  = []string{"UNKNOWN", "ANY", "ALL", "READ", "WRITE", "CREATE", "DELETE", "ALTER", "DESCRIBE", "CLUSTER_ACTION", "DESCRIBE_CONFIGS", "ALTER_CONFIGS", "IDEMPOTENT_WRITE", "CREATE_TOKENS", "DESCRIBE_TOKENS"}
	aclPermissionNames = []string{"UNKNOWN", "ANY", "DENY", "ALLOW"}
)

func enumName(names []string, v int8) string {
	if v >= 0 && int(v) < len(names) {
		return names[v]
	}
	return fmt.Sprintf("UNKNOWN(%d)", v)
}

// parseEnum reads a name (any case, '-' for '_'), or a code in the names' range.
func parseEnum(names []string, kind, s string) (int8, error) {
	u := strings.ReplaceAll(strings.ToUpper(strings.TrimSpace(s)), "-", "_")
	for i, n := range names {
		if n == u {
			return int8(i), nil
		}
	}
	return 0, fmt.Errorf("unknown ACL %s %q (want one of %s)", kind, s, strings.Join(names[1:], ", "))
}

func (t ACLResourceType) String() string { return enumName(aclResourceNames, int8(t)) }
func (t ACLPatternType) String() string  { return enumName(aclPatternNames, int8(t)) }
func (o ACLOperation) String() string    { return enumName(aclOperationNames, int8(o)) }
func (p ACLPermission) String() string   { return enumName(aclPermissionNames, int8(p)) }

// ParseACLResourceType, ParseACLPatternType, ParseACLOperation and ParseACLPermission
// read Kafka's names (READ, describe-configs, PREFIXED, ...).
func ParseACLResourceType(s string) (ACLResourceType, error) {
	v, err := parseEnum(aclResourceNames, "resource type", s)
	return ACLResourceType(v), err
}

func ParseACLPatternType(s string) (ACLPatternType, error) {
	v, err := parseEnum(aclPatternNames, "pattern type", s)
	return ACLPatternType(v), err
}

func ParseACLOperation(s string) (ACLOperation, error) {
	v, err := parseEnum(aclOperationNames, "operation", s)
	return ACLOperation(v), err
}

func ParseACLPermission(s string) (ACLPermission, error) {
	v, err := parseEnum(aclPermissionNames, "permission", s)
	return ACLPermission(v), err
}

func (t ACLResourceType) MarshalText() ([]byte, error) { return []byte(t.String()), nil }
func (t ACLPatternType) MarshalText() ([]byte, error)  { return []byte(t.String()), nil }
func (o ACLOperation) MarshalText() ([]byte, error)    { return []byte(o.String()), nil }
func (p ACLPermission) MarshalText() ([]byte, error)   { return []byte(p.String()), nil }

func (t *ACLResourceType) UnmarshalText(b []byte) (err error) {
	*t, err = ParseACLResourceType(string(b))
	return err
}

func (t *ACLPatternType) UnmarshalText(b []byte) (err error) {
	*t, err = ParseACLPatternType(string(b))
	return err
}

func (o *ACLOperation) UnmarshalText(b []byte) (err error) {
	*o, err = ParseACLOperation(string(b))
	return err
}

func (p *ACLPermission) UnmarshalText(b []byte) (err error) {
	*p, err = ParseACLPermission(string(b))
	return err
}

// ACL is one access control entry (Kafka's AclBinding: a resource pattern and an
// access control entry). It is comparable: two equal ACLs are one entry.
type ACL struct {
	ResourceType ACLResourceType `json:"resource_type"`
	ResourceName string          `json:"resource_name"`
	PatternType  ACLPatternType  `json:"pattern_type"`
	// Principal is "Type:Name", e.g. User:alice; User:* is every user.
	Principal string `json:"principal"`
	// Host is the client's IP address, or * for any.
	Host       string        `json:"host"`
	Operation  ACLOperation  `json:"operation"`
	Permission ACLPermission `json:"permission"`
}

// String reads like kafka-acls.sh's listing.
func (a ACL) String() string {
	return fmt.Sprintf("(principal=%s, host=%s, operation=%s, permission=%s) on %s:%s:%s",
		a.Principal, a.Host, a.Operation, a.Permission, a.ResourceType, a.PatternType, a.ResourceName)
}

// compareACL orders ACLs by resource (type, pattern, name), then entry, so that the
// ACLs of one resource are adjacent and a listing is stable.
func compareACL(a, b ACL) int {
	return cmp.Or(
		cmp.Compare(a.ResourceType, b.ResourceType),
		cmp.Compare(a.PatternType, b.PatternType),
		cmp.Compare(a.ResourceName, b.ResourceName),
		cmp.Compare(a.Principal, b.Principal),
		cmp.Compare(a.Host, b.Host),
		cmp.Compare(a.Operation, b.Operation),
		cmp.Compare(a.Permission, b.Permission),
	)
}

// ACLChange is the ACLType payload: ACL is added, or removed when Remove is set.
// Adding one that exists or removing one that does not changes nothing.
type ACLChange struct {
	ACL    ACL  `json:"acl"`
	Remove bool `json:"remove,omitempty"`
}

// ACLs are the access control entries. Images share it: never modify one in place,
// applyACL returns a new one, so a reader may compare pointers to see whether anything
// changed.
//
// Invariant: Entries is sorted by compareACL and holds no ACL twice.
type ACLs struct {
	Entries []ACL `json:"entries"`
}

// Len is the number of entries (0 for nil).
func (a *ACLs) Len() int {
	if a == nil {
		return 0
	}
	return len(a.Entries)
}

// All is the entries, sorted (nil for nil). The caller must not modify it.
func (a *ACLs) All() []ACL {
	if a == nil {
		return nil
	}
	return a.Entries
}

// Has reports whether acl is one of the entries.
func (a *ACLs) Has(acl ACL) bool {
	if a == nil {
		return false
	}
	_, found := slices.BinarySearchFunc(a.Entries, acl, compareACL)
	return found
}

// applyACL returns old after ch (old itself when nothing changes; nil once the last
// entry is removed, so that an image without ACLs has none in its JSON).
func applyACL(old *ACLs, ch *ACLChange) *ACLs {
	if ch == nil {
		return old
	}
	var cur []ACL
	if old != nil {
		cur = old.Entries
	}
	i, found := slices.BinarySearchFunc(cur, ch.ACL, compareACL)
	switch {
	case ch.Remove && !found, !ch.Remove && found:
		return old
	case ch.Remove:
		if len(cur) == 1 {
			return nil
		}
		return &ACLs{Entries: slices.Delete(slices.Clone(cur), i, i+1)}
	default:
		next := make([]ACL, 0, len(cur)+1)
		next = append(append(append(next, cur[:i]...), ch.ACL), cur[i:]...)
		return &ACLs{Entries: next}
	}
}
