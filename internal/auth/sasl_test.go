package auth

import (
	"context"
	"encoding/base64"
	"errors"
	"strings"
	"testing"

	"github.com/runnel-io/runnel/internal/metadata"
	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"
)

// memStore is a Store over a map (mechanism → user → credential).
type memStore map[string]map[string]ScramCredential

func (s memStore) ScramCredential(mechanism, user string) (ScramCredential, bool) {
	c, ok := s[mechanism][user]
	return c, ok
}

// storeWith holds user's credentials for password under the given mechanisms.
func storeWith(t *testing.T, user, password string, mechanisms ...string) memStore {
	t.Helper()
	s := memStore{}
	for _, m := range mechanisms {
		c, err := NewScramCredential(m, password, NewScramSalt(), ScramMinIterations)
		if err != nil {
			t.Fatal(err)
		}
		if s[m] == nil {
			s[m] = map[string]ScramCredential{}
		}
		s[m][user] = c
	}
	return s
}

func clientMechanism(name, user, password string) sasl.Mechanism {
	a := scram.Auth{User: user, Pass: password}
	switch name {
	case MechanismScramSHA256:
		return a.AsSha256Mechanism()
	case MechanismScramSHA512:
		return a.AsSha512Mechanism()
	}
	return plain.Auth{User: user, Pass: password}.AsMechanism()
}

// drive runs franz-go's client session against the server exchange in memory, as the
// SaslAuthenticate round trips would, and returns the server's error or the client's.
func drive(t *testing.T, client sasl.Mechanism, server Exchange) (serverErr, clientErr error) {
	t.Helper()
	session, msg, err := client.Authenticate(context.Background(), "localhost:9092")
	if err != nil {
		t.Fatalf("client start: %v", err)
	}
	for range 4 {
		reply, done, err := server.Step(msg)
		if err != nil {
			return err, nil
		}
		clientDone, next, err := session.Challenge(reply)
		if err != nil {
			return nil, err
		}
		if done != clientDone {
			t.Fatalf("server done=%v, client done=%v", done, clientDone)
		}
		if done {
			return nil, nil
		}
		msg = next
	}
	t.Fatal("the exchange did not end")
	return nil, nil
}

func TestExchangeWithFranzGo(t *testing.T) {
	store := storeWith(t, "alice", "s3cret", MechanismScramSHA256, MechanismScramSHA512)
	for _, mech := range []string{MechanismScramSHA256, MechanismScramSHA512, MechanismPlain} {
		t.Run(mech, func(t *testing.T) {
			x, err := NewExchange(mech, store)
			if err != nil {
				t.Fatal(err)
			}
			if serverErr, clientErr := drive(t, clientMechanism(mech, "alice", "s3cret"), x); serverErr != nil || clientErr != nil {
				t.Fatalf("server: %v, client: %v", serverErr, clientErr)
			}
			if x.User() != "alice" {
				t.Fatalf("User() = %q, want alice", x.User())
			}
			if _, _, err := x.Step([]byte("again")); !errors.Is(err, ErrAuthFailed) {
				t.Fatalf("Step after done: %v, want ErrAuthFailed", err)
			}
		})
	}
}

func TestExchangeFailures(t *testing.T) {
	store := storeWith(t, "alice", "s3cret", MechanismScramSHA256, MechanismScramSHA512)
	for _, mech := range []string{MechanismScramSHA256, MechanismScramSHA512, MechanismPlain} {
		for _, tc := range []struct{ name, user, password string }{
			{"wrong password", "alice", "guess"},
			{"unknown user", "mallory", "s3cret"},
		} {
			t.Run(mech+"/"+tc.name, func(t *testing.T) {
				x, _ := NewExchange(mech, store)
				serverErr, clientErr := drive(t, clientMechanism(mech, tc.user, tc.password), x)
				if clientErr != nil || !errors.Is(serverErr, ErrAuthFailed) {
					t.Fatalf("server: %v, client: %v; want the server to fail with ErrAuthFailed", serverErr, clientErr)
				}
				if !strings.Contains(serverErr.Error(), mech) || !strings.Contains(serverErr.Error(), tc.user) ||
					!strings.Contains(serverErr.Error(), errInvalidCredentials) || strings.Contains(serverErr.Error(), tc.password) {
					t.Fatalf("error %q: want the mechanism, the user and %q, never the password", serverErr, errInvalidCredentials)
				}
				if x.User() != "" {
					t.Fatalf("User() = %q after a failure", x.User())
				}
			})
		}
	}
}

