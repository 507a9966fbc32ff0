package metadata

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

func TestACLRecordsAndSnapshot(t *testing.T) {
	read := ACL{ResourceType: ACLResourceTopic, ResourceName: "orders", PatternType: ACLPatternLiteral,
		Principal: "User:alice", Host: "*", Operation: ACLOpRead, Permission: ACLPermissionAllow}
	deny := read
	deny.Principal, deny.Permission, deny.PatternType = "User:*", ACLPermissionDeny, ACLPatternPrefixed
	grp := ACL{ResourceType: ACLResourceGroup, ResourceName: "g", PatternType: ACLPatternLiteral,
		Principal: "User:alice", Host: "10.0.0.1", Operation: ACLOpAll, Permission: ACLPermissionAllow}
	im := Empty()
	apply := func(ch ACLChange) *Image {
		return im.Apply(Record{Type: ACLType, ACL: &ch}, im.Offset+1)
	}
	for _, ch := range []ACLChange{{ACL: grp}, {ACL: deny}, {ACL: read}} {
		im = apply(ch)
	}
	// Sorted by resource type, pattern, name, then the entry.
	if want := []ACL{read, deny, grp}; !reflect.DeepEqual(im.ACLs.All(), want) {
		t.Fatalf("entries %v, want %v", im.ACLs.All(), want)
	}
	before := im.ACLs
	if again := apply(ACLChange{ACL: read}); again.ACLs != before {
		t.Fatal("adding an ACL that exists made new ACLs")
	}
	if gone := apply(ACLChange{ACL: read, Remove: true}); gone.ACLs.Has(read) || !before.Has(read) || gone.ACLs.Len() != 2 {
		t.Fatalf("removal: %v (the old ACLs %v must be unchanged)", gone.ACLs.All(), before.All())
	}
	b, err := json.Marshal(im)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `"operation":"READ"`) || !strings.Contains(string(b), `"pattern_type":"PREFIXED"`) {
		t.Errorf("the snapshot does not name the enums: %s", b)
	}
	var back Image
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatalf("%v in %s", err, b)
	}
	if !reflect.DeepEqual(back.ACLs, im.ACLs) {
		t.Fatalf("after the round trip %v, want %v", back.ACLs.All(), im.ACLs.All())
	}
	last := im
	for _, a := range []ACL{read, deny, grp} {
		last = last.Apply(Record{Type: ACLType, ACL: &ACLChange{ACL: a, Remove: true}}, last.Offset+1)
	}
	if last.ACLs != nil {
		t.Fatalf("after removing every ACL: %v, want nil", last.ACLs)
	}
}
