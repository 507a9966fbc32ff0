package config

import (
	"errors"
	"maps"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestParseProperties(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want map[string]string
	}{
		{"empty", "", map[string]string{}},
		{"comments and blanks", "# a comment\n! another\n\n   \n  # indented comment\nk=v\n", map[string]string{"k": "v"}},
		{"equals", "num.partitions=3", map[string]string{"num.partitions": "3"}},
		{"colon", "num.partitions: 3", map[string]string{"num.partitions": "3"}},
		{"blank separator", "num.partitions 3", map[string]string{"num.partitions": "3"}},
		{"spaces around equals", "  a  =  b c  \n", map[string]string{"a": "b c"}},
		{"second separator is value", "a==b", map[string]string{"a": "=b"}},
		{"colon in value", "listeners=PLAINTEXT://:9092", map[string]string{"listeners": "PLAINTEXT://:9092"}},
		{"key only", "flag", map[string]string{"flag": ""}},
		{"empty value", "broker.rack=", map[string]string{"broker.rack": ""}},
		{"crlf", "a=1\r\nb=2\r\n", map[string]string{"a": "1", "b": "2"}},
		{"last duplicate wins", "a=1\na=2", map[string]string{"a": "2"}},
		{"continuation", "listeners=PLAINTEXT://:9092,\\\n    CONTROLLER://:9093\n", map[string]string{"listeners": "PLAINTEXT://:9092,CONTROLLER://:9093"}},
		{"continuation of three lines", "a=1\\\n 2\\\n\t3\n", map[string]string{"a": "123"}},
		{"continued line starting with hash is not a comment", "a=x\\\n#y\n", map[string]string{"a": "x#y"}},
		{"comment does not continue", "# c \\\na=1", map[string]string{"a": "1"}},
		{"even backslashes do not continue", "a=x\\\\\nb=2", map[string]string{"a": `x\`, "b": "2"}},
		{"backslash at end of input", "a=x\\", map[string]string{"a": "x"}},
		{"escaped separator in key", `a\=b=c`, map[string]string{"a=b": "c"}},
		{"escaped colon and space in key", `a\:b\ c=d`, map[string]string{"a:b c": "d"}},
		{"escapes in value", `a=x\ty\u0041\\z`, map[string]string{"a": "x\tyA\\z"}},
		{"windows path", `log.dirs=C:\\kafka\\data`, map[string]string{"log.dirs": `C:\kafka\data`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseProperties(strings.NewReader(tt.in))
			if err != nil {
				t.Fatalf("ParseProperties: %v", err)
			}
			if !maps.Equal(got, tt.want) {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

func TestParsePropertiesMalformedEscape(t *testing.T) {
	for _, in := range []string{`a=\u12`, `a=\uzzzz`, `k\u1=v`} {
		_, err := ParseProperties(strings.NewReader(in))
		var e *Error
		if !errors.As(err, &e) || !errors.Is(err, ErrInvalidConfig) {
			t.Errorf("%q: got %v, want an *Error of class ErrInvalidConfig", in, err)
		}
	}
}

// escapeProperty writes s so that ParseProperties reads it back exactly.
func escapeProperty(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch r {
		case '\\', '=', ':', ' ', '#', '!':
			b.WriteByte('\\')
			b.WriteRune(r)
		case '\t':
			b.WriteString(`\t`)
		case '\n':
			b.WriteString(`\n`)
		case '\r':
			b.WriteString(`\r`)
		case '\f':
			b.WriteString(`\f`)
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// FuzzParseProperties checks that any key and value written with escapes reads back as
// written (values trimmed), alone and between other lines, and that arbitrary input
// never panics.
func FuzzParseProperties(f *testing.F) {
	f.Add("a", "b")
	f.Add("log.dirs", `C:\data`)
	f.Add("k=1", "x\\")
	f.Add("#k", " v ")
	f.Add("", "")
	f.Fuzz(func(t *testing.T, key, value string) {
		_, _ = ParseProperties(strings.NewReader(key + "\n" + value))
		if key == "" || !utf8.ValidString(key) || !utf8.ValidString(value) {
			return // an empty key is not written; invalid UTF-8 does not round-trip
		}
		in := "x=1\n" + escapeProperty(key) + "=" + escapeProperty(value) + "\ny:2\n"
		got, err := ParseProperties(strings.NewReader(in))
		if err != nil {
			t.Fatalf("%q: %v", in, err)
		}
		want := strings.TrimSpace(value)
		if key == "x" || key == "y" {
			return
		}
		if got[key] != want || got["x"] != "1" || got["y"] != "2" || len(got) != 3 {
			t.Fatalf("%q: got %q, want %q=%q", in, got, key, want)
		}
	})
}
