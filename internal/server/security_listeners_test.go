package server_test

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509/pkix"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/runnel-io/runnel/internal/server"
	"github.com/runnel-io/runnel/internal/testutil"
)

// Tests of the Kafka listeners' security protocols with real franz-go clients over real
// sockets: TLS from PEM files made by a CA of the test's own (security_pki_test.go),
// client certificates as principals, SASL PLAIN and SCRAM, and a cluster whose nodes
// reach each other over a SASL_SSL listener.

// testClient is a franz-go client of seed with opts, closed when t ends.
func testClient(t *testing.T, seed string, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(seed), kgo.RetryTimeout(10 * time.Second)}, opts...)...)
	testutil.NoError(t, err, "kgo.NewClient")
	t.Cleanup(cl.Close)
	return cl
}

// listenerAddr is the bound address of node n's listener name.
func listenerAddr(t *testing.T, n *server.Node, name string) string {
	t.Helper()
	a := n.ListenerAddr(name)
	if a == nil {
		t.Fatalf("node has no listener %s", name)
	}
	return a.String()
}

func port(t *testing.T, addr string) int32 {
	t.Helper()
	_, p, err := net.SplitHostPort(addr)
	testutil.NoError(t, err, "split %s", addr)
	n, err := strconv.Atoi(p)
	testutil.NoError(t, err, "port of %s", addr)
	return int32(n)
}

// metadataPorts asks the seed broker of cl for Metadata and returns the brokers' ports.
func metadataPorts(t *testing.T, cl *kgo.Client) []int32 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := cl.SeedBrokers()[0].Request(ctx, kmsg.NewPtrMetadataRequest())
	testutil.NoError(t, err, "Metadata")
	var ports []int32
	for _, b := range resp.(*kmsg.MetadataResponse).Brokers {
		ports = append(ports, b.Port)
	}
	return ports
}

// roundTrip creates topic (one partition, rf replicas), produces one record with acks=all
// and reads it back, all through cl.
func roundTrip(t *testing.T, cl *kgo.Client, topic string, rf int16) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, err := kadm.NewClient(cl).CreateTopic(ctx, 1, rf, nil, topic)
	testutil.NoError(t, err, "create %s", topic)
	testutil.NoError(t, cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: []byte("v-" + topic)}).FirstErr(), "produce to %s", topic)
	cl.AddConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().AtStart()}})
	fs := cl.PollRecords(ctx, 1)
	testutil.NoError(t, fs.Err0(), "fetch %s", topic)
	recs := fs.Records()
	if len(recs) != 1 || string(recs[0].Value) != "v-"+topic {
		t.Fatalf("fetched %d records from %s, want its one record", len(recs), topic)
	}
}

// The properties of each node below are given in an order in which each is valid on
// its own (a listener after its keystore): ownConfig and the cluster harness apply them
// one by one, with config.Broker.Set.

