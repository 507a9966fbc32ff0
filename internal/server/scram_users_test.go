package server_test

import (
	"context"
	"crypto/pbkdf2"
	"crypto/sha256"
	"errors"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/runnel-io/runnel/internal/auth"
	"github.com/runnel-io/runnel/internal/metadata"
	"github.com/runnel-io/runnel/internal/server"
	"github.com/runnel-io/runnel/internal/testutil"
)

// logsIn runs franz-go's client side of mech against tn's credential store (its
// metadata image) in memory, as its SASL listener would, and returns the failure.
func logsIn(tn *testNode, m sasl.Mechanism) error {
	x, err := auth.NewExchange(m.Name(), auth.ImageStore(func() *metadata.Image { return server.ImageOf(tn.server()) }))
	if err != nil {
		return err
	}
	session, msg, err := m.Authenticate(context.Background(), tn.addr())
	if err != nil {
		return err
	}
	for {
		reply, done, err := x.Step(msg)
		if err != nil {
			return fmt.Errorf("node %d: %w", tn.id, err)
		}
		clientDone, next, err := session.Challenge(reply)
		if err != nil {
			return fmt.Errorf("node %d, client: %w", tn.id, err)
		}
		if done || clientDone {
			if done != clientDone || x.User() == "" {
				return fmt.Errorf("node %d: server done=%v, client done=%v, user %q", tn.id, done, clientDone, x.User())
			}
			return nil
		}
		msg = next
	}
}

// upsertion is a raw AlterUserScramCredentials upsertion of password, salted as a
// Kafka client does.
func upsertion(t *testing.T, user string, mech int8, iterations int32, password string) kmsg.AlterUserSCRAMCredentialsRequestUpsertion {
	u := kmsg.NewAlterUserSCRAMCredentialsRequestUpsertion()
	u.Name, u.Mechanism, u.Iterations, u.Salt = user, mech, iterations, []byte("salt-"+user)
	salted, err := pbkdf2.Key(sha256.New, password, u.Salt, int(iterations), sha256.Size)
	testutil.NoError(t, err, "pbkdf2")
	u.SaltedPassword = salted
	return u
}

func alterResults(t *testing.T, tn *testNode, req *kmsg.AlterUserSCRAMCredentialsRequest) map[string]int16 {
	t.Helper()
	got := map[string]int16{}
	for _, r := range requestTo(t, tn, req).(*kmsg.AlterUserSCRAMCredentialsResponse).Results {
		got[r.User] = r.ErrorCode
	}
	return got
}

