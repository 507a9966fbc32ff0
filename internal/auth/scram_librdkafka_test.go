package auth

import (
	"crypto/hmac"
	"crypto/pbkdf2"
	"crypto/sha512"
	"encoding/base64"
	"errors"
	"strconv"
	"strings"
	"testing"
)

// librdkafkaFinal computes the client-final message librdkafka 2.0.2 sends for
// serverFirst: its client nonce, then the whole nonce of server-first
// (r=<cnonce><cnonce><snonce>), with the proof over that AuthMessage. It returns the
// message and the server signature the client expects back.
func librdkafkaFinal(t *testing.T, password, clientFirstBare, cnonce, serverFirst string) (final, serverSig string) {
	t.Helper()
	var nonce, salt string
	iterations := 0
	for _, attr := range strings.Split(serverFirst, ",") {
		switch k, v, _ := strings.Cut(attr, "="); k {
		case "r":
			nonce = v
		case "s":
			salt = v
		case "i":
			iterations, _ = strconv.Atoi(v)
		}
	}
	saltBytes, err := base64.StdEncoding.DecodeString(salt)
	if err != nil {
		t.Fatal(err)
	}
	salted, err := pbkdf2.Key(sha512.New, password, saltBytes, iterations, sha512.Size)
	if err != nil {
		t.Fatal(err)
	}
	mac := func(key []byte, msg string) []byte {
		h := hmac.New(sha512.New, key)
		h.Write([]byte(msg))
		return h.Sum(nil)
	}
	clientKey := mac(salted, "Client Key")
	stored := sha512.Sum512(clientKey)
	withoutProof := "c=biws,r=" + cnonce + nonce
	authMessage := clientFirstBare + "," + serverFirst + "," + withoutProof
	proof := mac(stored[:], authMessage)
	for i := range proof {
		proof[i] ^= clientKey[i]
	}
	return withoutProof + ",p=" + base64.StdEncoding.EncodeToString(proof),
		"v=" + base64.StdEncoding.EncodeToString(mac(mac(salted, "Server Key"), authMessage))
}

// TestScramLibrdkafkaNonceEcho: librdkafka's client-final, which repeats the client
// nonce in front of the whole nonce, logs in (Kafka accepts it; kcat and
// confluent-kafka send nothing else), and the server signature is the one it checks.
// A nonce with any other prefix is still refused.
func TestScramLibrdkafkaNonceEcho(t *testing.T) {
	store := storeWith(t, "alice", "alice-secret", MechanismScramSHA512)
	const cnonce = "v1ARz_6xMM{F`VBoO61nppM?C^wN4jOR" // as librdkafka makes them: 32 printable characters
	bare := "n=alice,r=" + cnonce
	for _, tt := range []struct {
		name, prefix string
		ok           bool
	}{{"librdkafka", cnonce, true}, {"other prefix", "x" + cnonce[1:], false}} {
		t.Run(tt.name, func(t *testing.T) {
			x, err := NewExchange(MechanismScramSHA512, store)
			if err != nil {
				t.Fatal(err)
			}
			serverFirst, _, err := x.Step([]byte("n,," + bare))
			if err != nil {
				t.Fatalf("client-first: %v", err)
			}
			final, wantSig := librdkafkaFinal(t, "alice-secret", bare, tt.prefix, string(serverFirst))
			reply, done, err := x.Step([]byte(final))
			switch {
			case tt.ok && (err != nil || !done || string(reply) != wantSig):
				t.Fatalf("librdkafka's client-final: reply %q, done=%v, %v; want %q", reply, done, err, wantSig)
			case !tt.ok && (!errors.Is(err, ErrAuthFailed) || !strings.Contains(err.Error(), "nonce")):
				t.Fatalf("a client-final with the prefix %q: %v, want a nonce failure", tt.prefix, err)
			}
		})
	}
}