// A node with a PLAINTEXT and an SSL listener serves both, and each client is given the
// brokers' ports of the listener it connected on, never the other's.
func TestListenerTLSAndPlaintextPorts(t *testing.T) {
	pki := newTestPKI(t)
	n, _ := startOwn(t, ownConfig(t, 1, "ssl.keystore.location="+pki.NodeFile,
		"listeners=PLAINTEXT://127.0.0.1:0,SSL://127.0.0.1:0"))
	plainAddr, sslAddr := listenerAddr(t, n.server(), "PLAINTEXT"), listenerAddr(t, n.server(), "SSL")

	plainCl := testClient(t, plainAddr)
	testutil.Equal(t, fmt.Sprint(metadataPorts(t, plainCl)), fmt.Sprint([]int32{port(t, plainAddr)}), "brokers' ports on PLAINTEXT")
	tlsCl := testClient(t, sslAddr, kgo.DialTLSConfig(pki.clientTLS()))
	testutil.Equal(t, fmt.Sprint(metadataPorts(t, tlsCl)), fmt.Sprint([]int32{port(t, sslAddr)}), "brokers' ports on SSL")
	roundTrip(t, tlsCl, "over-tls", 1)

	// FindCoordinator answers with the SSL port too.
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	testutil.Eventually(t, 20*time.Second, func() error {
		req := kmsg.NewPtrFindCoordinatorRequest() // v4+: the keys in CoordinatorKeys
		req.CoordinatorKeys = []string{"g"}
		resp, err := tlsCl.SeedBrokers()[0].Request(ctx, req)
		if err != nil {
			return err
		}
		fc := resp.(*kmsg.FindCoordinatorResponse).Coordinators[0]
		if err := kerr.ErrorForCode(fc.ErrorCode); err != nil {
			return err
		}
		if fc.Port != port(t, sslAddr) {
			t.Fatalf("FindCoordinator on SSL gave port %d, want the SSL listener's %s", fc.Port, sslAddr)
		}
		return nil
	})

	// The SSL listener speaks only TLS: a plaintext client gets no answer.
	wrong := testClient(t, sslAddr, kgo.RequestRetries(0), kgo.RetryTimeout(time.Second))
	pctx, pcancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer pcancel()
	if err := wrong.Ping(pctx); err == nil {
		t.Fatal("a plaintext client was served on the SSL listener")
	}
}

// With ssl.client.auth=required a client without a certificate is refused, and one with
// a certificate is the principal User:<its subject>: super.users=User:CN=alice lets
// alice create a topic, and the same request with bob's certificate is denied naming
// User:CN=bob.
func TestListenerMTLSPrincipal(t *testing.T) {
	pki := newTestPKI(t)
	_, alice := pki.issue("alice", pkix.Name{CommonName: "alice"}, false)
	_, bob := pki.issue("bob", pkix.Name{CommonName: "bob"}, false)
	n, _ := startOwn(t, ownConfig(t, 1, "ssl.keystore.location="+pki.NodeFile, "ssl.truststore.location="+pki.CAFile,
		"listeners=PLAINTEXT://127.0.0.1:0,SSL://127.0.0.1:0", "listener.name.ssl.ssl.client.auth=required",
		"authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer", "super.users=User:CN=alice"))
	sslAddr := listenerAddr(t, n.server(), "SSL")
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()

	anon := testClient(t, sslAddr, kgo.DialTLSConfig(pki.clientTLS()), kgo.RequestRetries(0), kgo.RetryTimeout(time.Second))
	pctx, pcancel := context.WithTimeout(ctx, 3*time.Second)
	defer pcancel()
	if err := anon.Ping(pctx); err == nil {
		t.Fatal("a client without a certificate was served with ssl.client.auth=required")
	}

	bobAdm := kadm.NewClient(testClient(t, sslAddr, kgo.DialTLSConfig(pki.clientTLS(bob))))
	_, err := bobAdm.CreateTopic(ctx, 1, 1, nil, "by-bob")
	if !errors.Is(err, kerr.TopicAuthorizationFailed) && !errors.Is(err, kerr.ClusterAuthorizationFailed) {
		t.Fatalf("bob's CreateTopics: %v, want an authorization failure", err)
	}
	roundTrip(t, testClient(t, sslAddr, kgo.DialTLSConfig(pki.clientTLS(alice))), "by-alice", 1)
}

// saslMechanism is franz-go's client side of mechanism.
func saslMechanism(mechanism, user, password string) sasl.Mechanism {
	switch mechanism {
	case "PLAIN":
		return plain.Auth{User: user, Pass: password}.AsMechanism()
	case "SCRAM-SHA-256":
		return scram.Auth{User: user, Pass: password}.AsSha256Mechanism()
	}
	return scram.Auth{User: user, Pass: password}.AsSha512Mechanism()
}

