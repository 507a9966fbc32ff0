package config

import (
	"fmt"
	"math"
	"net"
	"strconv"
	"strings"
)

// Type is a property's value type. The numbers are Kafka's DescribeConfigs ConfigType
// (KIP-569), so a handler can put them on the wire as they are.
type Type int8

// Kafka's config types.
const (
	TypeBoolean  Type = 1
	TypeString   Type = 2
	TypeInt      Type = 3 // 32 bits
	TypeShort    Type = 4 // 16 bits
	TypeLong     Type = 5 // 64 bits
	TypeDouble   Type = 6
	TypeList     Type = 7 // comma-separated
	TypeClass    Type = 8
	TypePassword Type = 9 // never shown by DescribeConfigs
)

var typeNames = [...]string{"UNKNOWN", "BOOLEAN", "STRING", "INT", "SHORT", "LONG", "DOUBLE", "LIST", "CLASS", "PASSWORD"}

// String is Kafka's name for the type: BOOLEAN, STRING, INT, ...
func (t Type) String() string {
	if t < 0 || int(t) >= len(typeNames) {
		return typeNames[0]
	}
	return typeNames[t]
}

// longMax is Java's Long.MAX_VALUE, Kafka's "no limit" for LONG settings.
const longMax = "9223372036854775807"

// checkType says why v is not a value of type t, or "" if it is one.
func checkType(t Type, v string) string {
	switch t {
	case TypeBoolean:
		if _, ok := parseBool(v); !ok {
			return "is not a boolean (true or false)"
		}
	case TypeInt, TypeShort, TypeLong:
		bits := map[Type]int{TypeInt: 32, TypeShort: 16, TypeLong: 64}[t]
		if _, err := strconv.ParseInt(v, 10, bits); err != nil {
			if strings.Contains(err.Error(), "range") {
				return fmt.Sprintf("does not fit in %d bits", bits)
			}
			return "is not an integer"
		}
	case TypeDouble:
		if f, err := strconv.ParseFloat(v, 64); err != nil || math.IsNaN(f) {
			return "is not a number"
		}
	}
	return ""
}

// parseBool accepts true and false in any case, as Kafka does.
func parseBool(v string) (bool, bool) {
	switch strings.ToLower(v) {
	case "true":
		return true, true
	case "false":
		return false, true
	}
	return false, false
}

// splitList splits a LIST value on commas, trimming each element and dropping empty ones.
func splitList(v string) []string {
	var out []string
	for _, s := range strings.Split(v, ",") {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}

// A checker says why an already type-checked value is not acceptable, or "" if it is.
type checker func(v string) string

func atLeast(min int64) checker {
	return func(v string) string {
		if n, _ := strconv.ParseInt(v, 10, 64); n < min {
			return fmt.Sprintf("is less than the minimum %d", min)
		}
		return ""
	}
}

func between(min, max int64) checker {
	return func(v string) string {
		if n, _ := strconv.ParseInt(v, 10, 64); n < min || n > max {
			return fmt.Sprintf("is out of range [%d, %d]", min, max)
		}
		return ""
	}
}

func betweenFloat(min, max float64) checker {
	return func(v string) string {
		if f, _ := strconv.ParseFloat(v, 64); f < min || f > max {
			return fmt.Sprintf("is out of range [%g, %g]", min, max)
		}
		return ""
	}
}

func oneOf(allowed ...string) checker {
	return func(v string) string {
		for _, a := range allowed {
			if v == a {
				return ""
			}
		}
		return "is not one of " + strings.Join(allowed, ", ")
	}
}

// listOf accepts a non-empty list whose elements are all allowed.
func listOf(allowed ...string) checker {
	one := oneOf(allowed...)
	return func(v string) string {
		elems := splitList(v)
		if len(elems) == 0 {
			return "is empty; it must list some of " + strings.Join(allowed, ", ")
		}
		for _, e := range elems {
			if one(e) != "" {
				return fmt.Sprintf("has %q, which is not one of %s", e, strings.Join(allowed, ", "))
			}
		}
		return ""
	}
}

// gzipLevel accepts -1 (the codec's default) or 1..9, as Kafka's compression.gzip.level.
func gzipLevel(v string) string {
	if n, _ := strconv.ParseInt(v, 10, 64); n == -1 || (n >= 1 && n <= 9) {
		return ""
	}
	return "is not -1 or in [1, 9]"
}

// hostPort accepts HOST:PORT with a numeric port; HOST may be empty (all interfaces).
func hostPort(v string) string {
	host, port, err := net.SplitHostPort(v)
	if err != nil || strings.ContainsAny(host, " ,@/") {
		return "is not HOST:PORT"
	}
	if n, err := strconv.ParseUint(port, 10, 16); err != nil || (n == 0 && port != "0") {
		return "has an invalid port"
	}
	return ""
}

// singleDir accepts one directory: Runnel keeps all its data in one place.
func singleDir(v string) string {
	switch dirs := splitList(v); {
	case len(dirs) == 0:
		return "names no directory"
	case len(dirs) > 1:
		return "names more than one directory; Runnel uses one data directory"
	}
	return ""
}

// throttledReplicas accepts Kafka's (leader|follower).replication.throttled.replicas:
// empty, "*", or a list of PARTITION:BROKER pairs.
func throttledReplicas(v string) string {
	if strings.TrimSpace(v) == "*" {
		return ""
	}
	for _, e := range splitList(v) {
		p, b, ok := strings.Cut(e, ":")
		_, err1 := strconv.ParseInt(strings.TrimSpace(p), 10, 32)
		_, err2 := strconv.ParseInt(strings.TrimSpace(b), 10, 32)
		if !ok || err1 != nil || err2 != nil {
			return fmt.Sprintf("has %q; expected * or PARTITION:BROKER,...", e)
		}
	}
	return ""
}

// principalList accepts super.users: principals Type:Name separated by semicolons
// (spaces around each and empty entries ignored), as internal/auth.ParseSuperUsers
// reads them, so that a malformed value fails at start-up naming the entry.
func principalList(v string) string {
	for _, p := range strings.Split(v, ";") {
		p = strings.TrimSpace(p)
		if p == "" {
			continue
		}
		if typ, name, ok := strings.Cut(p, ":"); !ok || typ == "" || name == "" {
			return fmt.Sprintf("has %q, which is not a principal of the form Type:Name (e.g. User:alice)", p)
		}
	}
	return ""
}
