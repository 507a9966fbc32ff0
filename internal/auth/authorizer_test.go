package auth

import (
	"testing"

	"github.com/runnel-io/runnel/internal/metadata"
)

// The cases are Kafka's rules as its AuthorizerTest, StandardAuthorizerTest and the
// "Authorization and ACLs" documentation state them, written out entry by entry, not
// derived from the code under test.

const (
	alice = "User:alice"
	bob   = "User:bob"
	h1    = "192.168.0.1"
	h2    = "10.0.0.2"
)

func lit(rt metadata.ACLResourceType, name, principal, host string, op metadata.ACLOperation, perm metadata.ACLPermission) metadata.ACL {
	return metadata.ACL{ResourceType: rt, ResourceName: name, PatternType: metadata.ACLPatternLiteral,
		Principal: principal, Host: host, Operation: op, Permission: perm}
}

func pre(rt metadata.ACLResourceType, name, principal, host string, op metadata.ACLOperation, perm metadata.ACLPermission) metadata.ACL {
	a := lit(rt, name, principal, host, op, perm)
	a.PatternType = metadata.ACLPatternPrefixed
	return a
}

const (
	topic   = metadata.ACLResourceTopic
	group   = metadata.ACLResourceGroup
	cluster = metadata.ACLResourceCluster
	allow   = metadata.ACLPermissionAllow
	deny    = metadata.ACLPermissionDeny
)

