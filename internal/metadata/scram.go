package metadata

// SCRAM credentials (RFC 5802, Kafka KIP-554): per user and per mechanism, the salt,
// the iteration count and the two keys derived from the salted password, kept in the
// image as Kafka's KRaft keeps them (UserScramCredentialRecord). The password and the
// salted password never reach the metadata: StoredKey lets a server check a client's
// proof and ServerKey lets it prove itself, but neither lets anyone log in. The SASL
// exchange that uses them is in internal/auth.

import (
	"maps"
	"sort"
)

// ScramCredentialType sets or deletes one SCRAM credential (Kafka's
// UserScramCredentialRecord / RemoveUserScramCredentialRecord): Record.Scram.
const ScramCredentialType RecordType = "scram_credential"

// ScramChange is the ScramCredentialType payload: it sets User's credential for
// Mechanism to Credential, or deletes it when Credential is nil. Mechanism is the SASL
// name ("SCRAM-SHA-256", "SCRAM-SHA-512"); the controller validates it before proposing.
type ScramChange struct {
	User       string           `json:"user"`
	Mechanism  string           `json:"mechanism"`
	Credential *ScramCredential `json:"credential,omitempty"`
	// Bootstrap marks a credential created from sasl.bootstrap.users (or the
	// inter-broker user): User is then remembered in ScramCredentials.Bootstrapped.
	Bootstrap bool `json:"bootstrap,omitempty"`
}

// ScramCredential is one user's credential for one mechanism. StoredKey is
// H(HMAC(SaltedPassword, "Client Key")) and ServerKey is HMAC(SaltedPassword,
// "Server Key"), both of the mechanism's hash size. The byte slices are shared by every
// image holding the credential: never modify them.
type ScramCredential struct {
	Salt       []byte `json:"salt"`
	Iterations int    `json:"iterations"`
	StoredKey  []byte `json:"stored_key"`
	ServerKey  []byte `json:"server_key"`
}

// ScramCredentials are the SCRAM users' credentials. Images share it: never modify one
// in place, applyScram returns a new one.
type ScramCredentials struct {
	// Users maps a user name to its credentials by mechanism. A user listed has at
	// least one credential; an inner map is never empty.
	Users map[string]map[string]ScramCredential `json:"users,omitempty"`
	// Bootstrapped are the users ever created by a bootstrap (ScramChange.Bootstrap),
	// kept after the user is deleted so that no later controller creates it again.
	Bootstrapped map[string]bool `json:"bootstrapped,omitempty"`
}

// Known reports whether user has a credential or was once created by a bootstrap.
// s may be nil.
func (s *ScramCredentials) Known(user string) bool {
	return s != nil && (len(s.Users[user]) > 0 || s.Bootstrapped[user])
}

// Credential returns user's credential for mechanism. s may be nil (no user at all).
func (s *ScramCredentials) Credential(user, mechanism string) (ScramCredential, bool) {
	if s == nil {
		return ScramCredential{}, false
	}
	c, ok := s.Users[user][mechanism]
	return c, ok
}

// Mechanisms returns the mechanisms user has a credential for, sorted; none for an
// unknown user. s may be nil.
func (s *ScramCredentials) Mechanisms(user string) []string {
	if s == nil {
		return nil
	}
	var out []string
	for m := range s.Users[user] {
		out = append(out, m)
	}
	sort.Strings(out)
	return out
}

// UserNames returns every user with a credential, sorted. s may be nil.
func (s *ScramCredentials) UserNames() []string {
	if s == nil {
		return nil
	}
	out := make([]string, 0, len(s.Users))
	for u := range s.Users {
		out = append(out, u)
	}
	sort.Strings(out)
	return out
}

// applyScram returns the credentials after ch. It copies the user map and the changed
// user's mechanism map and shares everything else with old. Deleting a credential that
// does not exist changes nothing (the controller answers RESOURCE_NOT_FOUND before
// proposing; the FSM must stay deterministic whatever the log holds). The result is nil
// once no user is left and none was ever bootstrapped, as the image holds nil when
// there is none.
func applyScram(old *ScramCredentials, ch *ScramChange) *ScramCredentials {
	if ch == nil || ch.User == "" || ch.Mechanism == "" {
		return old
	}
	if ch.Credential == nil {
		if _, ok := old.Credential(ch.User, ch.Mechanism); !ok {
			return old
		}
	}
	var users map[string]map[string]ScramCredential
	var booted map[string]bool
	if old != nil {
		users, booted = maps.Clone(old.Users), old.Bootstrapped
	}
	if ch.Bootstrap && ch.Credential != nil && !booted[ch.User] {
		booted = maps.Clone(booted)
		if booted == nil {
			booted = map[string]bool{}
		}
		booted[ch.User] = true
	}
	if users == nil {
		users = map[string]map[string]ScramCredential{}
	}
	mechs := maps.Clone(users[ch.User])
	if mechs == nil {
		mechs = map[string]ScramCredential{}
	}
	if ch.Credential == nil {
		delete(mechs, ch.Mechanism)
	} else {
		mechs[ch.Mechanism] = *ch.Credential
	}
	if len(mechs) == 0 {
		delete(users, ch.User)
	} else {
		users[ch.User] = mechs
	}
	if len(users) == 0 && len(booted) == 0 {
		return nil
	}
	if len(users) == 0 {
		users = nil // as a snapshot restores it
	}
	return &ScramCredentials{Users: users, Bootstrapped: booted}
}
