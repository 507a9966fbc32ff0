package auth

import (
	"crypto/hmac"
	"crypto/pbkdf2"
	"crypto/rand"
	"crypto/sha256"
	"crypto/sha512"
	"fmt"
	"hash"
)

// Kafka's bounds on a SCRAM credential's iteration count (ScramMechanism's
// minIterations and maxIterations, the same for both mechanisms). Credentials outside
// them are refused with UNACCEPTABLE_CREDENTIAL.
const (
	ScramMinIterations = 4096
	ScramMaxIterations = 16384
)

// scramMechanism is one SCRAM hash: SHA-256 or SHA-512.
type scramMechanism struct {
	name    string
	newHash func() hash.Hash
	size    int // the hash's output size: SaltedPassword, StoredKey, ServerKey, proofs
}

var scramMechanisms = map[string]scramMechanism{
	MechanismScramSHA256: {MechanismScramSHA256, sha256.New, sha256.Size},
	MechanismScramSHA512: {MechanismScramSHA512, sha512.New, sha512.Size},
}

// ScramMechanisms are the SCRAM mechanism names, in Kafka's ScramMechanism order
// (type 1, type 2).
var ScramMechanisms = []string{MechanismScramSHA256, MechanismScramSHA512}

// ScramKeyLen is the length of mechanism's salted password and keys (its hash size),
// and false for a mechanism that is not SCRAM.
func ScramKeyLen(mechanism string) (int, bool) {
	m, ok := scramMechanisms[mechanism]
	return m.size, ok
}

// NewScramSalt returns a random 32-byte salt (RFC 5802 asks for a random one per
// credential; Kafka's ScramFormatter makes about 26 random characters).
func NewScramSalt() []byte {
	salt := make([]byte, 32)
	rand.Read(salt) // crypto/rand.Read never fails (Go 1.24+)
	return salt
}

// NewScramCredential derives user's credential for mechanism from password:
// SaltedPassword = PBKDF2-HMAC(password, salt, iterations), then the two keys.
func NewScramCredential(mechanism, password string, salt []byte, iterations int) (ScramCredential, error) {
	m, ok := scramMechanisms[mechanism]
	if !ok {
		return ScramCredential{}, fmt.Errorf("unknown SCRAM mechanism %q", mechanism)
	}
	if err := checkIterations(iterations); err != nil {
		return ScramCredential{}, err
	}
	salted, err := m.saltedPassword(password, salt, iterations)
	if err != nil {
		return ScramCredential{}, err
	}
	return m.credential(salt, salted, iterations), nil
}

// ScramCredentialFromSalted builds a credential from a salted password computed by the
// client, as AlterUserScramCredentials carries it (Kafka never sends the password).
func ScramCredentialFromSalted(mechanism string, salt, saltedPassword []byte, iterations int) (ScramCredential, error) {
	m, ok := scramMechanisms[mechanism]
	if !ok {
		return ScramCredential{}, fmt.Errorf("unknown SCRAM mechanism %q", mechanism)
	}
	if err := checkIterations(iterations); err != nil {
		return ScramCredential{}, err
	}
	if len(salt) == 0 {
		return ScramCredential{}, fmt.Errorf("%s: empty salt", mechanism)
	}
	if len(saltedPassword) != m.size {
		return ScramCredential{}, fmt.Errorf("%s: salted password is %d bytes, want %d", mechanism, len(saltedPassword), m.size)
	}
	return m.credential(salt, saltedPassword, iterations), nil
}

func checkIterations(iterations int) error {
	if iterations < ScramMinIterations {
		return fmt.Errorf("too few iterations: %d (at least %d)", iterations, ScramMinIterations)
	}
	if iterations > ScramMaxIterations {
		return fmt.Errorf("too many iterations: %d (at most %d)", iterations, ScramMaxIterations)
	}
	return nil
}

// saltedPassword is Hi(password, salt, iterations) of RFC 5802 (PBKDF2 with HMAC).
// The password is not normalised with SASLprep, as Kafka does not.
func (m scramMechanism) saltedPassword(password string, salt []byte, iterations int) ([]byte, error) {
	if len(salt) == 0 {
		return nil, fmt.Errorf("%s: empty salt", m.name)
	}
	return pbkdf2.Key(m.newHash, password, salt, iterations, m.size)
}

func (m scramMechanism) credential(salt, saltedPassword []byte, iterations int) ScramCredential {
	clientKey := m.hmac(saltedPassword, []byte("Client Key"))
	return ScramCredential{
		Salt:       salt,
		Iterations: iterations,
		StoredKey:  m.hash(clientKey),
		ServerKey:  m.hmac(saltedPassword, []byte("Server Key")),
	}
}

func (m scramMechanism) hmac(key, msg []byte) []byte {
	mac := hmac.New(m.newHash, key)
	mac.Write(msg)
	return mac.Sum(nil)
}

func (m scramMechanism) hash(b []byte) []byte {
	h := m.newHash()
	h.Write(b)
	return h.Sum(nil)
}
