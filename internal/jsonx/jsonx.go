// Package jsonx scans and decodes large JSON documents faster than
// encoding/json, with encoding/json's semantics.
//
// What it accepts, encoding/json accepts, and what it decodes, encoding/json
// decodes to the same values. It exists for the write call, which carries its
// file as one JSON string of up to tens of megabytes. The front and boxsh-init
// would otherwise each scan that string with encoding/json several times over.
//
// Its functions report ok false for anything they do not handle exactly as
// encoding/json does: invalid JSON, numbers out of range, nesting deeper than
// encoding/json allows. The caller then uses encoding/json, which gives its
// usual errors.
package jsonx

import (
	"bytes"
	"math/bits"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"
	"unsafe"
)

// Large is the size from which callers take the fast paths: below it
// encoding/json is fast enough, and its exact behaviour needs no argument.
const Large = 64 << 10

// maxDepth is encoding/json's nesting limit.
const maxDepth = 10000

const (
	lsb = 0x0101010101010101
	msb = 0x8080808080808080
)

// hasZero has the high bit set in each byte of v that is zero (and maybe in
// bytes above a zero byte, which only makes the word fail the fast test).
func hasZero(v uint64) uint64 { return (v - lsb) & ^v & msb }

// skipString returns the index after the string that starts with the quote
// at b[i], and whether it holds a backslash escape.
func skipString(b []byte, i int) (end int, escaped, ok bool) {
	i++
	n := len(b)
	p := unsafe.Pointer(unsafe.SliceData(b))
	for {
		// Skip eight bytes at a time that hold no quote, backslash or
		// control character. Bytes >= 0x80 pass: encoding/json does not
		// check UTF-8 while scanning. (x-0x20*lsb)&^x&msb flags bytes
		// below 0x20 among those below 0x80 (bytes >= 0x80 are masked out
		// by ^x); it may flag more after a true one, never fewer.
		for i+8 <= n {
			x := *(*uint64)(unsafe.Add(p, i))
			if ((x-0x20*lsb)&^x&msb)|hasZero(x^('"'*lsb))|hasZero(x^('\\'*lsb)) != 0 {
				break
			}
			i += 8
		}
		for i < n && inString[b[i]] {
			i++
		}
		if i >= n {
			return 0, false, false
		}
		switch b[i] {
		case '"':
			return i + 1, escaped, true
		case '\\':
			escaped = true
			if i+1 >= n {
				return 0, false, false
			}
			switch c := b[i+1]; {
			case unescaped[c] != 0:
				i += 2
			case c == 'u':
				if i+6 > n || !isHex4(b[i+2:i+6]) {
					return 0, false, false
				}
				i += 6
			default:
				return 0, false, false
			}
		default: // a control character
			return 0, false, false
		}
	}
}

func isHex4(b []byte) bool {
	for _, c := range b[:4] {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F') {
			return false
		}
	}
	return true
}

// skipKey returns the index after the string that starts with the quote
// at b[i], checked unless trusted.
func skipKey(b []byte, i int, trusted bool) (int, bool) {
	if trusted {
		return skipValidString(b, i)
	}
	end, _, ok := skipString(b, i)
	return end, ok
}

// closingQuote returns the index of the quote that ends a string whose
// contents start at b[i]: the first quote after an even run of
// backslashes (an odd run escapes it). If the string is valid JSON this is
// its end; -1 if there is none. It is found with bytes.IndexByte, faster
// than skipString's check of every byte. Where quotes are escaped, as in
// source code, which is dense with them, it takes blocks of 64 bytes at a
// time instead (see quoteInBlocks).
func closingQuote(b []byte, i int) int {
	for {
		j := bytes.IndexByte(b[i:], '"')
		if j < 0 {
			return -1
		}
		j += i
		k := j
		for k > i && b[k-1] == '\\' {
			k--
		}
		if (j-k)%2 == 0 {
			return j
		}
		var done bool
		if j, done = quoteInBlocks(b, j+1); done {
			return j
		}
		i = j
	}
}

