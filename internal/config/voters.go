package config

import (
	"fmt"
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
