package kafka

// DescribeUserScramCredentials: v0 (KIP-554).
//
// Served by every node from its metadata image, as Kafka's ScramImage.describe: no
// users (null or empty) lists every user with a credential; each user named gets its
// mechanisms and iteration counts, RESOURCE_NOT_FOUND if it has no credential, or
// DUPLICATE_RESOURCE if named twice. Salts and keys are never returned. With ACLs on
// it needs DESCRIBE on the cluster (CLUSTER_AUTHORIZATION_FAILED for the request).

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/runnel-io/runnel/internal/auth"
	"github.com/runnel-io/runnel/internal/metadata"
)

func init() { regKey(50, 0, 0, handleDescribeUserScramCredentials) }

func handleDescribeUserScramCredentials(_ context.Context, s *Server, r *request) (kmsg.Response, error) {
	req := r.kreq.(*kmsg.DescribeUserSCRAMCredentialsRequest)
	resp := req.ResponseKind().(*kmsg.DescribeUserSCRAMCredentialsResponse)
	if err := s.authorize(r, metadata.ACLOpDescribe, auth.Cluster); err != nil {
		resp.ErrorCode, resp.ErrorMessage = errorCode(err), reasonMessage(err)
		return resp, nil
	}
	creds := s.leadership.Image().Scram
	var users []string
	dup := map[string]bool{}
	if len(req.Users) == 0 {
		users = creds.UserNames()
	} else {
		seen := map[string]bool{}
		for _, u := range req.Users {
			if seen[u.Name] {
				dup[u.Name] = true
				continue
			}
			seen[u.Name] = true
			users = append(users, u.Name)
		}
	}
	for _, u := range users {
		res := kmsg.NewDescribeUserSCRAMCredentialsResponseResult()
		res.User = u
		mechs := creds.Mechanisms(u)
		switch {
		case dup[u]:
			res.ErrorCode = kerr.DuplicateResource.Code
			res.ErrorMessage = kmsg.StringPtr("Cannot describe SCRAM credentials for the same user twice in a single request: " + u)
		case len(mechs) == 0:
			res.ErrorCode = kerr.ResourceNotFound.Code
			res.ErrorMessage = kmsg.StringPtr("Attempt to describe a user credential that does not exist: " + u)
		}
		if res.ErrorCode == 0 {
			for _, m := range mechs {
				c, _ := creds.Credential(u, m)
				info := kmsg.NewDescribeUserSCRAMCredentialsResponseResultCredentialInfo()
				info.Mechanism, info.Iterations = ScramMechanismType(m), int32(c.Iterations)
				res.CredentialInfos = append(res.CredentialInfos, info)
			}
		}
		resp.Results = append(resp.Results, res)
	}
	return resp, nil
}