// inString tells the bytes that stand for themselves in a JSON string:
// all but the quote, the backslash and control characters.
var inString = func() (t [256]bool) {
	for c := 0x20; c < 256; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

// unescaped maps the character after a backslash to what the escape
// stands for, but for u (and invalid ones): 0.
var unescaped = [256]byte{'"': '"', '\\': '\\', '/': '/', 'b': '\b', 'f': '\f', 'n': '\n', 'r': '\r', 't': '\t'}

// oddBits has the odd bits of a word set.
const oddBits = 0xAAAAAAAAAAAAAAAA

// quoteInBlocks looks for the quote that ends a string from b[i] on, 64 bytes
// at a time. That quote is one escaped by no backslash.
//
// It returns the quote's index with done, or -1 with done at the end of b.
// After a few blocks without a quote, it returns the index from which to go
// on, not done.
func quoteInBlocks(b []byte, i int) (j int, done bool) {
	p := unsafe.Pointer(unsafe.SliceData(b))
	var carry uint64 // 1 if the byte at i is escaped
	quiet := 0       // blocks in a row without a quote
	for i+64 <= len(b) {
		quotes, backslashes := blockMasks(unsafe.Add(p, i))
		// The escaped bytes: the second of each pair in a run of
		// backslashes, and the byte after an odd run (the carry from the
		// block before counts).
		escaped := carry
		carry = 0
		if backslashes != 0 {
			starts := backslashes &^ escaped
			code := ((starts<<1 | oddBits) - starts) ^ oddBits
			escaped = code ^ (backslashes | escaped)
			carry = (code & backslashes) >> 63
		}
		if q := quotes &^ escaped; q != 0 {
			return i + bits.TrailingZeros64(q), true
		}
		i += 64
		if quotes == 0 && carry == 0 {
			if quiet++; quiet == 4 {
				return i, false
			}
		} else {
			quiet = 0
		}
	}
	for ; i < len(b); i++ {
		switch {
		case carry != 0:
			carry = 0
		case b[i] == '\\':
			carry = 1
		case b[i] == '"':
			return i, true
		}
	}
	return -1, true
}

// blockMasks returns the masks of the quotes and backslashes among the
// 64 bytes at p: bit k for byte k.
func blockMasks(p unsafe.Pointer) (quotes, backslashes uint64) {
	for w := 0; w < 64; w += 8 {
		x := *(*uint64)(unsafe.Add(p, w))
		quotes |= packHigh(zeroBytes(x^('"'*lsb))) << w
		backslashes |= packHigh(zeroBytes(x^('\\'*lsb))) << w
	}
	return quotes, backslashes
}

// zeroBytes has the high bit set in each byte of x that is zero, and no
// other bit.
func zeroBytes(x uint64) uint64 {
	const low7 = 0x7f7f7f7f7f7f7f7f
	return ^((x&low7 + low7) | x | low7)
}

// packHigh packs the high bits of the bytes of m, its only bits, into
// its low byte: the high bit of byte k into bit k.
func packHigh(m uint64) uint64 { return (m >> 7) * 0x0102040810204080 >> 56 }

// skipValidString returns the index after the string that starts with
// the quote at b[i], which is known to be valid: it is not checked.
func skipValidString(b []byte, i int) (int, bool) {
	j := closingQuote(b, i+1)
	return j + 1, j >= 0
}

// skipSpace returns the index of the first byte from i on that is not
// JSON white space.
func skipSpace(b []byte, i int) int {
	for i < len(b) {
		switch b[i] {
		case ' ', '\t', '\n', '\r':
			i++
		default:
			return i
		}
	}
	return i
}

// colon skips the colon after an object's key, which ends at b[i], and
// the space around it.
func colon(b []byte, i int) (int, bool) {
	i = skipSpace(b, i)
	if i >= len(b) || b[i] != ':' {
		return 0, false
	}
	return skipSpace(b, i+1), true
}

// afterElement skips what follows an element of an object or array that
// ends at b[i]: a comma and the space after it, to the next element
// (more), or the closing bracket (not more).
func afterElement(b []byte, i int, closing byte) (next int, more, ok bool) {
	i = skipSpace(b, i)
	switch {
	case i >= len(b):
		return 0, false, false
	case b[i] == closing:
		return i + 1, false, true
	case b[i] == ',':
		return skipSpace(b, i+1), true, true
	}
	return 0, false, false
}

// skipNumber returns the index after the JSON number at b[i].
func skipNumber(b []byte, i int) (int, bool) {
	if i < len(b) && b[i] == '-' {
		i++
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case i < len(b) && '1' <= b[i] && b[i] <= '9':
		i = skipDigits(b, i)
	default:
		return 0, false
	}
	if i < len(b) && b[i] == '.' {
		start := i + 1
		if i = skipDigits(b, start); i == start {
			return 0, false
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		start := i
		if i = skipDigits(b, i); i == start {
			return 0, false
		}
	}
	return i, true
}

// skipDigits returns the index after the decimal digits at b[i].
func skipDigits(b []byte, i int) int {
	for i < len(b) && '0' <= b[i] && b[i] <= '9' {
		i++
	}
	return i
}

// skipValue returns the index after the JSON value at b[i] (no leading
// space). With trusted, b is known to be valid JSON: strings are skipped
// without being checked (see skipValidString).
func skipValue(b []byte, i, depth int, trusted bool) (int, bool) {
	if i >= len(b) {
		return 0, false
	}
	switch c := b[i]; {
	case c == '"':
		if trusted {
			return skipValidString(b, i)
		}
		end, _, ok := skipString(b, i)
		return end, ok
	case c == '{' || c == '[':
		if depth >= maxDepth {
			return 0, false
		}
		closing := byte('}')
		if c == '[' {
			closing = ']'
		}
		i = skipSpace(b, i+1)
		if i < len(b) && b[i] == closing {
			return i + 1, true
		}
		for {
			var ok bool
			if c == '{' {
				if i >= len(b) || b[i] != '"' {
					return 0, false
				}
				if i, ok = skipKey(b, i, trusted); !ok {
					return 0, false
				}
				if i, ok = colon(b, i); !ok {
					return 0, false
				}
			}
			if i, ok = skipValue(b, i, depth+1, trusted); !ok {
				return 0, false
			}
			more := false
			if i, more, ok = afterElement(b, i, closing); !ok || !more {
				return i, ok
			}
		}
	case c == '-' || '0' <= c && c <= '9':
		return skipNumber(b, i)
	case c == 't':
		return literal(b, i, "true")
	case c == 'f':
		return literal(b, i, "false")
	case c == 'n':
		return literal(b, i, "null")
	}
	return 0, false
}

func literal(b []byte, i int, word string) (int, bool) {
	if len(b)-i >= len(word) && string(b[i:i+len(word)]) == word {
		return i + len(word), true
	}
	return 0, false
}

// Valid reports whether b is one valid JSON value, with optional white
// space around it, as json.Valid does.
func Valid(b []byte) bool {
	i := skipSpace(b, 0)
	i, ok := skipValue(b, i, 0, false)
	return ok && skipSpace(b, i) == len(b)
}

// Member is one member of a JSON object: its key, decoded, and its value,
// raw.
type Member struct {
	Key   string
	Value []byte
	// str and escaped tell that Value is a valid string, and whether it
	// holds an escape; unchecked that it is a string MembersOfValid did
	// not check.
	str, escaped, unchecked bool
}

// String decodes the member's value as Unquote does, without checking it
// again if Members checked it; ok is false if it is not a string.
func (m Member) String() (s string, ok bool) {
	if m.unchecked {
		return Unquote(m.Value)
	}
	if !m.str {
		return "", false
	}
	return unquoteValid(m.Value[1:len(m.Value)-1], m.escaped), true
}

// Members returns the members of the JSON object b, in order (duplicates
// included), checking that b is one valid JSON value with optional white
// space around it. ok is false if b is not a valid object.
func Members(b []byte) (members []Member, ok bool) { return objectMembers(b, false) }

// MembersOfValid is Members for a b known to be valid JSON: one that
// Members, Valid or encoding/json accepted, or a value in one. It does not
// check b again, so it finds the ends of strings faster. ok is false if b
// is not an object. On a b that is not valid JSON its result is
// meaningless, but it does not fail otherwise.
func MembersOfValid(b []byte) (members []Member, ok bool) { return objectMembers(b, true) }

// objectMembers is Members, and MembersOfValid if trusted.
func objectMembers(b []byte, trusted bool) (members []Member, ok bool) {
	i := skipSpace(b, 0)
	if i >= len(b) || b[i] != '{' {
		return nil, false
	}
	i = skipSpace(b, i+1)
	if i < len(b) && b[i] == '}' {
		return members, skipSpace(b, i+1) == len(b)
	}
	for {
		if i >= len(b) || b[i] != '"' {
			return nil, false
		}
		end, escaped, ok := skipString(b, i)
		if !ok {
			return nil, false
		}
		key := unquoteValid(b[i+1:end-1], escaped)
		if i, ok = colon(b, end); !ok {
			return nil, false
		}
		var vend int
		str, escaped, unchecked := i < len(b) && b[i] == '"', false, false
		switch {
		case str && trusted:
			vend, ok = skipValidString(b, i)
			str, unchecked = false, true
		case str:
			vend, escaped, ok = skipString(b, i)
		default:
			vend, ok = skipValue(b, i, 1, trusted)
		}
		if !ok {
			return nil, false
		}
		members = append(members, Member{Key: key, Value: b[i:vend], str: str, escaped: escaped, unchecked: unchecked})
		more := false
		if i, more, ok = afterElement(b, vend, '}'); !ok {
			return nil, false
		}
		if !more {
			return members, skipSpace(b, i) == len(b)
		}
	}
}

// Unquote decodes the JSON string s (quotes included) as json.Unmarshal
// decodes it into a string: escapes resolved, a lone UTF-16 surrogate and
// every byte of invalid UTF-8 turned into U+FFFD. ok is false if s is not
// one valid JSON string.
func Unquote(s []byte) (string, bool) {
	if len(s) < 2 || s[0] != '"' {
		return "", false
	}
	end, escaped, ok := skipString(s, 0)
	if !ok || end != len(s) {
		return "", false
	}
	return unquoteValid(s[1:len(s)-1], escaped), true
}

// unquoteValid decodes the contents of a valid JSON string (quotes
// removed) that holds a backslash escape if escaped.
func unquoteValid(s []byte, escaped bool) string {
	if !escaped && utf8.Valid(s) {
		return string(s)
	}
	out := make([]byte, 0, len(s))
	start, i := 0, 0
	p := unsafe.Pointer(unsafe.SliceData(s))
	for i < len(s) {
		// Skip eight bytes of ASCII without a backslash at a time.
		for i+8 <= len(s) {
			if x := *(*uint64)(unsafe.Add(p, i)); (x&msb)|hasZero(x^('\\'*lsb)) != 0 {
				break
			}
			i += 8
		}
		if i >= len(s) {
			break
		}
		for i < len(s) && s[i] < utf8.RuneSelf && s[i] != '\\' {
			i++
		}
		if i >= len(s) {
			break
		}
		if s[i] >= utf8.RuneSelf {
			r, size := utf8.DecodeRune(s[i:])
			if r == utf8.RuneError && size == 1 {
				out = append(out, s[start:i]...)
				out = utf8.AppendRune(out, utf8.RuneError)
				start = i + 1
			}
			i += size
			continue
		}
		out = append(out, s[start:i]...)
		if c := unescaped[s[i+1]]; c != 0 {
			out = append(out, c)
			i += 2
		} else { // \u, the only other escape of a valid string
			var r rune
			r, i = unicodeEscape(s, i)
			out = utf8.AppendRune(out, r)
		}
		start = i
	}
	out = append(out, s[start:]...)
	return unsafe.String(unsafe.SliceData(out), len(out))
}

// StringMember is a member of a JSON object whose value is a string: its
// key and value, decoded.
type StringMember struct{ Key, Value string }

// StringMembers decodes the JSON object b whose values are all strings:
// its members in order (duplicates included), keys and values decoded as
// Unquote decodes them. It checks b as it decodes it, in one pass over
// each string where Members and Member.String take three (finding its
// end, checking, decoding; a write's content is tens of megabytes). ok is
// false if b is not one valid JSON object with optional white space around
// it, or if a value is not a string.
func StringMembers(b []byte) (members []StringMember, ok bool) {
	i := skipSpace(b, 0)
	if i >= len(b) || b[i] != '{' {
		return nil, false
	}
	i = skipSpace(b, i+1)
	if i < len(b) && b[i] == '}' {
		return members, skipSpace(b, i+1) == len(b)
	}
	// Every string into one buffer of b's size: a decoding is never
	// longer than its JSON text, but for invalid UTF-8 (each byte of it
	// becomes three, and the buffer then grows).
	d := stringDecoder{out: make([]byte, 0, len(b))}
	for {
		var m StringMember
		var end int
		if i >= len(b) || b[i] != '"' {
			return nil, false
		}
		if m.Key, end, ok = d.decode(b, i); !ok {
			return nil, false
		}
		if i, ok = colon(b, end); !ok || i >= len(b) || b[i] != '"' {
			return nil, false
		}
		if m.Value, end, ok = d.decode(b, i); !ok {
			return nil, false
		}
		members = append(members, m)
		more := false
		if i, more, ok = afterElement(b, end, '}'); !ok {
			return nil, false
		}
		if !more {
			return members, skipSpace(b, i) == len(b)
		}
	}
}

// UnquotePrefix decodes the JSON string at the start of b as Unquote
// does, and returns its length in b. ok is false if b does not start with
// a valid JSON string.
func UnquotePrefix(b []byte) (s string, n int, ok bool) {
	if len(b) == 0 || b[0] != '"' {
		return "", 0, false
	}
	var d stringDecoder
	return d.decode(b, 0)
}

// stringDecoder decodes JSON strings, checking them, one after the other
// into out. The strings it returns refer to out, which it never changes
// but appends to (a new array when it grows: the strings returned keep
// the old one).
type stringDecoder struct{ out []byte }

// decode checks and decodes the JSON string that starts with the quote at
// b[i] as unquoteValid does, in one pass, and returns the index after it.
func (d *stringDecoder) decode(b []byte, i int) (string, int, bool) {
	out := d.out
	first := len(out)
	i++
	start, n := i, len(b)
	p := unsafe.Pointer(unsafe.SliceData(b))
	for {
		// Skip eight bytes of printable ASCII other than a quote or a
		// backslash at a time. ((x-0x20*lsb)|x)&msb flags bytes below
		// 0x20 and from 0x80 on (and maybe bytes above a flagged one).
		for i+8 <= n {
			x := *(*uint64)(unsafe.Add(p, i))
			if ((x-0x20*lsb)|x)&msb|hasZero(x^('"'*lsb))|hasZero(x^('\\'*lsb)) != 0 {
				break
			}
			i += 8
		}
		for i < n && inString[b[i]] && b[i] < utf8.RuneSelf {
			i++
		}
		if i >= n {
			return "", 0, false
		}
		c := b[i]
		switch {
		case c == '"':
			out = append(out, b[start:i]...)
			d.out = out
			if len(out) == first {
				return "", i + 1, true
			}
			return unsafe.String(&out[first], len(out)-first), i + 1, true
		case c < 0x20:
			return "", 0, false
		case c >= utf8.RuneSelf:
			// A sequence cut short by the closing quote is invalid here
			// as in the string alone: a quote is no continuation byte.
			// (As in unquoteValid, but written out: a call here, even
			// one rarely made, slowed this loop on text dense with
			// escapes.)
			r, size := utf8.DecodeRune(b[i:])
			if r == utf8.RuneError && size == 1 {
				out = append(out, b[start:i]...)
				out = utf8.AppendRune(out, utf8.RuneError)
				start = i + 1
			}
			i += size
			continue
		}
		// A backslash.
		if i+1 >= n {
			return "", 0, false
		}
		if run := i - start; run <= 8 && start+8 <= n && cap(out)-len(out) >= 8 {
			// A short run, as in text dense with escapes: one word
			// copied, cheaper than a call of memmove.
			l := len(out)
			out = out[:l+8]
			*(*uint64)(unsafe.Pointer(&out[l])) = *(*uint64)(unsafe.Add(p, start))
			out = out[:l+run]
		} else {
			out = append(out, b[start:i]...)
		}
		if c := unescaped[b[i+1]]; c != 0 {
			out = append(out, c)
			i += 2
			start = i
			continue
		}
		if b[i+1] != 'u' || i+6 > n || !isHex4(b[i+2:i+6]) {
			return "", 0, false
		}
		var r rune
		r, i = unicodeEscape(b, i)
		out = utf8.AppendRune(out, r)
		start = i
	}
}

// unicodeEscape decodes the \uXXXX escape at b[i], whose four digits are hex,
// as encoding/json does. It returns the rune and the index after what it used.
//
// A surrogate is paired with the escape that follows if that is its other
// half. Otherwise it stands for U+FFFD, and an invalid escape after it is left
// for the caller to refuse.
func unicodeEscape(b []byte, i int) (rune, int) {
	r := hex4(b[i+2 : i+6])
	i += 6
	if !utf16.IsSurrogate(r) {
		return r, i
	}
	r2 := rune(-1)
	if i+6 <= len(b) && b[i] == '\\' && b[i+1] == 'u' && isHex4(b[i+2:i+6]) {
		r2 = hex4(b[i+2 : i+6])
	}
	if dec := utf16.DecodeRune(r, r2); dec != utf8.RuneError {
		return dec, i + 6
	}
	return utf8.RuneError, i
}

func hex4(b []byte) rune {
	var r rune
	for _, c := range b[:4] {
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c = c - 'a' + 10
		default:
			c = c - 'A' + 10
		}
		r = r<<4 | rune(c)
	}
	return r
}

// DecodeAny decodes the JSON value b as json.Unmarshal decodes it into an any.
//
// Objects become map[string]any (the last of duplicate keys wins), arrays
// []any, and numbers float64. When keepRaw is positive, strings of at least
// keepRaw bytes of JSON are checked but not decoded or copied: they are
// returned as their JSON text, quotes included, and refer to b. ok is false if
// b is not valid JSON or holds a number out of float64's range.
func DecodeAny(b []byte, keepRaw int) (v any, ok bool) {
	return decoder{keepRaw: keepRaw}.decode(b)
}

// DecodeAnyOfValid is DecodeAny for a b known to be valid JSON (see
// MembersOfValid). The strings it returns as their JSON text are not
// checked again, so their ends are found faster. On a b that is not valid
// JSON its result is meaningless, but it does not fail otherwise.
func DecodeAnyOfValid(b []byte, keepRaw int) (v any, ok bool) {
	return decoder{keepRaw: keepRaw, trusted: true}.decode(b)
}

// decoder holds DecodeAny's options: trusted, that the text is known to
// be valid.
type decoder struct {
	keepRaw int
	trusted bool
}

// decode decodes the JSON text b.
func (d decoder) decode(b []byte) (v any, ok bool) {
	i := skipSpace(b, 0)
	v, i, ok = d.value(b, i, 0)
	if !ok || skipSpace(b, i) != len(b) {
		return nil, false
	}
	return v, true
}

// value decodes the JSON value at b[i] (no leading space) and returns the
// index after it.
func (d decoder) value(b []byte, i, depth int) (any, int, bool) {
	if i >= len(b) {
		return nil, 0, false
	}
	switch c := b[i]; {
	case c == '"':
		if d.trusted && d.keepRaw > 0 {
			if end, ok := skipValidString(b, i); ok && end-i >= d.keepRaw {
				return unsafe.String(&b[i], end-i), end, true
			}
		}
		end, escaped, ok := skipString(b, i)
		if !ok {
			return nil, 0, false
		}
		if d.keepRaw > 0 && end-i >= d.keepRaw {
			return unsafe.String(&b[i], end-i), end, true
		}
		return unquoteValid(b[i+1:end-1], escaped), end, true
	case c == '{' || c == '[':
		if depth >= maxDepth {
			return nil, 0, false
		}
		var m map[string]any
		var a []any
		closing := byte(']')
		if c == '{' {
			m, closing = map[string]any{}, '}'
		} else {
			a = []any{}
		}
		i = skipSpace(b, i+1)
		if i < len(b) && b[i] == closing {
			if m != nil {
				return m, i + 1, true
			}
			return a, i + 1, true
		}
		for {
			var key string
			if m != nil {
				if i >= len(b) || b[i] != '"' {
					return nil, 0, false
				}
				end, escaped, ok := skipString(b, i)
				if !ok {
					return nil, 0, false
				}
				key = unquoteValid(b[i+1:end-1], escaped)
				if i, ok = colon(b, end); !ok {
					return nil, 0, false
				}
			}
			v, next, ok := d.value(b, i, depth+1)
			if !ok {
				return nil, 0, false
			}
			if m != nil {
				m[key] = v
			} else {
				a = append(a, v)
			}
			more := false
			if i, more, ok = afterElement(b, next, closing); !ok {
				return nil, 0, false
			}
			if !more {
				if m != nil {
					return m, i, true
				}
				return a, i, true
			}
		}
	case c == '-' || '0' <= c && c <= '9':
		end, ok := skipNumber(b, i)
		if !ok {
			return nil, 0, false
		}
		f, err := strconv.ParseFloat(unsafe.String(&b[i], end-i), 64)
		return f, end, err == nil
	default:
		end, ok := skipValue(b, i, depth, false) // a literal
		if !ok {
			return nil, 0, false
		}
		switch c {
		case 't':
			return true, end, true
		case 'f':
			return false, end, true
		}
		return nil, end, true
	}
}
