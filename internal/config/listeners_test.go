package config

import (
	"errors"
	"reflect"
	"strings"
	"testing"
)

func TestListeners(t *testing.T) {
	b, err := Load(writeFile(t, `
listeners=PLAINTEXT://127.0.0.1:9092,SASL_SSL://:9094,INTERNAL://10.0.0.1:9095,CONTROLLER://:9093
advertised.listeners=SASL_SSL://public.example:19094
listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT,INTERNAL:SSL,SASL_SSL:SASL_SSL
inter.broker.listener.name=internal
ssl.keystore.location=/etc/runnel/node.pem
ssl.truststore.location=/etc/runnel/ca.pem
listener.name.internal.ssl.client.auth=required
listener.name.SASL_SSL.sasl.enabled.mechanisms=SCRAM-SHA-512
`), nil)
	if err != nil {
		t.Fatal(err)
	}
	ks := Setting{"/etc/runnel/node.pem", "ssl.keystore.location"}
	ts := Setting{"/etc/runnel/ca.pem", "ssl.truststore.location"}
	all := []string{"PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"}
	want := []Listener{
		{Name: "PLAINTEXT", Addr: "127.0.0.1:9092", Advertise: "127.0.0.1:9092", Protocol: ProtocolPlaintext, SaslMechanisms: all},
		{Name: "SASL_SSL", Addr: ":9094", Advertise: "public.example:19094", Protocol: ProtocolSaslSSL,
			Keystore: ks, Truststore: ts, ClientAuth: Setting{"none", "ssl.client.auth"},
			SaslMechanisms: []string{"SCRAM-SHA-512"}},
		{Name: "INTERNAL", Addr: "10.0.0.1:9095", Advertise: "10.0.0.1:9095", Protocol: ProtocolSSL,
			Keystore: ks, Truststore: ts, ClientAuth: Setting{"required", "listener.name.internal.ssl.client.auth"},
			SaslMechanisms: all},
	}
	if !reflect.DeepEqual(b.Listeners, want) {
		t.Errorf("Listeners =\n%+v\nwant\n%+v", b.Listeners, want)
	}
	if b.InterBrokerListener != "INTERNAL" || b.InterBroker().Addr != "10.0.0.1:9095" {
		t.Errorf("InterBrokerListener = %q (%+v), want INTERNAL", b.InterBrokerListener, b.InterBroker())
	}
	if b.ControllerListen != ":9093" || b.Listen != "127.0.0.1:9092" || b.Advertise != "127.0.0.1:9092" {
		t.Errorf("ControllerListen %q Listen %q Advertise %q", b.ControllerListen, b.Listen, b.Advertise)
	}
	// The override is kept under Kafka's spelling, the listener name in lower case.
	if v := b.Raw["listener.name.sasl_ssl.sasl.enabled.mechanisms"]; v != "SCRAM-SHA-512" {
		t.Errorf("Raw of the override = %q", v)
	}
}

func TestListenIsOnePlaintextListener(t *testing.T) {
	b, err := Load("", []string{"listen=127.0.0.1:7000", "advertise=node1:7000"})
	if err != nil {
		t.Fatal(err)
	}
	want := []Listener{{Name: "PLAINTEXT", Addr: "127.0.0.1:7000", Advertise: "node1:7000", Protocol: ProtocolPlaintext,
		SaslMechanisms: []string{"PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"}}}
	if !reflect.DeepEqual(b.Listeners, want) || b.InterBrokerListener != "PLAINTEXT" {
		t.Errorf("Listeners = %+v, inter-broker %q; want %+v", b.Listeners, b.InterBrokerListener, want)
	}
}

func TestListenerErrors(t *testing.T) {
	two := "listeners=PLAINTEXT://:9092,SASL_SSL://:9094"
	ks := "ssl.keystore.location=/k.pem"
	saslIB := []string{"inter.broker.sasl.username=node", "inter.broker.sasl.password=pw", ks}
	tests := []struct {
		name     string
		sets     []string
		key, msg string
		unknown  bool
	}{
		{"listener without protocol", []string{"listeners=PLAINTEXT://:1,INTERNAL://:2"},
			"listener.security.protocol.map", "no entry for listener INTERNAL", false},
		{"tls without keystore", []string{two}, "ssl.keystore.location", "listener SASL_SSL (SASL_SSL) needs a certificate", false},
		{"per-listener keystore named", []string{two, "listener.name.sasl_ssl.ssl.client.auth=required"},
			"ssl.keystore.location", "or listener.name.sasl_ssl.ssl.keystore.location", false},
		{"client auth without truststore", []string{two, ks, "ssl.client.auth=required"},
			"ssl.truststore.location", "ssl.client.auth=required", false},
		{"bad client auth", []string{"listener.name.ssl.ssl.client.auth=always"}, "listener.name.ssl.ssl.client.auth", "not one of", false},
		{"keystore type", []string{"ssl.keystore.type=JKS"}, "ssl.keystore.type", "not one of PEM", false},
		{"unknown per-listener property", []string{two, "listener.name.sasl_ssl.sasl.jaas.config=x"},
			"listener.name.sasl_ssl.sasl.jaas.config", "unknown property", true},
		{"override of a missing listener", []string{two, ks, "listener.name.ssl.ssl.client.auth=required"},
			"listener.name.ssl.ssl.client.auth", "listener SSL, which listeners does not have", false},
		{"controller on TLS", []string{"listener.security.protocol.map=CONTROLLER:SSL"},
			"listener.security.protocol.map", "PLAINTEXT only", false},
		{"no PLAINTEXT for nodes", []string{"listeners=SSL://:9093", ks},
			"inter.broker.listener.name", "no listener is named PLAINTEXT", false},
		{"inter-broker listener unknown", []string{"inter.broker.listener.name=INTERNAL"},
			"inter.broker.listener.name", "names no listener", false},
		{"sasl between nodes without a user", []string{two, ks, "inter.broker.listener.name=SASL_SSL"},
			"inter.broker.sasl.username", "inter-broker listener SASL_SSL is SASL_SSL", false},
		{"inter-broker mechanism disabled", append([]string{two, "inter.broker.listener.name=SASL_SSL",
			"listener.name.sasl_ssl.sasl.enabled.mechanisms=PLAIN"}, saslIB...),
			"sasl.mechanism.inter.broker.protocol", "not enabled on the inter-broker listener SASL_SSL (PLAIN)", false},
		// Every listener SASL: the node's own login is the user anyone can log in as.
		{"nobody could log in", []string{"listeners=SASL_PLAINTEXT://:9092", "inter.broker.listener.name=SASL_PLAINTEXT",
			"inter.broker.sasl.password=x"}, "inter.broker.sasl.username", "must be set", false},
		{"advertised listener unknown", []string{"advertised.listeners=SSL://x:1"},
			"advertised.listeners", "advertises listener SSL", false},
		{"listener name with a dot", []string{"listeners=A.B://:1"}, "listeners", "dot", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Load("", tt.sets)
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("got %v, want an *Error", err)
			}
			if e.Key != tt.key || !strings.Contains(err.Error(), tt.msg) {
				t.Errorf("got Key %q, %q; want Key %q and %q", e.Key, err, tt.key, tt.msg)
			}
			if errors.Is(err, ErrUnknownConfig) != tt.unknown {
				t.Errorf("%v: unknown = %v, want %v", err, errors.Is(err, ErrUnknownConfig), tt.unknown)
			}
		})
	}
}
