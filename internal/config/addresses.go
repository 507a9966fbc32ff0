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

// applyKafkaAddresses copies the controller entry of Kafka's listeners and
// controller.quorum.voters onto Runnel's controller.listen and controllers, when they
// were set at or after the Runnel key. The Kafka listeners are derived in
// deriveListeners (listeners.go).
func (b *Broker) applyKafkaAddresses() {
	type feed struct {
		kafka, runnel string
		pick          func(string) string // the value for runnel, "" for none
	}
	feeds := []feed{
		{"listeners", "controller.listen", b.controllerListener},
		{"controller.quorum.voters", "controllers", func(v string) string { return v }},
	}
	for _, f := range feeds {
		if !b.later(f.kafka, f.runnel) {
			continue
		}
		if v := f.pick(b.Raw[f.kafka]); v != "" {
			b.Raw[f.runnel], b.explicit[f.runnel] = v, b.explicit[f.kafka]
		}
	}
}

// controllerListener picks the entry named by controller.listener.names, if any.
func (b *Broker) controllerListener(v string) string {
	ls, _ := parseListeners(v)
	for _, l := range ls {
		if b.isControllerListener(l.name) {
			return l.addr
		}
	}
	return ""
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
