package metadata

import (
	"encoding/json"
	"reflect"
	"testing"
)

func scramRec(user, mech string, c *ScramCredential) Record {
	return Record{Type: ScramCredentialType, Scram: &ScramChange{User: user, Mechanism: mech, Credential: c}}
}

func TestScramApply(t *testing.T) {
	c1 := &ScramCredential{Salt: []byte("salt1"), Iterations: 4096, StoredKey: []byte("sk1"), ServerKey: []byte("vk1")}
	c2 := &ScramCredential{Salt: []byte("salt2"), Iterations: 8192, StoredKey: []byte("sk2"), ServerKey: []byte("vk2")}
	im0 := Empty()
	im1 := im0.Apply(scramRec("alice", "SCRAM-SHA-256", c1), 1)
	im2 := im1.Apply(scramRec("alice", "SCRAM-SHA-512", c2), 2)
	im3 := im2.Apply(scramRec("bob", "SCRAM-SHA-256", c2), 3)
	im4 := im3.Apply(scramRec("alice", "SCRAM-SHA-256", nil), 4)

	if im0.Scram != nil {
		t.Fatal("empty image has credentials")
	}
	// Every earlier image is unchanged by the later records (copy on change).
	if got := im1.Scram.Mechanisms("alice"); !reflect.DeepEqual(got, []string{"SCRAM-SHA-256"}) {
		t.Fatalf("im1 alice: %v", got)
	}
	if got := im2.Scram.Mechanisms("alice"); !reflect.DeepEqual(got, []string{"SCRAM-SHA-256", "SCRAM-SHA-512"}) {
		t.Fatalf("im2 alice: %v", got)
	}
	if got := im3.Scram.UserNames(); !reflect.DeepEqual(got, []string{"alice", "bob"}) {
		t.Fatalf("im3 users: %v", got)
	}
	if _, ok := im3.Scram.Credential("alice", "SCRAM-SHA-256"); !ok {
		t.Fatal("im3 lost alice's SCRAM-SHA-256 credential after a later delete")
	}
	if got := im4.Scram.Mechanisms("alice"); !reflect.DeepEqual(got, []string{"SCRAM-SHA-512"}) {
		t.Fatalf("im4 alice: %v", got)
	}
	if c, _ := im4.Scram.Credential("alice", "SCRAM-SHA-512"); !reflect.DeepEqual(c, *c2) {
		t.Fatalf("im4 alice SCRAM-SHA-512: %+v", c)
	}

	// Deleting what does not exist changes nothing; the last credential gone leaves nil.
	if im5 := im4.Apply(scramRec("carol", "SCRAM-SHA-256", nil), 5); im5.Scram != im4.Scram {
		t.Fatal("deleting an unknown credential replaced the credentials")
	}
	im6 := im4.Apply(scramRec("alice", "SCRAM-SHA-512", nil), 6).Apply(scramRec("bob", "SCRAM-SHA-256", nil), 7)
	if im6.Scram != nil {
		t.Fatalf("credentials left after deleting every one: %+v", im6.Scram)
	}
}

// A snapshot is the image's JSON: the credentials come back byte for byte.
func TestScramSnapshotRoundTrip(t *testing.T) {
	c := &ScramCredential{Salt: []byte{0, 1, 2, 255}, Iterations: 4096, StoredKey: []byte{9, 8}, ServerKey: []byte{7, 6}}
	im := Empty().Apply(scramRec("alice", "SCRAM-SHA-512", c), 1)
	b, err := json.Marshal(im)
	if err != nil {
		t.Fatal(err)
	}
	var back Image
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back.Scram, im.Scram) {
		t.Fatalf("round trip: %+v, want %+v", back.Scram, im.Scram)
	}
	// And through the record codec of the Raft log.
	enc, _ := Encode([]Record{scramRec("alice", "SCRAM-SHA-512", c)})
	recs, err := Decode(enc)
	if err != nil || !reflect.DeepEqual(recs[0].Scram.Credential, c) {
		t.Fatalf("record round trip: %+v, %v", recs, err)
	}
}

// A bootstrapped user stays known after its credentials are deleted, so that no later
// controller creates it again; the mark survives a snapshot.
func TestScramBootstrappedKnown(t *testing.T) {
	c := &ScramCredential{Salt: []byte("s"), Iterations: 4096, StoredKey: []byte("k"), ServerKey: []byte("v")}
	rec := scramRec("admin", "SCRAM-SHA-512", c)
	rec.Scram.Bootstrap = true
	im := Empty().Apply(rec, 1).Apply(scramRec("admin", "SCRAM-SHA-512", nil), 2)
	if im.Scram == nil || !im.Scram.Known("admin") || im.Scram.Mechanisms("admin") != nil {
		t.Fatalf("after deleting the bootstrapped admin: %+v", im.Scram)
	}
	if im.Scram.Known("other") {
		t.Fatal("a user never seen is known")
	}
	b, _ := json.Marshal(im)
	var back Image
	if err := json.Unmarshal(b, &back); err != nil || !reflect.DeepEqual(back.Scram, im.Scram) {
		t.Fatalf("round trip %+v, want %+v (%v)", back.Scram, im.Scram, err)
	}
}
