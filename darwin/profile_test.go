package darwin

import (
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/boxsh/boxsh/policy"
)

// generate returns the profile of cfg read back into its forms.
func generate(t *testing.T, cfg ProfileConfig) (string, []node) {
	t.Helper()
	out, err := Generate(cfg)
	require.NoError(t, err)
	forms, err := readProfile(out)
	require.NoError(t, err, out)
	return out, forms
}

// index is the position of the first form whose one-line rendering
// contains all of parts, or -1.
func index(forms []node, parts ...string) int {
	return slices.IndexFunc(forms, func(n node) bool {
		s := n.String()
		for _, p := range parts {
			if !strings.Contains(s, p) {
				return false
			}
		}
		return true
	})
}

// lastIndex is index from the end.
func lastIndex(forms []node, parts ...string) int {
	for i := len(forms) - 1; i >= 0; i-- {
		if index(forms[i:i+1], parts...) == 0 {
			return i
		}
	}
	return -1
}

// The operations, filters and modifiers Generate may write; a typo in one
// would make the profile fail to compile on macOS.
var (
	knownOps = []string{
		"default", "process-exec", "process-fork", "signal", "process-info*", "sysctl-read", "ipc-posix-sem",
		"ipc-posix-shm", "iokit-open",
		"mach-lookup", "pseudo-tty", "file-read*", "file-write*", "file-ioctl", "file-read-metadata",
		"file-write-unlink", "network*", "network-bind", "network-inbound", "network-outbound", "system-socket",
	}
	knownFilters = []string{
		"subpath", "literal", "regex", "require-all", "require-any", "global-name", "target", "extension",
		"local", "remote", "socket-domain", "sysctl-name", "sysctl-name-prefix", "iokit-user-client-class",
	}
)

// TestStructure checks every golden profile the way the sandbox's reader
// would: balanced forms, valid strings, known operations and filters,
// regular expressions that compile, (version 1) then (deny default) first.
func TestStructure(t *testing.T) {
	for name, cfg := range goldenConfigs(t) {
		t.Run(name, func(t *testing.T) {
			_, forms := generate(t, cfg)
			require.Greater(t, len(forms), 2)
			assert.Equal(t, "(version 1)", forms[0].String())
			assert.Equal(t, "(deny default)", forms[1].String())
			for _, f := range forms[1:] {
				require.Contains(t, []string{"allow", "deny"}, f.head(), f.String())
				require.Greater(t, len(f.list), 1, f.String())
				i := 1
				for ; i < len(f.list) && !f.list[i].isLst; i++ {
					assert.Contains(t, knownOps, f.list[i].atom, f.String())
				}
				for _, filter := range f.list[i:] {
					filter.walk(func(n node) {
						if n.isLst {
							assert.Contains(t, knownFilters, n.head(), f.String())
						}
						if n.isLst && n.head() == "regex" {
							require.Len(t, n.list, 2)
							require.NotNil(t, n.list[1].str, n.String())
							_, err := regexp.CompilePOSIX(*n.list[1].str)
							assert.NoError(t, err, n.String())
							assert.True(t, strings.HasPrefix(*n.list[1].str, "^"), "regexes are anchored: %s", n)
						}
					})
				}
			}
		})
	}
}