// scramRun is one SCRAM exchange stepped by hand: franz-go's client messages, the
// server's replies.
type scramRun struct {
	x                        Exchange
	session                  sasl.Session
	clientFirst, serverFirst []byte
	clientFinal              []byte
}

func startScram(t *testing.T, mech string, store Store, a scram.Auth) *scramRun {
	t.Helper()
	m := a.AsSha256Mechanism()
	if mech == MechanismScramSHA512 {
		m = a.AsSha512Mechanism()
	}
	r := &scramRun{}
	var err error
	if r.x, err = NewExchange(mech, store); err != nil {
		t.Fatal(err)
	}
	if r.session, r.clientFirst, err = m.Authenticate(context.Background(), ""); err != nil {
		t.Fatal(err)
	}
	if r.serverFirst, _, err = r.x.Step(r.clientFirst); err != nil {
		t.Fatalf("client-first: %v", err)
	}
	if _, r.clientFinal, err = r.session.Challenge(r.serverFirst); err != nil {
		t.Fatalf("server-first: %v", err)
	}
	return r
}

func TestScramTamperedProof(t *testing.T) {
	store := storeWith(t, "alice", "s3cret", MechanismScramSHA512)
	r := startScram(t, MechanismScramSHA512, store, scram.Auth{User: "alice", Pass: "s3cret"})
	msg := string(r.clientFinal)
	i := strings.LastIndex(msg, ",p=") + 3
	proof, _ := base64.StdEncoding.DecodeString(msg[i:])
	proof[0] ^= 1
	tampered := msg[:i] + base64.StdEncoding.EncodeToString(proof)
	if _, _, err := r.x.Step([]byte(tampered)); !errors.Is(err, ErrAuthFailed) {
		t.Fatalf("tampered proof: %v, want ErrAuthFailed", err)
	}
	// The failed exchange stays failed, even for the genuine message.
	if _, _, err := r.x.Step(r.clientFinal); err == nil {
		t.Fatal("a failed exchange accepted a later client-final")
	}
}

// A client-final captured from one exchange does not log in on another, even with the
// same client nonce: the server's part of the nonce differs.
func TestScramReplayedNonce(t *testing.T) {
	store := storeWith(t, "alice", "s3cret", MechanismScramSHA256)
	a := scram.Auth{User: "alice", Pass: "s3cret", Nonce: []byte("fixed client nonce")}
	first := startScram(t, MechanismScramSHA256, store, a)
	if _, done, err := first.x.Step(first.clientFinal); err != nil || !done {
		t.Fatalf("genuine exchange: done=%v err=%v", done, err)
	}
	second := startScram(t, MechanismScramSHA256, store, a)
	if string(second.clientFirst) != string(first.clientFirst) {
		t.Fatal("the client-first messages differ; the test needs the same client nonce")
	}
	if _, _, err := second.x.Step(first.clientFinal); !errors.Is(err, ErrAuthFailed) || !strings.Contains(err.Error(), "nonce") {
		t.Fatalf("replayed client-final: %v, want a nonce failure", err)
	}
}

// A client-final whose nonce, channel binding or proof is off fails.
func TestScramMalformedFinal(t *testing.T) {
	store := storeWith(t, "alice", "s3cret", MechanismScramSHA256)
	for name, edit := range map[string]func(string) string{
		"nonce not extending ours": func(m string) string { return strings.Replace(m, ",r=", ",r=x", 1) },
		"truncated nonce":          func(m string) string { i := strings.Index(m, ",p="); return m[:i-1] + m[i:] },
		"channel binding":          func(m string) string { return strings.Replace(m, "c=biws", "c=eSws", 1) },
		"no proof":                 func(m string) string { return m[:strings.Index(m, ",p=")] },
	} {
		t.Run(name, func(t *testing.T) {
			r := startScram(t, MechanismScramSHA256, store, scram.Auth{User: "alice", Pass: "s3cret"})
			if _, _, err := r.x.Step([]byte(edit(string(r.clientFinal)))); !errors.Is(err, ErrAuthFailed) {
				t.Fatalf("%v, want ErrAuthFailed", err)
			}
		})
	}
}

