package config

// A node's Kafka listeners: Kafka's listeners, advertised.listeners,
// listener.security.protocol.map and inter.broker.listener.name (or Runnel's listen and
// advertise, shorthand for one PLAINTEXT listener), with each listener's TLS and SASL
// settings. Every ssl.* property and sasl.enabled.mechanisms may be overridden for one
// listener with Kafka's prefix, listener.name.<listener name, lower case>.<property>.
// The rules between these properties are checked here, at load time, so that start-up
// fails with the property to fix rather than with a listener that cannot serve.

import (
	"fmt"
	"strings"
)

// The security protocols of listener.security.protocol.map.
const (
	ProtocolPlaintext     = "PLAINTEXT"
	ProtocolSSL           = "SSL"
	ProtocolSaslPlaintext = "SASL_PLAINTEXT"
	ProtocolSaslSSL       = "SASL_SSL"
)

var protocols = []string{ProtocolPlaintext, ProtocolSSL, ProtocolSaslPlaintext, ProtocolSaslSSL}

// The values of ssl.client.auth.
const (
	ClientAuthNone      = "none"
	ClientAuthRequested = "requested"
	ClientAuthRequired  = "required"
)

// listenerPrefix starts Kafka's per-listener override of a property.
const listenerPrefix = "listener.name."

// Listener is one Kafka listener of this node (not the controller's Raft listener,
// which stays PLAINTEXT on controller.listen).
type Listener struct {
	// Name is the listener's name, upper case (PLAINTEXT, SASL_SSL, INTERNAL, ...).
	Name string
	// Addr is where it binds, HOST:PORT (an empty host: every interface).
	Addr string
	// Advertise is the HOST:PORT given to clients that connect on this listener and
	// registered under Name for other nodes (advertised.listeners, else Addr, with
	// this host's name when Addr has no host).
	Advertise string
	// Protocol is one of the Protocol constants (listener.security.protocol.map).
	Protocol string
	// Keystore is the PEM file holding the listener's certificate chain and private key
	// (ssl.keystore.location); set on every TLS listener.
	Keystore Setting
	// Truststore is the PEM file of CA certificates that client certificates (and, for
	// the inter-broker listener, other nodes' certificates) are checked against
	// (ssl.truststore.location); "" on a listener that does not use one.
	Truststore Setting
	// ClientAuth is ssl.client.auth on a TLS listener: none, requested or required.
	ClientAuth Setting
	// SaslMechanisms are the mechanisms a SASL listener offers (sasl.enabled.mechanisms).
	SaslMechanisms []string
}

// Setting is the effective value of a property on one listener and the key it came from
// (listener.name.<name>.<property> or the property itself), for error messages.
type Setting struct {
	Value string
	Key   string
}

// IsTLS reports whether the listener speaks TLS (SSL, SASL_SSL).
func (l Listener) IsTLS() bool { return l.Protocol == ProtocolSSL || l.Protocol == ProtocolSaslSSL }

// IsSASL reports whether clients must authenticate with SASL first (SASL_PLAINTEXT,
// SASL_SSL).
func (l Listener) IsSASL() bool {
	return l.Protocol == ProtocolSaslPlaintext || l.Protocol == ProtocolSaslSSL
}

// InterBroker returns the listener nodes use to reach each other (inter.broker.listener.name).
func (b *Broker) InterBroker() Listener {
	for _, l := range b.Listeners {
		if l.Name == b.InterBrokerListener {
			return l
		}
	}
	return b.Listeners[0] // unreachable: deriveListeners checks the name
}

// perListener reports whether a property may be overridden for one listener.
func (p *prop) perListener() bool {
	return strings.HasPrefix(p.name, "ssl.") || p.name == "sasl.enabled.mechanisms"
}

