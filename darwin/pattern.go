package darwin

import (
	"errors"
	"fmt"
	"path"
	"slices"
	"strings"
)

// segment is one component of a rule: literal text, or a pattern in the
// syntax of path.Match when it has unescaped metacharacters.
type segment struct {
	lit string
	pat string
}

func (s segment) isGlob() bool { return s.pat != "" }

// matcher is what one rule matches. An anchored matcher is an absolute
// path (its segments start at /); a floating one matches its segments at
// any depth ("*.pem", ".git/hooks").
type matcher struct {
	anchored bool
	segs     []segment
	// tree: the rule covers the path and everything below it (a policy
	// rule, a hard-denied directory); otherwise the path alone (a
	// hard-denied file).
	tree bool
	// fold: the rule matches either case of each ASCII letter. macOS's
	// default file system (APFS) is case-insensitive: .ENV and .env are
	// the same file, so a deny that matched only one spelling would let
	// the other through (issue 29, item 5). Every deny of the profile is
	// folded; the allows are not (a case variant they miss is denied by
	// default, which fails closed).
	fold bool
}

// folded is m matching either case of each letter (see matcher.fold).
func (m matcher) folded() matcher { m.fold = true; return m }

// pathMatcher matches the clean absolute path p (and, with tree, what is
// below it).
func pathMatcher(p string, tree bool) matcher {
	return matcher{anchored: true, segs: literalSegments(p), tree: tree}
}

// hasMeta tells whether s has an unescaped *, ? or [.
func hasMeta(s string) bool {
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '\\':
			i++
		case '*', '?', '[':
			return true
		}
	}
	return false
}

