package initproto

// validObject reports whether b is exactly one JSON object, with nothing but
// white space around it and no line break anywhere.
//
// That is what the front may splice into a response as a result. A line break
// is white space to JSON, but it ends a message on the newline-delimited stdio
// transport and a line of a server-sent event. So a result holding one could
// carry a whole forged message on a line of its own. encoding/json never
// writes one.
//
// Otherwise validObject checks the grammar of RFC 8259, as json.Valid does,
// without building anything. It skips over the bytes of strings, which make up
// nearly all of a large result, in a tight loop; json.Valid is too slow for
// results of tens of megabytes (see docs/perf.md). Nesting is tracked on a
// stack of its own, so deep input cannot exhaust the goroutine's.
func validObject(b []byte) bool {
	i := skipSpace(b, 0)
	if i >= len(b) || b[i] != '{' {
		return false
	}
	var buf [32]byte
	stack := buf[:0] // the open '{' and '['
	for {
		// A value starts at i.
		i = skipSpace(b, i)
		if i >= len(b) {
			return false
		}
		switch c := b[i]; c {
		case '{', '[':
			j := skipSpace(b, i+1)
			if j < len(b) && b[j] == c+2 { // '}' and ']' follow '{' and '[' by two
				i = j + 1
				break
			}
			stack = append(stack, c)
			i = j
			if c == '{' {
				if i = member(b, i); i < 0 {
					return false
				}
			}
			continue
		case '"':
			i = scanString(b, i)
		case 't':
			i = literal(b, i, "true")
		case 'f':
			i = literal(b, i, "false")
		case 'n':
			i = literal(b, i, "null")
		default:
			i = scanNumber(b, i)
		}
		if i < 0 {
			return false
		}
		// After a value: the containers it ends, then a comma and the
		// next value of the innermost one, or the end.
		for {
			i = skipSpace(b, i)
			if len(stack) == 0 {
				return i == len(b)
			}
			if i >= len(b) {
				return false
			}
			top := stack[len(stack)-1]
			if b[i] == top+2 {
				stack = stack[:len(stack)-1]
				i++
				continue
			}
			if b[i] != ',' {
				return false
			}
			i++
			if top == '{' {
				if i = member(b, skipSpace(b, i)); i < 0 {
					return false
				}
			}
			break
		}
	}
}

// member scans an object member's name and colon at i, returning the
// index after the colon, or -1.
func member(b []byte, i int) int {
	if i >= len(b) || b[i] != '"' {
		return -1
	}
	if i = scanString(b, i); i < 0 {
		return -1
	}
	if i = skipSpace(b, i); i >= len(b) || b[i] != ':' {
		return -1
	}
	return i + 1
}

// skipSpace skips the white space validObject allows: blanks and tabs.
func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t') {
		i++
	}
	return i
}

// plain marks the bytes a string holds as they are: all but the quote,
// the backslash and the control characters.
var plain = func() (t [256]bool) {
	for c := 0x20; c < 256; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

// scanString scans the string at b[i] == '"', returning the index after
// it, or -1.
func scanString(b []byte, i int) int {
	i++
	for {
		for i < len(b) && plain[b[i]] {
			i++
		}
		if i >= len(b) {
			return -1
		}
		switch b[i] {
		case '"':
			return i + 1
		case '\\':
			if i+1 >= len(b) {
				return -1
			}
			switch b[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i += 2
			case 'u':
				if i+6 > len(b) {
					return -1
				}
				for _, h := range b[i+2 : i+6] {
					if !isHex(h) {
						return -1
					}
				}
				i += 6
			default:
				return -1
			}
		default: // a control character
			return -1
		}
	}
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

// literal scans the word at i, returning the index after it, or -1.
func literal(b []byte, i int, word string) int {
	if len(b)-i < len(word) || string(b[i:i+len(word)]) != word {
		return -1
	}
	return i + len(word)
}

// scanNumber scans the number at i, returning the index after it, or -1:
// -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func scanNumber(b []byte, i int) int {
	if i < len(b) && b[i] == '-' {
		i++
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case i < len(b) && isDigit(b[i]):
		for i < len(b) && isDigit(b[i]) {
			i++
		}
	default:
		return -1
	}
	if i < len(b) && b[i] == '.' {
		i++
		if i >= len(b) || !isDigit(b[i]) {
			return -1
		}
		for i < len(b) && isDigit(b[i]) {
			i++
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		if i >= len(b) || !isDigit(b[i]) {
			return -1
		}
		for i < len(b) && isDigit(b[i]) {
			i++
		}
	}
	return i
}