// SCRAM users altered through the controller (kadm) and through a node that is not
// the controller (forwarded, KIP-590) are served by every node as soon as the request
// is answered: described with their mechanisms and iterations, and logging in.
func TestScramUsersOnEveryNode(t *testing.T) {
	nodes := startCluster(t, 3)
	ctrlID := int32(nodeAdmin(nodes[0]).ControllerID())
	var plainNode *testNode
	for _, tn := range nodes {
		if tn.id != ctrlID {
			plainNode = tn
			break
		}
	}
	adm := adminOf(t, nodes[0])
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	res, err := adm.AlterUserSCRAMs(ctx, nil, []kadm.UpsertSCRAM{
		{User: "alice", Mechanism: kadm.ScramSha512, Iterations: 8192, Password: "alice-pw"}})
	testutil.NoError(t, err, "kadm AlterUserSCRAMs")
	testutil.NoError(t, res["alice"].Err, "alter alice: %s", res["alice"].ErrMessage)

	req := kmsg.NewPtrAlterUserSCRAMCredentialsRequest()
	req.Upsertions = append(req.Upsertions, upsertion(t, "bob", 1, 4096, "bob-pw"))
	got := alterResults(t, plainNode, req)
	testutil.Equal(t, got, map[string]int16{"bob": 0}, "alter bob through node %d (not the controller %d)", plainNode.id, ctrlID)

	for _, tn := range nodes {
		for _, m := range []sasl.Mechanism{
			scram.Auth{User: "alice", Pass: "alice-pw"}.AsSha512Mechanism(),
			plain.Auth{User: "alice", Pass: "alice-pw"}.AsMechanism(),
			scram.Auth{User: "bob", Pass: "bob-pw"}.AsSha256Mechanism(),
			plain.Auth{User: "bob", Pass: "bob-pw"}.AsMechanism(),
		} {
			testutil.NoError(t, logsIn(tn, m), "%s login on node %d right after the alteration", m.Name(), tn.id)
		}
		testutil.True(t, logsIn(tn, plain.Auth{User: "bob", Pass: "wrong"}.AsMechanism()) != nil, "a wrong password logged in")

		d := kmsg.NewPtrDescribeUserSCRAMCredentialsRequest()
		resp := requestTo(t, tn, d).(*kmsg.DescribeUserSCRAMCredentialsResponse)
		var desc []string
		for _, r := range resp.Results {
			for _, c := range r.CredentialInfos {
				desc = append(desc, fmt.Sprintf("%s:%d:%d", r.User, c.Mechanism, c.Iterations))
			}
		}
		testutil.Equal(t, desc, []string{"alice:2:8192", "bob:1:4096"}, "describe on node %d", tn.id)
	}

	// Per-user errors, through the plain node.
	req = kmsg.NewPtrAlterUserSCRAMCredentialsRequest()
	del := kmsg.NewAlterUserSCRAMCredentialsRequestDeletion()
	del.Name, del.Mechanism = "alice", 1 // alice has SCRAM-SHA-512 only
	req.Deletions = append(req.Deletions, del)
	req.Upsertions = append(req.Upsertions, upsertion(t, "carol", 3, 4096, "pw"), upsertion(t, "dave", 1, 100, "pw"),
		upsertion(t, "erin", 1, 4096, "pw"), upsertion(t, "erin", 2, 4096, "pw"))
	req.Upsertions[3].SaltedPassword = append(req.Upsertions[3].SaltedPassword, make([]byte, 32)...)
	got = alterResults(t, plainNode, req)
	want := map[string]int16{"alice": kerr.ResourceNotFound.Code, "carol": kerr.UnsupportedSaslMechanism.Code,
		"dave": kerr.UnacceptableCredential.Code, "erin": kerr.DuplicateResource.Code}
	testutil.Equal(t, got, want, "error codes")
	testutil.Equal(t, server.ImageOf(plainNode.server()).Scram.UserNames(), []string{"alice", "bob"}, "users after the refused request")

	d := kmsg.NewPtrDescribeUserSCRAMCredentialsRequest()
	for _, u := range []string{"ghost", "bob", "bob"} {
		ru := kmsg.NewDescribeUserSCRAMCredentialsRequestUser()
		ru.Name = u
		d.Users = append(d.Users, ru)
	}
	codes := map[string]int16{}
	for _, r := range requestTo(t, plainNode, d).(*kmsg.DescribeUserSCRAMCredentialsResponse).Results {
		codes[r.User] = r.ErrorCode
	}
	testutil.Equal(t, codes, map[string]int16{"ghost": kerr.ResourceNotFound.Code, "bob": kerr.DuplicateResource.Code}, "describe errors")

	// A deletion through the plain node: bob logs in nowhere once it is answered.
	req = kmsg.NewPtrAlterUserSCRAMCredentialsRequest()
	del.Name, del.Mechanism = "bob", 1
	req.Deletions = append(req.Deletions, del)
	testutil.Equal(t, alterResults(t, plainNode, req), map[string]int16{"bob": 0}, "delete bob")
	for _, tn := range nodes {
		testutil.True(t, logsIn(tn, plain.Auth{User: "bob", Pass: "bob-pw"}.AsMechanism()) != nil, "deleted bob logged in on node %d", tn.id)
	}
}

// The bootstrap users (sasl.bootstrap.users and the inter-broker user) exist with
// both SCRAM mechanisms after the first start, and survive a restart whose
// configuration no longer names them.
func TestBootstrapUsersSurviveRestart(t *testing.T) {
	dir, raftAddr := t.TempDir(), testutil.FreeAddr(t)
	sets := []string{"log.dirs=" + dir, "controller.listen=" + raftAddr}
	tn, _ := startOwn(t, ownConfig(t, 1, append(sets, "sasl.bootstrap.users=admin:admin-pw,ops:ops:pw",
		"inter.broker.sasl.username=node", "inter.broker.sasl.password=node-pw")...))
	both := []string{auth.MechanismScramSHA256, auth.MechanismScramSHA512}
	check := func(tn *testNode) error {
		for _, u := range []string{"admin", "ops", "node"} {
			if ms := server.ImageOf(tn.server()).Scram.Mechanisms(u); !reflect.DeepEqual(ms, both) {
				return fmt.Errorf("user %q has %v, want %v", u, ms, both)
			}
		}
		for _, m := range []sasl.Mechanism{
			scram.Auth{User: "admin", Pass: "admin-pw"}.AsSha256Mechanism(),
			scram.Auth{User: "ops", Pass: "ops:pw"}.AsSha512Mechanism(),
			plain.Auth{User: "node", Pass: "node-pw"}.AsMechanism(),
		} {
			if err := logsIn(tn, m); err != nil {
				return err
			}
		}
		return nil
	}
	testutil.Eventually(t, 10*time.Second, func() error { return check(tn) })
	tn.own.Close()

	tn2, _ := startOwn(t, ownConfig(t, 1, sets...))
	testutil.NoError(t, check(tn2), "after a restart without sasl.bootstrap.users")
}

// saslClient is a franz-go client of tn's SASL_PLAINTEXT listener logging in with m.
func saslClient(t *testing.T, tn *testNode, m sasl.Mechanism) *kadm.Client {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(tn.own.ListenerAddr("SASL_PLAINTEXT").String()), kgo.SASL(m),
		kgo.RetryTimeout(5*time.Second))
	testutil.NoError(t, err, "kgo.NewClient")
	t.Cleanup(cl.Close)
	return kadm.NewClient(cl)
}

