package controlplane

// SCRAM users: AlterUserScramCredentials runs on the active controller (forwarded there
// from any other node, KIP-590) and answers once every live node serves the change, so
// that a new or changed credential logs in on whichever node a client talks to, and a
// deleted one nowhere.

import (
	"bytes"
	"context"
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/runnel-io/runnel/internal/kafka"
	"github.com/runnel-io/runnel/internal/metadata"
)

func (a *Admin) AlterUserScramCredentials(ctx context.Context, dels []metadata.ScramDeletion, ups []metadata.ScramUpsertion) map[string]error {
	errs := a.ctrl.AlterUserScramCredentials(ctx, dels, ups)
	if anyMayForward(ctx, errs) {
		errs = a.ch.alterUserScramCredentials(ctx, dels, ups)
		a.settleFor(ctx, func(im *metadata.Image) bool { return scramApplied(im.Scram, dels, ups, errs) })
		return errs
	}
	for u, err := range errs {
		errs[u] = kafka.WithCode(err)
	}
	if err := a.awaitEveryNode(ctx); err != nil {
		for u := range errs {
			if errs[u] == nil {
				errs[u] = fmt.Errorf("SCRAM credentials of user %q: %w", u, err)
			}
		}
	}
	return errs
}

// anyMayForward reports whether the local controller refused the request for not being
// the active controller (it then refuses every user alike).
func anyMayForward(ctx context.Context, errs map[string]error) bool {
	for _, err := range errs {
		if mayForward(ctx, err) {
			return true
		}
	}
	return false
}

// scramApplied reports whether creds reflect every alteration of the users that
// succeeded (errs[user] nil).
func scramApplied(creds *metadata.ScramCredentials, dels []metadata.ScramDeletion, ups []metadata.ScramUpsertion, errs map[string]error) bool {
	for _, d := range dels {
		if _, ok := creds.Credential(d.User, d.Mechanism); ok && errs[d.User] == nil {
			return false
		}
	}
	for _, u := range ups {
		c, ok := creds.Credential(u.User, u.Mechanism)
		if errs[u.User] == nil && (!ok || !bytes.Equal(c.Salt, u.Salt) || c.Iterations != u.Iterations) {
			return false
		}
	}
	return true
}

// alterUserScramCredentials forwards an AlterUserScramCredentials to the active
// controller.
func (ch *Channel) alterUserScramCredentials(ctx context.Context, dels []metadata.ScramDeletion, ups []metadata.ScramUpsertion) map[string]error {
	var users []string
	errs := map[string]error{}
	name := func(u string) {
		if _, ok := errs[u]; !ok {
			errs[u] = nil
			users = append(users, u)
		}
	}
	req := kmsg.NewPtrAlterUserSCRAMCredentialsRequest()
	for _, d := range dels {
		rd := kmsg.NewAlterUserSCRAMCredentialsRequestDeletion()
		rd.Name, rd.Mechanism = d.User, kafka.ScramMechanismType(d.Mechanism)
		req.Deletions = append(req.Deletions, rd)
		name(d.User)
	}
	for _, u := range ups {
		ru := kmsg.NewAlterUserSCRAMCredentialsRequestUpsertion()
		ru.Name, ru.Mechanism, ru.Iterations = u.User, kafka.ScramMechanismType(u.Mechanism), int32(u.Iterations)
		ru.Salt, ru.SaltedPassword = u.Salt, u.SaltedPassword
		req.Upsertions = append(req.Upsertions, ru)
		name(u.User)
	}
	err := ch.do(ctx, "forward AlterUserScramCredentials", func(ctx context.Context) error {
		resp, err := ch.send(ctx, req)
		if err != nil {
			return err
		}
		answers := map[string]error{}
		for _, r := range resp.(*kmsg.AlterUserSCRAMCredentialsResponse).Results {
			answers[r.User] = answerError(r.ErrorCode, r.ErrorMessage)
		}
		got := make([]error, len(users))
		for i, u := range users {
			err, ok := answers[u]
			if !ok {
				err = fmt.Errorf("%w: the controller did not answer for user %q", kerr.UnknownServerError, u)
			}
			errs[u], got[i] = err, err
		}
		if allNotController(got) {
			return kerr.NotController
		}
		return nil
	})
	if err != nil {
		for _, u := range users {
			if errs[u] == nil || errors.Is(errs[u], kerr.NotController) {
				errs[u] = err
			}
		}
	}
	return errs
}