func TestRuleOrder(t *testing.T) {
	cfg := goldenConfigs(t)["full"]
	_, forms := generate(t, cfg)

	lastAllowWrite := lastIndex(forms, "(allow file-read* file-write*")
	denyReadPaths := index(forms, "(deny file-read* file-write-unlink", `[sS][sS][hH](/.*)?$"`)
	denyReadNames := index(forms, "(deny file-read* file-write-unlink", `"^.*/\\.[eE][nN][vV](/.*)?$"`)
	allowRead := index(forms, "(allow file-read*", `\\.env\\.example`)
	denyWrite := index(forms, "(deny file-write*", `[pP][rR][oO][dD]\\.[yY][aA][mM][lL](/.*)?$"`)
	hard := index(forms, "(deny file-write*", `\\.[gG][iI][tT]/[hH][oO][oO][kK][sS](/.*)?$`)
	hardNames := index(forms, "(deny file-write*", `\\.[bB][aA][sS][hH][rR][cC]$`)
	hardAbove := index(forms, "(deny file-write-unlink", `/\\.[gG][iI][tT]$"`)
	for _, i := range []int{lastAllowWrite, denyReadPaths, denyReadNames, allowRead, denyWrite, hard, hardNames, hardAbove} {
		require.Positive(t, i)
	}

	// Every filter a rule made says which rule, and where it came from.
	for _, f := range forms[denyReadPaths].list[3:] {
		require.Len(t, f.comments, 1, f.String())
		assert.Regexp(t, `^denyRead \S+ \(from (default|/Users/u/\S+\.json)\)$`, f.comments[0])
	}

	// The policy's denies come after every allow of the areas, and the
	// holes of allowRead after the denies they punch.
	assert.Less(t, lastAllowWrite, denyReadPaths)
	assert.Less(t, lastAllowWrite, denyReadNames)
	assert.Less(t, denyReadPaths, allowRead)
	assert.Less(t, denyReadNames, allowRead)
	// The write denies come after everything that allows: nothing lifts
	// them. The hard-denied ones are the very last.
	assert.Less(t, allowRead, denyWrite)
	assert.Less(t, denyWrite, hard)
	assert.Less(t, denyWrite, hardNames)
	assert.Less(t, hard, hardAbove)
	assert.Less(t, hardNames, hardAbove)
	for _, f := range forms[denyWrite:] {
		assert.Equal(t, "deny", f.head(), f.String())
	}
	// No allow of writing follows the first write deny.
	assert.Equal(t, -1, index(forms[denyWrite:], "(allow"))
}

// An ro bind inside a wr bind stays read-only: its deny follows the
// allow of the wr bind, and a wr bind inside it follows in turn.
func TestNestedBinds(t *testing.T) {
	cfg := ProfileConfig{Sandbox: sandbox(t, "wr:/w/x/y", "ro:/w/x", "wr:/w"), Network: NetworkDisabled}
	_, forms := generate(t, cfg)
	outer := index(forms, `(allow file-read* file-write* (subpath "/w"))`)
	ro := index(forms, `(allow file-read* (subpath "/w/x"))`)
	roDeny := index(forms, `(deny file-write* (regex "^/[wW]/[xX](/.*)?$"))`)
	inner := index(forms, `(allow file-read* file-write* (subpath "/w/x/y"))`)
	require.Positive(t, outer)
	assert.Less(t, outer, ro)
	assert.Equal(t, ro+1, roDeny)
	assert.Less(t, roDeny, inner)

	// Alone, an ro bind needs no deny: nothing allows writing there.
	_, forms = generate(t, ProfileConfig{Sandbox: sandbox(t, "ro:/w/x"), Network: NetworkDisabled})
	assert.Positive(t, index(forms, `(allow file-read* (subpath "/w/x"))`))
	assert.Equal(t, -1, index(forms, `(deny file-write* (subpath "/w/x"))`))
}

func TestCowBind(t *testing.T) {
	_, forms := generate(t, ProfileConfig{Sandbox: sandbox(t, "cow:/src:/dst"), Network: NetworkDisabled})
	src := index(forms, `(allow file-read* (subpath "/src"))`)
	dst := index(forms, `(allow file-read* file-write* (subpath "/dst"))`)
	require.Positive(t, src)
	require.Positive(t, dst)
	assert.Equal(t, []string{"cow:/src:/dst (source)"}, forms[src].comments)
	assert.Equal(t, -1, index(forms, "file-write*", `"/src"`), "the source is never writable")
}

func TestSystemAndTemporary(t *testing.T) {
	out, forms := generate(t, ProfileConfig{
		Sandbox: sandbox(t), TmpDir: "/var/folders/ab/cd/T/", Network: NetworkDisabled,
	})
	system := index(forms, "(allow file-read*", `(subpath "/usr")`)
	require.Positive(t, system)
	for _, p := range []string{"/usr", "/bin", "/sbin", "/System", "/Library", "/private/etc", "/private/var/db/timezone", "/opt/homebrew"} {
		assert.Contains(t, forms[system].String(), `(subpath "`+p+`")`)
	}
	assert.NotContains(t, forms[system].String(), `"/private/var"`)
	// The shared temporary directories are read-only (issue 29, item 11).
	assert.Positive(t, index(forms, `(allow file-read* (subpath "/private/var/folders/ab/cd/T"))`), out)
	assert.Positive(t, index(forms, `(allow file-read* (subpath "/private/tmp"))`))
	assert.Equal(t, -1, index(forms, "file-write*", `"/private/tmp"`))
	assert.Equal(t, -1, index(forms, "file-write*", `"/private/var/folders/ab/cd/T"`))
	devices := index(forms, "(allow file-read* file-write*", `(literal "/dev/null")`)
	require.Positive(t, devices)
	assert.Contains(t, forms[devices].String(), `(literal "/dev/tty")`)
	assert.Contains(t, forms[devices].String(), `(subpath "/dev/fd")`)
	assert.Positive(t, index(forms, `(allow file-read* (literal "/"))`))
	for _, p := range []string{"/private", "/private/var/folders/ab/cd", "/dev"} {
		assert.Positive(t, index(forms, "(allow file-read-metadata", `(literal "`+p+`")`), p)
	}
	assert.Equal(t, -1, index(forms, "(allow file-read-metadata", `(literal "/usr")`))

	// --try's host system: all of /var.
	cfg := ProfileConfig{Sandbox: sandbox(t), Network: NetworkDisabled}
	cfg.Sandbox.HostSystem = true
	_, forms = generate(t, cfg)
	assert.Positive(t, index(forms, "(allow file-read*", `(subpath "/private/var")`))
	assert.Equal(t, -1, index(forms, `(subpath "/private/var/db/timezone")`))
}

