package darwin

import (
	"errors"
	"fmt"
	"strings"
)

// node is an S-expression read back from a profile: an atom, a string
// (str set) or a list.
type node struct {
	atom  string
	str   *string
	list  []node
	isLst bool
	// comments are the ";" comments right before the node.
	comments []string
}

func (n node) head() string {
	if n.isLst && len(n.list) > 0 {
		return n.list[0].atom
	}
	return ""
}

// String renders n back on one line, for messages and searches.
func (n node) String() string {
	switch {
	case n.str != nil:
		return fmt.Sprintf("%q", *n.str)
	case n.isLst:
		parts := make([]string, len(n.list))
		for i, k := range n.list {
			parts[i] = k.String()
		}
		return "(" + strings.Join(parts, " ") + ")"
	}
	return n.atom
}

// walk calls f for n and every node inside it.
func (n node) walk(f func(node)) {
	f(n)
	for _, k := range n.list {
		k.walk(f)
	}
}

// readProfile reads the top-level forms of an SBPL profile the way the
// Scheme reader does for the subset Generate writes: lists, atoms, strings
// with \\ and \" escapes, and ";" comments to the end of the line.
func readProfile(src string) ([]node, error) {
	r := &reader{src: src}
	var forms []node
	for {
		comments := r.skip()
		if r.pos >= len(r.src) {
			return forms, nil
		}
		n, err := r.read()
		if err != nil {
			return nil, err
		}
		n.comments = comments
		forms = append(forms, n)
	}
}

type reader struct {
	src string
	pos int
}

// skip passes white space and comments, returning the comments.
func (r *reader) skip() []string {
	var comments []string
	for r.pos < len(r.src) {
		switch c := r.src[r.pos]; {
		case c == ';':
			end := strings.IndexByte(r.src[r.pos:], '\n')
			if end < 0 {
				end = len(r.src) - r.pos
			}
			comments = append(comments, strings.TrimSpace(strings.TrimPrefix(r.src[r.pos:r.pos+end], ";")))
			r.pos += end
		case c == ' ' || c == '\n' || c == '\t':
			r.pos++
		default:
			return comments
		}
	}
	return comments
}

func (r *reader) read() (node, error) {
	comments := r.skip()
	if r.pos >= len(r.src) {
		return node{}, errors.New("unexpected end of profile")
	}
	switch c := r.src[r.pos]; c {
	case '(':
		r.pos++
		n := node{isLst: true, comments: comments}
		for {
			kc := r.skip()
			if r.pos >= len(r.src) {
				return node{}, errors.New("unclosed (")
			}
			if r.src[r.pos] == ')' {
				r.pos++
				return n, nil
			}
			k, err := r.read()
			if err != nil {
				return node{}, err
			}
			k.comments = append(kc, k.comments...)
			n.list = append(n.list, k)
		}
	case ')':
		return node{}, fmt.Errorf("unexpected ) at byte %d", r.pos)
	case '"':
		r.pos++
		var b strings.Builder
		for {
			if r.pos >= len(r.src) {
				return node{}, errors.New("unterminated string")
			}
			c := r.src[r.pos]
			r.pos++
			switch c {
			case '"':
				s := b.String()
				return node{str: &s, comments: comments}, nil
			case '\\':
				if r.pos >= len(r.src) {
					return node{}, errors.New("unterminated string")
				}
				e := r.src[r.pos]
				r.pos++
				if e != '\\' && e != '"' {
					return node{}, fmt.Errorf("unexpected escape \\%c", e)
				}
				b.WriteByte(e)
			case '\n':
				return node{}, errors.New("newline in string")
			default:
				b.WriteByte(c)
			}
		}
	default:
		start := r.pos
		for r.pos < len(r.src) && !strings.ContainsRune(" \n\t();\"", rune(r.src[r.pos])) {
			r.pos++
		}
		return node{atom: r.src[start:r.pos], comments: comments}, nil
	}
}