// unescape removes the backslashes of path.Match syntax from a component
// without metacharacters.
func unescape(s string) (string, error) {
	if !strings.Contains(s, `\`) {
		return s, nil
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' {
			i++
			if i == len(s) {
				return "", fmt.Errorf("%q ends with a lone backslash", s)
			}
		}
		b.WriteByte(s[i])
	}
	return b.String(), nil
}

// parseSegments splits a slash-separated rule into segments, dropping
// empty and "." components.
func parseSegments(p string) ([]segment, error) {
	var segs []segment
	for _, c := range strings.Split(p, "/") {
		switch c {
		case "", ".":
			continue
		case "..":
			// Resolved by cleanDots once joined with home or cwd.
			segs = append(segs, segment{lit: c})
			continue
		}
		if hasMeta(c) {
			if _, err := globRegex(c, false); err != nil {
				return nil, err
			}
			segs = append(segs, segment{pat: c})
			continue
		}
		lit, err := unescape(c)
		if err != nil {
			return nil, err
		}
		segs = append(segs, segment{lit: lit})
	}
	return segs, nil
}

// literalSegments splits a clean absolute path (the home or working
// directory) into literal segments: its characters are not patterns.
func literalSegments(p string) []segment {
	var segs []segment
	for _, c := range strings.Split(p, "/") {
		if c != "" {
			segs = append(segs, segment{lit: c})
		}
	}
	return segs
}

// privateDirs are the top-level symbolic links of macOS into /private.
// The sandbox matches resolved paths, so rules must name the targets.
var privateDirs = []string{"etc", "tmp", "var"}

// canonical rewrites an anchored matcher that starts in /etc, /tmp or
// /var to start in /private, where those links lead.
func canonical(segs []segment) []segment {
	if len(segs) > 0 && !segs[0].isGlob() && slices.Contains(privateDirs, segs[0].lit) {
		return append([]segment{{lit: "private"}}, segs...)
	}
	return segs
}

// cleanAbs checks an absolute directory of the configuration and returns
// its clean, canonical form.
func cleanAbs(what, p string) (string, error) {
	if err := checkString(p); err != nil {
		return "", fmt.Errorf("%s: %w", what, err)
	}
	if !strings.HasPrefix(p, "/") {
		return "", fmt.Errorf("%s %q is not an absolute path", what, p)
	}
	return "/" + joinLits(canonical(literalSegments(path.Clean(p)))), nil
}

func joinLits(segs []segment) string {
	parts := make([]string, len(segs))
	for i, s := range segs {
		parts[i] = s.lit
	}
	return strings.Join(parts, "/")
}

// parseRule turns a policy rule into a matcher.
//
// The rule is an absolute path, a path under home ("~/..."), a path relative
// to cwd (it has a slash), or a name pattern matching at any depth (no slash).
// home and cwd are clean canonical absolute paths, or empty when unknown.
func parseRule(value, home, cwd string) (matcher, error) {
	if err := checkString(value); err != nil {
		return matcher{}, err
	}
	m := matcher{anchored: true, tree: true}
	var rest string
	switch {
	case value == "":
		return matcher{}, errors.New("empty rule")
	case value == "/" || value == "~" || value == "~/" || value == "*":
		return matcher{}, fmt.Errorf("%q: too broad: it would cover everything", value)
	case strings.HasPrefix(value, "/"):
		rest = value
	case strings.HasPrefix(value, "~/"):
		if home == "" {
			return matcher{}, fmt.Errorf("%q: no home directory to expand ~ with", value)
		}
		m.segs = literalSegments(home)
		rest = strings.TrimPrefix(value, "~")
	case strings.HasPrefix(value, "~"):
		return matcher{}, fmt.Errorf(`%q: only "~/" is expanded (to the home directory)`, value)
	case strings.Contains(value, "/"):
		if cwd == "" {
			return matcher{}, fmt.Errorf("%q: no working directory for a project-relative rule", value)
		}
		m.segs = literalSegments(cwd)
		rest = value
	default:
		m.anchored = false
		rest = value
	}
	segs, err := parseSegments(rest)
	if err != nil {
		return matcher{}, fmt.Errorf("%q: %w", value, err)
	}
	m.segs = append(m.segs, segs...)
	if !m.anchored && (len(m.segs) == 0 || m.segs[0].lit == "..") {
		return matcher{}, fmt.Errorf("%q: no name to match", value)
	}
	if m.anchored {
		// ".." may climb out of home or cwd, as it does in a path.
		m.segs = canonical(cleanDots(m.segs))
		if len(m.segs) == 0 {
			return matcher{}, fmt.Errorf("%q: too broad: it would cover everything", value)
		}
	}
	return m, nil
}

// cleanDots resolves ".." segments left by joining home or cwd with a
// rule ("~/../x").
func cleanDots(segs []segment) []segment {
	var out []segment
	for _, s := range segs {
		if !s.isGlob() && s.lit == ".." {
			if len(out) > 0 {
				out = out[:len(out)-1]
			}
			continue
		}
		out = append(out, s)
	}
	return out
}

// parseHardDenied turns an entry of ProfileConfig.HardDenied into a matcher.
//
// The entry is a name or relative path matching at any depth (".bashrc",
// ".git/config"), or a directory when it ends in "/" (".git/hooks/"). An
// absolute or "~/" entry is anchored instead.
func parseHardDenied(entry, home string) (matcher, error) {
	dir := strings.HasSuffix(entry, "/")
	if strings.HasPrefix(entry, "/") || strings.HasPrefix(entry, "~") {
		m, err := parseRule(entry, home, "")
		m.tree = true
		return m, err
	}
	if err := checkString(entry); err != nil {
		return matcher{}, err
	}
	for _, c := range strings.Split(strings.TrimSuffix(entry, "/"), "/") {
		if c == "" || c == "." || c == ".." {
			return matcher{}, fmt.Errorf("%q: expected a name or a relative path without empty, . or .. components", entry)
		}
	}
	segs, err := parseSegments(entry)
	if err != nil {
		return matcher{}, fmt.Errorf("%q: %w", entry, err)
	}
	return matcher{segs: segs, tree: dir}, nil
}

// isLiteral tells whether m is an anchored path without patterns.
func (m matcher) isLiteral() bool {
	if !m.anchored {
		return false
	}
	for _, s := range m.segs {
		if s.isGlob() {
			return false
		}
	}
	return true
}

// path is the absolute path of a literal matcher.
func (m matcher) path() string { return "/" + joinLits(m.segs) }

// staticPrefix is the absolute path of the literal segments of an
// anchored matcher before its first pattern.
func (m matcher) staticPrefix() string {
	var lits []segment
	for _, s := range m.segs {
		if s.isGlob() {
			break
		}
		lits = append(lits, s)
	}
	return "/" + joinLits(lits)
}

// regex is the regular expression of m for the sandbox, which matches
// it against whole resolved paths.
func (m matcher) regex() string {
	var b strings.Builder
	b.WriteString("^")
	if !m.anchored {
		b.WriteString(".*")
	}
	for _, s := range m.segs {
		b.WriteString("/")
		if s.isGlob() {
			re, _ := globRegex(s.pat, m.fold) // checked by parseSegments
			b.WriteString(re)
		} else {
			b.WriteString(quoteRegex(s.lit, m.fold))
		}
	}
	if m.tree {
		b.WriteString("(/.*)?")
	}
	b.WriteString("$")
	return b.String()
}

// filter is the SBPL filter of m: (subpath P) or (literal P) for a literal
// path that is not folded, (regex R) otherwise.
func (m matcher) filter() expr {
	if m.isLiteral() && !m.fold {
		if m.tree {
			return subpath(m.path())
		}
		return literal(m.path())
	}
	return regex(m.regex())
}

// ancestors returns the matchers of the directories above m that are part of
// the rule.
//
// For an anchored rule, those are every directory up to /, exclusive. For a
// floating one, they are the leading segments: ".git" for ".git/hooks".
// Renaming one of them would carry what m matches to a path m does not match.
func (m matcher) ancestors() []matcher {
	var out []matcher
	for n := len(m.segs) - 1; n >= 1; n-- {
		out = append(out, matcher{anchored: m.anchored, segs: m.segs[:n], fold: m.fold})
	}
	return out
}

// regexMeta are the characters with a meaning in the sandbox's regular
// expressions (POSIX extended syntax).
const regexMeta = `\.+*?()|[]{}^$`

// regexQuote escapes the regular-expression metacharacters of s with
// backslashes, so that the result matches s literally. The result is
// regex text; quote it to put it in a profile.
func regexQuote(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if strings.IndexByte(regexMeta, s[i]) >= 0 {
			b.WriteByte('\\')
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// quoteRegex is regexQuote, or foldQuote when fold is set.
func quoteRegex(s string, fold bool) string {
	if fold {
		return foldQuote(s)
	}
	return regexQuote(s)
}

// foldQuote is regexQuote matching either case of each ASCII letter:
// ".Env" becomes "\.[eE][nN][vV]". Other letters are matched as they
// are (APFS folds them too; rules name ASCII paths in practice).
func foldQuote(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case 'a' <= c && c <= 'z':
			b.WriteString("[" + string(c) + string(c-'a'+'A') + "]")
		case 'A' <= c && c <= 'Z':
			b.WriteString("[" + string(c-'A'+'a') + string(c) + "]")
		default:
			b.WriteString(regexQuote(s[i : i+1]))
		}
	}
	return b.String()
}

// globRegex converts one component in path.Match syntax to a regular
// expression (unanchored): * is [^/]*, ? is [^/], [...] a bracket
// expression that never matches /, \x a literal x; everything else is
// matched literally. With fold, letters match in either case.
func globRegex(pat string, fold bool) (string, error) {
	var b strings.Builder
	for i := 0; i < len(pat); i++ {
		switch c := pat[i]; c {
		case '*':
			b.WriteString("[^/]*")
		case '?':
			b.WriteString("[^/]")
		case '\\':
			i++
			if i == len(pat) {
				return "", fmt.Errorf("%q ends with a lone backslash", pat)
			}
			b.WriteString(quoteRegex(pat[i:i+1], fold))
		case '[':
			n, class, err := globClass(pat[i:], fold)
			if err != nil {
				return "", fmt.Errorf("%q: %w", pat, err)
			}
			b.WriteString(class)
			i += n - 1
		default:
			b.WriteString(quoteRegex(pat[i:i+1], fold))
		}
	}
	return b.String(), nil
}

// classUnsupported are the characters that a character class of a rule may not
// name. Their meaning inside a bracket expression differs between
// regular-expression dialects, so a profile cannot say them reliably.
const classUnsupported = `[]\^-/`

// globClass converts the character class at the start of s ("[a-z]",
// "[^0-9]") into a bracket expression, returning how many bytes of s it
// used. With fold, a letter or a range of letters of one case gets the
// other case too.
func globClass(s string, fold bool) (int, string, error) {
	i := 1
	negated := false
	if i < len(s) && s[i] == '^' {
		negated = true
		i++
	}
	var items []string
	for {
		if i >= len(s) {
			return 0, "", errors.New("unterminated character class")
		}
		if s[i] == ']' && len(items) > 0 {
			i++
			break
		}
		lo, n, err := classChar(s[i:])
		if err != nil {
			return 0, "", err
		}
		i += n
		if i+1 < len(s) && s[i] == '-' && s[i+1] != ']' {
			hi, n, err := classChar(s[i+1:])
			if err != nil {
				return 0, "", err
			}
			if hi < lo {
				return 0, "", fmt.Errorf("bad range %c-%c in character class", lo, hi)
			}
			i += 1 + n
			items = append(items, string(lo)+"-"+string(hi))
			if o, ok := otherCase(lo); fold && ok {
				if p, ok := otherCase(hi); ok && isUpper(lo) == isUpper(hi) {
					items = append(items, string(o)+"-"+string(p))
				}
			}
			continue
		}
		items = append(items, string(lo))
		if o, ok := otherCase(lo); fold && ok {
			items = append(items, string(o))
		}
	}
	class := "["
	if negated {
		class += "^/"
	}
	return i, class + strings.Join(items, "") + "]", nil
}

// classChar reads one (possibly escaped) character of a character class.
func classChar(s string) (rune, int, error) {
	n := 0
	if s[0] == '\\' {
		n = 1
		if len(s) < 2 {
			return 0, 0, errors.New("unterminated character class")
		}
	}
	r := rune(s[n])
	if r >= 0x80 {
		return 0, 0, errors.New("only ASCII characters are supported in a character class")
	}
	if strings.ContainsRune(classUnsupported, r) {
		return 0, 0, fmt.Errorf("%q is not supported in a character class", r)
	}
	return r, n + 1, nil
}

func isUpper(r rune) bool { return 'A' <= r && r <= 'Z' }

// otherCase is the other case of an ASCII letter.
func otherCase(r rune) (rune, bool) {
	switch {
	case 'a' <= r && r <= 'z':
		return r - 'a' + 'A', true
	case isUpper(r):
		return r - 'A' + 'a', true
	}
	return 0, false
}
