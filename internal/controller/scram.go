package controller

// SCRAM users (KIP-554): AlterUserScramCredentials as a controller operation, and the
// users of sasl.bootstrap.users / inter.broker.sasl.username that the active
// controller creates at the cluster's first start. Credentials are validated here, as
// Kafka's ScramControlManager does, and turned into StoredKey/ServerKey before they are
// proposed: the salted password a client sends never reaches the metadata log.

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/runnel-io/runnel/internal/auth"
	"github.com/runnel-io/runnel/internal/metadata"
)

// Errors of AlterUserScramCredentials, per user. internal/controlplane maps them to
// Kafka's codes.
var (
	// ErrUnsupportedSaslMechanism: a mechanism that is not SCRAM-SHA-256 or -512.
	// Kafka: UNSUPPORTED_SASL_MECHANISM.
	ErrUnsupportedSaslMechanism = errors.New("unknown SCRAM mechanism")
	// ErrUnacceptableCredential: an empty user name, iterations outside Kafka's
	// 4096..16384, an empty salt or a salted password not of the hash's size.
	// Kafka: UNACCEPTABLE_CREDENTIAL.
	ErrUnacceptableCredential = errors.New("unacceptable credential")
	// ErrCredentialNotFound: a deletion of a credential the user does not have.
	// Kafka: RESOURCE_NOT_FOUND.
	ErrCredentialNotFound = errors.New("user credential does not exist")
	// ErrDuplicateUser: a user named more than once in one request (Kafka's KRaft
	// controller refuses it whatever the mechanisms). Kafka: DUPLICATE_RESOURCE.
	ErrDuplicateUser = errors.New("a user credential cannot be altered twice in the same request")
)

// BootstrapScramUser is a user to create at the cluster's first start with both SCRAM
// mechanisms (sasl.bootstrap.users, inter.broker.sasl.username/password).
type BootstrapScramUser struct {
	Name, Password string
}

// AlterUserScramCredentials validates every alteration and proposes the credentials of
// every user whose alterations are all valid as one entry. It returns each named
// user's error (nil: applied); a user with any invalid alteration gets that error and
// none of its alterations is applied, as Kafka's ScramControlManager does.
func (c *Controller) AlterUserScramCredentials(ctx context.Context, dels []metadata.ScramDeletion, ups []metadata.ScramUpsertion) map[string]error {
	errs := map[string]error{}
	err := c.withLeader(ctx, func(im *metadata.Image) error {
		recs := scramRecords(im.Scram, dels, ups, errs)
		if len(recs) == 0 {
			return nil
		}
		_, err := c.proposeLocked(ctx, recs)
		return err
	})
	if err != nil {
		// Not the leader, closed, or the proposal failed: every user not refused for
		// its own alterations gets err.
		fail := func(user string) {
			if errs[user] == nil {
				errs[user] = err
			}
		}
		for _, d := range dels {
			fail(d.User)
		}
		for _, u := range ups {
			fail(u.User)
		}
	}
	return errs
}

// scramRecords validates the alterations against creds, fills errs with one entry per
// user named (nil for the valid ones) and returns the records of the valid users, in
// request order (deletions first).
func scramRecords(creds *metadata.ScramCredentials, dels []metadata.ScramDeletion, ups []metadata.ScramUpsertion, errs map[string]error) []metadata.Record {
	type change struct {
		user string
		ch   metadata.ScramChange
	}
	var changes []change
	note := func(user string, ch metadata.ScramChange, err error) {
		if prev, seen := errs[user]; seen {
			// The first error of a user stands; a second valid mention is a duplicate.
			if prev == nil {
				errs[user] = fmt.Errorf("%w: user %q", ErrDuplicateUser, user)
			}
			return
		}
		errs[user] = err
		if err == nil {
			changes = append(changes, change{user, ch})
		}
	}
	for _, d := range dels {
		note(d.User, metadata.ScramChange{User: d.User, Mechanism: d.Mechanism}, validateScramDeletion(creds, d))
	}
	for _, u := range ups {
		cred, err := scramUpsertionCredential(u)
		note(u.User, metadata.ScramChange{User: u.User, Mechanism: u.Mechanism, Credential: cred}, err)
	}
	var recs []metadata.Record
	for _, c := range changes {
		if errs[c.user] == nil {
			ch := c.ch
			recs = append(recs, metadata.Record{Type: metadata.ScramCredentialType, Scram: &ch})
		}
	}
	return recs
}

