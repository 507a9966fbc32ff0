// Package auth authenticates Kafka clients and, with the ACL authorizer, decides what
// they may do.
//
// # SASL
//
// NewExchange runs the server side of one SASL authentication: PLAIN (RFC 4616) and
// SCRAM-SHA-256 / SCRAM-SHA-512 (RFC 5802, RFC 7677), as Kafka's PlainSaslServer and
// ScramSaslServer do. The listener (internal/kafka) feeds it the client's
// SaslAuthenticate payloads and, once done, sets the connection's user to User(); the
// principal is "User:" + User().
//
// Credentials are SCRAM credentials kept in the metadata quorum (metadata.ScramCredentials,
// set through AlterUserScramCredentials or sasl.bootstrap.users): per user and mechanism
// a salt, an iteration count, StoredKey and ServerKey. No password is stored anywhere.
// PLAIN checks a password by deriving the salted password with the user's SCRAM-SHA-512
// credential (else its SCRAM-SHA-256 one) and comparing StoredKey, so one user store
// serves every mechanism.
//
// An unknown user runs the SCRAM exchange to its end against a made-up credential
// whose salt is stable per user, and fails exactly as a wrong password does, so that a
// client cannot tell which user names exist.
//
// The credential helpers (NewScramCredential, ScramCredentialFromSalted) are used by the
// controller, which turns AlterUserScramCredentials' salted passwords into credentials
// and creates the bootstrap users.
package auth
