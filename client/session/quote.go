package session

import (
	"strings"
)

// QuotePath returns name as git prints a path with core.quotePath=true, the
// default.
//
// The name is unchanged when every byte is printable ASCII other than a double
// quote or backslash. Otherwise it is put in double quotes with C-style
// escapes: \a \b \t \n \v \f \r \" \\, and three octal digits for the other
// control bytes, DEL and every byte of 0x80 and above (é is \303\251).
//
// Every listing of changes, diffs and apply results prints names so. That way
// a name cannot move the cursor, erase or forge lines on the reviewer's
// terminal.
func QuotePath(name string) string {
	i := 0
	for i < len(name) && !mustQuote(name[i]) {
		i++
	}
	if i == len(name) {
		return name
	}
	var b strings.Builder
	b.Grow(len(name) + 8)
	b.WriteByte('"')
	b.WriteString(name[:i])
	for ; i < len(name); i++ {
		writeEscaped(&b, name[i], true)
	}
	b.WriteByte('"')
	return b.String()
}

// EscapeControls returns s with its control bytes escaped as QuotePath escapes
// them, and nothing else changed.
//
// s is an error or reason that may hold a path another part of the system
// chose. The text stays as written, and QuotePath's output passes unchanged.
func EscapeControls(s string) string {
	i := 0
	for i < len(s) && !isControl(s[i]) {
		i++
	}
	if i == len(s) {
		return s
	}
	var b strings.Builder
	b.WriteString(s[:i])
	for ; i < len(s); i++ {
		writeEscaped(&b, s[i], false)
	}
	return b.String()
}

// isControl tells whether c is an ASCII control byte or DEL.
func isControl(c byte) bool { return c < 0x20 || c == 0x7f }

// mustQuote tells whether git quotes a path holding c.
func mustQuote(c byte) bool {
	return isControl(c) || c == '"' || c == '\\' || c >= 0x80
}

// writeEscaped writes c as QuotePath does (quoted: inside quotes, where
// '"' and '\\' are escaped too; else only control bytes are).
func writeEscaped(b *strings.Builder, c byte, quoted bool) {
	switch {
	case c == '"' && quoted:
		b.WriteString(`\"`)
	case c == '\\' && quoted:
		b.WriteString(`\\`)
	case c >= 0x07 && c <= 0x0d:
		b.WriteByte('\\')
		b.WriteByte("abtnvfr"[c-0x07])
	case isControl(c) || (c >= 0x80 && quoted):
		b.WriteByte('\\')
		b.WriteByte('0' + c>>6)
		b.WriteByte('0' + c>>3&7)
		b.WriteByte('0' + c&7)
	default:
		b.WriteByte(c)
	}
}
