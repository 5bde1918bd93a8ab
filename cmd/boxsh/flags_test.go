package main

import (
	"os"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/boxsh/boxsh/policy"
)

// helpFlags are the flags the labels of the help's sections of flags
// name (its subcommands' own are not boxsh's).
func helpFlags(t *testing.T, help string) []string {
	t.Helper()
	flagPart, _, ok := strings.Cut(help, "\nOther commands:\n")
	require.True(t, ok, "the help lists the other commands last")
	seen := map[string]bool{}
	var names []string
	for _, line := range strings.Split(flagPart, "\n") {
		if !strings.HasPrefix(line, "  -") {
			continue
		}
		// The label column, or the line of a label too long for it.
		label := line[2:]
		if len(label) > labelWidth {
			label = label[:labelWidth]
		}
		for _, w := range strings.Fields(strings.ReplaceAll(label, ",", " ")) {
			if strings.HasPrefix(w, "-") && !seen[w] {
				seen[w] = true
				names = append(names, w)
			}
		}
	}
	sort.Strings(names)
	return names
}

// Every flag the parser knows is in the help, and every flag of the help
// is one the parser knows.
func TestFlagsInHelp(t *testing.T) {
	var parsed []string
	for name := range flagIndex {
		parsed = append(parsed, name)
	}
	sort.Strings(parsed)
	inHelp := helpFlags(t, usage())
	assert.Equal(t, parsed, inHelp)
	assert.Contains(t, inHelp, "-i")
	assert.Contains(t, inHelp, "--")
	for _, name := range inHelp {
		o, err := parseArgs([]string{name}, "/")
		if err != nil {
			assert.NotContains(t, err.Error(), "unknown option", name)
			continue
		}
		assert.NotEqual(t, []string{name}, o.args, "%s is boxsh's, not the shell's", name)
	}
}

// The help is docs/cli.md's reference, as just cli-doc writes it.
func TestUsageIsDocumented(t *testing.T) {
	b, err := os.ReadFile("../../docs/cli.md")
	require.NoError(t, err)
	_, rest, ok := strings.Cut(string(b), "<!-- BEGIN boxsh --help -->\n```text\n")
	require.True(t, ok, "docs/cli.md has the reference's markers")
	ref, _, ok := strings.Cut(rest, "```\n<!-- END boxsh --help -->")
	require.True(t, ok)
	assert.Equal(t, ref, usage(), "docs/cli.md's reference differs from the help: run just cli-doc")
}

// A long label has a line of its own; a shorter one shares its first
// line with the text, in the text's column.
func TestWriteHelpEntry(t *testing.T) {
	var b strings.Builder
	writeHelpEntry(&b, helpEntry{"--sandbox-requests N", []string{"one", "two"}})
	writeHelpEntry(&b, helpEntry{"--rpc --listen [ADDR]", []string{"three"}})
	assert.Equal(t, ""+
		"  --sandbox-requests N one\n"+
		"                       two\n"+
		"  --rpc --listen [ADDR]\n"+
		"                       three\n", b.String())
}

// The spellings boxsh accepts, as boxsh v3 and the conformance suites
// use them.
func TestParseArgsSpellings(t *testing.T) {
	for _, argv := range [][]string{{"--workers", "8"}, {"--workers=8"}} {
		o, err := parseArgs(argv, "/")
		require.NoError(t, err, "%q", argv)
		assert.Equal(t, 8, o.workers, "%q", argv)
	}
	// A switch ignores a value given with =.
	o, err := parseArgs([]string{"--sandbox=1", "--interactive=no"}, "/")
	require.NoError(t, err)
	assert.True(t, o.sandbox.Enabled)
	assert.True(t, o.interactive)
	// A value may start with "-" or be another flag's name.
	o, err = parseArgs([]string{"--shell", "--rpc"}, "/")
	require.NoError(t, err)
	assert.Equal(t, "--rpc", o.shell)
	assert.Equal(t, modeShell, o.mode)
	// Repeated flags add up; the last of a single value wins.
	o, err = parseArgs([]string{"--bind", "ro:/usr", "--bind=wr:/tmp", "--workers", "2", "--workers", "3"}, "/")
	require.NoError(t, err)
	assert.Equal(t, []policy.Bind{{Mode: policy.ReadOnly, Src: "/usr", Dst: "/usr"}, {Mode: policy.ReadWrite, Src: "/tmp", Dst: "/tmp"}}, o.sandbox.Binds)
	assert.Equal(t, 3, o.workers)
	// Short options are -i and -h alone: any other (combined, or with
	// =) is the shell's, with the rest of the line.
	for _, argv := range [][]string{{"-ic", "true"}, {"-i=1"}, {"-x", "--rpc"}, {"-"}} {
		o, err := parseArgs(argv, "/")
		require.NoError(t, err, "%q", argv)
		assert.Equal(t, argv, o.args, "%q", argv)
		assert.False(t, o.interactive, "%q", argv)
	}
	o, err = parseArgs([]string{"-i", "-c", "true"}, "/")
	require.NoError(t, err)
	assert.True(t, o.interactive)
	assert.Equal(t, []string{"-c", "true"}, o.args)
	for _, argv := range [][]string{{"-h"}, {"--help=1"}, {"--workers", "2", "-h", "--frobnicate"}} {
		o, err := parseArgs(argv, "/")
		require.NoError(t, err, "%q", argv)
		assert.Equal(t, modeHelp, o.mode, "%q", argv)
	}
	// --listen takes the next argument unless it is a flag.
	o, err = parseArgs([]string{"--rpc", "--listen", "-i"}, "/")
	require.NoError(t, err)
	assert.Equal(t, "127.0.0.1:0", o.listen)
	assert.True(t, o.interactive)
	// After --, nothing is boxsh's.
	o, err = parseArgs([]string{"--sandbox", "--", "sh", "--rpc", "--frobnicate"}, "/")
	require.NoError(t, err)
	assert.Equal(t, modeCommand, o.mode)
	assert.Equal(t, []string{"sh", "--rpc", "--frobnicate"}, o.args)
	// A flag without its value names itself.
	_, err = parseArgs([]string{"--sandbox", "--memory"}, "/")
	assert.ErrorIs(t, err, policy.ErrUsage)
	assert.EqualError(t, err, "usage: --memory needs a value")
	_, err = parseArgs([]string{"--bogus=1", "--sandbox"}, "/")
	assert.EqualError(t, err, "usage: unknown option --bogus; a shell's own long option goes after --: boxsh -- /bin/sh --bogus=1")
}
