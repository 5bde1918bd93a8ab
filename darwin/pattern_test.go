package darwin

import (
	"fmt"
	"path"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/boxsh/boxsh/policy"
)

func TestRegexQuoting(t *testing.T) {
	assert.Equal(t, `\.env`, regexQuote(".env"))
	assert.Equal(t, `a\+b\(c\)\[d\]\{e\}\|f\^g\$h\*i\?j\\k`, regexQuote(`a+b(c)[d]{e}|f^g$h*i?j\k`))
	assert.Equal(t, "/Users/u/a-b_c d~é", regexQuote("/Users/u/a-b_c d~é"))

	// The quoted form matches the string literally, and nothing else.
	for _, s := range []string{".env", "a+b(c).txt", `x\y`, "[abc]", "a|b", "^$", "{1,2}", "a?b*"} {
		re := regexp.MustCompilePOSIX("^" + regexQuote(s) + "$")
		assert.True(t, re.MatchString(s), s)
		assert.False(t, re.MatchString(s+"x"), s)
		assert.False(t, re.MatchString("#"+s[1:]), s)
	}
}

func TestNameRegex(t *testing.T) {
	for pat, want := range map[string]string{
		".env":            `^.*/\.env$`,
		"*.pem":           `^.*/[^/]*\.pem$`,
		".env.*":          `^.*/\.env\.[^/]*$`,
		"id_rsa":          `^.*/id_rsa$`,
		"a+b(c).txt":      `^.*/a\+b\(c\)\.txt$`,
		"file?.txt":       `^.*/file[^/]\.txt$`,
		"[a-z]*.key":      `^.*/[a-z][^/]*\.key$`,
		"[^0-9]x":         `^.*/[^/0-9]x$`,
		"[abc]":           `^.*/[abc]$`,
		`a\*b`:            `^.*/a\*b$`,
		`a\[b`:            `^.*/a\[b$`,
		"{a,b}|c^$":       `^.*/\{a,b\}\|c\^\$$`,
		"credentials.yml": `^.*/credentials\.yml$`,
	} {
		got, err := nameRegex(pat)
		require.NoError(t, err, pat)
		assert.Equal(t, want, got, pat)
		_, err = regexp.CompilePOSIX(got)
		assert.NoError(t, err, "%s is not a POSIX extended regular expression", got)
	}
}

// The regular expression of a pattern matches a path exactly when
// path.Match matches its last component.
func TestNameRegexAgreesWithMatch(t *testing.T) {
	patterns := []string{".env", ".env.*", "*.pem", "id_*", "a+b(c).txt", "file?.txt", "[a-c]*", "[^a-c]*", `x\*y`, "*", "?", "a.b"}
	names := []string{".env", ".env.local", ".envx", "x.env", "cert.pem", "cert.pem.bak", ".pem", "pem", "id_rsa", "id_", "xid_rsa",
		"a+b(c).txt", "aab(c).txt", "a+b(c)xtxt", "file1.txt", "file.txt", "file12.txt", "apple", "dog", "x*y", "xzy", "a.b", "axb", "ä"}
	for _, pat := range patterns {
		re, err := nameRegex(pat)
		require.NoError(t, err, pat)
		rx := regexp.MustCompilePOSIX(re)
		for _, name := range names {
			want, err := path.Match(pat, name)
			require.NoError(t, err)
			for _, dir := range []string{"", "/Users/u/proj", "/a/b/c/d"} {
				assert.Equal(t, want, rx.MatchString(dir+"/"+name), "pattern %q, path %q", pat, dir+"/"+name)
			}
			// Only the last component counts: below name is the name y.
			want, err = path.Match(pat, "y")
			require.NoError(t, err)
			assert.Equal(t, want, rx.MatchString("/a/"+name+"/y"), "pattern %q, below %q", pat, name)
		}
	}
}

