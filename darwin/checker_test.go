package darwin

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/boxsh/boxsh/internal/pathtree"
	"github.com/boxsh/boxsh/policy"
)

// This file is a static checker of generated profiles: it reads a profile
// into its forms (readProfile) and decides operations the way Seatbelt
// does (the last rule that matches an operation decides; (deny default)
// first), for the subset of SBPL Generate writes. It models a path as the
// program spells it: on a case-insensitive volume /Users/u/.ENV is the
// file .env, and a deny must match that spelling too.

// request is an operation to decide.
type request struct {
	op string // file-read-data, file-write-create, file-write-unlink, sysctl-read, mach-lookup, network-outbound, ...
	// path is the file (file-*), or the Unix socket (network-* to a socket).
	path string
	// name is the sysctl, the Mach service or the iokit user client class.
	name string
	// ip is the remote "host:port" of network-outbound to an address.
	ip string
}

func readReq(p string) request   { return request{op: "file-read-data", path: p} }
func writeReq(p string) request  { return request{op: "file-write-create", path: p} }
func unlinkReq(p string) request { return request{op: "file-write-unlink", path: p} }

// profileChecker decides requests against one profile.
type profileChecker struct {
	t     *testing.T
	text  string
	forms []node
}

func check(t *testing.T, cfg ProfileConfig) *profileChecker {
	t.Helper()
	text, forms := generate(t, cfg)
	return &profileChecker{t: t, text: text, forms: forms}
}

// allowed decides r: the action of the last rule that matches it.
func (c *profileChecker) allowed(r request) bool {
	c.t.Helper()
	decision := false
	for _, f := range c.forms {
		action := f.head()
		if action != "allow" && action != "deny" {
			continue
		}
		i := 1
		opMatch := false
		for ; i < len(f.list) && !f.list[i].isLst; i++ {
			if opMatches(f.list[i].atom, r.op) {
				opMatch = true
			}
		}
		if !opMatch {
			continue
		}
		filters := f.list[i:]
		match := len(filters) == 0
		for _, flt := range filters {
			if c.filterMatches(flt, r) {
				match = true
				break
			}
		}
		if match {
			decision = action == "allow"
		}
	}
	return decision
}

var regexCache sync.Map

// compiled is the regular expression re, compiled once.
func compiled(re string) *regexp.Regexp {
	if r, ok := regexCache.Load(re); ok {
		return r.(*regexp.Regexp)
	}
	r := regexp.MustCompilePOSIX(re)
	regexCache.Store(re, r)
	return r
}

// opMatches tells whether the operation of a rule (with a trailing *
// for a family) covers op.
func opMatches(ruleOp, op string) bool {
	if ruleOp == "default" {
		return true
	}
	if prefix, ok := strings.CutSuffix(ruleOp, "*"); ok {
		return strings.HasPrefix(op, prefix)
	}
	return ruleOp == op
}

func (c *profileChecker) str(n node) string {
	c.t.Helper()
	require.Len(c.t, n.list, 2, n.String())
	require.NotNil(c.t, n.list[1].str, n.String())
	return *n.list[1].str
}

func (c *profileChecker) filterMatches(n node, r request) bool {
	c.t.Helper()
	switch n.head() {
	case "literal":
		return r.path != "" && r.path == c.str(n)
	case "subpath":
		return r.path != "" && pathtree.Within(r.path, c.str(n))
	case "regex":
		return r.path != "" && compiled(c.str(n)).MatchString(r.path)
	case "require-all":
		for _, k := range n.list[1:] {
			if !c.filterMatches(k, r) {
				return false
			}
		}
		return true
	case "require-any":
		for _, k := range n.list[1:] {
			if c.filterMatches(k, r) {
				return true
			}
		}
		return false
	case "global-name", "sysctl-name", "iokit-user-client-class":
		return r.name == c.str(n)
	case "sysctl-name-prefix":
		return r.name != "" && strings.HasPrefix(r.name, c.str(n))
	case "local", "remote":
		require.Len(c.t, n.list, 3, n.String())
		switch n.list[1].atom {
		case "ip":
			return n.head() == "remote" && r.ip != "" && ipMatches(*n.list[2].str, r.ip)
		case "unix-socket":
			return r.ip == "" && r.path != "" && c.filterMatches(n.list[2], r)
		}
		c.t.Fatalf("unknown network filter %s", n)
	case "extension", "target", "socket-domain":
		// Never matched by the requests of these tests: an allow with
		// one is taken as not applying (the conservative reading).
		return false
	}
	c.t.Fatalf("unknown filter %s", n)
	return false
}

