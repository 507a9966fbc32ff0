package auth

import (
	"bytes"
	"crypto/hmac"
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"strconv"
	"strings"
)

// scramExchange is the server side of RFC 5802's exchange:
//
//	client-first  gs2-header client-first-bare     n,,n=alice,r=<cnonce>
//	server-first                                   r=<cnonce><snonce>,s=<salt>,i=<iterations>
//	client-final  c=<gs2-header>,r=<nonce>,p=<proof>
//	server-final  v=<server signature>
//
// It moves through the steps once: any failure ends it (failed), as Kafka's
// ScramSaslServer does.
type scramExchange struct {
	mech  scramMechanism
	store Store
	// serverNonce makes the server's part of the nonce (newServerNonce; tests fix it
	// to replay RFC 7677's example).
	serverNonce func() string

	step   int // messages received so far; -1 once failed
	user   string
	done   bool
	cred   ScramCredential
	known  bool   // cred is the user's; false for the made-up one of an unknown user
	gs2    string // the client's gs2 header, which c= must repeat
	nonce  string // client nonce + server nonce
	cnonce string // the client nonce alone (see clientFinal: librdkafka's echo)
	first  string // client-first-message-bare + "," + server-first-message, the AuthMessage's start
	authed string // the user once authenticated
}

func (x *scramExchange) User() string { return x.authed }

func (x *scramExchange) Step(msg []byte) ([]byte, bool, error) {
	var reply []byte
	var err error
	switch x.step {
	case 0:
		reply, err = x.clientFirst(string(msg))
	case 1:
		reply, err = x.clientFinal(string(msg))
	default:
		err = authFailed(x.mech.name, x.user, "the exchange is already over")
	}
	if err != nil {
		x.step = -1
		return nil, false, err
	}
	x.step++
	if x.step == 2 {
		x.done = true
		x.authed = x.user
	}
	return reply, x.done, nil
}

// clientFirst parses gs2-cbind-flag "," [authzid] "," client-first-bare and answers
// server-first.
func (x *scramExchange) clientFirst(msg string) ([]byte, error) {
	fail := func(why string) ([]byte, error) { return nil, authFailed(x.mech.name, x.user, why) }
	parts := strings.SplitN(msg, ",", 3)
	if len(parts) != 3 {
		return fail("malformed client-first message: want a gs2 header and n=,r=")
	}
	switch {
	case parts[0] == "n" || parts[0] == "y":
	case strings.HasPrefix(parts[0], "p="):
		return fail("channel binding is not supported")
	default:
		return fail("malformed gs2 header: channel binding flag must be n or y")
	}
	authzid := ""
	if parts[1] != "" {
		if !strings.HasPrefix(parts[1], "a=") {
			return fail("malformed gs2 header: authorization id must be a=NAME")
		}
		var ok bool
		if authzid, ok = decodeSaslName(parts[1][2:]); !ok {
			return fail("malformed authorization id")
		}
	}
	x.gs2 = parts[0] + "," + parts[1] + ","
	bare := parts[2]
	attrs := strings.Split(bare, ",")
	if len(attrs) < 2 || !strings.HasPrefix(attrs[0], "n=") || !strings.HasPrefix(attrs[1], "r=") {
		return fail("malformed client-first message: want n=USER,r=NONCE")
	}
	user, ok := decodeSaslName(attrs[0][2:])
	if !ok || user == "" {
		return fail("malformed or empty user name")
	}
	x.user = user
	cnonce := attrs[1][2:]
	if !validNonce(cnonce) {
		return fail("malformed client nonce")
	}
	if err := checkExtensions(attrs[2:]); err != "" {
		return fail(err)
	}
	if authzid != "" && authzid != user {
		return fail("authorization id " + strconv.Quote(authzid) + " differs from the user name")
	}
	x.cred, x.known = x.store.ScramCredential(x.mech.name, user)
	if !x.known {
		x.cred = unknownUserCredential(x.mech, user)
	}
	x.cnonce = cnonce
	x.nonce = cnonce + x.serverNonce()
	serverFirst := "r=" + x.nonce + ",s=" + base64.StdEncoding.EncodeToString(x.cred.Salt) +
		",i=" + strconv.Itoa(x.cred.Iterations)
	x.first = bare + "," + serverFirst
	return []byte(serverFirst), nil
}

// checkExtensions allows only Kafka's tokenauth extension (KIP-48), and only as false:
// Runnel has no delegation tokens. It returns why the extensions are refused, or "".
func checkExtensions(exts []string) string {
	for _, e := range exts {
		k, v, _ := strings.Cut(e, "=")
		switch {
		case k == "m":
			return "mandatory extension m= is not supported"
		case k != "tokenauth":
			return "unsupported SCRAM extension " + strconv.Quote(k)
		case !strings.EqualFold(v, "false"):
			return "delegation tokens (tokenauth) are not supported"
		}
	}
	return ""
}