func TestAuthorizeTable(t *testing.T) {
	type check struct {
		principal, host string
		op              metadata.ACLOperation
		res             Resource
		want            bool
	}
	cases := []struct {
		name        string
		acls        []metadata.ACL
		superUsers  string
		allowIfNone bool
		checks      []check
	}{
		{name: "no ACL at all denies by default",
			checks: []check{{alice, h1, metadata.ACLOpRead, Topic("t"), false}, {alice, h1, metadata.ACLOpDescribe, Cluster, false}}},
		{name: "no ACL at all allows with allow.everyone.if.no.acl.found", allowIfNone: true,
			checks: []check{{alice, h1, metadata.ACLOpRead, Topic("t"), true}, {bob, h2, metadata.ACLOpAlter, Cluster, true}}},
		{name: "an ACL for someone else on the resource denies even with allow.everyone.if.no.acl.found", allowIfNone: true,
			acls: []metadata.ACL{lit(topic, "t", alice, "*", metadata.ACLOpRead, allow)},
			checks: []check{{alice, h1, metadata.ACLOpRead, Topic("t"), true}, {bob, h1, metadata.ACLOpRead, Topic("t"), false},
				{bob, h1, metadata.ACLOpRead, Topic("other"), true}}},
		{name: "an ACL of another resource type does not count for the resource", allowIfNone: true,
			acls:   []metadata.ACL{lit(group, "t", alice, "*", metadata.ACLOpRead, allow)},
			checks: []check{{bob, h1, metadata.ACLOpRead, Topic("t"), true}, {bob, h1, metadata.ACLOpRead, Group("t"), false}}},
		{name: "super users are allowed everything, denied or not", superUsers: "User:admin; User:CN=node",
			acls: []metadata.ACL{lit(topic, "t", "User:admin", "*", metadata.ACLOpAll, deny)},
			checks: []check{{"User:admin", h1, metadata.ACLOpRead, Topic("t"), true}, {"User:CN=node", h1, metadata.ACLOpClusterAction, Cluster, true},
				{alice, h1, metadata.ACLOpRead, Topic("t"), false}}},
		{name: "ALLOW is for the operation named only",
			acls: []metadata.ACL{lit(topic, "t", alice, "*", metadata.ACLOpWrite, allow)},
			checks: []check{{alice, h1, metadata.ACLOpWrite, Topic("t"), true}, {alice, h1, metadata.ACLOpRead, Topic("t"), false},
				{alice, h1, metadata.ACLOpCreate, Topic("t"), false}, {alice, h1, metadata.ACLOpWrite, Topic("u"), false}}},
		{name: "READ, WRITE, DELETE and ALTER imply DESCRIBE; CREATE and DESCRIBE_CONFIGS do not",
			acls: []metadata.ACL{lit(topic, "r", alice, "*", metadata.ACLOpRead, allow), lit(topic, "w", alice, "*", metadata.ACLOpWrite, allow),
				lit(topic, "d", alice, "*", metadata.ACLOpDelete, allow), lit(topic, "a", alice, "*", metadata.ACLOpAlter, allow),
				lit(topic, "c", alice, "*", metadata.ACLOpCreate, allow), lit(topic, "dc", alice, "*", metadata.ACLOpDescribeConfigs, allow)},
			checks: []check{{alice, h1, metadata.ACLOpDescribe, Topic("r"), true}, {alice, h1, metadata.ACLOpDescribe, Topic("w"), true},
				{alice, h1, metadata.ACLOpDescribe, Topic("d"), true}, {alice, h1, metadata.ACLOpDescribe, Topic("a"), true},
				{alice, h1, metadata.ACLOpDescribe, Topic("c"), false}, {alice, h1, metadata.ACLOpDescribe, Topic("dc"), false},
				{alice, h1, metadata.ACLOpDescribeConfigs, Topic("r"), false}, {alice, h1, metadata.ACLOpRead, Topic("w"), false}}},
		{name: "ALTER_CONFIGS implies DESCRIBE_CONFIGS, not the other way round",
			acls: []metadata.ACL{lit(topic, "ac", alice, "*", metadata.ACLOpAlterConfigs, allow), lit(topic, "dc", alice, "*", metadata.ACLOpDescribeConfigs, allow)},
			checks: []check{{alice, h1, metadata.ACLOpDescribeConfigs, Topic("ac"), true}, {alice, h1, metadata.ACLOpAlterConfigs, Topic("dc"), false},
				{alice, h1, metadata.ACLOpDescribe, Topic("ac"), false}}},
		{name: "ALL allows every operation",
			acls: []metadata.ACL{lit(cluster, metadata.ClusterResourceName, alice, "*", metadata.ACLOpAll, allow)},
			checks: []check{{alice, h1, metadata.ACLOpClusterAction, Cluster, true}, {alice, h1, metadata.ACLOpIdempotentWrite, Cluster, true},
				{alice, h1, metadata.ACLOpDescribeConfigs, Cluster, true}, {bob, h1, metadata.ACLOpDescribe, Cluster, false}}},
		{name: "DENY wins over ALLOW of the same operation",
			acls:   []metadata.ACL{lit(topic, "t", alice, "*", metadata.ACLOpRead, allow), lit(topic, "t", alice, "*", metadata.ACLOpRead, deny)},
			checks: []check{{alice, h1, metadata.ACLOpRead, Topic("t"), false}, {alice, h1, metadata.ACLOpDescribe, Topic("t"), true}}},
		{name: "DENY of one operation leaves the others an ALL allows",
			acls: []metadata.ACL{lit(topic, "t", alice, "*", metadata.ACLOpAll, allow), lit(topic, "t", alice, "*", metadata.ACLOpWrite, deny)},
			checks: []check{{alice, h1, metadata.ACLOpWrite, Topic("t"), false}, {alice, h1, metadata.ACLOpRead, Topic("t"), true},
				{alice, h1, metadata.ACLOpDescribe, Topic("t"), true}}},
		{name: "DENY ALL denies every operation",
			acls:   []metadata.ACL{lit(topic, "t", alice, "*", metadata.ACLOpRead, allow), lit(topic, "t", alice, "*", metadata.ACLOpAll, deny)},
			checks: []check{{alice, h1, metadata.ACLOpRead, Topic("t"), false}, {alice, h1, metadata.ACLOpDescribe, Topic("t"), false}}},
		{name: "DENY on a prefix wins over ALLOW on the literal name",
			acls:   []metadata.ACL{lit(topic, "foobar", alice, "*", metadata.ACLOpRead, allow), pre(topic, "foo", alice, "*", metadata.ACLOpRead, deny)},
			checks: []check{{alice, h1, metadata.ACLOpRead, Topic("foobar"), false}}},
		{name: "DENY on the wildcard resource wins over ALLOW on the name",
			acls:   []metadata.ACL{lit(topic, "t", alice, "*", metadata.ACLOpWrite, allow), lit(topic, "*", alice, "*", metadata.ACLOpWrite, deny)},
			checks: []check{{alice, h1, metadata.ACLOpWrite, Topic("t"), false}}},
		{name: "DENY for User:* applies to everyone",
			acls:   []metadata.ACL{lit(topic, "t", alice, "*", metadata.ACLOpRead, allow), lit(topic, "t", "User:*", "*", metadata.ACLOpRead, deny)},
			checks: []check{{alice, h1, metadata.ACLOpRead, Topic("t"), false}}},
		{name: "the LITERAL * resource matches every name of its type",
			acls: []metadata.ACL{lit(topic, "*", alice, "*", metadata.ACLOpRead, allow)},
			checks: []check{{alice, h1, metadata.ACLOpRead, Topic("anything"), true}, {alice, h1, metadata.ACLOpRead, Topic("*"), true},
				{alice, h1, metadata.ACLOpRead, Group("anything"), false}}},
		{name: "a PREFIXED ACL matches names starting with it, the prefix itself included",
			acls: []metadata.ACL{pre(topic, "foo", alice, "*", metadata.ACLOpRead, allow)},
			checks: []check{{alice, h1, metadata.ACLOpRead, Topic("foo"), true}, {alice, h1, metadata.ACLOpRead, Topic("foobar"), true},
				{alice, h1, metadata.ACLOpRead, Topic("fo"), false}, {alice, h1, metadata.ACLOpRead, Topic("barfoo"), false}}},
		{name: "a LITERAL name is not a prefix and * inside a name is not a wildcard",
			acls: []metadata.ACL{lit(topic, "foo", alice, "*", metadata.ACLOpRead, allow), lit(topic, "b*", alice, "*", metadata.ACLOpRead, allow)},
			checks: []check{{alice, h1, metadata.ACLOpRead, Topic("foobar"), false}, {alice, h1, metadata.ACLOpRead, Topic("bar"), false},
				{alice, h1, metadata.ACLOpRead, Topic("b*"), true}}},
		{name: "a PREFIXED * is a literal prefix, not the wildcard",
			acls:   []metadata.ACL{pre(topic, "*", alice, "*", metadata.ACLOpRead, allow)},
			checks: []check{{alice, h1, metadata.ACLOpRead, Topic("foo"), false}, {alice, h1, metadata.ACLOpRead, Topic("*x"), true}}},
		{name: "User:* allows every user",
			acls: []metadata.ACL{lit(topic, "t", "User:*", "*", metadata.ACLOpRead, allow)},
			checks: []check{{alice, h1, metadata.ACLOpRead, Topic("t"), true}, {"User:ANONYMOUS", h2, metadata.ACLOpRead, Topic("t"), true},
				{"User:CN=alice,O=x", h2, metadata.ACLOpRead, Topic("t"), true}}},
		{name: "a principal is matched exactly",
			acls: []metadata.ACL{lit(topic, "t", alice, "*", metadata.ACLOpRead, allow)},
			checks: []check{{"User:Alice", h1, metadata.ACLOpRead, Topic("t"), false}, {"User:alice2", h1, metadata.ACLOpRead, Topic("t"), false},
				{"alice", h1, metadata.ACLOpRead, Topic("t"), false}}},
		{name: "a host is matched exactly; * is any host",
			acls: []metadata.ACL{lit(topic, "t", alice, h1, metadata.ACLOpRead, allow), lit(topic, "t", bob, "*", metadata.ACLOpRead, allow)},
			checks: []check{{alice, h1, metadata.ACLOpRead, Topic("t"), true}, {alice, h2, metadata.ACLOpRead, Topic("t"), false},
				{bob, h2, metadata.ACLOpRead, Topic("t"), true}}},
		{name: "a DENY from one host leaves the others",
			acls:   []metadata.ACL{lit(topic, "t", alice, "*", metadata.ACLOpRead, allow), lit(topic, "t", alice, h2, metadata.ACLOpRead, deny)},
			checks: []check{{alice, h1, metadata.ACLOpRead, Topic("t"), true}, {alice, h2, metadata.ACLOpRead, Topic("t"), false}}},
		{name: "ACLs of groups and transactional ids are their own resources",
			acls: []metadata.ACL{lit(group, "g", alice, "*", metadata.ACLOpRead, allow),
				lit(metadata.ACLResourceTransactionalID, "tx", alice, "*", metadata.ACLOpWrite, allow)},
			checks: []check{{alice, h1, metadata.ACLOpRead, Group("g"), true}, {alice, h1, metadata.ACLOpDescribe, Group("g"), true},
				{alice, h1, metadata.ACLOpDelete, Group("g"), false}, {alice, h1, metadata.ACLOpWrite, TransactionalID("tx"), true},
				{alice, h1, metadata.ACLOpDescribe, TransactionalID("tx"), true}, {alice, h1, metadata.ACLOpWrite, TransactionalID("ty"), false}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var acls *metadata.ACLs
			if tc.acls != nil {
				acls = &metadata.ACLs{Entries: tc.acls}
			}
			a, err := NewAuthorizer(tc.superUsers, tc.allowIfNone)
			if err != nil {
				t.Fatal(err)
			}
			for _, c := range tc.checks {
				if got := a.Authorize(acls, c.principal, c.host, c.op, c.res); got != c.want {
					t.Errorf("%s from %s: %s on %s = %v, want %v", c.principal, c.host, c.op, c.res, got, c.want)
				}
			}
		})
	}
}

