package config

import (
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
)

// Voter is one member of the metadata quorum, as given by --controllers or Kafka's
// controller.quorum.voters: "ID@HOST:PORT".
type Voter struct {
	ID   int32  // the voter's node.id; >= 0
	Addr string // its controller listener, HOST:PORT
}

// String gives the voter back in the ID@HOST:PORT form it was parsed from.
func (v Voter) String() string { return fmt.Sprintf("%d@%s", v.ID, v.Addr) }

// ParseVoters parses "1@host:port,2@host:port". An empty string gives no voters, which
// means "this node alone". Ids and addresses must be unique. The error is an *Error for
// the key "controllers".
func ParseVoters(s string) ([]Voter, error) {
	vs, reason := parseVoters(s)
	if reason != "" {
		return nil, invalid("controllers", s, reason)
	}
	return vs, nil
}

func parseVoters(s string) ([]Voter, string) {
	var out []Voter
	ids := map[int32]bool{}
	addrs := map[string]bool{}
	for _, e := range splitList(s) {
		idStr, addr, ok := strings.Cut(e, "@")
		id, err := strconv.ParseInt(strings.TrimSpace(idStr), 10, 32)
		if !ok || err != nil || id < 0 {
			return nil, fmt.Sprintf("has %q; expected ID@HOST:PORT with ID >= 0", e)
		}
		addr = strings.TrimSpace(addr)
		if r := hostPort(addr); r != "" {
			return nil, fmt.Sprintf("has %q, whose address %s", e, r)
		}
		if ids[int32(id)] || addrs[addr] {
			return nil, fmt.Sprintf("has %q twice", e)
		}
		ids[int32(id)], addrs[addr] = true, true
		out = append(out, Voter{ID: int32(id), Addr: addr})
	}
	return out, ""
}

func checkVoters(v string) string {
	_, reason := parseVoters(v)
	return reason
}

// listener is one entry of Kafka's listeners or advertised.listeners: NAME://HOST:PORT.
type listener struct {
	name, addr string
}

func parseListeners(v string) ([]listener, string) {
	var out []listener
	seen := map[string]bool{}
	for _, e := range splitList(v) {
		name, addr, ok := strings.Cut(e, "://")
		if !ok || name == "" {
			return nil, fmt.Sprintf("has %q; expected NAME://HOST:PORT", e)
		}
		if r := hostPort(addr); r != "" {
			return nil, fmt.Sprintf("has %q, whose address %s", e, r)
		}
		name = strings.ToUpper(name)
		if seen[name] {
			return nil, fmt.Sprintf("has the listener name %s twice", name)
		}
		seen[name] = true
		out = append(out, listener{name: name, addr: addr})
	}
	return out, ""
}

func checkListeners(v string) string {
	_, reason := parseListeners(v)
	return reason
}

// checkProtocolMap accepts Kafka's listener.security.protocol.map: NAME:PROTOCOL,...
func checkProtocolMap(v string) string {
	for _, e := range splitList(v) {
		name, proto, ok := strings.Cut(e, ":")
		if !ok || strings.TrimSpace(name) == "" {
			return fmt.Sprintf("has %q; expected NAME:PROTOCOL", e)
		}
		if r := oneOf("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")(strings.ToUpper(strings.TrimSpace(proto))); r != "" {
			return fmt.Sprintf("has %q, whose protocol %s", e, r)
		}
	}
	return ""
}

// applyKafkaAddresses copies Kafka's listeners, advertised.listeners and
// controller.quorum.voters onto Runnel's listen, controller.listen, advertise and
// controllers, when they were set at or after the Runnel key.
func (b *Broker) applyKafkaAddresses() error {
	type feed struct {
		kafka, runnel string
		pick          func(string) (string, string) // value for runnel, or a reason
	}
	feeds := []feed{
		{"listeners", "listen", b.clientListener},
		{"listeners", "controller.listen", b.controllerListener},
		{"advertised.listeners", "advertise", b.clientListener},
		{"controller.quorum.voters", "controllers", func(v string) (string, string) { return v, "" }},
	}
	for _, f := range feeds {
		ks, ok := b.explicit[f.kafka]
		if !ok || ks < b.explicit[f.runnel] {
			continue
		}
		v, reason := f.pick(b.Raw[f.kafka])
		if reason != "" {
			return invalid(f.kafka, b.Raw[f.kafka], reason)
		}
		if v != "" {
			b.Raw[f.runnel], b.explicit[f.runnel] = v, ks
		}
	}
	return nil
}

// clientListener picks the one entry of a listeners list that is not a controller
// listener; it must be PLAINTEXT, the only protocol Runnel serves.
func (b *Broker) clientListener(v string) (string, string) {
	ls, _ := parseListeners(v)
	var addrs []string
	for _, l := range ls {
		if b.isControllerListener(l.name) {
			continue
		}
		if p := b.securityProtocol(l.name); p != "PLAINTEXT" {
			return "", fmt.Sprintf("has listener %s with protocol %s; Runnel serves PLAINTEXT only", l.name, p)
		}
		addrs = append(addrs, l.addr)
	}
	if len(addrs) > 1 {
		return "", "has more than one client listener; Runnel serves one"
	}
	if len(addrs) == 0 {
		return "", ""
	}
	return addrs[0], ""
}

// controllerListener picks the entry named by controller.listener.names, if any.
func (b *Broker) controllerListener(v string) (string, string) {
	ls, _ := parseListeners(v)
	for _, l := range ls {
		if b.isControllerListener(l.name) {
			return l.addr, ""
		}
	}
	return "", ""
}

func (b *Broker) isControllerListener(name string) bool {
	for _, n := range splitList(b.Raw["controller.listener.names"]) {
		if strings.EqualFold(n, name) {
			return true
		}
	}
	return false
}

// securityProtocol maps a listener name through listener.security.protocol.map; a name
// not in the map is its own protocol, as in Kafka.
func (b *Broker) securityProtocol(name string) string {
	for _, e := range splitList(b.Raw["listener.security.protocol.map"]) {
		n, p, _ := strings.Cut(e, ":")
		if strings.EqualFold(strings.TrimSpace(n), name) {
			return strings.ToUpper(strings.TrimSpace(p))
		}
	}
	return name
}

// hostname is os.Hostname, replaceable in tests.
var hostname = os.Hostname

// advertiseFor gives the address to advertise for a listen address. A listener on all
// interfaces (":9092", "0.0.0.0:9092") cannot be dialled as such, so, as Kafka does, it
// is advertised under this host's name.
func advertiseFor(listen string) string {
	host, port, err := net.SplitHostPort(listen)
	if err != nil {
		return listen
	}
	if ip := net.ParseIP(host); host != "" && (ip == nil || !ip.IsUnspecified()) {
		return listen
	}
	h, err := hostname()
	if err != nil || h == "" {
		h = "localhost"
	}
	return net.JoinHostPort(h, port)
}
