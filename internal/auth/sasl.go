package auth

import (
	"errors"
	"fmt"

	"github.com/runnel-io/runnel/internal/metadata"
)

// The SASL mechanisms Runnel serves, by their SASL names (sasl.enabled.mechanisms).
const (
	MechanismPlain       = "PLAIN"
	MechanismScramSHA256 = "SCRAM-SHA-256"
	MechanismScramSHA512 = "SCRAM-SHA-512"
)

// ErrAuthFailed is wrapped by every failed authentication (bad password, unknown user,
// malformed client message); the error text names the user and mechanism, never the
// password. A wrong password and an unknown user give the same text.
var ErrAuthFailed = errors.New("authentication failed")

// Store looks up SCRAM credentials (a user's salt, iterations, StoredKey, ServerKey per
// mechanism).
type Store interface {
	ScramCredential(mechanism, user string) (ScramCredential, bool)
}

// ScramCredential is one user's credential for one SCRAM mechanism (see
// metadata.ScramCredential). Never modify the slices: they are shared with the image.
type ScramCredential struct {
	Salt                 []byte
	Iterations           int
	StoredKey, ServerKey []byte
}

// ImageStore reads credentials from the newest metadata image (image() may return nil
// before the first). Each lookup reads image() afresh, so a credential altered or
// deleted is seen by the next authentication.
func ImageStore(image func() *metadata.Image) Store { return imageStore(image) }

type imageStore func() *metadata.Image

func (f imageStore) ScramCredential(mechanism, user string) (ScramCredential, bool) {
	im := f()
	if im == nil {
		return ScramCredential{}, false
	}
	c, ok := im.Scram.Credential(user, mechanism)
	if !ok {
		return ScramCredential{}, false
	}
	return ScramCredential(c), true
}

// Exchange is the server side of one SASL authentication (RFC 4616 PLAIN, RFC 5802/7677
// SCRAM). It is not safe for concurrent use; one connection drives it.
type Exchange interface {
	// Step takes the client's next message and returns the server's reply. done is true
	// once the client is authenticated (for SCRAM after server-final). err wraps
	// ErrAuthFailed. After an error or once done, every further Step fails.
	Step(clientMsg []byte) (serverMsg []byte, done bool, err error)
	// User is the authenticated user name once done ("" before).
	User() string
}

// NewExchange starts an authentication with mechanism (one of the constants; other
// names fail). store is read when the client names its user.
func NewExchange(mechanism string, store Store) (Exchange, error) {
	if store == nil {
		return nil, fmt.Errorf("SASL mechanism %s: no credential store", mechanism)
	}
	switch mechanism {
	case MechanismPlain:
		return &plainExchange{store: store}, nil
	case MechanismScramSHA256, MechanismScramSHA512:
		return &scramExchange{mech: scramMechanisms[mechanism], store: store, serverNonce: newServerNonce}, nil
	}
	return nil, fmt.Errorf("unsupported SASL mechanism %q (supported: %s, %s, %s)",
		mechanism, MechanismPlain, MechanismScramSHA256, MechanismScramSHA512)
}

// authFailed is the error of a failed authentication of user (may be "" before the
// client named one) with mechanism.
func authFailed(mechanism, user, why string) error {
	if user == "" {
		return fmt.Errorf("%w: %s: %s", ErrAuthFailed, mechanism, why)
	}
	return fmt.Errorf("%w: %s user %q: %s", ErrAuthFailed, mechanism, user, why)
}

// errInvalidCredentials is the reason given for a wrong password, a wrong proof and an
// unknown user alike.
const errInvalidCredentials = "invalid credentials"