func TestParseSuperUsers(t *testing.T) {
	sup, err := ParseSuperUsers(" User:a ;User:CN=b,O=c;; ")
	if err != nil {
		t.Fatal(err)
	}
	if len(sup) != 2 || !sup["User:a"] || !sup["User:CN=b,O=c"] {
		t.Fatalf("got %v", sup)
	}
	for _, bad := range []string{"alice", "User:", ":alice", "User:a;bob"} {
		if _, err := ParseSuperUsers(bad); err == nil {
			t.Errorf("%q: accepted", bad)
		}
	}
}

func strp(s string) *string { return &s }

func TestFilterMatches(t *testing.T) {
	litFoobar := lit(topic, "foobar", alice, "*", metadata.ACLOpRead, allow)
	litFoo := lit(topic, "foo", alice, "*", metadata.ACLOpRead, allow)
	litStar := lit(topic, "*", alice, "*", metadata.ACLOpRead, allow)
	preFoo := pre(topic, "foo", alice, "*", metadata.ACLOpRead, allow)
	preFoobarbaz := pre(topic, "foobarbaz", alice, "*", metadata.ACLOpRead, allow)
	grpFoobar := lit(group, "foobar", alice, "*", metadata.ACLOpRead, allow)
	denyBob := lit(topic, "foobar", bob, h1, metadata.ACLOpWrite, deny)
	all := []metadata.ACL{litFoobar, litFoo, litStar, preFoo, preFoobarbaz, grpFoobar, denyBob}
	anyF := Filter{ResourceType: metadata.ACLResourceAny, PatternType: metadata.ACLPatternAny,
		Operation: metadata.ACLOpAny, Permission: metadata.ACLPermissionAny}
	with := func(edit func(*Filter)) Filter { f := anyF; edit(&f); return f }
	cases := []struct {
		name string
		f    Filter
		want []metadata.ACL
	}{
		{"ANY everything", anyF, all},
		{"MATCH foobar: literal foobar, literal *, prefixes of foobar", with(func(f *Filter) {
			f.ResourceType, f.PatternType, f.ResourceName = topic, metadata.ACLPatternMatch, strp("foobar")
		}), []metadata.ACL{litFoobar, litStar, preFoo, denyBob}},
		{"ANY pattern named foo: that exact name, either pattern type", with(func(f *Filter) { f.ResourceName = strp("foo") }),
			[]metadata.ACL{litFoo, preFoo}},
		{"LITERAL *: the wildcard ACL only", with(func(f *Filter) {
			f.PatternType, f.ResourceName = metadata.ACLPatternLiteral, strp("*")
		}), []metadata.ACL{litStar}},
		{"PREFIXED, any name", with(func(f *Filter) { f.PatternType = metadata.ACLPatternPrefixed }),
			[]metadata.ACL{preFoo, preFoobarbaz}},
		{"GROUP type", with(func(f *Filter) { f.ResourceType = group }), []metadata.ACL{grpFoobar}},
		{"principal, host, operation and permission", with(func(f *Filter) {
			f.Principal, f.Host, f.Operation, f.Permission = strp(bob), strp(h1), metadata.ACLOpWrite, deny
		}), []metadata.ACL{denyBob}},
		{"a host filter is exact: * does not match a named host", with(func(f *Filter) { f.Host = strp("*") }),
			[]metadata.ACL{litFoobar, litFoo, litStar, preFoo, preFoobarbaz, grpFoobar}},
	}
	for _, tc := range cases {
		got := Select(all, tc.f)
		if len(got) != len(tc.want) {
			t.Errorf("%s: got %v, want %v", tc.name, got, tc.want)
			continue
		}
		for i := range got {
			if got[i] != tc.want[i] {
				t.Errorf("%s: got %v, want %v", tc.name, got, tc.want)
				break
			}
		}
	}
	if err := ValidateFilter(with(func(f *Filter) { f.Operation = metadata.ACLOpUnknown })); err == nil {
		t.Error("a filter with an UNKNOWN operation was accepted")
	}
	if err := ValidateFilter(anyF); err != nil {
		t.Error(err)
	}
}