// ipMatches tells whether the address filter ("localhost:3128", "*:*")
// matches "host:port".
func ipMatches(filter, addr string) bool {
	fh, fp, _ := strings.Cut(filter, ":")
	ah, ap, _ := strings.Cut(addr, ":")
	return (fh == "*" || fh == ah) && (fp == "*" || fp == ap)
}

// caseVariants are spellings of p that name the same file on a
// case-insensitive volume: all upper case, and each letter of the last
// component flipped in turn.
func caseVariants(p string) []string {
	out := []string{strings.ToUpper(p)}
	dir, base := p[:strings.LastIndex(p, "/")+1], p[strings.LastIndex(p, "/")+1:]
	for i := 0; i < len(base); i++ {
		if o, ok := otherCase(rune(base[i])); ok {
			out = append(out, dir+base[:i]+string(o)+base[i+1:])
		}
	}
	return out
}

// checkerModes are the network modes every property is checked in.
var checkerModes = []ProfileConfig{
	{Network: NetworkDisabled},
	{Network: NetworkAllowAll},
	{Network: NetworkAllowlist, ProxyPort: 50123},
}

// checkerSandboxes are the bind kinds every property is checked with;
// cows names which bind is a cow whose source must stay unwritable.
var checkerSandboxes = map[string][]string{
	"ro":                   {"ro:/Users/u/src"},
	"wr":                   {"wr:/Users/u/proj"},
	"cow":                  {"cow:/Users/u/lib:/Users/u/lib.work"},
	"cow in wr":            {"wr:/Users/u", "cow:/Users/u/proj:/Users/u/.boxsh-try/work"},
	"cow in bound tmp":     {"wr:/tmp", "cow:/tmp/src:/Users/u/dst"},
	"cow in wr, ro and wr": {"wr:/Users/u/proj", "ro:/Users/u/proj/vendor", "cow:/Users/u/proj/lib:/Users/u/lib.work"},
}

// checkerConfigs is every network mode with every bind kind, the
// policy's defaults and the protected list as boxsh passes them.
func checkerConfigs(t *testing.T) map[string]ProfileConfig {
	out := map[string]ProfileConfig{}
	for _, mode := range checkerModes {
		for name, binds := range checkerSandboxes {
			cfg := mode
			cfg.Sandbox = sandbox(t, binds...)
			cfg.Sandbox.NewNetNS = mode.Network != NetworkAllowAll
			cfg.Policy = policy.NewMerger().Policy()
			cfg.Policy.AllowWrite = []policy.Rule{{Value: "~/.cache", Source: "test"}}
			cfg.Home, cfg.Cwd, cfg.TmpDir = home, proj, tmpDir
			cfg.PrivateTmp = tmpDir + "boxsh-sandbox-k2j3"
			cfg.HardDenied = hardDeniedNoGit()
			cfg.Protected = protectedRepo("/Users/u/proj/repo/.git")
			out[mode.Network+" "+name] = cfg
		}
	}
	return out
}

// hardDeniedNoGit is policy.HardDeniedWrites without the .git/ entries,
// as runtime.SeatbeltConfig passes it.
func hardDeniedNoGit() []string {
	var out []string
	for _, e := range policy.HardDeniedWrites {
		if !strings.HasPrefix(e, ".git/") {
			out = append(out, e)
		}
	}
	return out
}

// TestCheckerProperties asserts the properties of issue 29 on the profile
// of every network mode and bind kind.
func TestCheckerProperties(t *testing.T) {
	for name, cfg := range checkerConfigs(t) {
		t.Run(name, func(t *testing.T) {
			c := check(t, cfg)
			c.rootReadable()
			c.systemVolumesDenied()
			c.bindsReadable(cfg)
			c.sysctlLimited()
			c.cowSourcesReadOnly(cfg)
			c.protectedNamesFolded(cfg)
			c.gitInitWorks(cfg)
			c.networkAsConfigured(cfg)
			c.toolchainsReadable()
			c.compatibility()
			c.sharedTempReadOnly(cfg)
		})
	}
}

// Item 1: "/" itself is readable (not only its attributes).
func (c *profileChecker) rootReadable() {
	c.t.Helper()
	assert.True(c.t, c.allowed(readReq("/")), "reading / must be allowed (macOS 26 aborts programs otherwise)")
	assert.True(c.t, c.allowed(request{op: "file-read-metadata", path: "/"}))
	assert.False(c.t, c.allowed(readReq("/Users/other/x")), "/ is not a subpath rule")
}