func TestNetwork(t *testing.T) {
	sb := sandbox(t, "wr:/Users/u/proj")
	_, forms := generate(t, ProfileConfig{Sandbox: sb, Network: NetworkAllowAll})
	assert.Positive(t, index(forms, "(allow network*)"))
	assert.Positive(t, index(forms, "(allow system-socket)"))
	assert.Positive(t, index(forms, "(allow mach-lookup", "com.apple.trustd.agent"))
	assert.Equal(t, -1, index(forms, "(deny network*)"))

	_, forms = generate(t, ProfileConfig{Sandbox: sb, Network: NetworkDisabled})
	deny := index(forms, "(deny network*)")
	require.Positive(t, deny)
	assert.Equal(t, -1, index(forms, "(allow network*)"))
	assert.Equal(t, -1, index(forms, "(allow system-socket)"))
	assert.Equal(t, -1, index(forms, "com.apple.trustd.agent"))
	assert.Less(t, deny, index(forms, "(allow system-socket (socket-domain AF_UNIX))"))
	bind := index(forms, "(allow network-bind", `(local unix-socket (subpath "/Users/u/proj"))`)
	outbound := index(forms, "(allow network-outbound", `(remote unix-socket (subpath "/Users/u/proj"))`)
	assert.Less(t, deny, bind)
	assert.Less(t, deny, outbound)
	// Not in the temporary directories the host's programs share.
	assert.Equal(t, -1, index(forms, "unix-socket", "/private/tmp"))

	// The default follows --new-net-ns.
	_, forms = generate(t, ProfileConfig{Sandbox: sb})
	assert.Positive(t, index(forms, "(allow network*)"))
	sb.NewNetNS = true
	_, forms = generate(t, ProfileConfig{Sandbox: sb})
	assert.Positive(t, index(forms, "(deny network*)"))
	assert.Equal(t, -1, index(forms, "(allow network*)"))
}