func validateScramDeletion(creds *metadata.ScramCredentials, d metadata.ScramDeletion) error {
	if d.User == "" {
		return fmt.Errorf("%w: the user name must not be empty", ErrUnacceptableCredential)
	}
	if _, ok := auth.ScramKeyLen(d.Mechanism); !ok {
		return fmt.Errorf("%w %q for user %q", ErrUnsupportedSaslMechanism, d.Mechanism, d.User)
	}
	if _, ok := creds.Credential(d.User, d.Mechanism); !ok {
		return fmt.Errorf("%w: user %q has no %s credential", ErrCredentialNotFound, d.User, d.Mechanism)
	}
	return nil
}

func scramUpsertionCredential(u metadata.ScramUpsertion) (*metadata.ScramCredential, error) {
	if u.User == "" {
		return nil, fmt.Errorf("%w: the user name must not be empty", ErrUnacceptableCredential)
	}
	if _, ok := auth.ScramKeyLen(u.Mechanism); !ok {
		return nil, fmt.Errorf("%w %q for user %q", ErrUnsupportedSaslMechanism, u.Mechanism, u.User)
	}
	c, err := auth.ScramCredentialFromSalted(u.Mechanism, u.Salt, u.SaltedPassword, u.Iterations)
	if err != nil {
		return nil, fmt.Errorf("%w: user %q: %w", ErrUnacceptableCredential, u.User, err)
	}
	mc := metadata.ScramCredential(c)
	return &mc, nil
}

// bootstrapRetry is how long the active controller waits between attempts to create
// the bootstrap users (a proposal that timed out, a quorum not yet ready).
const bootstrapRetry = 500 * time.Millisecond

// bootstrapScramUsers creates, on a goroutine of the Controller's, the
// Config.BootstrapScramUsers that do not exist yet. It is called whenever this node
// becomes the active controller, so a failed attempt is retried by the next
// controller too; it stops once done, on Close, or when this node is no longer the
// leader.
func (c *Controller) bootstrapScramUsers() {
	if len(c.cfg.BootstrapScramUsers) == 0 {
		return
	}
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		for {
			ctx, cancel := context.WithTimeout(context.Background(), defaultProposeTimeout)
			err := c.createBootstrapUsers(ctx)
			cancel()
			if err == nil || errors.Is(err, ErrNotController) || errors.Is(err, ErrClosed) {
				return
			}
			c.log.Warn("could not create the bootstrap SCRAM users yet; retrying", "err", err)
			select {
			case <-time.After(bootstrapRetry):
			case <-c.done:
				return
			}
		}
	}()
}

// createBootstrapUsers proposes, in one entry, both SCRAM credentials of every
// bootstrap user the image has never held: a user that has a credential is left
// alone (its password may have been changed since), and so is one created by a
// bootstrap before and deleted since (ScramCredentials.Bootstrapped), so that removing
// a bootstrap user is not undone by the next controller.
func (c *Controller) createBootstrapUsers(ctx context.Context) error {
	return c.withLeader(ctx, func(im *metadata.Image) error {
		var recs []metadata.Record
		var names []string
		for _, u := range c.cfg.BootstrapScramUsers {
			if im.Scram.Known(u.Name) {
				continue
			}
			for _, mech := range auth.ScramMechanisms {
				cred, err := auth.NewScramCredential(mech, u.Password, auth.NewScramSalt(), auth.ScramMinIterations)
				if err != nil {
					return fmt.Errorf("bootstrap user %q, %s: %w", u.Name, mech, err)
				}
				mc := metadata.ScramCredential(cred)
				recs = append(recs, metadata.Record{Type: metadata.ScramCredentialType,
					Scram: &metadata.ScramChange{User: u.Name, Mechanism: mech, Credential: &mc, Bootstrap: true}})
			}
			names = append(names, u.Name)
		}
		if len(recs) == 0 {
			return nil
		}
		if _, err := c.proposeLocked(ctx, recs); err != nil {
			return err
		}
		c.log.Info("created the bootstrap SCRAM users", "users", names, "mechanisms", auth.ScramMechanisms)
		return nil
	})
}
