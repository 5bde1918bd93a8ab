package darwin

import (
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// checkString rejects what cannot be put in an SBPL string or comment safely.
//
// That is invalid UTF-8 and control characters (NUL, newlines, tabs and the
// rest), which have no place in the paths and patterns a profile names.
func checkString(s string) error {
	if !utf8.ValidString(s) {
		return fmt.Errorf("%q is not valid UTF-8", s)
	}
	for _, r := range s {
		if r < 0x20 || r == 0x7f {
			return fmt.Errorf("%q contains a control character (%U)", s, r)
		}
	}
	return nil
}

// quote returns s as an SBPL string literal: in double quotes, with
// backslashes and double quotes escaped. It rejects strings that
// checkString rejects.
func quote(s string) (string, error) {
	if err := checkString(s); err != nil {
		return "", err
	}
	var b strings.Builder
	b.Grow(len(s) + 2)
	b.WriteByte('"')
	for i := 0; i < len(s); i++ {
		if c := s[i]; c == '\\' || c == '"' {
			b.WriteByte('\\')
		}
		b.WriteByte(s[i])
	}
	b.WriteByte('"')
	return b.String(), nil
}

// commentText makes s safe to end a ";" comment line.
//
// A string with a control character is shown Go-quoted. A source path could
// hold a newline, which would end the comment and start a rule.
func commentText(s string) string {
	if checkString(s) != nil {
		return strconv.Quote(s)
	}
	return s
}

// expr is an SBPL expression: a filter such as (subpath "/usr"), a
// combination such as (require-all ...), or a verbatim form.
type expr struct {
	// head is the operator: "subpath", "literal", "regex", "require-all",
	// "require-any", ... Empty for a verbatim form (raw).
	head string
	// arg is the string argument of a filter, quoted when rendered.
	arg string
	// raw is a verbatim form, such as (target same-sandbox).
	raw string
	// kids are the operands of a combination.
	kids []expr
	// comment is put on its own line before the expression.
	comment string
}

func subpath(p string) expr { return expr{head: "subpath", arg: p} }
func literal(p string) expr { return expr{head: "literal", arg: p} }
func regex(re string) expr  { return expr{head: "regex", arg: re} }
func raw(form string) expr  { return expr{raw: form} }

func (e expr) withComment(c string) expr { e.comment = c; return e }

// requireAll is (require-all kids...), or the only kid.
func requireAll(kids ...expr) expr {
	if len(kids) == 1 {
		return kids[0]
	}
	return expr{head: "require-all", kids: kids}
}

// requireAny is (require-any kids...), or the only kid.
func requireAny(kids ...expr) expr {
	if len(kids) == 1 {
		return kids[0]
	}
	return expr{head: "require-any", kids: kids}
}

// key identifies what e matches, for removing duplicates.
func (e expr) key() string {
	if e.raw != "" {
		return e.raw
	}
	k := e.head + " " + strconv.Quote(e.arg)
	for _, c := range e.kids {
		k += " (" + c.key() + ")"
	}
	return k
}

// render writes e at the given indentation (in two-space steps) to b.
// The caller writes the line break before it; render writes none after.
func (e expr) render(b *strings.Builder, indent int) error {
	pad := strings.Repeat("  ", indent)
	if e.comment != "" {
		b.WriteString("; " + commentText(e.comment) + "\n" + pad)
	}
	switch {
	case e.raw != "":
		b.WriteString(e.raw)
	case e.kids == nil:
		q, err := quote(e.arg)
		if err != nil {
			return err
		}
		b.WriteString("(" + e.head + " " + q + ")")
	default:
		b.WriteString("(" + e.head)
		for _, k := range e.kids {
			b.WriteString("\n" + pad + "  ")
			if err := k.render(b, indent+1); err != nil {
				return err
			}
		}
		b.WriteString(")")
	}
	return nil
}

// rule renders (action op... filters...): on one line when it has a
// single filter without comments, else one filter a line.
func rule(action string, ops []string, filters ...expr) (string, error) {
	var b strings.Builder
	b.WriteString("(" + action + " " + strings.Join(ops, " "))
	if len(filters) == 1 && filters[0].comment == "" && filters[0].kids == nil {
		b.WriteString(" ")
		if err := filters[0].render(&b, 0); err != nil {
			return "", err
		}
		if b.Len() < 100 {
			return b.String() + ")", nil
		}
		b.Reset()
		b.WriteString("(" + action + " " + strings.Join(ops, " "))
	}
	for _, f := range filters {
		b.WriteString("\n  ")
		if err := f.render(&b, 1); err != nil {
			return "", err
		}
	}
	return b.String() + ")", nil
}