func TestGenerateErrors(t *testing.T) {
	ok := ProfileConfig{Sandbox: policy.Sandbox{Enabled: true}, Home: "/Users/u", Cwd: "/Users/u/p"}
	with := func(f func(*ProfileConfig)) ProfileConfig {
		c := ok
		c.Sandbox.Binds = slices.Clone(ok.Sandbox.Binds)
		f(&c)
		return c
	}
	_, err := Generate(ok)
	require.NoError(t, err)
	for name, cfg := range map[string]ProfileConfig{
		"not enabled":         with(func(c *ProfileConfig) { c.Sandbox.Enabled = false }),
		"--try":               with(func(c *ProfileConfig) { c.Sandbox.Try = true }),
		"unknown network":     with(func(c *ProfileConfig) { c.Network = "some" }),
		"allow_all --new-net": with(func(c *ProfileConfig) { c.Network = NetworkAllowAll; c.Sandbox.NewNetNS = true }),
		"relative home":       with(func(c *ProfileConfig) { c.Home = "Users/u" }),
		"relative cwd":        with(func(c *ProfileConfig) { c.Cwd = "p" }),
		"relative tmp":        with(func(c *ProfileConfig) { c.TmpDir = "T" }),
		"newline in tmp":      with(func(c *ProfileConfig) { c.TmpDir = "/var/folders/x\n/T" }),
		"NUL in home":         with(func(c *ProfileConfig) { c.Home = "/Users/u\x00" }),
		"newline in bind": with(func(c *ProfileConfig) {
			c.Sandbox.Binds = append(c.Sandbox.Binds, policy.Bind{Mode: policy.ReadOnly, Src: "/a\nb", Dst: "/a\nb"})
		}),
		"NUL in cow destination": with(func(c *ProfileConfig) {
			c.Sandbox.Binds = append(c.Sandbox.Binds, policy.Bind{Mode: policy.CopyOnWrite, Src: "/a", Dst: "/b\x00"})
		}),
		"relative bind": with(func(c *ProfileConfig) {
			c.Sandbox.Binds = append(c.Sandbox.Binds, policy.Bind{Mode: policy.ReadWrite, Src: "a", Dst: "a"})
		}),
		"ro elsewhere": with(func(c *ProfileConfig) {
			c.Sandbox.Binds = append(c.Sandbox.Binds, policy.Bind{Mode: policy.ReadOnly, Src: "/a", Dst: "/b"})
		}),
		"unknown mode": with(func(c *ProfileConfig) {
			c.Sandbox.Binds = append(c.Sandbox.Binds, policy.Bind{Mode: "rx", Src: "/a", Dst: "/a"})
		}),
		"newline in denyRead": with(func(c *ProfileConfig) {
			c.Policy.DenyRead = []policy.Rule{{Value: "/a\n(allow default)", Source: "x"}}
		}),
		"NUL in allowWrite": with(func(c *ProfileConfig) { c.Policy.AllowWrite = []policy.Rule{{Value: "/a\x00"}} }),
		"~ without home": with(func(c *ProfileConfig) {
			c.Home = ""
			c.Policy.DenyWrite = []policy.Rule{{Value: "~/.ssh"}}
		}),
		"project rule without cwd": with(func(c *ProfileConfig) {
			c.Cwd = ""
			c.Policy.AllowRead = []policy.Rule{{Value: "a/b"}}
		}),
		"bind in /System/Volumes": with(func(c *ProfileConfig) {
			c.Sandbox.Binds = append(c.Sandbox.Binds, policy.Bind{Mode: policy.ReadWrite, Src: "/System/Volumes/Data/Users/u", Dst: "/System/Volumes/Data/Users/u"})
		}),
		"cow source in /system/volumes": with(func(c *ProfileConfig) {
			c.Sandbox.Binds = append(c.Sandbox.Binds, policy.Bind{Mode: policy.CopyOnWrite, Src: "/system/volumes/Data/x", Dst: "/Users/u/x"})
		}),
		"bad pattern":            with(func(c *ProfileConfig) { c.Policy.DenyRead = []policy.Rule{{Value: "[z-a].txt"}} }),
		"bad hard-denied":        with(func(c *ProfileConfig) { c.HardDenied = []string{"../.bashrc"} }),
		"newline in hard-denied": with(func(c *ProfileConfig) { c.HardDenied = []string{".bashrc\n"} }),
	} {
		_, err := Generate(cfg)
		assert.Error(t, err, name)
	}
}

// A source with a newline stays in its comment.
func TestCommentInjection(t *testing.T) {
	cfg := ProfileConfig{
		Sandbox: sandbox(t, "wr:/p"),
		Policy:  policy.Policy{DenyRead: []policy.Rule{{Value: "/p/x", Source: "evil\n(allow default)"}}},
		Network: NetworkDisabled,
	}
	out, forms := generate(t, cfg)
	assert.Equal(t, -1, index(forms, "(allow default)"), out)
	assert.Contains(t, out, `; denyRead /p/x (from "evil\n(allow default)")`)
}