// lookupProp finds the table row of a broker property, including a per-listener
// override (listener.name.<name>.<property>, whose row is the property's). canonical is
// key with the listener name in lower case, as Kafka spells it.
func lookupProp(key string) (p *prop, canonical string, ok bool) {
	if p, ok := brokerByName[key]; ok {
		return p, key, true
	}
	rest, found := strings.CutPrefix(key, listenerPrefix)
	if !found {
		return nil, key, false
	}
	name, prop, found := strings.Cut(rest, ".")
	if !found || name == "" {
		return nil, key, false
	}
	if p, ok := brokerByName[prop]; ok && p.perListener() {
		return p, listenerPrefix + strings.ToLower(name) + "." + prop, true
	}
	return nil, key, false
}

// listenerSetting is prop's value on the listener named name: its
// listener.name.<name>.<prop> override if set, else prop's own value.
func (b *Broker) listenerSetting(name, prop string) Setting {
	key := listenerPrefix + strings.ToLower(name) + "." + prop
	if v, ok := b.Raw[key]; ok {
		return Setting{Value: v, Key: key}
	}
	return Setting{Value: b.Raw[prop], Key: prop}
}

// listenerEntry is one entry of Kafka's listeners or advertised.listeners: NAME://HOST:PORT.
type listenerEntry struct {
	name, addr string
}

func parseListeners(v string) ([]listenerEntry, string) {
	var out []listenerEntry
	seen := map[string]bool{}
	for _, e := range splitList(v) {
		name, addr, ok := strings.Cut(e, "://")
		if !ok || name == "" {
			return nil, fmt.Sprintf("has %q; expected NAME://HOST:PORT", e)
		}
		if strings.ContainsAny(name, ". ") {
			return nil, fmt.Sprintf("has %q, whose listener name has a dot or a space", e)
		}
		if r := hostPort(addr); r != "" {
			return nil, fmt.Sprintf("has %q, whose address %s", e, r)
		}
		name = strings.ToUpper(name)
		if seen[name] {
			return nil, fmt.Sprintf("has the listener name %s twice", name)
		}
		seen[name] = true
		out = append(out, listenerEntry{name: name, addr: addr})
	}
	return out, ""
}

func checkListeners(v string) string {
	_, reason := parseListeners(v)
	return reason
}

// checkProtocolMap accepts Kafka's listener.security.protocol.map: NAME:PROTOCOL,...
func checkProtocolMap(v string) string {
	seen := map[string]bool{}
	for _, e := range splitList(v) {
		name, proto, ok := strings.Cut(e, ":")
		name = strings.ToUpper(strings.TrimSpace(name))
		if !ok || name == "" {
			return fmt.Sprintf("has %q; expected NAME:PROTOCOL", e)
		}
		if r := oneOf(protocols...)(strings.ToUpper(strings.TrimSpace(proto))); r != "" {
			return fmt.Sprintf("has %q, whose protocol %s", e, r)
		}
		if seen[name] {
			return fmt.Sprintf("maps the listener name %s twice", name)
		}
		seen[name] = true
	}
	return ""
}

// securityProtocol maps a listener name through listener.security.protocol.map. A name
// absent from the map is its own protocol when it is a protocol's name (PLAINTEXT,
// SASL_SSL, ...), as in Kafka; ok is false otherwise.
func (b *Broker) securityProtocol(name string) (string, bool) {
	for _, e := range splitList(b.Raw["listener.security.protocol.map"]) {
		n, p, _ := strings.Cut(e, ":")
		if strings.EqualFold(strings.TrimSpace(n), name) {
			return strings.ToUpper(strings.TrimSpace(p)), true
		}
	}
	for _, p := range protocols {
		if strings.EqualFold(p, name) {
			return p, true
		}
	}
	return "", false
}

func (b *Broker) isControllerListener(name string) bool {
	for _, n := range splitList(b.Raw["controller.listener.names"]) {
		if strings.EqualFold(n, name) {
			return true
		}
	}
	return false
}

// later reports whether the property kafka was set, and at or after runnel: of a Kafka
// key and the Runnel key it feeds, the one set later wins.
func (b *Broker) later(kafka, runnel string) bool {
	ks, ok := b.explicit[kafka]
	return ok && ks >= b.explicit[runnel]
}