// startSaslSSLNode starts a node with a PLAINTEXT listener (for nodes) and a SASL_SSL
// one, the SCRAM user alice (sasl.bootstrap.users) the one super user; it returns the
// node and the SASL_SSL address once alice can log in there.
func startSaslSSLNode(t *testing.T, pki *testPKI) (*testNode, string) {
	t.Helper()
	n, _ := startOwn(t, ownConfig(t, 1, "ssl.keystore.location="+pki.NodeFile, "sasl.bootstrap.users=alice:alice-secret",
		"listeners=PLAINTEXT://127.0.0.1:0,SASL_SSL://127.0.0.1:0",
		"authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer", "super.users=User:alice"))
	addr := listenerAddr(t, n.server(), "SASL_SSL")
	cl := testClient(t, addr, kgo.DialTLSConfig(pki.clientTLS()), kgo.SASL(saslMechanism("SCRAM-SHA-512", "alice", "alice-secret")))
	// The active controller creates the bootstrap users once it leads.
	testutil.Eventually(t, 20*time.Second, func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		defer cancel()
		return cl.Ping(ctx)
	})
	return n, addr
}

// Every mechanism logs in on a SASL_SSL listener and the login is the principal (alice,
// the super user, creates topics); a wrong password is SASL_AUTHENTICATION_FAILED with
// a message naming the user and the mechanism.
func TestListenerSaslSSL(t *testing.T) {
	pki := newTestPKI(t)
	_, addr := startSaslSSLNode(t, pki)
	for _, mech := range []string{"PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"} {
		t.Run(mech, func(t *testing.T) {
			cl := testClient(t, addr, kgo.DialTLSConfig(pki.clientTLS()), kgo.SASL(saslMechanism(mech, "alice", "alice-secret")))
			roundTrip(t, cl, "sasl-"+strings.ToLower(mech), 1)

			bad := testClient(t, addr, kgo.DialTLSConfig(pki.clientTLS()), kgo.SASL(saslMechanism(mech, "alice", "wrong")),
				kgo.RequestRetries(0))
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			err := bad.Ping(ctx)
			if !errors.Is(err, kerr.SaslAuthenticationFailed) || !strings.Contains(err.Error(), "alice") ||
				!strings.Contains(err.Error(), mech) {
				t.Fatalf("login with a wrong password: %v, want SASL_AUTHENTICATION_FAILED naming alice and %s", err, mech)
			}
		})
	}
}

// rawConn is a TLS connection to a Kafka listener that sends hand-built frames (the
// bodies come from kmsg), for what a franz-go client never sends.
type rawConn struct {
	t  *testing.T
	c  net.Conn
	br *bufio.Reader
}

func dialRawTLS(t *testing.T, addr string, cfg *tls.Config) *rawConn {
	t.Helper()
	c, err := tls.Dial("tcp", addr, cfg)
	testutil.NoError(t, err, "TLS dial %s", addr)
	t.Cleanup(func() { c.Close() })
	c.SetDeadline(time.Now().Add(10 * time.Second))
	return &rawConn{t: t, c: c, br: bufio.NewReader(c)}
}

// request sends req (non-flexible header v1) with correlation id 1.
func (rc *rawConn) request(req kmsg.Request) {
	rc.t.Helper()
	body := req.AppendTo(nil)
	hdr := binary.BigEndian.AppendUint16(nil, uint16(req.Key()))
	hdr = binary.BigEndian.AppendUint16(hdr, uint16(req.GetVersion()))
	hdr = binary.BigEndian.AppendUint32(hdr, 1)
	hdr = binary.BigEndian.AppendUint16(hdr, 4)
	hdr = append(hdr, "test"...)
	if req.IsFlexible() {
		hdr = append(hdr, 0)
	}
	rc.frame(append(hdr, body...))
}

// frame sends b with its size in front.
func (rc *rawConn) frame(b []byte) {
	rc.t.Helper()
	_, err := rc.c.Write(binary.BigEndian.AppendUint32(nil, uint32(len(b))))
	if err == nil {
		_, err = rc.c.Write(b)
	}
	testutil.NoError(rc.t, err, "write")
}

// read reads one frame (its size first), or returns the read's error.
func (rc *rawConn) read() ([]byte, error) {
	var size [4]byte
	if _, err := io.ReadFull(rc.br, size[:]); err != nil {
		return nil, err
	}
	b := make([]byte, binary.BigEndian.Uint32(size[:]))
	_, err := io.ReadFull(rc.br, b)
	return b, err
}

