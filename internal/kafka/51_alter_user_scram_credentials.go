package kafka

// AlterUserScramCredentials: v0 (KIP-554).
//
// A controller operation: every node forwards it to the active controller (KIP-590),
// which validates each user's alterations as Kafka's ScramControlManager does, turns
// each salted password into StoredKey/ServerKey, commits the valid users' changes in
// one metadata entry, and answers once every live node serves them, so that the new
// credential logs in on whichever node a client reaches. One result per user named:
// UNSUPPORTED_SASL_MECHANISM (a mechanism type other than 1 SCRAM-SHA-256 and 2
// SCRAM-SHA-512), UNACCEPTABLE_CREDENTIAL (empty name, iterations outside
// 4096..16384, empty salt, salted password not of the hash's size),
// RESOURCE_NOT_FOUND (a deletion of a credential the user does not have),
// DUPLICATE_RESOURCE (the user named twice in the request). A user with any error has
// none of its alterations applied. With ACLs on it needs ALTER on the cluster
// (CLUSTER_AUTHORIZATION_FAILED for every user otherwise).

import (
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/runnel-io/runnel/internal/auth"
	"github.com/runnel-io/runnel/internal/metadata"
)

func init() { regKey(51, 0, 0, handleAlterUserScramCredentials) }

// scramMechanismName is the SASL name of a ScramMechanism type on the wire.
func scramMechanismName(t int8) string {
	switch t {
	case 1:
		return auth.MechanismScramSHA256
	case 2:
		return auth.MechanismScramSHA512
	}
	return fmt.Sprintf("mechanism type %d", t)
}

// ScramMechanismType is the wire type of a mechanism name: 1 SCRAM-SHA-256,
// 2 SCRAM-SHA-512, N for scramMechanismName's "mechanism type N" (so that a forwarded
// request carries the client's type), else 0 (UNKNOWN).
func ScramMechanismType(name string) int8 {
	switch name {
	case auth.MechanismScramSHA256:
		return 1
	case auth.MechanismScramSHA512:
		return 2
	}
	var t int8
	if _, err := fmt.Sscanf(name, "mechanism type %d", &t); err == nil {
		return t
	}
	return 0
}

func handleAlterUserScramCredentials(ctx context.Context, s *Server, r *request) (kmsg.Response, error) {
	req := r.kreq.(*kmsg.AlterUserSCRAMCredentialsRequest)
	resp := req.ResponseKind().(*kmsg.AlterUserSCRAMCredentialsResponse)
	var users []string // in the order first named
	seen := map[string]bool{}
	name := func(u string) {
		if !seen[u] {
			seen[u] = true
			users = append(users, u)
		}
	}
	dels := make([]metadata.ScramDeletion, len(req.Deletions))
	for i, d := range req.Deletions {
		dels[i] = metadata.ScramDeletion{User: d.Name, Mechanism: scramMechanismName(d.Mechanism)}
		name(d.Name)
	}
	ups := make([]metadata.ScramUpsertion, len(req.Upsertions))
	for i, u := range req.Upsertions {
		ups[i] = metadata.ScramUpsertion{User: u.Name, Mechanism: scramMechanismName(u.Mechanism),
			Iterations: int(u.Iterations), Salt: u.Salt, SaltedPassword: u.SaltedPassword}
		name(u.Name)
	}
	var errs map[string]error
	// With ACLs on, as Kafka: ALTER on the cluster, else every user answers
	// CLUSTER_AUTHORIZATION_FAILED.
	if err := s.authorize(r, metadata.ACLOpAlter, auth.Cluster); err != nil {
		errs = map[string]error{}
		for _, u := range users {
			errs[u] = err
		}
	} else {
		errs = s.admin.AlterUserScramCredentials(ctx, dels, ups)
	}
	for _, u := range users {
		res := kmsg.NewAlterUserSCRAMCredentialsResponseResult()
		res.User = u
		res.ErrorCode, res.ErrorMessage = errorCode(errs[u]), reasonMessage(errs[u])
		if errs[u] != nil {
			s.logger.Info("SCRAM credential change refused", "user", u, "err", errs[u])
		} else {
			s.logger.Info("SCRAM credentials altered", "user", u)
		}
		resp.Results = append(resp.Results, res)
	}
	return resp, nil
}