func TestValidateACL(t *testing.T) {
	good := lit(topic, "t", alice, "*", metadata.ACLOpRead, allow)
	if err := ValidateACL(good); err != nil {
		t.Fatal(err)
	}
	if err := ValidateACL(lit(cluster, metadata.ClusterResourceName, alice, "*", metadata.ACLOpIdempotentWrite, allow)); err != nil {
		t.Fatal(err)
	}
	bad := map[string]func(*metadata.ACL){
		"ANY resource type":      func(a *metadata.ACL) { a.ResourceType = metadata.ACLResourceAny },
		"MATCH pattern":          func(a *metadata.ACL) { a.PatternType = metadata.ACLPatternMatch },
		"empty name":             func(a *metadata.ACL) { a.ResourceName = "" },
		"cluster not named":      func(a *metadata.ACL) { a.ResourceType, a.ResourceName = cluster, "c" },
		"ANY operation":          func(a *metadata.ACL) { a.Operation = metadata.ACLOpAny },
		"unsupported operation":  func(a *metadata.ACL) { a.Operation = metadata.ACLOpClusterAction },
		"ANY permission":         func(a *metadata.ACL) { a.Permission = metadata.ACLPermissionAny },
		"principal without type": func(a *metadata.ACL) { a.Principal = "alice" },
		"empty host":             func(a *metadata.ACL) { a.Host = "" },
	}
	for name, edit := range bad {
		a := good
		edit(&a)
		if err := ValidateACL(a); err == nil {
			t.Errorf("%s: accepted %s", name, a)
		}
	}
}