// Item 2: nothing under /System/Volumes, in any spelling, while the rest
// of /System stays readable.
func (c *profileChecker) systemVolumesDenied() {
	c.t.Helper()
	for _, p := range []string{
		"/System/Volumes", "/System/Volumes/Data/Users/u/proj/main.go", "/System/Volumes/Data/Users/u/.ssh/id_rsa",
		"/system/volumes/Data/Users/u/proj/x", "/System/VOLUMES/Data/x", "/System/Volumes/Preboot/x",
	} {
		assert.False(c.t, c.allowed(readReq(p)), "read %s", p)
	}
	assert.True(c.t, c.allowed(readReq("/System/Library/Frameworks/Security.framework/Security")))
}

// Item 2, the other side: the binds, named by their usual paths under
// /Users (firmlinks into the data volume, not symbolic links), stay
// readable after the deny of /System/Volumes.
func (c *profileChecker) bindsReadable(cfg ProfileConfig) {
	c.t.Helper()
	for _, b := range cfg.Sandbox.Binds {
		p := "/" + joinLits(canonical(literalSegments(b.Dst)))
		assert.True(c.t, c.allowed(readReq(p+"/file")), "read %s", p)
		assert.False(c.t, c.allowed(readReq("/System/Volumes/Data"+p+"/file")), "read %s through the data volume", p)
	}
}

// Item 3: sysctl-read only for the listed names; never unrestricted.
func (c *profileChecker) sysctlLimited() {
	c.t.Helper()
	for _, f := range c.forms {
		if f.head() == "allow" && len(f.list) == 2 && f.list[1].atom == "sysctl-read" {
			c.t.Errorf("unrestricted %s", f)
		}
	}
	for _, n := range []string{"kern.procargs2", "kern.procargs", "kern.proc.all", "kern.proc.pid.1", "kern.proc.uid.501", "kern.boottime", "security.mac.sandbox.sentinel", "vm.loadavg"} {
		assert.False(c.t, c.allowed(request{op: "sysctl-read", name: n}), n)
	}
	for _, n := range []string{"hw.ncpu", "hw.memsize", "hw.pagesize", "kern.osrelease", "kern.osproductversion", "hw.optional.arm64", "machdep.cpu.brand_string", "sysctl.proc_translated"} {
		assert.True(c.t, c.allowed(request{op: "sysctl-read", name: n}), n)
	}
	// The original's test wants fewer than 200 names from sysctl -a: the
	// exact names plus prefixes that cover a few dozen each.
	assert.Less(c.t, len(sysctlNames)+len(sysctlPrefixes)*40, 200)
}

// Item 4: a cow source is readable and never writable, in any spelling,
// whatever writable area holds it, nor can a directory above it be
// renamed.
func (c *profileChecker) cowSourcesReadOnly(cfg ProfileConfig) {
	c.t.Helper()
	for _, b := range cfg.Sandbox.Binds {
		if b.Mode != policy.CopyOnWrite {
			continue
		}
		src := "/" + joinLits(canonical(literalSegments(b.Src)))
		dst := "/" + joinLits(canonical(literalSegments(b.Dst)))
		assert.True(c.t, c.allowed(readReq(src+"/main.go")), "read %s", src)
		assert.True(c.t, c.allowed(writeReq(dst+"/main.go")), "write %s", dst)
		for _, p := range append([]string{src, src + "/main.go", src + "/new/file"}, caseVariants(src+"/main.go")...) {
			assert.False(c.t, c.allowed(writeReq(p)), "write %s", p)
			assert.False(c.t, c.allowed(unlinkReq(p)), "unlink %s", p)
		}
		for d := path_Dir(src); d != "/"; d = path_Dir(d) {
			if c.allowed(writeReq(d + "/other")) {
				// In a writable directory: the directory may not be
				// renamed with the source in it.
				if d != c.writableRoot(d) {
					assert.False(c.t, c.allowed(unlinkReq(d)), "rename %s above cow source %s", d, src)
				}
			}
		}
	}
}

func path_Dir(p string) string {
	if i := strings.LastIndex(p, "/"); i > 0 {
		return p[:i]
	}
	return "/"
}

// writableRoot is the outermost directory above p (or p) where writing is
// allowed, as seen by the checker.
func (c *profileChecker) writableRoot(p string) string {
	root := p
	for d := p; d != "/"; d = path_Dir(d) {
		if c.allowed(writeReq(d + "/x")) {
			root = d
		}
	}
	return root
}

