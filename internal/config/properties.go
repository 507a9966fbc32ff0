package config

import (
	"bufio"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// ParseProperties reads the subset of Java's .properties format that server.properties
// files use:
//
//   - lines whose first non-blank character is # or ! are comments; blank lines are skipped;
//   - a key ends at the first unescaped '=', ':' or blank; blanks and one '=' or ':' after
//     it are skipped, and the rest of the line is the value, trimmed;
//   - a line ending in an odd number of backslashes continues on the next line, whose
//     leading blanks are dropped;
//   - backslash escapes: \t \n \r \f, \uXXXX, and \ before any other character stands
//     for that character (so "\=", "\:", "\ ", "\\").
//
// A key given twice keeps its last value. The only error is a malformed \u escape, as an
// *Error naming the key.
func ParseProperties(r io.Reader) (map[string]string, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64*1024), 16<<20)
	props := map[string]string{}
	var logical strings.Builder
	continuing := false
	for sc.Scan() {
		line := sc.Text()
		if continuing {
			line = strings.TrimLeft(line, " \t\f")
		} else {
			line = strings.TrimLeft(line, " \t\f")
			if line == "" || line[0] == '#' || line[0] == '!' {
				continue
			}
		}
		continuing = trailingBackslashes(line)%2 == 1
		if continuing {
			logical.WriteString(line[:len(line)-1])
			continue
		}
		logical.WriteString(line)
		if err := addProperty(props, logical.String()); err != nil {
			return nil, err
		}
		logical.Reset()
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("config: reading properties: %w", err)
	}
	if continuing { // a backslash on the last line continues into nothing
		return props, addProperty(props, logical.String())
	}
	return props, nil
}

func trailingBackslashes(s string) int {
	n := 0
	for n < len(s) && s[len(s)-1-n] == '\\' {
		n++
	}
	return n
}

// addProperty splits one logical line into key and value and stores them.
func addProperty(props map[string]string, line string) error {
	rawKey, rawValue := splitKeyValue(line)
	key, ok := unescape(rawKey)
	if !ok {
		return invalid(rawKey, rawValue, `has a malformed \uXXXX escape in its key`)
	}
	value, ok := unescape(rawValue)
	if !ok {
		return invalid(key, rawValue, `has a malformed \uXXXX escape`)
	}
	props[key] = strings.TrimSpace(value)
	return nil
}

// splitKeyValue cuts a logical line at the first unescaped '=', ':' or blank, then skips
// blanks and at most one '=' or ':' before the value. Both halves are still escaped.
func splitKeyValue(line string) (key, value string) {
	i := 0
	for ; i < len(line); i++ {
		c := line[i]
		if c == '\\' {
			i++
			continue
		}
		if c == '=' || c == ':' || c == ' ' || c == '\t' || c == '\f' {
			break
		}
	}
	if i > len(line) {
		i = len(line)
	}
	key, rest := line[:i], line[i:]
	rest = strings.TrimLeft(rest, " \t\f")
	if rest != "" && (rest[0] == '=' || rest[0] == ':') {
		rest = strings.TrimLeft(rest[1:], " \t\f")
	}
	return key, rest
}

// unescape resolves backslash escapes; ok is false for a malformed \uXXXX.
func unescape(s string) (string, bool) {
	if !strings.Contains(s, `\`) {
		return s, true
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '\\' || i+1 == len(s) {
			b.WriteByte(s[i])
			continue
		}
		i++
		switch c := s[i]; c {
		case 't':
			b.WriteByte('\t')
		case 'n':
			b.WriteByte('\n')
		case 'r':
			b.WriteByte('\r')
		case 'f':
			b.WriteByte('\f')
		case 'u':
			if i+5 > len(s) {
				return "", false
			}
			r, err := strconv.ParseUint(s[i+1:i+5], 16, 16)
			if err != nil {
				return "", false
			}
			b.WriteRune(rune(r))
			i += 4
		default:
			b.WriteByte(c)
		}
	}
	return b.String(), true
}