func TestAuthorizeAny(t *testing.T) {
	cases := []struct {
		name        string
		acls        []metadata.ACL
		allowIfNone bool
		want        bool
	}{
		{"no ACL of the type, default", []metadata.ACL{lit(group, "g", alice, "*", metadata.ACLOpRead, allow)}, false, false},
		{"no ACL of the type, allow.everyone.if.no.acl.found", []metadata.ACL{lit(group, "g", alice, "*", metadata.ACLOpRead, allow)}, true, true},
		{"WRITE on one topic", []metadata.ACL{lit(topic, "t", alice, "*", metadata.ACLOpWrite, allow)}, false, true},
		{"ALL on a prefix", []metadata.ACL{pre(topic, "t", alice, "*", metadata.ACLOpAll, allow)}, false, true},
		{"READ does not give WRITE", []metadata.ACL{lit(topic, "t", alice, "*", metadata.ACLOpRead, allow)}, false, false},
		{"someone else's WRITE", []metadata.ACL{lit(topic, "t", bob, "*", metadata.ACLOpWrite, allow)}, false, false},
		{"allow.everyone.if.no.acl.found, no ACL covers the probe name", []metadata.ACL{lit(topic, "t", bob, "*", metadata.ACLOpWrite, allow)}, true, true},
		{"allow.everyone.if.no.acl.found, a * ACL for someone else covers it", []metadata.ACL{lit(topic, "*", bob, "*", metadata.ACLOpWrite, allow)}, true, false},
		{"denied on that name", []metadata.ACL{lit(topic, "t", alice, "*", metadata.ACLOpWrite, allow), lit(topic, "t", alice, "*", metadata.ACLOpWrite, deny)}, false, false},
		{"denied on another name", []metadata.ACL{lit(topic, "t", alice, "*", metadata.ACLOpWrite, allow), lit(topic, "u", alice, "*", metadata.ACLOpWrite, deny)}, false, true},
		{"denied everywhere by *", []metadata.ACL{lit(topic, "t", alice, "*", metadata.ACLOpWrite, allow), lit(topic, "*", "User:*", "*", metadata.ACLOpAll, deny)}, false, false},
		{"denied by a shorter prefix", []metadata.ACL{pre(topic, "team-a", alice, "*", metadata.ACLOpWrite, allow), pre(topic, "team", alice, "*", metadata.ACLOpWrite, deny)}, false, false},
		{"a longer deny prefix leaves the rest of the allowed prefix", []metadata.ACL{pre(topic, "team", alice, "*", metadata.ACLOpWrite, allow), pre(topic, "team-b", alice, "*", metadata.ACLOpWrite, deny)}, false, true},
	}
	for _, tc := range cases {
		a, _ := NewAuthorizer("", tc.allowIfNone)
		if got := a.AuthorizeAny(&metadata.ACLs{Entries: tc.acls}, alice, h1, metadata.ACLOpWrite, topic); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}