// Over a real SASL_PLAINTEXT listener: the bootstrap user logs in with each mechanism,
// creates a user that then logs in too, and once deleted that user is refused; a
// wrong password is refused with SASL_AUTHENTICATION_FAILED.
func TestScramLoginOverSASLListener(t *testing.T) {
	tn, _ := startOwn(t, ownConfig(t, 1, "listeners=PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0",
		"inter.broker.listener.name=PLAINTEXT", "sasl.enabled.mechanisms=PLAIN,SCRAM-SHA-256,SCRAM-SHA-512",
		"sasl.bootstrap.users=admin:admin-pw"))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	loginErr := func(m sasl.Mechanism) error {
		_, err := saslClient(t, tn, m).ListBrokers(ctx)
		return err
	}
	testutil.Eventually(t, 10*time.Second, func() error {
		return loginErr(scram.Auth{User: "admin", Pass: "admin-pw"}.AsSha512Mechanism())
	})
	testutil.NoError(t, loginErr(scram.Auth{User: "admin", Pass: "admin-pw"}.AsSha256Mechanism()), "admin, SCRAM-SHA-256")
	testutil.NoError(t, loginErr(plain.Auth{User: "admin", Pass: "admin-pw"}.AsMechanism()), "admin, PLAIN")
	err := loginErr(scram.Auth{User: "admin", Pass: "nope"}.AsSha512Mechanism())
	testutil.True(t, errors.Is(err, kerr.SaslAuthenticationFailed), "wrong password: %v, want SASL_AUTHENTICATION_FAILED", err)

	adm := saslClient(t, tn, scram.Auth{User: "admin", Pass: "admin-pw"}.AsSha512Mechanism())
	res, err := adm.AlterUserSCRAMs(ctx, nil, []kadm.UpsertSCRAM{{User: "alice", Mechanism: kadm.ScramSha256, Iterations: 4096, Password: "alice-pw"}})
	testutil.NoError(t, err, "create alice")
	testutil.NoError(t, res["alice"].Err, "create alice: %s", res["alice"].ErrMessage)
	testutil.NoError(t, loginErr(scram.Auth{User: "alice", Pass: "alice-pw"}.AsSha256Mechanism()), "alice, SCRAM-SHA-256")
	testutil.NoError(t, loginErr(plain.Auth{User: "alice", Pass: "alice-pw"}.AsMechanism()), "alice, PLAIN")
	err = loginErr(scram.Auth{User: "alice", Pass: "alice-pw"}.AsSha512Mechanism())
	testutil.True(t, errors.Is(err, kerr.SaslAuthenticationFailed), "alice has no SCRAM-SHA-512 credential, yet: %v", err)

	res, err = adm.AlterUserSCRAMs(ctx, []kadm.DeleteSCRAM{{User: "alice", Mechanism: kadm.ScramSha256}}, nil)
	testutil.NoError(t, err, "delete alice")
	testutil.NoError(t, res["alice"].Err, "delete alice: %s", res["alice"].ErrMessage)
	err = loginErr(plain.Auth{User: "alice", Pass: "alice-pw"}.AsMechanism())
	testutil.True(t, errors.Is(err, kerr.SaslAuthenticationFailed), "deleted alice: %v", err)
}

// With ACLs on, DescribeUserScramCredentials needs DESCRIBE and
// AlterUserScramCredentials ALTER on the cluster, as in Kafka.
func TestScramAPIsNeedClusterACLs(t *testing.T) {
	// The nodes' own PLAINTEXT connections are ANONYMOUS: a super user here.
	tn, _ := startOwn(t, ownConfig(t, 1, "listeners=PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0",
		"inter.broker.listener.name=PLAINTEXT", "sasl.enabled.mechanisms=SCRAM-SHA-512",
		"sasl.bootstrap.users=admin:admin-pw,alice:alice-pw", "authorizer.class.name=StandardAuthorizer",
		"super.users=User:admin;User:ANONYMOUS"))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	alice := saslClient(t, tn, scram.Auth{User: "alice", Pass: "alice-pw"}.AsSha512Mechanism())
	testutil.Eventually(t, 10*time.Second, func() error { _, err := alice.ListBrokers(ctx); return err })
	_, err := alice.DescribeUserSCRAMs(ctx)
	testutil.True(t, errors.Is(err, kerr.ClusterAuthorizationFailed), "alice describes users: %v", err)
	// kadm turns a user's authorization error into the call's.
	_, err = alice.AlterUserSCRAMs(ctx, nil, []kadm.UpsertSCRAM{{User: "mallory", Mechanism: kadm.ScramSha512, Password: "pw"}})
	testutil.True(t, errors.Is(err, kerr.ClusterAuthorizationFailed), "alice creates a user: %v", err)
	testutil.True(t, !server.ImageOf(tn.server()).Scram.Known("mallory"), "a refused user was created")

	admin := saslClient(t, tn, scram.Auth{User: "admin", Pass: "admin-pw"}.AsSha512Mechanism())
	got, err := admin.DescribeUserSCRAMs(ctx)
	testutil.NoError(t, err, "admin describes users")
	testutil.Equal(t, len(got), 2, "users admin sees: %v", got)
}
