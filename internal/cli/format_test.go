package cli

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

func testRecord() *kgo.Record {
	return &kgo.Record{
		Topic: "orders", Partition: 3, Offset: 42,
		Key: []byte("k1"), Value: []byte("hello"),
		Timestamp: time.UnixMilli(1700000000123),
		Headers:   []kgo.RecordHeader{{Key: "a", Value: []byte("1")}, {Key: "b", Value: []byte("2")}},
	}
}

func TestFormatRecord(t *testing.T) {
	tests := []struct {
		spec string
		rec  func(*kgo.Record)
		want string
	}{
		{spec: defaultFormat, want: "hello\n"},
		{spec: `%t/%p@%o`, want: "orders/3@42"},
		{spec: `%k=%s`, want: "k1=hello"},
		{spec: `%T`, want: "1700000000123"},
		{spec: `[%h]`, want: "[a=1,b=2]"},
		{spec: `[%h]`, rec: func(r *kgo.Record) { r.Headers = nil }, want: "[]"},
		{spec: `%K %S`, want: "2 5"},
		{spec: `%K %S`, rec: func(r *kgo.Record) { r.Key, r.Value = nil, nil }, want: "-1 -1"},
		{spec: `%K %S`, rec: func(r *kgo.Record) { r.Key, r.Value = []byte{}, []byte{} }, want: "0 0"},
		{spec: `%k`, rec: func(r *kgo.Record) { r.Key = nil }, want: ""},
		{spec: `a\tb\r\n\\\0`, want: "a\tb\r\n\\\x00"},
		{spec: `100%%`, want: "100%"},
		{spec: ``, want: ""},
		{spec: `plain`, want: "plain"},
		{spec: `%s%s`, want: "hellohello"},
	}
	for _, tt := range tests {
		t.Run(tt.spec, func(t *testing.T) {
			f, err := compileFormat(tt.spec)
			if err != nil {
				t.Fatalf("compileFormat(%q): %v", tt.spec, err)
			}
			r := testRecord()
			if tt.rec != nil {
				tt.rec(r)
			}
			if got := string(f.AppendRecord(nil, r)); got != tt.want {
				t.Errorf("format %q = %q, want %q", tt.spec, got, tt.want)
			}
		})
	}
}

func TestFormatErrors(t *testing.T) {
	for _, spec := range []string{`%`, `\`, `%x`, `\q`, `abc%`, `%s\`} {
		if _, err := compileFormat(spec); err == nil {
			t.Errorf("compileFormat(%q) succeeded, want an error", spec)
		}
	}
}

func TestFormatAllocs(t *testing.T) {
	f, err := compileFormat(`%t %p %o %k %s %T %h %K %S\n`)
	if err != nil {
		t.Fatal(err)
	}
	r := testRecord()
	buf := make([]byte, 0, 1024)
	allocs := testing.AllocsPerRun(100, func() {
		buf = f.AppendRecord(buf[:0], r)
	})
	if allocs != 0 {
		t.Errorf("AppendRecord allocates %.1f times per record, want 0", allocs)
	}
}
