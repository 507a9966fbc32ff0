package cli

import (
	"fmt"
	"strconv"

	"github.com/twmb/franz-go/pkg/kgo"
)

// defaultFormat prints each record's value on its own line, like kafka-console-consumer.
const defaultFormat = `%s\n`

// fieldKind is one kcat --format token.
type fieldKind uint8

const (
	fieldLiteral   fieldKind = iota // literal text between tokens
	fieldTopic                      // %t
	fieldPartition                  // %p
	fieldOffset                     // %o
	fieldKey                        // %k
	fieldValue                      // %s
	fieldTimestamp                  // %T, milliseconds since the epoch
	fieldHeaders                    // %h, k=v,k=v
	fieldKeyLen                     // %K, -1 for a null key
	fieldValueLen                   // %S, -1 for a null value
)

var formatTokens = map[byte]fieldKind{
	't': fieldTopic, 'p': fieldPartition, 'o': fieldOffset, 'k': fieldKey, 's': fieldValue,
	'T': fieldTimestamp, 'h': fieldHeaders, 'K': fieldKeyLen, 'S': fieldValueLen,
}

var formatEscapes = map[byte]byte{'n': '\n', 't': '\t', 'r': '\r', '\\': '\\', '0': 0}

// formatPart is a literal (kind fieldLiteral, text in lit) or one record field.
type formatPart struct {
	kind fieldKind
	lit  []byte
}

// recordFormat renders records per a kcat-compatible --format spec. It is compiled once;
// AppendRecord allocates nothing beyond growing the caller's buffer.
type recordFormat struct {
	parts []formatPart
}

// compileFormat parses spec: %t %p %o %k %s %T %h %K %S and %% for a percent sign;
// \n \t \r \\ \0 escapes. Any other % or \ sequence is an error.
func compileFormat(spec string) (*recordFormat, error) {
	f := &recordFormat{}
	var lit []byte
	for i := 0; i < len(spec); i++ {
		c := spec[i]
		if c != '%' && c != '\\' {
			lit = append(lit, c)
			continue
		}
		if i+1 == len(spec) {
			return nil, fmt.Errorf("format %q: dangling %q at the end", spec, c)
		}
		i++
		next := spec[i]
		switch {
		case c == '%' && next == '%':
			lit = append(lit, '%')
		case c == '%':
			kind, ok := formatTokens[next]
			if !ok {
				return nil, fmt.Errorf("format %q: unknown token %%%c", spec, next)
			}
			f.parts, lit = f.flush(lit), nil
			f.parts = append(f.parts, formatPart{kind: kind})
		default:
			b, ok := formatEscapes[next]
			if !ok {
				return nil, fmt.Errorf("format %q: unknown escape \\%c", spec, next)
			}
			lit = append(lit, b)
		}
	}
	f.parts = f.flush(lit)
	return f, nil
}

func (f *recordFormat) flush(lit []byte) []formatPart {
	if len(lit) == 0 {
		return f.parts
	}
	return append(f.parts, formatPart{kind: fieldLiteral, lit: lit})
}

// AppendRecord appends r rendered by the format to dst.
func (f *recordFormat) AppendRecord(dst []byte, r *kgo.Record) []byte {
	for i := range f.parts {
		dst = appendPart(dst, &f.parts[i], r)
	}
	return dst
}

func appendPart(dst []byte, p *formatPart, r *kgo.Record) []byte {
	switch p.kind {
	case fieldLiteral:
		return append(dst, p.lit...)
	case fieldTopic:
		return append(dst, r.Topic...)
	case fieldPartition:
		return strconv.AppendInt(dst, int64(r.Partition), 10)
	case fieldOffset:
		return strconv.AppendInt(dst, r.Offset, 10)
	case fieldKey:
		return append(dst, r.Key...)
	case fieldValue:
		return append(dst, r.Value...)
	case fieldTimestamp:
		return strconv.AppendInt(dst, r.Timestamp.UnixMilli(), 10)
	case fieldHeaders:
		return appendHeaders(dst, r.Headers)
	case fieldKeyLen:
		return appendLen(dst, r.Key)
	case fieldValueLen:
		return appendLen(dst, r.Value)
	}
	return dst
}

// appendLen appends len(b), or -1 for a null (nil) key or value as kcat does.
func appendLen(dst, b []byte) []byte {
	if b == nil {
		return append(dst, "-1"...)
	}
	return strconv.AppendInt(dst, int64(len(b)), 10)
}

func appendHeaders(dst []byte, hs []kgo.RecordHeader) []byte {
	for i := range hs {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = append(dst, hs[i].Key...)
		dst = append(dst, '=')
		dst = append(dst, hs[i].Value...)
	}
	return dst
}