// deriveListeners sets Listeners, InterBrokerListener, Listen and Advertise, and
// checks every rule between the listener properties.
func (b *Broker) deriveListeners() error {
	ls, err := b.listenerAddrs()
	if err != nil {
		return err
	}
	for i := range ls {
		if err := b.secureListener(&ls[i]); err != nil {
			return err
		}
	}
	b.Listeners = ls
	if err := b.checkControllerProtocol(); err != nil {
		return err
	}
	if err := b.deriveInterBroker(); err != nil {
		return err
	}
	if err := b.checkListenerOverrides(); err != nil {
		return err
	}
	// Raw shows the effective values, as DescribeConfigs reports them.
	b.Listen, b.Advertise = ls[0].Addr, ls[0].Advertise
	b.Raw["listen"], b.Raw["advertise"] = b.Listen, b.Advertise
	return nil
}

// listenerAddrs gives each Kafka listener its name, addresses and protocol: the
// non-controller entries of listeners when it was set after listen, else listen as one
// PLAINTEXT listener; advertised.listeners (or advertise, for the first listener, when
// set after it) gives the advertised addresses.
func (b *Broker) listenerAddrs() ([]Listener, error) {
	var ls []Listener
	if b.later("listeners", "listen") {
		entries, _ := parseListeners(b.Raw["listeners"])
		for _, e := range entries {
			if !b.isControllerListener(e.name) {
				ls = append(ls, Listener{Name: e.name, Addr: e.addr})
			}
		}
	}
	if len(ls) == 0 {
		ls = []Listener{{Name: ProtocolPlaintext, Addr: b.Raw["listen"], Protocol: ProtocolPlaintext}}
	}
	for i := range ls {
		if ls[i].Protocol != "" {
			continue
		}
		p, ok := b.securityProtocol(ls[i].Name)
		if !ok {
			return nil, invalid("listener.security.protocol.map", b.Raw["listener.security.protocol.map"],
				fmt.Sprintf("has no entry for listener %s (in listeners); add %s:PROTOCOL", ls[i].Name, ls[i].Name))
		}
		ls[i].Protocol = p
	}
	advertised := map[string]string{}
	if b.Explicit("advertised.listeners") {
		entries, _ := parseListeners(b.Raw["advertised.listeners"])
		for _, e := range entries {
			if !b.isControllerListener(e.name) && !hasListener(ls, e.name) {
				return nil, invalid("advertised.listeners", b.Raw["advertised.listeners"],
					fmt.Sprintf("advertises listener %s, which listeners does not have", e.name))
			}
			advertised[e.name] = e.addr
		}
	}
	if b.Explicit("advertise") && !b.later("advertised.listeners", "advertise") {
		advertised[ls[0].Name] = b.Raw["advertise"]
	}
	for i := range ls {
		if a, ok := advertised[ls[i].Name]; ok {
			ls[i].Advertise = a
		} else {
			ls[i].Advertise = advertiseFor(ls[i].Addr)
		}
	}
	return ls, nil
}

func hasListener(ls []Listener, name string) bool {
	for _, l := range ls {
		if l.Name == name {
			return true
		}
	}
	return false
}

// secureListener fills l's TLS and SASL settings and checks that a TLS listener has a
// certificate and that a listener verifying client certificates has CAs to verify them.
func (b *Broker) secureListener(l *Listener) error {
	l.SaslMechanisms = splitList(b.listenerSetting(l.Name, "sasl.enabled.mechanisms").Value)
	if !l.IsTLS() {
		return nil
	}
	l.Keystore = b.listenerSetting(l.Name, "ssl.keystore.location")
	l.Truststore = b.listenerSetting(l.Name, "ssl.truststore.location")
	l.ClientAuth = b.listenerSetting(l.Name, "ssl.client.auth")
	if l.Keystore.Value == "" {
		return invalid(l.Keystore.Key, "", fmt.Sprintf("is not set, but listener %s (%s) needs a certificate and key: "+
			"set ssl.keystore.location or %s to a PEM file holding both", l.Name, l.Protocol, listenerKey(l.Name, "ssl.keystore.location")))
	}
	if l.ClientAuth.Value != ClientAuthNone && l.Truststore.Value == "" {
		return invalid(l.Truststore.Key, "", fmt.Sprintf("is not set, but listener %s has %s=%s: set it to a PEM file of the CAs "+
			"that sign client certificates", l.Name, l.ClientAuth.Key, l.ClientAuth.Value))
	}
	return nil
}

