package darwin

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestQuote(t *testing.T) {
	for in, want := range map[string]string{
		"/usr":                 `"/usr"`,
		"":                     `""`,
		`/a\b`:                 `"/a\\b"`,
		`/say "hi"`:            `"/say \"hi\""`,
		`\"`:                   `"\\\""`,
		`/x\`:                  `"/x\\"`,
		"/Users/u/Café ☕":      `"/Users/u/Café ☕"`,
		"/a (b) [c] {d} $e ;f": `"/a (b) [c] {d} $e ;f"`,
	} {
		got, err := quote(in)
		require.NoError(t, err, in)
		assert.Equal(t, want, got, in)

		// Reading it back gives the string again.
		n, err := (&reader{src: got}).read()
		require.NoError(t, err, got)
		require.NotNil(t, n.str, got)
		assert.Equal(t, in, *n.str)
	}
}

func TestQuoteRejectsControlCharacters(t *testing.T) {
	for _, in := range []string{"/a\x00b", "/a\nb", "/a\rb", "/a\tb", "/a\x7fb", "/a\x1bb", "/a\xffb"} {
		_, err := quote(in)
		assert.Error(t, err, "%q", in)
	}
}

func TestCommentText(t *testing.T) {
	assert.Equal(t, "from /Users/u/p.json", commentText("from /Users/u/p.json"))
	// A newline would end the comment and start a rule.
	got := commentText("p.json\n(allow default)")
	assert.NotContains(t, got, "\n")
	assert.Equal(t, `"p.json\n(allow default)"`, got)
}

func TestRule(t *testing.T) {
	one, err := rule("allow", opRead, subpath("/usr"))
	require.NoError(t, err)
	assert.Equal(t, `(allow file-read* (subpath "/usr"))`, one)

	many, err := rule("deny", opWrite, subpath(`/a"b`).withComment("first"), regex(`^.*/\.env$`))
	require.NoError(t, err)
	assert.Equal(t, strings.Join([]string{
		`(deny file-write*`,
		`  ; first`,
		`  (subpath "/a\"b")`,
		`  (regex "^.*/\\.env$"))`,
	}, "\n"), many)

	nested, err := rule("deny", opWrite, requireAll(requireAny(subpath("/a"), subpath("/b")), regex("^x$")))
	require.NoError(t, err)
	assert.Equal(t, strings.Join([]string{
		`(deny file-write*`,
		`  (require-all`,
		`    (require-any`,
		`      (subpath "/a")`,
		`      (subpath "/b"))`,
		`    (regex "^x$")))`,
	}, "\n"), nested)

	// A single operand needs no combination.
	assert.Equal(t, subpath("/a"), requireAny(subpath("/a")))
	assert.Equal(t, subpath("/a"), requireAll(subpath("/a")))

	// A long single filter goes on its own line.
	long, err := rule("allow", opReadWrite, subpath("/"+strings.Repeat("x", 100)))
	require.NoError(t, err)
	assert.Equal(t, "(allow file-read* file-write*\n  (subpath \"/"+strings.Repeat("x", 100)+"\"))", long)

	_, err = rule("allow", opRead, subpath("/a\nb"))
	assert.Error(t, err)
}
