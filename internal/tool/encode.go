package tool

import (
	"strconv"
	"unicode/utf8"
	"unsafe"
)

// safeASCII marks the bytes that stand for themselves inside a JSON string.
var safeASCII = func() (t [utf8.RuneSelf]bool) {
	for c := 0x20; c < utf8.RuneSelf; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

const hexDigits = "0123456789abcdef"

const (
	lsb = 0x0101010101010101
	msb = 0x8080808080808080
)

// plain8 reports whether the eight bytes in x need no
// escaping: all ASCII, none a control character, a quote or a backslash.
func plain8(x uint64) bool {
	hasZero := func(v uint64) uint64 { return (v - lsb) & ^v & msb }
	return (x&msb)|((x-0x20*lsb)&^x&msb)|hasZero(x^('"'*lsb))|hasZero(x^('\\'*lsb)) == 0
}

// plainPrefix returns how many bytes of s from i on, in whole words of
// eight, need no escaping. It loads eight bytes at a time (the order of
// the bytes in the word does not matter to plain8).
func plainPrefix(s string, i int) int {
	p := unsafe.Pointer(unsafe.StringData(s))
	j := i
	for j+8 <= len(s) && plain8(*(*uint64)(unsafe.Add(p, j))) {
		j += 8
	}
	return j
}

// AppendQuoted appends s to dst as a JSON string. Invalid UTF-8 becomes
// U+FFFD, so command output of any bytes gives valid JSON. It copies runs
// of plain text at once, which makes it faster than encoding/json on large
// outputs (see docs/perf.md).
func AppendQuoted(dst []byte, s string) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		// Skip eight plain ASCII bytes at a time.
		i = plainPrefix(s, i)
		if i >= len(s) {
			break
		}
		c := s[i]
		if c < utf8.RuneSelf {
			if safeASCII[c] {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch c {
			case '"', '\\':
				dst = append(dst, '\\', c)
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
			i++
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\u202`...)
			dst = append(dst, hexDigits[r&0xf])
			i += size
			start = i
			continue
		}
		i += size
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

// AppendJSON appends o as a JSON object, as encoding/json would write it
// but without its per-byte cost on large outputs.
func (o BashOutput) AppendJSON(b []byte) []byte {
	b = append(b, `{"exit_code":`...)
	b = strconv.AppendInt(b, int64(o.ExitCode), 10)
	b = append(b, `,"stdout":`...)
	b = AppendQuoted(b, o.Stdout)
	b = append(b, `,"stderr":`...)
	b = AppendQuoted(b, o.Stderr)
	b = append(b, `,"duration_ms":`...)
	b = strconv.AppendInt(b, o.DurationMS, 10)
	if o.StdoutTruncated {
		b = append(b, `,"stdout_truncated":true`...)
	}
	if o.StderrTruncated {
		b = append(b, `,"stderr_truncated":true`...)
	}
	if o.Signal != "" {
		b = append(b, `,"signal":`...)
		b = AppendQuoted(b, o.Signal)
	}
	if o.ID != "" {
		b = append(b, `,"id":`...)
		b = AppendQuoted(b, o.ID)
		b = append(b, `,"pid":`...)
		b = strconv.AppendInt(b, int64(o.PID), 10)
	}
	if len(o.NetworkRefusals) > 0 {
		b = AppendRefusals(b, o.NetworkRefusals)
	}
	return append(b, '}')
}

// EncodeStructured encodes a CallToolResult whose structuredContent is the
// already encoded JSON object sc and whose one text block is sc's text (the
// shape boxsh v3 gives bash results).
func EncodeStructured(sc []byte, isError bool) []byte {
	b := make([]byte, 0, 2*len(sc)+len(sc)/8+96)
	b = append(b, `{"content":[{"type":"text","text":`...)
	b = AppendQuoted(b, string(sc))
	b = append(b, `}],"structuredContent":`...)
	b = append(b, sc...)
	if isError {
		b = append(b, `,"isError":true`...)
	}
	return append(b, '}')
}