// clientFinal parses c=,r=[,extensions],p= and, if the proof holds, answers
// server-final.
func (x *scramExchange) clientFinal(msg string) ([]byte, error) {
	fail := func(why string) ([]byte, error) { return nil, authFailed(x.mech.name, x.user, why) }
	withoutProof, proofAttr, ok := strings.Cut(msg, ",p=")
	if !ok || strings.Contains(proofAttr, ",") {
		return fail("malformed client-final message: the proof p= must come last")
	}
	attrs := strings.Split(withoutProof, ",")
	if len(attrs) < 2 || !strings.HasPrefix(attrs[0], "c=") || !strings.HasPrefix(attrs[1], "r=") {
		return fail("malformed client-final message: want c=,r=,p=")
	}
	cbind, err := base64.StdEncoding.DecodeString(attrs[0][2:])
	if err != nil || string(cbind) != x.gs2 {
		return fail("channel binding c= does not repeat the gs2 header")
	}
	// The nonce must be exactly ours: a client-final of another exchange (a replay)
	// carries another server nonce. librdkafka up to at least 2.0.2 (Debian's kcat
	// and confluent-kafka) echoes its client nonce in front of the whole nonce,
	// r=<cnonce><cnonce><snonce>, which Kafka's ScramSaslServer accepted by checking
	// only that the echo ends with the nonce; that form is accepted too. The proof
	// covers the client-final as sent, so the extra prefix cannot be forged.
	echo := []byte(attrs[1][2:])
	if subtle.ConstantTimeCompare(echo, []byte(x.nonce)) != 1 &&
		subtle.ConstantTimeCompare(echo, []byte(x.cnonce+x.nonce)) != 1 {
		return fail("nonce does not match the server's")
	}
	proof, err := base64.StdEncoding.DecodeString(proofAttr)
	if err != nil || len(proof) != x.mech.size {
		return fail("malformed client proof")
	}
	authMessage := []byte(x.first + "," + withoutProof)
	clientKey := x.mech.hmac(x.cred.StoredKey, authMessage) // ClientSignature
	for i := range clientKey {
		clientKey[i] ^= proof[i] // ClientKey = ClientProof XOR ClientSignature
	}
	if !x.known || !hmac.Equal(x.mech.hash(clientKey), x.cred.StoredKey) {
		return fail(errInvalidCredentials)
	}
	sig := x.mech.hmac(x.cred.ServerKey, authMessage)
	return []byte("v=" + base64.StdEncoding.EncodeToString(sig)), nil
}

// newServerNonce is the server's part of the nonce: 24 random bytes, base64 (printable,
// no comma, as RFC 5802 requires).
func newServerNonce() string {
	b := make([]byte, 24)
	rand.Read(b)
	return base64.RawStdEncoding.EncodeToString(b)
}

// validNonce: printable ASCII except ',' (RFC 5802 "printable"), non-empty.
func validNonce(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x21 || c > 0x7e || c == ',' {
			return false
		}
	}
	return true
}

// decodeSaslName undoes RFC 5802's escaping of a saslname: =2C is ',' and =3D is '=';
// any other '=' is malformed.
func decodeSaslName(s string) (string, bool) {
	if !strings.Contains(s, "=") {
		return s, true
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '=' {
			b.WriteByte(s[i])
			continue
		}
		switch {
		case strings.HasPrefix(s[i:], "=2C"):
			b.WriteByte(',')
		case strings.HasPrefix(s[i:], "=3D"):
			b.WriteByte('=')
		default:
			return "", false
		}
		i += 2
	}
	return b.String(), true
}

// unknownUserSecret keys the made-up credentials of unknown users. It lives as long as
// the process, so the same unknown user gets the same salt on every attempt.
var unknownUserSecret = func() []byte {
	b := make([]byte, 32)
	rand.Read(b)
	return b
}()

// unknownUserCredential is the credential an unknown user is challenged with: a salt
// stable per (mechanism, user), Kafka's minimum iteration count and keys nobody can
// match (the exchange fails on !known anyway).
func unknownUserCredential(m scramMechanism, user string) ScramCredential {
	salt := m.hmac(unknownUserSecret, []byte(m.name+"\x00"+user))[:32]
	return ScramCredential{
		Salt:       salt,
		Iterations: ScramMinIterations,
		StoredKey:  bytes.Repeat([]byte{0}, m.size),
		ServerKey:  bytes.Repeat([]byte{0}, m.size),
	}
}
