package controller

import (
	"crypto/pbkdf2"
	"crypto/sha256"
	"crypto/sha512"
	"errors"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/runnel-io/runnel/internal/auth"
	"github.com/runnel-io/runnel/internal/metadata"
)

// salted is what a client sends for password: PBKDF2 with the mechanism's hash.
func salted(t *testing.T, mech, password string, salt []byte, iterations int) []byte {
	t.Helper()
	var b []byte
	var err error
	if mech == auth.MechanismScramSHA512 {
		b, err = pbkdf2.Key(sha512.New, password, salt, iterations, sha512.Size)
	} else {
		b, err = pbkdf2.Key(sha256.New, password, salt, iterations, sha256.Size)
	}
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func upsert(t *testing.T, user, mech, password string, iterations int) metadata.ScramUpsertion {
	salt := []byte("salt-of-" + user)
	return metadata.ScramUpsertion{User: user, Mechanism: mech, Iterations: iterations, Salt: salt,
		SaltedPassword: salted(t, mech, password, salt, iterations)}
}

func TestAlterUserScramCredentials(t *testing.T) {
	c := startController(t, testConfig(t))
	errs := c.AlterUserScramCredentials(testCtx(t), nil, []metadata.ScramUpsertion{
		upsert(t, "alice", auth.MechanismScramSHA256, "pw", 4096),
		upsert(t, "bob", auth.MechanismScramSHA512, "pw", 8192),
	})
	if errs["alice"] != nil || errs["bob"] != nil || len(errs) != 2 {
		t.Fatalf("upserts: %v", errs)
	}
	// The stored credential is the one the client's password gives: PLAIN and SCRAM
	// log in with it.
	got, ok := c.Image().Scram.Credential("alice", auth.MechanismScramSHA256)
	want, _ := auth.NewScramCredential(auth.MechanismScramSHA256, "pw", []byte("salt-of-alice"), 4096)
	if !ok || !reflect.DeepEqual(auth.ScramCredential(got), want) {
		t.Fatalf("alice's credential %+v, want %+v", got, want)
	}
	x, _ := auth.NewExchange(auth.MechanismPlain, auth.ImageStore(c.Image))
	if _, done, err := x.Step([]byte("\x00bob\x00pw")); err != nil || !done {
		t.Fatalf("PLAIN as bob: %v", err)
	}

	for _, tc := range []struct {
		name string
		dels []metadata.ScramDeletion
		ups  []metadata.ScramUpsertion
		user string
		want error
	}{
		{"unknown mechanism", nil, []metadata.ScramUpsertion{{User: "carol", Mechanism: "SCRAM-SHA-1", Iterations: 4096, Salt: []byte("s"), SaltedPassword: make([]byte, 20)}}, "carol", ErrUnsupportedSaslMechanism},
		{"too few iterations", nil, []metadata.ScramUpsertion{upsert(t, "carol", auth.MechanismScramSHA256, "pw", 4095)}, "carol", ErrUnacceptableCredential},
		{"too many iterations", nil, []metadata.ScramUpsertion{upsert(t, "carol", auth.MechanismScramSHA256, "pw", 16385)}, "carol", ErrUnacceptableCredential},
		{"short salted password", nil, []metadata.ScramUpsertion{{User: "carol", Mechanism: auth.MechanismScramSHA512, Iterations: 4096, Salt: []byte("s"), SaltedPassword: make([]byte, 32)}}, "carol", ErrUnacceptableCredential},
		{"empty name", nil, []metadata.ScramUpsertion{upsert(t, "", auth.MechanismScramSHA256, "pw", 4096)}, "", ErrUnacceptableCredential},
		{"delete missing", []metadata.ScramDeletion{{User: "alice", Mechanism: auth.MechanismScramSHA512}}, nil, "alice", ErrCredentialNotFound},
		{"delete unknown user", []metadata.ScramDeletion{{User: "nobody", Mechanism: auth.MechanismScramSHA256}}, nil, "nobody", ErrCredentialNotFound},
		{"same user twice", []metadata.ScramDeletion{{User: "alice", Mechanism: auth.MechanismScramSHA256}}, []metadata.ScramUpsertion{upsert(t, "alice", auth.MechanismScramSHA512, "pw", 4096)}, "alice", ErrDuplicateUser},
	} {
		before := c.Image().Offset
		errs := c.AlterUserScramCredentials(testCtx(t), tc.dels, tc.ups)
		wantErr(t, tc.name, errs[tc.user], tc.want)
		if len(errs) != 1 {
			t.Fatalf("%s: errors %v, want one for %q", tc.name, errs, tc.user)
		}
		if c.Image().Offset != before {
			t.Fatalf("%s: a refused alteration was proposed", tc.name)
		}
	}
	if ms := c.Image().Scram.Mechanisms("alice"); !reflect.DeepEqual(ms, []string{auth.MechanismScramSHA256}) {
		t.Fatalf("alice's mechanisms after the refused requests: %v", ms)
	}

	// A valid user and an invalid one in one request: only the valid one is applied.
	errs = c.AlterUserScramCredentials(testCtx(t), []metadata.ScramDeletion{{User: "alice", Mechanism: auth.MechanismScramSHA256}},
		[]metadata.ScramUpsertion{upsert(t, "dave", auth.MechanismScramSHA256, "pw", 100)})
	wantErr(t, "delete alice", errs["alice"], nil)
	wantErr(t, "dave", errs["dave"], ErrUnacceptableCredential)
	if c.Image().Scram.Known("alice") || c.Image().Scram.Known("dave") {
		t.Fatalf("users after delete: %v", c.Image().Scram.UserNames())
	}
}

func TestAlterUserScramCredentialsNotController(t *testing.T) {
	c := startController(t, testConfig(t))
	c.Close()
	errs := c.AlterUserScramCredentials(testCtx(t), nil, []metadata.ScramUpsertion{upsert(t, "alice", auth.MechanismScramSHA256, "pw", 4096)})
	if !errors.Is(errs["alice"], ErrClosed) {
		t.Fatalf("closed controller: %v", errs)
	}
}

func bootstrapUsersPresent(c *Controller, users ...string) error {
	for _, u := range users {
		if ms := c.Image().Scram.Mechanisms(u); !reflect.DeepEqual(ms, auth.ScramMechanisms) {
			return fmt.Errorf("user %q has mechanisms %v, want %v", u, ms, auth.ScramMechanisms)
		}
	}
	return nil
}

// Bootstrap users are created at first start with both mechanisms; a restart with
// another password changes nothing, nor does one without them, and one deleted stays
// deleted. A name added later is created at the next start.
func TestBootstrapScramUsers(t *testing.T) {
	cfg := testConfig(t)
	cfg.BootstrapScramUsers = []BootstrapScramUser{{"admin", "first"}, {"broker", "inter"}}
	c := startController(t, cfg)
	eventually(t, 5*time.Second, func() error { return bootstrapUsersPresent(c, "admin", "broker") })
	x, _ := auth.NewExchange(auth.MechanismPlain, auth.ImageStore(c.Image))
	if _, _, err := x.Step([]byte("\x00admin\x00first")); err != nil {
		t.Fatalf("PLAIN as admin: %v", err)
	}
	first := c.Image().Scram
	// Kafka's controller takes one alteration per user and request: two requests.
	if errs := c.AlterUserScramCredentials(testCtx(t), []metadata.ScramDeletion{{User: "broker", Mechanism: auth.MechanismScramSHA256}}, nil); errs["broker"] != nil {
		t.Fatal(errs)
	}
	if errs := c.AlterUserScramCredentials(testCtx(t), []metadata.ScramDeletion{{User: "broker", Mechanism: auth.MechanismScramSHA512}}, nil); errs["broker"] != nil {
		t.Fatal(errs)
	}
	c.Close()

	cfg.BootstrapScramUsers = []BootstrapScramUser{{"admin", "second"}, {"broker", "inter"}, {"late", "pw"}}
	c2 := startController(t, cfg)
	eventually(t, 5*time.Second, func() error { return bootstrapUsersPresent(c2, "late") })
	if a, b := first.Users["admin"], c2.Image().Scram.Users["admin"]; !reflect.DeepEqual(a, b) {
		t.Fatal("a restart with another bootstrap password overwrote admin's credential")
	}
	if c2.Image().Scram.Mechanisms("broker") != nil {
		t.Fatal("the deleted bootstrap user broker came back")
	}
	c2.Close()

	cfg.BootstrapScramUsers = nil
	c3 := startController(t, cfg)
	if err := bootstrapUsersPresent(c3, "admin", "late"); err != nil {
		t.Fatalf("after a restart without sasl.bootstrap.users: %v", err)
	}
}