// Item 5: the protected names are denied in every spelling, in every
// writable directory of the user's.
func (c *profileChecker) protectedNamesFolded(cfg ProfileConfig) {
	c.t.Helper()
	var writable []string
	for _, b := range cfg.Sandbox.Binds {
		switch b.Mode {
		case policy.ReadWrite:
			writable = append(writable, b.Dst)
		case policy.CopyOnWrite:
			writable = append(writable, b.Dst)
		}
	}
	for _, w := range writable {
		w = "/" + joinLits(canonical(literalSegments(w)))
		if !c.allowed(writeReq(w + "/sub/file.txt")) {
			continue // inside a cow source
		}
		for _, e := range cfg.HardDenied {
			p := w + "/sub/" + strings.TrimSuffix(e, "/")
			if strings.HasSuffix(e, "/") {
				p += "/x"
			}
			for _, v := range append([]string{p}, caseVariants(p)...) {
				assert.False(c.t, c.allowed(writeReq(v)), "write %s", v)
			}
		}
	}
	for _, p := range cfg.Protected {
		target := p.Path
		if p.Dir {
			target += "/pre-commit"
		}
		if !c.allowed(writeReq(path_Dir(p.Path) + "/objects")) {
			continue // not in a writable directory
		}
		for _, v := range append([]string{target}, caseVariants(target)...) {
			assert.False(c.t, c.allowed(writeReq(v)), "write %s", v)
		}
		assert.False(c.t, c.allowed(unlinkReq(path_Dir(p.Path))), "rename the .git above %s", p.Path)
	}
}

// Item 6: git init and git clone in a writable directory: a new
// repository's control files can be created; an existing one's cannot.
func (c *profileChecker) gitInitWorks(cfg ProfileConfig) {
	c.t.Helper()
	for _, b := range cfg.Sandbox.Binds {
		if b.Mode != policy.ReadWrite {
			continue
		}
		w := "/" + joinLits(canonical(literalSegments(b.Dst)))
		if !c.allowed(writeReq(w + "/newrepo/README")) {
			continue
		}
		for _, f := range []string{".git", ".git/config", ".git/hooks", ".git/hooks/pre-commit.sample", ".git/info", ".git/info/exclude", ".git/HEAD", ".git/objects/ab/cdef"} {
			assert.True(c.t, c.allowed(writeReq(w+"/newrepo/"+f)), "git init: write %s/newrepo/%s", w, f)
		}
	}
	if c.allowed(writeReq("/Users/u/proj/repo/.git/objects/ab/cdef")) {
		assert.False(c.t, c.allowed(writeReq("/Users/u/proj/repo/.git/config")))
		assert.False(c.t, c.allowed(writeReq("/Users/u/proj/repo/.git/hooks/pre-commit")))
	}
}

// Item 8 (and the other modes): the network as configured; allowlist
// reaches the proxy's port on the loopback and nothing else.
func (c *profileChecker) networkAsConfigured(cfg ProfileConfig) {
	c.t.Helper()
	out := func(addr string) bool { return c.allowed(request{op: "network-outbound", ip: addr}) }
	switch cfg.Network {
	case NetworkAllowAll:
		assert.True(c.t, out("example.com:443"))
	case NetworkDisabled:
		assert.False(c.t, out("example.com:443"))
		assert.False(c.t, out("localhost:3128"))
	case NetworkAllowlist:
		proxy := "localhost:" + strconv.Itoa(cfg.ProxyPort)
		assert.True(c.t, out(proxy))
		for _, a := range []string{"localhost:3128", "localhost:22", "localhost:" + strconv.Itoa(cfg.ProxyPort+1), "example.com:443", "*:" + strconv.Itoa(cfg.ProxyPort)} {
			assert.False(c.t, out(a), a)
		}
		assert.False(c.t, c.allowed(request{op: "network-bind", ip: "localhost:8080"}))
		assert.False(c.t, c.allowed(request{op: "mach-lookup", name: "com.apple.dnssd.service"}), "names resolve in the proxy")
		assert.True(c.t, c.allowed(request{op: "mach-lookup", name: "com.apple.trustd"}), "TLS verification")
	}
	if cfg.Network != NetworkAllowAll {
		// Every allow of network-outbound to an address names the proxy.
		for _, f := range c.forms {
			if f.head() == "allow" && strings.Contains(f.String(), "(remote ip ") {
				assert.Equal(c.t, fmt.Sprintf(`(allow network-outbound (remote ip "localhost:%d"))`, cfg.ProxyPort), f.String())
			}
		}
	}
}

