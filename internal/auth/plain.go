package auth

import (
	"crypto/hmac"
	"strings"
)

// plainExchange is the server side of RFC 4616 PLAIN: one client message
// authzid NUL authcid NUL password, checked against the user's SCRAM credential.
type plainExchange struct {
	store  Store
	over   bool
	authed string
}

func (x *plainExchange) User() string { return x.authed }

func (x *plainExchange) Step(msg []byte) ([]byte, bool, error) {
	if x.over {
		return nil, false, authFailed(MechanismPlain, x.authed, "the exchange is already over")
	}
	x.over = true
	user, err := x.check(msg)
	if err != nil {
		return nil, false, err
	}
	x.authed = user
	return []byte{}, true, nil
}

// check parses the message as Kafka's PlainSaslServer does and verifies the password.
func (x *plainExchange) check(msg []byte) (string, error) {
	tokens := strings.Split(string(msg), "\x00")
	if len(tokens) != 3 {
		return "", authFailed(MechanismPlain, "", "malformed message: want authzid NUL user NUL password")
	}
	authzid, user, password := tokens[0], tokens[1], tokens[2]
	if user == "" {
		return "", authFailed(MechanismPlain, "", "user name not specified")
	}
	if password == "" {
		return "", authFailed(MechanismPlain, user, "password not specified")
	}
	if authzid != "" && authzid != user {
		return "", authFailed(MechanismPlain, user, "authorization id differs from the user name")
	}
	if !x.passwordMatches(user, password) {
		return "", authFailed(MechanismPlain, user, errInvalidCredentials)
	}
	return user, nil
}

// passwordMatches checks password against user's SCRAM-SHA-512 credential, else its
// SCRAM-SHA-256 one. An unknown user costs the same PBKDF2 as a known one, so the time
// taken does not tell whether the user exists.
func (x *plainExchange) passwordMatches(user, password string) bool {
	for _, name := range []string{MechanismScramSHA512, MechanismScramSHA256} {
		m := scramMechanisms[name]
		cred, ok := x.store.ScramCredential(name, user)
		if !ok {
			continue
		}
		return m.verifyPassword(cred, password)
	}
	m := scramMechanisms[MechanismScramSHA512]
	m.verifyPassword(unknownUserCredential(m, user), password)
	return false
}

func (m scramMechanism) verifyPassword(cred ScramCredential, password string) bool {
	salted, err := m.saltedPassword(password, cred.Salt, cred.Iterations)
	if err != nil {
		return false
	}
	return hmac.Equal(m.credential(cred.Salt, salted, cred.Iterations).StoredKey, cred.StoredKey)
}