func TestScramClientFirstChecks(t *testing.T) {
	store := storeWith(t, "alice", "s3cret", MechanismScramSHA256)
	for _, tc := range []struct{ msg, want string }{
		{"n,,n=alice,r=abc,tokenauth=true", "delegation tokens"},
		{"n,,n=alice,r=abc,foo=bar", `unsupported SCRAM extension "foo"`},
		{"n,,m=x,n=alice,r=abc", "malformed client-first"},
		{"p=tls-unique,,n=alice,r=abc", "channel binding is not supported"},
		{"n,a=bob,n=alice,r=abc", "authorization id"},
		{"n,,n=,r=abc", "empty user name"},
		{"n,,n=al=ice,r=abc", "malformed or empty user name"},
		{"n,,n=alice,r=", "malformed client nonce"},
		{"n,,n=alice", "malformed client-first"},
	} {
		x, _ := NewExchange(MechanismScramSHA256, store)
		if _, _, err := x.Step([]byte(tc.msg)); !errors.Is(err, ErrAuthFailed) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: %v, want ErrAuthFailed with %q", tc.msg, err, tc.want)
		}
	}
	// tokenauth=false, an authorization id equal to the user and escaped names pass.
	for _, msg := range []string{"n,,n=alice,r=abc,tokenauth=false", "y,a=alice,n=alice,r=abc"} {
		x, _ := NewExchange(MechanismScramSHA256, store)
		if _, _, err := x.Step([]byte(msg)); err != nil {
			t.Errorf("%q: %v", msg, err)
		}
	}
}

// An unknown user is challenged like a known one, with a salt that does not change
// between attempts, so the server-first does not tell which names exist.
func TestScramUnknownUserLooksKnown(t *testing.T) {
	salt := func() string {
		x, _ := NewExchange(MechanismScramSHA512, memStore{})
		reply, _, err := x.Step([]byte("n,,n=ghost,r=abc"))
		if err != nil {
			t.Fatalf("unknown user failed at client-first: %v", err)
		}
		attrs := strings.Split(string(reply), ",")
		if len(attrs) != 3 || attrs[2] != "i=4096" {
			t.Fatalf("server-first %q", reply)
		}
		return attrs[1]
	}
	if a, b := salt(), salt(); a != b {
		t.Fatalf("the unknown user's salt changed: %s, then %s", a, b)
	}
}

func TestDecodeSaslName(t *testing.T) {
	for in, want := range map[string]string{"a=2Cb=3Dc": "a,b=c", "plain": "plain", "=3D=3D": "=="} {
		if got, ok := decodeSaslName(in); !ok || got != want {
			t.Errorf("decodeSaslName(%q) = %q, %v; want %q", in, got, ok, want)
		}
	}
	for _, in := range []string{"a=", "a=2", "a=41"} {
		if _, ok := decodeSaslName(in); ok {
			t.Errorf("decodeSaslName(%q) accepted", in)
		}
	}
}

// RFC 7677 section 3's example: user "user", password "pencil", with the example's
// nonces and salt, must produce the example's messages byte for byte.
func TestScramSHA256RFC7677Vector(t *testing.T) {
	const (
		clientNonce = "rOprNGfwEbeRWgbNEkqO"
		serverPart  = "%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0"
		serverFirst = "r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096"
		clientFinal = "c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ="
		serverFinal = "v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4="
	)
	salt, _ := base64.StdEncoding.DecodeString("W22ZaJ0SNY7soEsUEjb6gQ==")
	cred, err := NewScramCredential(MechanismScramSHA256, "pencil", salt, 4096)
	if err != nil {
		t.Fatal(err)
	}
	x := &scramExchange{mech: scramMechanisms[MechanismScramSHA256], store: memStore{MechanismScramSHA256: {"user": cred}},
		serverNonce: func() string { return serverPart }}
	// franz-go base64-encodes the nonce bytes it is given; these 15 bytes encode to
	// the example's 20 characters.
	nonce, _ := base64.RawStdEncoding.DecodeString(clientNonce)
	session, first, err := scram.Auth{User: "user", Pass: "pencil", Nonce: nonce}.AsSha256Mechanism().Authenticate(context.Background(), "")
	if err != nil {
		t.Fatal(err)
	}
	if string(first) != "n,,n=user,r="+clientNonce {
		t.Fatalf("client-first %q", first)
	}
	reply, _, err := x.Step(first)
	if err != nil || string(reply) != serverFirst {
		t.Fatalf("server-first %q, %v; want %q", reply, err, serverFirst)
	}
	_, final, err := session.Challenge(reply)
	if err != nil || string(final) != clientFinal {
		t.Fatalf("client-final %q, %v; want %q", final, err, clientFinal)
	}
	reply, done, err := x.Step(final)
	if err != nil || !done || string(reply) != serverFinal {
		t.Fatalf("server-final %q, done=%v, %v; want %q", reply, done, err, serverFinal)
	}
}