// Item 7: certificate trust data and the toolchains are readable.
func (c *profileChecker) toolchainsReadable() {
	c.t.Helper()
	for _, p := range []string{
		"/private/var/db/mds/system/mdsObject.db",
		"/Applications/Xcode.app/Contents/Developer/usr/bin/git",
		"/Applications/Xcode-15.4.app/Contents/Developer/usr/bin/clang",
		"/Library/Developer/CommandLineTools/usr/bin/git",
		"/private/var/db/xcode_select_link",
		"/opt/local/bin/port",
		"/opt/homebrew/bin/git",
	} {
		assert.True(c.t, c.allowed(readReq(p)), "read %s", p)
	}
}

// Item 9: shared memory, power management.
func (c *profileChecker) compatibility() {
	c.t.Helper()
	assert.True(c.t, c.allowed(request{op: "ipc-posix-shm", name: "/psm_x"}))
	assert.True(c.t, c.allowed(request{op: "ipc-posix-sem", name: "/sem"}))
	assert.True(c.t, c.allowed(request{op: "mach-lookup", name: "com.apple.PowerManagement.control"}))
	assert.True(c.t, c.allowed(request{op: "iokit-open", name: "RootDomainUserClient"}))
	assert.False(c.t, c.allowed(request{op: "iokit-open", name: "IOHIDLibUserClient"}))
}

// Item 11: the shared temporary directories are readable and, unless a
// bind makes them writable, read-only.
func (c *profileChecker) sharedTempReadOnly(cfg ProfileConfig) {
	c.t.Helper()
	tmpBound := false
	for _, b := range cfg.Sandbox.Binds {
		tmpBound = tmpBound || (b.Mode == policy.ReadWrite && b.Dst == "/tmp")
	}
	tmp := "/" + joinLits(canonical(literalSegments(strings.TrimSuffix(cfg.TmpDir, "/"))))
	assert.True(c.t, c.allowed(readReq("/private/tmp/x")))
	assert.True(c.t, c.allowed(readReq(tmp+"/x")))
	assert.Equal(c.t, tmpBound, c.allowed(writeReq("/private/tmp/x")), "write /private/tmp (bound: %v)", tmpBound)
	assert.False(c.t, c.allowed(writeReq(tmp+"/x")), "write $TMPDIR")
	assert.False(c.t, c.allowed(writeReq(tmp+"/boxsh-sandbox-other/x")), "write another sandbox's temporary directory")
	if cfg.PrivateTmp != "" {
		own := "/" + joinLits(canonical(literalSegments(cfg.PrivateTmp)))
		assert.True(c.t, c.allowed(writeReq(own+"/sh-thd.123")), "write the sandbox's own temporary directory")
	}
}

// The checker itself: it decides by the last matching rule.
func TestCheckerDecides(t *testing.T) {
	src := `(version 1)
(deny default)
(allow file-read* (subpath "/a"))
(deny file-read* (regex "^/a/[sS]$"))
(allow file-write* (require-all (subpath "/a") (require-any (literal "/a/w") (regex "^/a/x"))))
(allow network-outbound (remote ip "localhost:9"))
(allow sysctl-read (sysctl-name-prefix "hw."))`
	forms, err := readProfile(src)
	require.NoError(t, err)
	c := &profileChecker{t: t, text: src, forms: forms}
	assert.True(t, c.allowed(readReq("/a/b")))
	assert.False(t, c.allowed(readReq("/b")))
	assert.False(t, c.allowed(readReq("/a/S")))
	assert.True(t, c.allowed(writeReq("/a/w")))
	assert.True(t, c.allowed(writeReq("/a/xy")))
	assert.False(t, c.allowed(writeReq("/a/y")))
	assert.True(t, c.allowed(request{op: "network-outbound", ip: "localhost:9"}))
	assert.False(t, c.allowed(request{op: "network-outbound", ip: "localhost:10"}))
	assert.True(t, c.allowed(request{op: "sysctl-read", name: "hw.ncpu"}))
	assert.False(t, c.allowed(request{op: "sysctl-read", name: "kern.procargs2"}))
	assert.Equal(t, []string{"/A/B/.ENV", "/a/b/.Env", "/a/b/.eNv", "/a/b/.enV"}, caseVariants("/a/b/.env"))
}