// The same settings in another order give the same profile, and a rule
// given twice appears once.
func TestDeterministic(t *testing.T) {
	a := ProfileConfig{
		Sandbox: sandbox(t, "ro:/Users/u/src", "wr:/Users/u/proj", "cow:/Users/u/lib:/Users/u/lib.work"),
		Policy: policy.Policy{
			DenyRead:   []policy.Rule{{Value: ".env", Source: "default"}, {Value: "~/.ssh", Source: "default"}, {Value: "*.pem", Source: "default"}},
			AllowRead:  []policy.Rule{{Value: ".env.example", Source: "a"}, {Value: "~/.ssh/known_hosts", Source: "a"}},
			AllowWrite: []policy.Rule{{Value: "~/.cache", Source: "a"}, {Value: "*.log", Source: "a"}},
			DenyWrite:  []policy.Rule{{Value: "go.sum", Source: "b"}, {Value: "*.lock", Source: "b"}},
		},
		Home: "/Users/u", Cwd: "/Users/u/proj", TmpDir: "/private/var/folders/x/y/T",
		HardDenied: hardDenied,
	}
	b := a
	b.Sandbox.Binds = slices.Clone(a.Sandbox.Binds)
	slices.Reverse(b.Sandbox.Binds)
	rev := func(rs []policy.Rule) []policy.Rule {
		rs = slices.Clone(rs)
		slices.Reverse(rs)
		return rs
	}
	b.Policy.DenyRead = append(rev(a.Policy.DenyRead), policy.Rule{Value: ".env", Source: "default"})
	b.Policy.AllowRead = rev(a.Policy.AllowRead)
	b.Policy.AllowWrite = rev(a.Policy.AllowWrite)
	b.Policy.DenyWrite = rev(a.Policy.DenyWrite)
	b.HardDenied = append(slices.Clone(hardDenied), ".bashrc")
	slices.Reverse(b.HardDenied)

	outA, err := Generate(a)
	require.NoError(t, err)
	outB, err := Generate(b)
	require.NoError(t, err)
	assert.Equal(t, outA, outB)
	assert.Equal(t, 1, strings.Count(outA, `"^.*/\\.[eE][nN][vV](/.*)?$"`))
	assert.Equal(t, 1, strings.Count(outA, `"^.*/\\.[bB][aA][sS][hH][rR][cC]$"`))
}

// Name patterns apply inside the user's directories only: the system's
// certificates (*.pem) stay readable, and git works in the temporary
// directories.
func TestNamePatternScope(t *testing.T) {
	cfg := ProfileConfig{
		Sandbox:    sandbox(t, "wr:/Users/u/proj", "ro:/Users/u/src"),
		Policy:     policy.Policy{DenyRead: []policy.Rule{{Value: "*.pem"}}},
		TmpDir:     "/private/var/folders/x/y/T",
		HardDenied: []string{".git/hooks/"},
		Network:    NetworkDisabled,
	}
	_, forms := generate(t, cfg)
	for _, re := range []string{`[^/]*\\.[pP][eE][mM](/.*)?$`, `\\.[gG][iI][tT]/[hH][oO][oO][kK][sS](/.*)?$`} {
		i := index(forms, "(deny", re)
		require.Positive(t, i, re)
		f := forms[i].list[len(forms[i].list)-1]
		require.Equal(t, "require-all", f.head(), f.String())
		scope := f.list[1].String()
		assert.Equal(t, `(require-any (subpath "/Users/u/proj") (subpath "/Users/u/src"))`, scope)
	}

	// Without binds they have nowhere to apply.
	cfg.Sandbox = sandbox(t)
	out, forms := generate(t, cfg)
	assert.Equal(t, -1, index(forms, "(deny", "pem"), out)
	assert.Contains(t, out, "nothing for them to apply to")
}

// allowRead does not show what nothing else lets the sandbox read.
func TestAllowReadIsOnlyAHole(t *testing.T) {
	cfg := ProfileConfig{
		Sandbox: sandbox(t, "wr:/Users/u/proj"),
		Policy: policy.Policy{
			DenyRead:  []policy.Rule{{Value: "~/.ssh"}, {Value: "config/secret"}},
			AllowRead: []policy.Rule{{Value: "~/.ssh/known_hosts"}, {Value: "config/secret/public"}, {Value: "/Users"}, {Value: "/Users/*/proj/*.txt"}},
		},
		Home: "/Users/u", Cwd: "/Users/u/proj",
		Network: NetworkDisabled,
	}
	out, forms := generate(t, cfg)
	assert.Contains(t, out, "; allowRead ~/.ssh/known_hosts: nothing readable there")
	assert.Equal(t, -1, index(forms, "(allow", "known_hosts"))
	hole := index(forms, "(allow file-read*", `(subpath "/Users/u/proj/config/secret/public")`)
	assert.Greater(t, hole, index(forms, "(deny file-read*", `(subpath "/Users/u/proj/config/secret")`))
	// A hole above the readable directories is those directories.
	above := slices.IndexFunc(forms, func(n node) bool {
		return n.String() == `(allow file-read* (subpath "/Users/u/proj") `+
			`(require-all (regex "^/Users/[^/]*/proj/[^/]*\\.txt(/.*)?$") (subpath "/Users/u/proj")))`
	})
	require.Positive(t, above, out)
	assert.Equal(t, []string{"allowRead /Users"}, forms[above].list[2].comments)
	assert.Equal(t, []string{"allowRead /Users/*/proj/*.txt"}, forms[above].list[3].comments)
}