func TestNameRegexErrors(t *testing.T) {
	for _, pat := range []string{
		"",           // nothing
		"a/b",        // not one component
		"[a-",        // unterminated class
		"[abc",       // unterminated class
		"[z-a]",      // bad range
		`[\]]`,       // ] in a class
		"[a^b]",      // ^ inside a class
		"[[]",        // [ in a class
		`[\\]`,       // backslash in a class
		"[é]",        // non-ASCII in a class
		`abc\`,       // lone backslash
		"a\nb",       // newline
		"a\x00b",     // NUL
		"\xff\xfe.x", // not UTF-8
	} {
		_, err := nameRegex(pat)
		assert.Error(t, err, "%q", pat)
	}
}

func TestParseRule(t *testing.T) {
	const home, cwd = "/Users/u", "/Users/u/proj"
	for value, want := range map[string]expr{
		"/Users/u/secret":         subpath("/Users/u/secret"),
		"/Users/u/secret/":        subpath("/Users/u/secret"),
		"~/.ssh":                  subpath("/Users/u/.ssh"),
		"~/../v/.ssh":             subpath("/Users/v/.ssh"),
		"config/secrets.yaml":     subpath("/Users/u/proj/config/secrets.yaml"),
		"./config//a/../b":        subpath("/Users/u/proj/config/b"),
		"/tmp/x":                  subpath("/private/tmp/x"),
		"/var/folders/x":          subpath("/private/var/folders/x"),
		"/etc/hosts":              subpath("/private/etc/hosts"),
		"/tmpfoo":                 subpath("/tmpfoo"),
		".env":                    regex(`^.*/\.env(/.*)?$`),
		"*.pem":                   regex(`^.*/[^/]*\.pem(/.*)?$`),
		"~/.config/*/token":       regex(`^/Users/u/\.config/[^/]*/token(/.*)?$`),
		"secrets/*.yaml":          regex(`^/Users/u/proj/secrets/[^/]*\.yaml(/.*)?$`),
		`/Users/u/a\*b`:           subpath("/Users/u/a*b"),
		"/Users/u/Ca$h (2).money": subpath("/Users/u/Ca$h (2).money"),
	} {
		m, err := parseRule(value, home, cwd)
		require.NoError(t, err, value)
		assert.Equal(t, want, m.filter(), value)
	}

	// Special characters of home and cwd are not patterns.
	m, err := parseRule("~/x", "/Users/[a]*", "")
	require.NoError(t, err)
	assert.Equal(t, subpath("/Users/[a]*/x"), m.filter())
	m, err = parseRule("~/*.pem", "/Users/a.b", "")
	require.NoError(t, err)
	assert.Equal(t, regex(`^/Users/a\.b/[^/]*\.pem(/.*)?$`), m.filter())
}

func TestParseRuleErrors(t *testing.T) {
	for value, why := range map[string]string{
		"":             "empty",
		"~/.ssh":       "no home",
		"config/x":     "no working directory",
		"~user/x":      "~user",
		"/":            "everything",
		"~":            "everything",
		"~/":           "everything",
		"*":            "everything",
		"/..":          "everything",
		".":            "no name",
		"..":           "no name",
		"a\nb":         "newline",
		"/a\x00b":      "NUL",
		"/x/[z-a]":     "bad range",
		"*.pem\\":      "lone backslash",
		"\xff":         "UTF-8",
		"/a/b\r":       "carriage return",
		"dir/[abc":     "unterminated class",
		"/Users/u/\t/": "tab",
	} {
		home, cwd := "", ""
		if why != "no home" {
			home = "/Users/u"
		}
		if why != "no working directory" {
			cwd = "/Users/u/proj"
		}
		_, err := parseRule(value, home, cwd)
		assert.Error(t, err, "%q (%s)", value, why)
	}
}

func TestParseHardDenied(t *testing.T) {
	for entry, want := range map[string]expr{
		".bashrc":      regex(`^.*/\.bashrc$`),
		".mcp.json":    regex(`^.*/\.mcp\.json$`),
		".git/config":  regex(`^.*/\.git/config$`),
		".git/hooks/":  regex(`^.*/\.git/hooks(/.*)?$`),
		".vscode/":     regex(`^.*/\.vscode(/.*)?$`),
		"*.sh":         regex(`^.*/[^/]*\.sh$`),
		"~/.ssh":       subpath("/Users/u/.ssh"),
		"/etc/sudoers": subpath("/private/etc/sudoers"),
	} {
		m, err := parseHardDenied(entry, "/Users/u")
		require.NoError(t, err, entry)
		assert.Equal(t, want, m.filter(), entry)
	}
	for _, entry := range []string{"", "/", "a//b", "./a", "a/../b", "../a", "a\nb"} {
		_, err := parseHardDenied(entry, "/Users/u")
		assert.Error(t, err, "%q", entry)
	}
}

func TestAncestors(t *testing.T) {
	m, err := parseHardDenied(".git/hooks/", "")
	require.NoError(t, err)
	var got []expr
	for _, a := range m.ancestors() {
		got = append(got, a.filter())
	}
	assert.Equal(t, []expr{regex(`^.*/\.git$`)}, got)

	m, err = parseRule("/a/b*/c", "", "")
	require.NoError(t, err)
	got = nil
	for _, a := range m.ancestors() {
		got = append(got, a.filter())
	}
	assert.Equal(t, []expr{regex(`^/a/b[^/]*$`), literal("/a")}, got)

	m, err = parseRule(".env", "", "")
	require.NoError(t, err)
	assert.Empty(t, m.ancestors())
}

// nameRegex is the regular expression of a hard-denied file name (a
// single component in the syntax of path.Match): it matches the whole
// resolved paths whose last component matches name, at any depth. "*.pem"
// becomes `^.*/[^/]*\.pem$`.
func nameRegex(name string) (string, error) {
	if strings.Contains(name, "/") {
		return "", fmt.Errorf("%q: expected a single path component", name)
	}
	m, err := parseHardDenied(name, "")
	if err != nil {
		return "", err
	}
	return m.regex(), nil
}

// TestParseHardDeniedList checks that every entry of the protected list
// boxsh passes parses.
func TestParseHardDeniedList(t *testing.T) {
	for _, e := range policy.HardDeniedWrites {
		_, err := parseHardDenied(e, "/Users/u")
		assert.NoError(t, err, e)
	}
}