// response reads a response frame into resp (header v0: the correlation id alone).
func (rc *rawConn) response(resp kmsg.Response) {
	rc.t.Helper()
	b, err := rc.read()
	testutil.NoError(rc.t, err, "read %s response", kmsg.NameForKey(resp.Key()))
	if resp.IsFlexible() {
		b = b[1:] // the empty tag buffer of header v1
	}
	testutil.NoError(rc.t, resp.ReadFrom(b[4:]), "decode %s response", kmsg.NameForKey(resp.Key()))
}

// Before authentication a SASL listener serves ApiVersions, and any other request closes
// the connection. A v0 SaslHandshake's bare tokens (old kafka-python) log in too.
func TestListenerSaslBeforeAuthentication(t *testing.T) {
	pki := newTestPKI(t)
	_, addr := startSaslSSLNode(t, pki)

	rc := dialRawTLS(t, addr, pki.clientTLS())
	av := kmsg.NewPtrApiVersionsRequest()
	av.SetVersion(0)
	rc.request(av)
	avr := kmsg.NewPtrApiVersionsResponse()
	rc.response(avr)
	testutil.Equal(t, avr.ErrorCode, int16(0), "ApiVersions before authentication")
	md := kmsg.NewPtrMetadataRequest()
	md.SetVersion(1)
	rc.request(md)
	if _, err := rc.read(); !errors.Is(err, io.EOF) {
		t.Fatalf("Metadata before authentication: read gave %v, want the connection closed (EOF)", err)
	}

	// v0 handshake, then the PLAIN token as a bare frame, answered by an empty one.
	rc = dialRawTLS(t, addr, pki.clientTLS())
	hs := kmsg.NewPtrSASLHandshakeRequest()
	hs.SetVersion(0)
	hs.Mechanism = "PLAIN"
	rc.request(hs)
	hsr := kmsg.NewPtrSASLHandshakeResponse()
	hsr.SetVersion(0)
	rc.response(hsr)
	testutil.Equal(t, hsr.ErrorCode, int16(0), "SaslHandshake v0 PLAIN (offered %v)", hsr.SupportedMechanisms)
	rc.frame([]byte("\x00alice\x00alice-secret"))
	reply, err := rc.read()
	testutil.NoError(t, err, "reply to the raw PLAIN token")
	testutil.Equal(t, len(reply), 0, "reply to the raw PLAIN token")
	rc.request(md)
	mdr := kmsg.NewPtrMetadataResponse()
	mdr.SetVersion(1)
	rc.response(mdr)
	testutil.Equal(t, len(mdr.Brokers), 1, "brokers in Metadata after the raw login")
	testutil.Equal(t, mdr.Brokers[0].Port, port(t, addr), "the SASL_SSL port in Metadata")

	// A mechanism not offered: UNSUPPORTED_SASL_MECHANISM and the list, then closed.
	rc = dialRawTLS(t, addr, pki.clientTLS())
	hs.SetVersion(1)
	hs.Mechanism = "GSSAPI"
	rc.request(hs)
	hsr.SetVersion(1)
	rc.response(hsr)
	testutil.Equal(t, hsr.ErrorCode, kerr.UnsupportedSaslMechanism.Code, "SaslHandshake GSSAPI")
	testutil.Equal(t, strings.Join(hsr.SupportedMechanisms, ","), "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512", "mechanisms offered")
	if _, err := rc.read(); !errors.Is(err, io.EOF) {
		t.Fatalf("after an unsupported mechanism: read gave %v, want the connection closed", err)
	}
}

