package console

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/runnel-io/runnel/internal/auth"
	"github.com/runnel-io/runnel/internal/httpd"
	"github.com/runnel-io/runnel/internal/metadata"
)

// The console's sign-in and authorization (docs/security.md, "The HTTP port").
//
// The console needs a login exactly when one of the node's Kafka listeners requires
// SASL: a user signs in with a SASL user of the cluster, whose password is checked by
// running the server side of the very exchange the Kafka listener runs
// (auth.NewExchange over the metadata image's SCRAM credentials), driven here by
// franz-go's client for a SCRAM mechanism. What a signed-in user sees is then decided
// by the node's ACL decision (auth.Authorizer, built from super.users and
// allow.everyone.if.no.acl.found as the Kafka server builds its own) for the
// principal User:<name> from the browser's IP, against the ACLs of the image the
// answer reads: there is no second authorization model.

// NewLogin is the console's sign-in for a node whose Kafka listeners require SASL
// with the mechanisms mechs (those the SASL listeners enable); store holds the SCRAM
// credentials of the node's current metadata image.
func NewLogin(store auth.Store, mechs []string) *httpd.Login {
	return &httpd.Login{Check: func(ctx context.Context, mechanism, user, password string) error {
		return checkPassword(ctx, store, mechs, mechanism, user, password)
	}}
}

// checkPassword verifies user's password with mechanism (one of enabled; "" picks
// PLAIN when enabled, else the SCRAM mechanism the user has a credential for) by
// running the Kafka listener's server exchange. A refusal wraps
// httpd.ErrBadCredentials.
func checkPassword(ctx context.Context, store auth.Store, enabled []string, mechanism, user, password string) error {
	mechanism = strings.ToUpper(strings.TrimSpace(mechanism))
	if mechanism == "" {
		mechanism = defaultLoginMechanism(store, enabled, user)
	}
	if mechanism == "" || !slices.Contains(enabled, mechanism) {
		return fmt.Errorf("SASL mechanism %q is not enabled on any of this node's SASL listeners (enabled: %s)",
			mechanism, strings.Join(enabled, ", "))
	}
	ex, err := auth.NewExchange(mechanism, store)
	if err != nil {
		return err
	}
	var client sasl.Mechanism
	switch mechanism {
	case auth.MechanismPlain:
		_, done, err := ex.Step([]byte("\x00" + user + "\x00" + password))
		return exchangeResult(done, err, mechanism, user)
	case auth.MechanismScramSHA256:
		client = scram.Auth{User: user, Pass: password}.AsSha256Mechanism()
	case auth.MechanismScramSHA512:
		client = scram.Auth{User: user, Pass: password}.AsSha512Mechanism()
	default:
		return fmt.Errorf("SASL mechanism %s cannot sign in to the console", mechanism)
	}
	sess, msg, err := client.Authenticate(ctx, "console")
	if err != nil {
		return fmt.Errorf("%s client: %w", mechanism, err)
	}
	// client-first, client-final: the exchange is over after two steps.
	for range 3 {
		srv, done, err := ex.Step(msg)
		if err != nil || done {
			return exchangeResult(done, err, mechanism, user)
		}
		var cdone bool
		if cdone, msg, err = sess.Challenge(srv); err != nil || cdone {
			return exchangeResult(false, fmt.Errorf("%w: %w", auth.ErrAuthFailed, err), mechanism, user)
		}
	}
	return exchangeResult(false, errors.New("the exchange did not end"), mechanism, user)
}

func exchangeResult(done bool, err error, mechanism, user string) error {
	switch {
	case errors.Is(err, auth.ErrAuthFailed):
		return fmt.Errorf("%w (%s user %q)", httpd.ErrBadCredentials, mechanism, user)
	case err != nil:
		return fmt.Errorf("%s user %q: %w", mechanism, user, err)
	case !done:
		return fmt.Errorf("%s user %q: the exchange did not end", mechanism, user)
	}
	return nil
}

// defaultLoginMechanism is the mechanism a login that names none is checked with.
func defaultLoginMechanism(store auth.Store, enabled []string, user string) string {
	if slices.Contains(enabled, auth.MechanismPlain) {
		return auth.MechanismPlain
	}
	for _, m := range []string{auth.MechanismScramSHA512, auth.MechanismScramSHA256} {
		if _, ok := store.ScramCredential(m, user); ok && slices.Contains(enabled, m) {
			return m
		}
	}
	for _, m := range []string{auth.MechanismScramSHA512, auth.MechanismScramSHA256} {
		if slices.Contains(enabled, m) {
			return m // the user has no credential: the exchange refuses it as any wrong password
		}
	}
	return ""
}

// authz is the console's ACL check: nil authorizer with ACLs off
// (authorizer.class.name unset).
type authz struct {
	authz *auth.Authorizer
	// login: the console requires a sign-in; a request without a signed-in user is
	// then allowed nothing (the HTTP server refuses it before; this is the backstop).
	login bool
}

// allowed reports whether the request of ctx may do op on res under im's ACLs. An
// open console (no SASL listener: no principal to check) shows everything, as before.
func (c authz) allowed(ctx context.Context, im *metadata.Image, op metadata.ACLOperation, res auth.Resource) bool {
	s := httpd.SessionFrom(ctx)
	if s == nil || s.User == "" {
		return !c.login
	}
	if c.authz == nil {
		return true
	}
	return c.authz.Authorize(im.ACLs, s.Principal(), httpd.ClientHost(ctx), op, res)
}

// check is nil when allowed, else httpd.ErrForbidden naming the principal and the
// ACL it lacks: "user alice (host 10.0.0.7) lacks WRITE on topic orders".
func (c authz) check(ctx context.Context, im *metadata.Image, op metadata.ACLOperation, res auth.Resource) error {
	if c.allowed(ctx, im, op, res) {
		return nil
	}
	who := "an unauthenticated client"
	if s := httpd.SessionFrom(ctx); s != nil && s.User != "" {
		who = "user " + s.User
	}
	return fmt.Errorf("%w: %s (host %s) lacks %s on %s", httpd.ErrForbidden, who, httpd.ClientHost(ctx), op, resourceName(res))
}

// resourceName is res as a denial says it: topic orders, group g1, the cluster.
func resourceName(res auth.Resource) string {
	switch res.Type {
	case metadata.ACLResourceTopic:
		return "topic " + res.Name
	case metadata.ACLResourceGroup:
		return "group " + res.Name
	case metadata.ACLResourceCluster:
		return "the cluster"
	}
	return res.String()
}
