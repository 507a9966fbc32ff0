package console

import (
	"bytes"
	"errors"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/runnel-io/runnel/internal/offsetspec"
)

// The reset positions are the CLI's (runnel group reset-offsets --to).
func TestParsePosition(t *testing.T) {
	at := time.Date(2026, 1, 2, 15, 4, 5, 0, time.UTC).UnixMilli()
	for _, c := range []struct {
		in   string
		want offsetspec.Spec
	}{
		{"earliest", offsetspec.Spec{Kind: offsetspec.Earliest}},
		{"beginning", offsetspec.Spec{Kind: offsetspec.Earliest}},
		{"latest", offsetspec.Spec{Kind: offsetspec.Latest}},
		{"end", offsetspec.Spec{Kind: offsetspec.Latest}},
		{"current", offsetspec.Spec{Kind: offsetspec.Current}},
		{"42", offsetspec.Spec{Kind: offsetspec.Exact, N: 42}},
		{"@1700000000000", offsetspec.Spec{Kind: offsetspec.Timestamp, N: 1700000000000}},
		{"@2026-01-02T15:04:05Z", offsetspec.Spec{Kind: offsetspec.Timestamp, N: at}},
		{"2026-01-02T15:04:05Z", offsetspec.Spec{Kind: offsetspec.Timestamp, N: at}},
	} {
		got, err := parsePosition(c.in)
		if err != nil || got != c.want {
			t.Errorf("parsePosition(%q) = %+v, %v; want %+v", c.in, got, err, c.want)
		}
	}
	// After @, a time is RFC 3339 (as the CLI's --to takes it); one without a zone
	// is local time only without the @.
	for _, in := range []string{"", "-1", "yesterday", "@-5", "2026-13-45T99:00", "@2026-01-02T15:04"} {
		if _, err := parsePosition(in); !errors.Is(err, ErrBadRequest) {
			t.Errorf("parsePosition(%q): %v, want a bad request", in, err)
		}
	}
}

// Text stays text, other bytes go as base64, and a produced record's fields decode
// back to the same bytes.
func TestRecordBytesRoundTrip(t *testing.T) {
	for _, c := range []struct {
		b   []byte
		enc string
	}{{[]byte("plain"), ""}, {[]byte(`{"a":"é"}`), ""}, {[]byte{}, ""}, {[]byte{0xff, 0x00, 0xfe}, "base64"}} {
		s, enc := encodeBytes(c.b)
		if enc != c.enc {
			t.Errorf("encodeBytes(%x): encoding %q, want %q", c.b, enc, c.enc)
		}
		back, err := decodeBytes("value", s, enc)
		if err != nil || !bytes.Equal(back, c.b) {
			t.Errorf("decodeBytes(encodeBytes(%x)) = %x, %v", c.b, back, err)
		}
	}
	if s, enc := encodeBytes(nil); s != nil || enc != "" {
		t.Errorf("encodeBytes(nil) = %v, %q; want null", s, enc)
	}
	bad := "not base64!"
	if _, err := decodeBytes("key", &bad, "base64"); !errors.Is(err, ErrBadRequest) {
		t.Errorf("decodeBytes of bad base64: %v, want a bad request", err)
	}
	if _, err := decodeBytes("key", &bad, "hex"); !errors.Is(err, ErrBadRequest) {
		t.Errorf("decodeBytes with encoding hex: %v, want a bad request", err)
	}
}

// The filter looks in the key, the value and the headers' keys and values.
func TestMatches(t *testing.T) {
	r := &kgo.Record{Key: []byte("order-7"), Value: []byte{0x01, 'x', 'y'}, Headers: []kgo.RecordHeader{{Key: "trace", Value: []byte("abc")}}}
	for text, want := range map[string]bool{"order": true, "xy": true, "trace": true, "abc": true, "zzz": false} {
		if got := matches(r, []byte(text)); got != want {
			t.Errorf("matches(%q) = %v, want %v", text, got, want)
		}
	}
}