// Three nodes that reach each other over a SASL_SSL listener requiring client
// certificates: they register it as the endpoint nodes dial, replicate over it (a
// follower that could not log in would never join the ISR) and elect a new leader when
// the leader dies; each node's console reads offsets and groups over it. Clients use
// the PLAINTEXT listener and are given its ports.
func TestInterBrokerSaslSSL(t *testing.T) {
	pki := newTestPKI(t)
	nodes := startCluster(t, 3,
		"listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT,INTERNAL:SASL_SSL",
		"ssl.keystore.location="+pki.NodeFile, "ssl.truststore.location="+pki.CAFile,
		"inter.broker.sasl.username=node", "inter.broker.sasl.password=node-secret",
		"listeners=PLAINTEXT://127.0.0.1:0,INTERNAL://127.0.0.1:0",
		"inter.broker.listener.name=INTERNAL", "listener.name.internal.ssl.client.auth=required",
		"replica.lag.time.max.ms=3000")
	c := nodes[0].c

	for _, tn := range nodes {
		im := server.ImageOf(tn.server())
		for id, b := range im.Brokers {
			internal := listenerAddr(t, c.Server(int(id)), "INTERNAL")
			if b.Port != port(t, internal) || len(b.Endpoints) != 2 || b.Endpoints[0].Name != "INTERNAL" || b.Endpoints[0].SecurityProtocol != 3 {
				t.Fatalf("node %d registered %+v; want Host/Port its INTERNAL listener %s, first of its 2 endpoints, SASL_SSL (3)", id, b, internal)
			}
		}
	}

	cl := c.Client(t, kgo.RequiredAcks(kgo.AllISRAcks()), kgo.RetryTimeout(30*time.Second))
	var plainPorts []int32
	for _, tn := range nodes {
		plainPorts = append(plainPorts, port(t, listenerAddr(t, tn.server(), "PLAINTEXT")))
	}
	// A node is listed once the controller has unfenced it, which may come a moment
	// after the cluster is up; what is checked is that every broker listed to a
	// PLAINTEXT client has its PLAINTEXT port, never its INTERNAL one.
	testutil.Eventually(t, 10*time.Second, func() error {
		if got, want := fmt.Sprint(metadataPorts(t, testClient(t, nodes[0].addr()))), fmt.Sprint(plainPorts); got != want {
			return fmt.Errorf("brokers' ports on PLAINTEXT: got %s, want %s", got, want)
		}
		return nil
	})

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	_, err := kadm.NewClient(cl).CreateTopic(ctx, 1, 3, nil, "replicated")
	testutil.NoError(t, err, "create")
	produce := func(from, to int) {
		for i := from; i < to; i++ {
			testutil.NoError(t, cl.ProduceSync(ctx, &kgo.Record{Topic: "replicated", Value: []byte(strconv.Itoa(i))}).FirstErr(), "produce %d", i)
		}
	}
	produce(0, 10)
	c.WaitISR(t, "replicated", 0, 3, 30*time.Second)

	// The console of each node asks its own node over the inter-broker listener, as
	// another node does: with TLS, its client certificate and the SASL login. Offsets
	// and groups it could not read would show as errors on these pages.
	seedConsoleData(t, nodes[0], 3)
	for _, tn := range nodes {
		// A node with a SASL listener asks for a login (docs/security.md).
		consoleLogin(t, tn, "node", "node-secret")
		checkConsoleTopic(t, tn, nil)
		checkConsoleGroups(t, tn)
	}

	leader, _ := c.WaitLeader(t, "replicated", 0, 30*time.Second)
	c.Kill(int(leader))
	testutil.Eventually(t, 30*time.Second, func() error {
		if l, _ := c.WaitLeader(t, "replicated", 0, 30*time.Second); l == leader {
			return fmt.Errorf("node %d still leads", leader)
		}
		return nil
	})
	produce(10, 20)

	cons := c.Client(t, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{"replicated": {0: kgo.NewOffset().AtStart()}}))
	var got []string
	for len(got) < 20 && ctx.Err() == nil {
		fs := cons.PollFetches(ctx)
		fs.EachRecord(func(r *kgo.Record) { got = append(got, string(r.Value)) })
	}
	testutil.Equal(t, len(got), 20, "records read after the failover")
	for i, v := range got {
		testutil.Equal(t, v, strconv.Itoa(i), "record %d", i)
	}
}