func TestPlainChecks(t *testing.T) {
	only256 := storeWith(t, "bob", "pw256", MechanismScramSHA256)
	both := storeWith(t, "bob", "pw512", MechanismScramSHA512)
	for m, c := range storeWith(t, "bob", "pw256", MechanismScramSHA256) {
		both[m] = c
	}
	for _, tc := range []struct {
		store Store
		msg   string
		want  string // "" for success
	}{
		{only256, "\x00bob\x00pw256", ""},
		{only256, "bob\x00bob\x00pw256", ""},
		{both, "\x00bob\x00pw512", ""},
		// SCRAM-SHA-512 is checked when the user has it, not SCRAM-SHA-256.
		{both, "\x00bob\x00pw256", errInvalidCredentials},
		{only256, "alice\x00bob\x00pw256", "authorization id"},
		{only256, "\x00\x00pw256", "user name not specified"},
		{only256, "\x00bob\x00", "password not specified"},
		{only256, "bob\x00pw256", "malformed"},
		{only256, "\x00bob\x00pw\x00256", "malformed"},
	} {
		x, _ := NewExchange(MechanismPlain, tc.store)
		reply, done, err := x.Step([]byte(tc.msg))
		switch {
		case tc.want == "" && (err != nil || !done || len(reply) != 0 || x.User() != "bob"):
			t.Errorf("%q: reply %q done=%v user=%q err=%v; want bob authenticated", tc.msg, reply, done, x.User(), err)
		case tc.want != "" && (!errors.Is(err, ErrAuthFailed) || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%q: %v; want ErrAuthFailed with %q", tc.msg, err, tc.want)
		}
	}
}

func TestNewExchangeUnknownMechanism(t *testing.T) {
	if _, err := NewExchange("GSSAPI", memStore{}); err == nil || !strings.Contains(err.Error(), "GSSAPI") {
		t.Fatalf("GSSAPI: %v", err)
	}
}

func TestCredentialChecks(t *testing.T) {
	salt := NewScramSalt()
	for _, tc := range []struct {
		mech       string
		iterations int
		salted     []byte
		want       string
	}{
		{"SCRAM-SHA-1", 4096, make([]byte, 20), "unknown SCRAM mechanism"},
		{MechanismScramSHA256, 4095, make([]byte, 32), "too few iterations"},
		{MechanismScramSHA256, 16385, make([]byte, 32), "too many iterations"},
		{MechanismScramSHA512, 4096, make([]byte, 32), "salted password is 32 bytes, want 64"},
	} {
		if _, err := ScramCredentialFromSalted(tc.mech, salt, tc.salted, tc.iterations); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s i=%d: %v, want %q", tc.mech, tc.iterations, err, tc.want)
		}
	}
	if _, err := ScramCredentialFromSalted(MechanismScramSHA256, nil, make([]byte, 32), 4096); err == nil {
		t.Error("empty salt accepted")
	}
}

// ImageStore reads the newest image on every lookup, and a nil image has no user.
func TestImageStore(t *testing.T) {
	var im *metadata.Image
	s := ImageStore(func() *metadata.Image { return im })
	if _, ok := s.ScramCredential(MechanismScramSHA256, "alice"); ok {
		t.Fatal("credential found in a nil image")
	}
	cred, _ := NewScramCredential(MechanismScramSHA256, "pw", NewScramSalt(), 4096)
	mc := metadata.ScramCredential(cred)
	im = metadata.Empty().Apply(metadata.Record{Type: metadata.ScramCredentialType,
		Scram: &metadata.ScramChange{User: "alice", Mechanism: MechanismScramSHA256, Credential: &mc}}, 1)
	got, ok := s.ScramCredential(MechanismScramSHA256, "alice")
	if !ok || string(got.StoredKey) != string(cred.StoredKey) {
		t.Fatalf("got %v, %v", got, ok)
	}
	if _, ok := s.ScramCredential(MechanismScramSHA512, "alice"); ok {
		t.Fatal("SCRAM-SHA-512 credential found for a SCRAM-SHA-256 user")
	}
}