// listenerKey is prop's per-listener override key on the listener named name.
func listenerKey(name, prop string) string {
	return listenerPrefix + strings.ToLower(name) + "." + prop
}

// checkControllerProtocol refuses a controller listener mapped to anything but
// PLAINTEXT: the Raft transport has no TLS.
func (b *Broker) checkControllerProtocol() error {
	for _, n := range splitList(b.Raw["controller.listener.names"]) {
		if p, ok := b.securityProtocol(n); ok && p != ProtocolPlaintext {
			return invalid("listener.security.protocol.map", b.Raw["listener.security.protocol.map"],
				fmt.Sprintf("maps the controller listener %s to %s; Runnel's metadata quorum (Raft) listener serves PLAINTEXT only", n, p))
		}
	}
	return nil
}

// deriveInterBroker resolves inter.broker.listener.name (unset: the listener named
// PLAINTEXT, Kafka's default security.inter.broker.protocol) and checks that nodes can
// log in on it. This also keeps a node whose every listener is SASL from starting with
// no user anyone could log in as: its inter-broker listener is then SASL, and
// inter.broker.sasl.username is created at start-up.
func (b *Broker) deriveInterBroker() error {
	name, set := b.Raw["inter.broker.listener.name"]
	name = strings.ToUpper(strings.TrimSpace(name))
	if !set {
		if !hasListener(b.Listeners, ProtocolPlaintext) {
			return invalid("inter.broker.listener.name", "", "is not set and no listener is named PLAINTEXT: "+
				"name the listener nodes use to reach each other")
		}
		name = ProtocolPlaintext
	}
	if !hasListener(b.Listeners, name) {
		return invalid("inter.broker.listener.name", b.Raw["inter.broker.listener.name"], "names no listener in listeners")
	}
	b.InterBrokerListener = name
	l := b.InterBroker()
	if !l.IsSASL() {
		return nil
	}
	if b.Raw["inter.broker.sasl.username"] == "" || b.Raw["inter.broker.sasl.password"] == "" {
		return invalid("inter.broker.sasl.username", b.Raw["inter.broker.sasl.username"],
			fmt.Sprintf("and inter.broker.sasl.password must be set: the inter-broker listener %s is %s", l.Name, l.Protocol))
	}
	mech := b.Raw["sasl.mechanism.inter.broker.protocol"]
	for _, m := range l.SaslMechanisms {
		if m == mech {
			return nil
		}
	}
	return invalid("sasl.mechanism.inter.broker.protocol", mech,
		fmt.Sprintf("is not enabled on the inter-broker listener %s (%s)", l.Name, strings.Join(l.SaslMechanisms, ",")))
}

// checkListenerOverrides refuses a listener.name.<name>.* key naming no listener: a
// misspelt name would otherwise leave the listener with the defaults unnoticed.
func (b *Broker) checkListenerOverrides() error {
	for k := range b.explicit {
		rest, ok := strings.CutPrefix(k, listenerPrefix)
		if !ok {
			continue
		}
		name, _, _ := strings.Cut(rest, ".")
		if !hasListener(b.Listeners, strings.ToUpper(name)) {
			return invalid(k, b.Raw[k], fmt.Sprintf("overrides listener %s, which listeners does not have", strings.ToUpper(name)))
		}
	}
	return nil
}
