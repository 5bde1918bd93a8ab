//go:build linux

package integration

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Escape tests: each tries a way out of the sandbox (or a way to change
// the host from inside it) and checks both that the attempt is refused
// inside and, where the attempt aims at a host file, that the file is
// unchanged on the host. Like the other sandbox tests they run only as an
// unprivileged user (requireRootless).

// ---- helpers ----

// shq quotes s for /bin/sh.
func shq(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// writeHostFile writes a file on the host, making its directory.
func writeHostFile(t *testing.T, path, content string, mode os.FileMode) {
	t.Helper()
	require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
	require.NoError(t, os.WriteFile(path, []byte(content), mode))
}

// requireHostFile requires the host file at path to hold content.
func requireHostFile(t *testing.T, path, content string) {
	t.Helper()
	got, err := os.ReadFile(path)
	require.NoError(t, err, "host file %s", path)
	assert.Equal(t, content, string(got), "host file %s changed", path)
}

// requireHostAbsent requires that nothing exists at path on the host.
func requireHostAbsent(t *testing.T, path string) {
	t.Helper()
	_, err := os.Lstat(path)
	assert.True(t, errors.Is(err, os.ErrNotExist), "%s exists on the host (err %v)", path, err)
}

// tryFunc defines `try NAME CMD...` for a script: it prints NAME-done
// when CMD succeeds and NAME-refused when it fails.
const tryFunc = `try() { n=$1; shift; if "$@"; then echo "$n-done"; else echo "$n-refused"; fi; }
`

// requireRefused requires that each try NAME of a tryFunc script was
// refused.
func requireRefused(t *testing.T, r runResult, names ...string) {
	t.Helper()
	for _, n := range names {
		assert.Contains(t, r.stdout, n+"-refused\n", "%s must fail inside the sandbox; stderr:\n%s", n, r.stderr)
		assert.NotContains(t, r.stdout, n+"-done\n", "%s succeeded inside the sandbox", n)
	}
}

// selfExcludingPattern returns a grep basic regular expression matching s
// literally that does not match its own text ([i]ntegration\.test). So a
// grep of command lines finds neither itself nor the shell whose script
// holds the pattern.
func selfExcludingPattern(s string) string {
	var b strings.Builder
	for i, r := range s {
		switch {
		case i == 0:
			b.WriteString("[" + string(r) + "]")
		case strings.ContainsRune(`\.*[]^$`, r):
			b.WriteString(`\` + string(r))
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// argvPIDs lists the live processes whose whole command line is argv
// (zombies, whose command line is empty, are left out).
func argvPIDs(argv ...string) []int {
	want := []byte(strings.Join(argv, "\x00") + "\x00")
	var pids []int
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid)); err == nil && bytes.Equal(b, want) {
			pids = append(pids, pid)
		}
	}
	return pids
}

// waitForArgv waits until a process with command line argv runs on the
// host.
func waitForArgv(t *testing.T, argv ...string) {
	t.Helper()
	require.Eventually(t, func() bool { return len(argvPIDs(argv...)) > 0 },
		10*time.Second, 10*time.Millisecond, "no process %q started", argv)
}

// requireNoArgv requires that, within d, no process with command line
// argv is left on the host. Survivors are killed (by pid).
func requireNoArgv(t *testing.T, d time.Duration, argv ...string) {
	t.Helper()
	deadline := time.Now().Add(d)
	for {
		left := argvPIDs(argv...)
		if len(left) == 0 {
			return
		}
		if time.Now().After(deadline) {
			for _, pid := range left {
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
			t.Errorf("processes %q still running on the host %v later: pids %v", argv, d, left)
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// sandboxStateDirs lists the sb-* state directories under root.
func sandboxStateDirs(root string) []string {
	dirs, _ := filepath.Glob(filepath.Join(root, "sb-*"))
	return dirs
}

// escapeProbeSource is a small static Go program run inside the sandbox:
// it tries one system call (or operation) per argument and prints
// NAME=RESULT, RESULT being "ok" or the errno's name. It needs nothing
// inside the sandbox (no python, no compiler) and, unlike a shell command,
// can pass any value in any register (the high bits of an ioctl request).
const escapeProbeSource = `// Command probe tries one system call or operation per argument and prints
// NAME=RESULT lines: "ok" when it worked, else the errno's name.
package main

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"runtime"
	"sort"
	"strings"
	"syscall"
	"time"
	"unsafe"
)

// Numbers of system calls that package syscall does not name on every
// architecture.
var numbers = map[string]map[string]uintptr{
	"amd64": {"bpf": 321, "userfaultfd": 323, "name_to_handle_at": 303, "open_by_handle_at": 304,
		"setns": 308, "finit_module": 313, "kexec_file_load": 320,
		"process_vm_readv": 310, "process_vm_writev": 311, "pidfd_getfd": 438},
	"arm64": {"bpf": 280, "userfaultfd": 282, "name_to_handle_at": 264, "open_by_handle_at": 265,
		"setns": 268, "finit_module": 273, "kexec_file_load": 294,
		"process_vm_readv": 270, "process_vm_writev": 271, "pidfd_getfd": 438},
}

const (
	sysIoUringSetup = 425
	sysClone3       = 435
	tiocsti         = 0x5412
	tioclinux       = 0x541C
	high            = uintptr(1) << 32
	atFDCWD         = ^uintptr(99) // -100
)

func nr(name string) uintptr {
	n, ok := numbers[runtime.GOARCH][name]
	if !ok {
		fmt.Printf("no number for %s on %s\n", name, runtime.GOARCH)
		os.Exit(3)
	}
	return n
}

// pinned keeps the memory passed to system calls reachable (the heap does
// not move), so that the addresses given as uintptr stay valid.
var pinned [][]byte

// mem is the address of n zero bytes, or of b when given.
func mem(n int, b ...byte) uintptr {
	buf := make([]byte, max(n, len(b)))
	copy(buf, b)
	pinned = append(pinned, buf)
	return uintptr(unsafe.Pointer(&buf[0]))
}

// str is the address of s as a C string.
func str(s string) uintptr { return mem(0, append([]byte(s), 0)...) }

var errnoNames = map[syscall.Errno]string{
	syscall.EPERM: "EPERM", syscall.ENOENT: "ENOENT", syscall.ESRCH: "ESRCH", syscall.EBADF: "EBADF",
	syscall.EACCES: "EACCES", syscall.EFAULT: "EFAULT", syscall.EBUSY: "EBUSY", syscall.EEXIST: "EEXIST",
	syscall.EXDEV: "EXDEV", syscall.ENOTDIR: "ENOTDIR", syscall.EINVAL: "EINVAL", syscall.ENOTTY: "ENOTTY",
	syscall.EROFS: "EROFS", syscall.ENOSYS: "ENOSYS", syscall.EOVERFLOW: "EOVERFLOW", syscall.EIO: "EIO",
	syscall.ENOKEY: "ENOKEY", syscall.ENOTSUP: "ENOTSUP", syscall.EAFNOSUPPORT: "EAFNOSUPPORT",
	syscall.ECONNREFUSED: "ECONNREFUSED", syscall.ENETUNREACH: "ENETUNREACH", syscall.EHOSTUNREACH: "EHOSTUNREACH",
	syscall.ETIMEDOUT: "ETIMEDOUT",
}

func errName(err error) string {
	var e syscall.Errno
	if errors.As(err, &e) {
		if n, ok := errnoNames[e]; ok {
			return n
		}
		return fmt.Sprintf("errno%d", int(e))
	}
	return "error:" + strings.ReplaceAll(err.Error(), " ", "_")
}

// sys runs a raw system call; a descriptor it returns is closed.
func sys(closeFD bool, trap uintptr, a ...uintptr) string {
	var args [6]uintptr
	copy(args[:], a)
	r, _, e := syscall.Syscall6(trap, args[0], args[1], args[2], args[3], args[4], args[5])
	if e != 0 {
		return errName(e)
	}
	if closeFD {
		syscall.Close(int(r))
	}
	return "ok"
}

func devNull() uintptr {
	f, err := os.Open("/dev/null")
	if err != nil {
		fmt.Println("open /dev/null:", err)
		os.Exit(3)
	}
	return f.Fd()
}

var checks = map[string]func() string{
	"ioctl-tiocsti":        func() string { return sys(false, syscall.SYS_IOCTL, devNull(), tiocsti, str("x")) },
	"ioctl-tiocsti-high":   func() string { return sys(false, syscall.SYS_IOCTL, devNull(), tiocsti|high, str("x")) },
	"ioctl-tioclinux":      func() string { return sys(false, syscall.SYS_IOCTL, devNull(), tioclinux, mem(1, 7)) },
	"ioctl-tioclinux-high": func() string { return sys(false, syscall.SYS_IOCTL, devNull(), tioclinux|high, mem(1, 7)) },
	"ptrace-peek": func() string {
		return sys(false, syscall.SYS_PTRACE, syscall.PTRACE_PEEKDATA, uintptr(os.Getppid()), 0, 0)
	},
	"ptrace-traceme":   func() string { return sys(false, syscall.SYS_PTRACE, syscall.PTRACE_TRACEME, 0, 0, 0) },
	"unix-socket":      func() string { return sys(true, syscall.SYS_SOCKET, syscall.AF_UNIX, syscall.SOCK_STREAM, 0) },
	"unix-socket-high": func() string { return sys(true, syscall.SYS_SOCKET, syscall.AF_UNIX|high, syscall.SOCK_STREAM, 0) },
	"inet-socket":      func() string { return sys(true, syscall.SYS_SOCKET, syscall.AF_INET, syscall.SOCK_STREAM, 0) },
	"unix-socketpair": func() string {
		fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM, 0)
		if err != nil {
			return errName(err)
		}
		syscall.Close(fds[0])
		syscall.Close(fds[1])
		return "ok"
	},
	"unshare-user":  func() string { return sys(false, syscall.SYS_UNSHARE, syscall.CLONE_NEWUSER) },
	"unshare-mount": func() string { return sys(false, syscall.SYS_UNSHARE, syscall.CLONE_NEWNS) },
	"unshare-net":   func() string { return sys(false, syscall.SYS_UNSHARE, syscall.CLONE_NEWNET) },
	"clone-newuser": func() string {
		cmd := exec.Command("/bin/true")
		cmd.SysProcAttr = &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWUSER}
		if err := cmd.Run(); err != nil {
			return errName(err)
		}
		return "ok"
	},
	"clone3":     func() string { return sys(false, sysClone3, 0, 0) },
	"mount":      func() string { return sys(false, syscall.SYS_MOUNT, str("none"), str("/tmp"), str("tmpfs"), 0, 0) },
	"umount2":    func() string { return sys(false, syscall.SYS_UMOUNT2, str("/proc"), syscall.MNT_DETACH) },
	"pivot_root": func() string { return sys(false, syscall.SYS_PIVOT_ROOT, str("/tmp"), str("/tmp")) },
	"setns":      func() string { return sys(false, nr("setns"), ^uintptr(0), 0) },
	// Without the filter: EBADF, and 0 (nothing to copy) from the parent.
	"pidfd_getfd":       func() string { return sys(false, nr("pidfd_getfd"), ^uintptr(0), 0, 0) },
	"process_vm_readv":  func() string { return sys(false, nr("process_vm_readv"), uintptr(os.Getppid()), 0, 0, 0, 0, 0) },
	"process_vm_writev": func() string { return sys(false, nr("process_vm_writev"), uintptr(os.Getppid()), 0, 0, 0, 0, 0) },
	"keyctl":     func() string { return sys(false, syscall.SYS_KEYCTL, 0, ^uintptr(2), 0) }, // KEYCTL_GET_KEYRING_ID, KEY_SPEC_SESSION_KEYRING
	"add_key": func() string {
		return sys(false, syscall.SYS_ADD_KEY, str("user"), str("boxsh-probe"), str("x"), 1, ^uintptr(1)) // KEY_SPEC_PROCESS_KEYRING
	},
	"request_key":     func() string { return sys(false, syscall.SYS_REQUEST_KEY, str("user"), str("boxsh-probe-none"), 0, 0) },
	"bpf":             func() string { return sys(true, nr("bpf"), 0, 0, 0) },
	"perf_event_open": func() string { return sys(true, syscall.SYS_PERF_EVENT_OPEN, 0, 0, ^uintptr(0), ^uintptr(0), 0) },
	"userfaultfd":     func() string { return sys(true, nr("userfaultfd"), 1) },         // UFFD_USER_MODE_ONLY
	"io_uring_setup":  func() string { return sys(true, sysIoUringSetup, 1, mem(120)) }, // struct io_uring_params
	// struct file_handle with handle_bytes 0; the mount id.
	"name_to_handle_at": func() string { return sys(false, nr("name_to_handle_at"), atFDCWD, str("/"), mem(136), mem(4), 0) },
	"open_by_handle_at": func() string { return sys(true, nr("open_by_handle_at"), devNull(), mem(136), syscall.O_RDONLY) },
	"kexec_load":        func() string { return sys(false, syscall.SYS_KEXEC_LOAD, 0, 0, 0, 0) },
	"kexec_file_load":   func() string { return sys(false, nr("kexec_file_load"), ^uintptr(0), ^uintptr(0), 0, 0, 0) },
	"init_module":       func() string { return sys(false, syscall.SYS_INIT_MODULE, 0, 0, str("")) },
	"finit_module":      func() string { return sys(false, nr("finit_module"), ^uintptr(0), str(""), 0) },
	"delete_module": func() string {
		return sys(false, syscall.SYS_DELETE_MODULE, str("boxsh_probe_none"), syscall.O_NONBLOCK)
	},
	"reboot":  func() string { return sys(false, syscall.SYS_REBOOT, 0, 0, 0, 0) }, // bad magic: never reboots
	"swapon":  func() string { return sys(false, syscall.SYS_SWAPON, str("/boxsh-probe-none"), 0) },
	"swapoff": func() string { return sys(false, syscall.SYS_SWAPOFF, str("/boxsh-probe-none")) },
	"mknod-block": func() string {
		return sys(false, syscall.SYS_MKNODAT, atFDCWD, str("/tmp/boxsh-probe-blk"), syscall.S_IFBLK|0o600, 8<<8) // sda
	},
	"mknod-char": func() string {
		return sys(false, syscall.SYS_MKNODAT, atFDCWD, str("/tmp/boxsh-probe-mem"), syscall.S_IFCHR|0o600, 1<<8|1) // /dev/mem
	},
	// chroot-escape is the classic breakout of a chroot: chroot into a
	// subdirectory, climb with .. past it, chroot there. It prints the
	// entries of the directory it ends in.
	"chroot-escape": func() string {
		if err := os.MkdirAll("/tmp/boxsh-probe-jail", 0o755); err != nil {
			return errName(err)
		}
		if err := syscall.Chroot("/tmp/boxsh-probe-jail"); err != nil {
			return errName(err)
		}
		for i := 0; i < 64; i++ {
			if err := syscall.Chdir(".."); err != nil {
				return errName(err)
			}
		}
		if err := syscall.Chroot("."); err != nil {
			return errName(err)
		}
		entries, err := os.ReadDir("/")
		if err != nil {
			return errName(err)
		}
		var names []string
		for _, e := range entries {
			names = append(names, e.Name())
		}
		sort.Strings(names)
		return "ok:" + strings.Join(names, ",")
	},
}

func main() {
	for _, arg := range os.Args[1:] {
		name, param, _ := strings.Cut(arg, ":")
		if name == "connect" {
			c, err := net.DialTimeout("tcp", param, 3*time.Second)
			if err != nil {
				fmt.Printf("%s=%s\n", arg, errName(err))
				continue
			}
			c.Close()
			fmt.Printf("%s=ok\n", arg)
			continue
		}
		f, ok := checks[name]
		if !ok {
			fmt.Printf("%s=unknown-check\n", arg)
			continue
		}
		fmt.Printf("%s=%s\n", arg, f())
	}
}
`

// buildEscapeProbe builds the probe into a fresh directory (to bind ro:)
// and returns the directory; the probe is DIR/probe.
func buildEscapeProbe(t *testing.T) string {
	t.Helper()
	if runtime.GOARCH != "amd64" && runtime.GOARCH != "arm64" {
		t.Skipf("the escape probe knows the system call numbers of amd64 and arm64 only, not %s", runtime.GOARCH)
	}
	base := t.TempDir()
	src, bin := filepath.Join(base, "src"), filepath.Join(base, "bin")
	writeHostFile(t, filepath.Join(src, "go.mod"), "module boxshprobe\n\ngo 1.21\n", 0o644)
	writeHostFile(t, filepath.Join(src, "main.go"), escapeProbeSource, 0o644)
	require.NoError(t, os.Mkdir(bin, 0o755))
	cmd := exec.CommandContext(testContext(t), "go", "build", "-trimpath", "-o", filepath.Join(bin, "probe"), ".")
	cmd.Dir = src
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOFLAGS=-mod=mod", "GOWORK=off", "GOTOOLCHAIN=local")
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "go build of the escape probe:\n%s", out)
	return bin
}

// probeResults parses the probe's NAME=RESULT lines.
func probeResults(t *testing.T, out string) map[string]string {
	t.Helper()
	res := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		name, result, ok := strings.Cut(line, "=")
		if ok {
			res[name] = result
		}
	}
	return res
}

// runProbe runs the probe in DIR with checks in a new sandbox (with DIR
// bound read-only and flags added) and returns its results.
func runProbe(t *testing.T, dir string, flags []string, checks ...string) map[string]string {
	t.Helper()
	flags = append(slices.Clone(flags), "--bind", "ro:"+dir)
	r := sandboxShell(t, t.TempDir(), flags, shq(filepath.Join(dir, "probe"))+" "+strings.Join(checks, " "))
	require.Equal(t, 0, r.code(), "probe: %s%s", r.stdout, r.stderr)
	res := probeResults(t, r.stdout)
	require.Len(t, res, len(checks), "probe output: %s", r.stdout)
	return res
}

// requireProbe requires each check of res to have the result want.
func requireProbe(t *testing.T, res map[string]string, want string, checks ...string) {
	t.Helper()
	for _, c := range checks {
		assert.Equal(t, want, res[c], "%s inside the sandbox", c)
	}
}

// ---- 1, 2, 3: symlinks, file tools, renames ----

// TestEscapeSymlinksInShell checks that symlinks do not lead out of the
// sandbox:
//   - a link made inside a wr bind to a read-only path (the host's
//     /etc/passwd, a file of a ro bind) cannot be written through;
//   - nor can one to an unbound host file;
//   - links planted on the host in bound directories (absolute, relative,
//     to a directory) resolve inside the sandbox, where their targets do
//     not exist.
//
// The host files keep their bytes.
func TestEscapeSymlinksInShell(t *testing.T) {
	t.Parallel()
	requireRootless(t)
	base := t.TempDir()
	ro, wr := filepath.Join(base, "ro"), filepath.Join(base, "wr")
	hidden := t.TempDir() // never bound
	secret, victim := filepath.Join(hidden, "secret"), filepath.Join(hidden, "victim")
	writeHostFile(t, filepath.Join(ro, "f"), "ro\n", 0o644)
	require.NoError(t, os.Mkdir(wr, 0o755))
	writeHostFile(t, secret, "s3cret-symlink-shell\n", 0o600)
	writeHostFile(t, victim, "victim\n", 0o644)
	rel, err := filepath.Rel(wr, secret)
	require.NoError(t, err)
	// Links planted on the host, in a wr and in a ro bind.
	require.NoError(t, os.Symlink(secret, filepath.Join(wr, "host-abs")))
	require.NoError(t, os.Symlink(rel, filepath.Join(wr, "host-rel")))
	require.NoError(t, os.Symlink(hidden, filepath.Join(ro, "host-dir")))
	require.NoError(t, os.Symlink(secret, filepath.Join(ro, "host-abs")))
	passwd, err := os.ReadFile("/etc/passwd")
	require.NoError(t, err)

	r := sandboxShell(t, base, []string{"--bind", "ro:" + ro, "--bind", "wr:" + wr}, tryFunc+`
		cd `+shq(wr)+`
		ln -s /etc/passwd passwd-link
		try passwd-link sh -c 'echo x >> passwd-link'
		ln -s `+shq(filepath.Join(ro, "f"))+` ro-link
		try ro-link sh -c 'echo x > ro-link'
		ln -s `+shq(victim)+` victim-link
		try victim-link sh -c 'echo x > victim-link'
		ln -s ../../../../../../../../../../etc/shadow shadow-link
		try shadow-link cat shadow-link
		try host-abs cat host-abs
		try host-rel cat host-rel
		try ro-host-abs cat `+shq(filepath.Join(ro, "host-abs"))+`
		try ro-host-dir ls `+shq(filepath.Join(ro, "host-dir")+"/")+`
		try ro-host-dir-file cat `+shq(filepath.Join(ro, "host-dir", "secret"))+`
		try ro-host-dir-cd cd `+shq(filepath.Join(ro, "host-dir"))+`
		cat /etc/passwd > /dev/null && echo passwd-readable`)
	require.Equal(t, 0, r.code(), r.stderr)
	requireRefused(t, r, "passwd-link", "ro-link", "victim-link", "shadow-link", "host-abs", "host-rel",
		"ro-host-abs", "ro-host-dir", "ro-host-dir-file", "ro-host-dir-cd")
	assert.Contains(t, r.stdout, "passwd-readable\n", "the sandbox's /etc/passwd is the host's, read-only")
	assert.Contains(t, r.stderr, "Read-only file system")
	assert.Contains(t, r.stderr, "No such file")
	assert.NotContains(t, r.stdout+r.stderr, "s3cret")

	after, err := os.ReadFile("/etc/passwd")
	require.NoError(t, err)
	assert.True(t, bytes.Equal(passwd, after), "the host's /etc/passwd changed")
	requireHostFile(t, filepath.Join(ro, "f"), "ro\n")
	requireHostFile(t, victim, "victim\n")
	requireHostFile(t, secret, "s3cret-symlink-shell\n")
	// The links made inside are in the wr bind, as links.
	link, err := os.Readlink(filepath.Join(wr, "victim-link"))
	require.NoError(t, err)
	assert.Equal(t, victim, link)
}

// TestEscapeSymlinksInFileTools checks the same through the file tools of
// --rpc --sandbox:
//   - a read of a link to an unbound host file fails;
//   - write and edit through a link into a ro bind, and of paths in a ro
//     bind, fail;
//   - a write through a link to an unbound host file, or to that file's own
//     path, does not reach the host; at most it reaches the sandbox's
//     private /tmp.
//
// The host files are unchanged.
func TestEscapeSymlinksInFileTools(t *testing.T) {
	t.Parallel()
	requireRootless(t)
	ctx := testContext(t)
	base := t.TempDir()
	ro, wr := filepath.Join(base, "ro"), filepath.Join(base, "wr")
	hidden := t.TempDir()
	secret, victim := filepath.Join(hidden, "secret"), filepath.Join(hidden, "victim")
	writeHostFile(t, filepath.Join(ro, "f"), "ro\n", 0o644)
	require.NoError(t, os.Mkdir(wr, 0o755))
	writeHostFile(t, secret, "s3cret-file-tools\n", 0o600)
	writeHostFile(t, victim, "victim\n", 0o644)
	require.NoError(t, os.Symlink(secret, filepath.Join(ro, "secret-link")))
	require.NoError(t, os.Symlink(secret, filepath.Join(wr, "secret-link")))
	require.NoError(t, os.Symlink(filepath.Join(ro, "f"), filepath.Join(wr, "ro-link")))
	require.NoError(t, os.Symlink(victim, filepath.Join(wr, "victim-link")))

	s := startServer(t, ctx, serverOptions{args: []string{"--sandbox", "--bind", "ro:" + ro, "--bind", "wr:" + wr}, dir: base})
	edit := func(path string) message {
		return s.call("edit", map[string]any{"path": path, "edits": []map[string]any{{"oldText": "ro", "newText": "rw"}}})
	}
	for _, p := range []string{filepath.Join(ro, "secret-link"), filepath.Join(wr, "secret-link"), secret} {
		m := s.call("read", map[string]any{"path": p})
		requireToolFailure(t, m, "no such file")
		assert.NotContains(t, string(m.Raw), "s3cret", "read %s", p)
	}
	requireToolFailure(t, s.call("write", map[string]any{"path": filepath.Join(wr, "ro-link"), "content": "x"}), "read-only file system")
	requireToolFailure(t, s.call("write", map[string]any{"path": filepath.Join(ro, "f"), "content": "x"}), "read-only file system")
	requireToolFailure(t, s.call("write", map[string]any{"path": filepath.Join(ro, "new"), "content": "x"}), "read-only file system")
	requireToolFailure(t, s.call("write", map[string]any{"path": filepath.Join(ro, "sub", "new"), "content": "x"}), "read-only file system")
	requireToolFailure(t, edit(filepath.Join(wr, "ro-link")), "read-only file system")
	requireToolFailure(t, edit(filepath.Join(ro, "f")), "read-only file system")
	requireToolFailure(t, edit(filepath.Join(wr, "secret-link")), "no such file")

	// These may succeed, but only in the sandbox's own /tmp, since the
	// test's directories are under /tmp. What the sandbox then reads there
	// is its own copy, and the host's files stay as they were.
	for _, p := range []string{filepath.Join(wr, "victim-link"), victim, secret} {
		r := s.call("write", map[string]any{"path": p, "content": "owned\n"}).toolResult(t)
		if !r.IsError {
			out := s.bash("cat " + shq(p))
			assert.Equal(t, "owned\n", out.Stdout, "the sandbox's copy of %s", p)
		}
	}

	requireHostFile(t, filepath.Join(ro, "f"), "ro\n")
	requireHostFile(t, secret, "s3cret-file-tools\n")
	requireHostFile(t, victim, "victim\n")
	requireHostAbsent(t, filepath.Join(ro, "new"))
	requireHostAbsent(t, filepath.Join(ro, "sub"))
	for name, target := range map[string]string{"ro-link": filepath.Join(ro, "f"), "victim-link": victim, "secret-link": secret} {
		got, err := os.Readlink(filepath.Join(wr, name))
		if assert.NoError(t, err, "%s must still be a link", name) {
			assert.Equal(t, target, got)
		}
	}
}

// TestEscapeRenameAndLinkAcrossBinds checks that renames and hard links
// cannot move files out of or into a ro bind, nor move or remove a bind
// itself. mv (which falls back to copy and unlink across mounts), ln, rm
// -rf, chmod and touch on a ro bind fail. The host keeps the files, their
// modes, and the bound directories where they were.
func TestEscapeRenameAndLinkAcrossBinds(t *testing.T) {
	t.Parallel()
	requireRootless(t)
	base := t.TempDir()
	ro, wr := filepath.Join(base, "ro"), filepath.Join(base, "wr")
	writeHostFile(t, filepath.Join(ro, "f"), "ro\n", 0o644)
	require.NoError(t, os.Mkdir(filepath.Join(ro, "sub"), 0o755))
	writeHostFile(t, filepath.Join(wr, "w"), "w\n", 0o644)

	q := func(parts ...string) string { return shq(filepath.Join(parts...)) }
	r := sandboxShell(t, base, []string{"--bind", "ro:" + ro, "--bind", "wr:" + wr}, tryFunc+`
		try mv-out mv `+q(ro, "f")+` `+q(wr, "moved")+`
		try mv-within-ro mv `+q(ro, "f")+` `+q(ro, "g")+`
		try mv-in mv `+q(wr, "w")+` `+q(ro, "w")+`
		try mv-over mv -f `+q(wr, "w")+` `+q(ro, "f")+`
		try mv-ro-dir mv `+q(ro)+` `+q(base, "ro-renamed")+`
		try mv-wr-dir mv `+q(wr)+` `+q(base, "wr-renamed")+`
		try mv-ro-sub mv `+q(ro, "sub")+` `+q(wr, "sub")+`
		try rm-ro rm -rf `+q(ro)+`
		try rmdir-ro-sub rmdir `+q(ro, "sub")+`
		try link-out ln `+q(ro, "f")+` `+q(wr, "hard")+`
		try link-in ln `+q(wr, "w")+` `+q(ro, "hard")+`
		try chmod-ro chmod 0777 `+q(ro, "f")+`
		try touch-ro touch `+q(ro, "f"))
	require.Equal(t, 0, r.code(), r.stderr)
	requireRefused(t, r, "mv-out", "mv-within-ro", "mv-in", "mv-over", "mv-ro-dir", "mv-wr-dir", "mv-ro-sub",
		"rm-ro", "rmdir-ro-sub", "link-out", "link-in", "chmod-ro", "touch-ro")

	requireHostFile(t, filepath.Join(ro, "f"), "ro\n")
	fi, err := os.Stat(filepath.Join(ro, "f"))
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o644), fi.Mode().Perm(), "mode of the ro file")
	assert.DirExists(t, filepath.Join(ro, "sub"))
	requireHostFile(t, filepath.Join(wr, "w"), "w\n")
	for _, p := range []string{filepath.Join(ro, "g"), filepath.Join(ro, "w"), filepath.Join(ro, "hard"),
		filepath.Join(wr, "hard"), filepath.Join(base, "ro-renamed"), filepath.Join(base, "wr-renamed")} {
		requireHostAbsent(t, p)
	}
	// A copy of a ro file may land in the wr bind (mv copies before it
	// fails to unlink): reading ro files is allowed.
}

// ---- 4: /proc ----

// TestEscapeProcShowsOnlyTheSandbox checks that /proc is the sandbox's own,
// in shell and in RPC mode:
//   - PID 1 is boxsh-init, with the sandbox's environment;
//   - /proc/1/root and every process's root is the sandbox's root, so a
//     host-only file is not reachable through it;
//   - a handful of processes are visible and none of the host's: the test
//     binary's command line appears nowhere, and the test's pid is not it;
//   - no process holds a descriptor of a directory, which would lead out
//     through /proc/PID/fd/N/..
func TestEscapeProcShowsOnlyTheSandbox(t *testing.T) {
	requireRootless(t)
	ctx := testContext(t)
	hostDir := t.TempDir()
	hostFile := filepath.Join(hostDir, "host-only")
	writeHostFile(t, hostFile, "host\n", 0o644)
	testBin := filepath.Base(os.Args[0])
	self, err := os.ReadFile("/proc/self/cmdline")
	require.NoError(t, err)
	require.Contains(t, string(self), testBin, "the marker must be in the test's own command line on the host")
	canary := fmt.Sprintf("sandbox-own-%d", os.Getpid())

	script := `
		echo "pids=$(ls /proc | grep -c '^[0-9]')"
		echo "pid1=$(tr '\0' ' ' </proc/1/cmdline | head -c 36)"
		cat /proc/1/environ >/dev/null 2>&1 && echo pid1-environ-readable
		readlink /proc/1/fd/0 >/dev/null 2>&1 && echo pid1-fd-readable
		cat /proc/1/maps >/dev/null 2>&1 && echo pid1-maps-readable
		echo "roots=$(for p in /proc/[0-9]*; do readlink $p/root; done | sort -u | tr '\n' ' ')"
		echo "root1=$(ls -A /proc/1/root/ | tr '\n' ' ')"
		echo "slash=$(ls -A / | tr '\n' ' ')"
		test -e /proc/1/root` + shq(hostFile) + ` && echo host-file-via-proc1
		test -e ` + shq(hostFile) + ` && echo host-file-visible
		test -e /proc/` + strconv.Itoa(os.Getpid()) + ` && echo "testpid=$(tr '\0' ' ' </proc/` + strconv.Itoa(os.Getpid()) + `/cmdline)"
		for p in /proc/[0-9]*; do tr '\0' ' ' <$p/cmdline; echo; done 2>/dev/null | grep -e ` + shq(selfExcludingPattern(testBin)) + ` && echo test-binary-visible
		for f in /proc/[0-9]*/fd/*; do [ -d "$f" ] && echo "dirfd $f -> $(readlink $f)"; done 2>/dev/null
		echo done`
	check := func(t *testing.T, stdout, pid1 string) {
		lines := map[string]string{}
		for _, l := range strings.Split(stdout, "\n") {
			if k, v, ok := strings.Cut(l, "="); ok {
				lines[k] = strings.TrimSpace(v)
			}
		}
		n, err := strconv.Atoi(lines["pids"])
		require.NoError(t, err, stdout)
		assert.Less(t, n, 20, "processes visible in /proc")
		assert.Positive(t, n)
		assert.True(t, strings.HasPrefix(lines["pid1"], pid1), "PID 1: %q", lines["pid1"])
		// boxsh-init is not dumpable: its environment, descriptors, memory
		// and root are closed to the commands.
		assert.Equal(t, "/", lines["roots"], "every process's root is the sandbox's root")
		assert.Empty(t, lines["root1"], "/proc/1/root is closed")
		assert.Contains(t, lines["slash"], ".boxsh")
		for _, leak := range []string{"host-file-via-proc1", "host-file-visible", "testpid=", "test-binary-visible", "dirfd",
			"pid1-environ-readable", "pid1-fd-readable", "pid1-maps-readable"} {
			assert.NotContains(t, stdout, leak)
		}
		assert.Contains(t, stdout, "done\n")
	}

	t.Run("shell", func(t *testing.T) {
		r := runBoxshIn(t, ctx, hostDir, "", []string{"BOXSH_ESCAPE_CANARY=" + canary}, "--sandbox", "-c", script)
		require.Equal(t, 0, r.code(), r.stderr)
		check(t, r.stdout, "/.boxsh/boxsh-init --exec --lifeline")
	})
	t.Run("rpc", func(t *testing.T) {
		t.Setenv("BOXSH_ESCAPE_CANARY", canary) // boxsh passes its environment into the sandbox
		s := startServer(t, ctx, serverOptions{args: []string{"--sandbox"}, dir: hostDir})
		out := s.bash(script)
		require.Equal(t, 0, out.ExitCode, out.Stderr)
		check(t, out.Stdout, "/.boxsh/boxsh-init --workers")
	})
}

// ---- 5, 6, 7 and the other system calls: seccomp, privileges ----

// dangerousCaps are capabilities that would reach past the user namespace
// or the filter (bit numbers of linux/capability.h).
var dangerousCaps = map[string]uint{
	"CAP_DAC_READ_SEARCH": 2, "CAP_LINUX_IMMUTABLE": 9, "CAP_NET_ADMIN": 12, "CAP_SYS_MODULE": 16,
	"CAP_SYS_RAWIO": 17, "CAP_SYS_PTRACE": 19, "CAP_SYS_ADMIN": 21, "CAP_SYS_BOOT": 22,
	"CAP_SYS_RESOURCE": 24, "CAP_SYS_TIME": 25, "CAP_MAC_OVERRIDE": 32, "CAP_MAC_ADMIN": 33,
	"CAP_SYSLOG": 34, "CAP_PERFMON": 38, "CAP_BPF": 39, "CAP_CHECKPOINT_RESTORE": 40,
}

// TestEscapePtraceAndPrivileges checks the process's confinement. Every
// process of the sandbox, boxsh-init included, in shell and RPC mode:
//   - runs under a seccomp filter (Seccomp: 2) with no_new_privs;
//   - has no capabilities such as CAP_SYS_ADMIN or CAP_SYS_PTRACE.
//
// ptrace fails with EPERM from python3 (ctypes) and from the probe, both
// PTRACE_TRACEME and PTRACE_PEEKDATA. Without the filter it would fail with
// ESRCH.
func TestEscapePtraceAndPrivileges(t *testing.T) {
	t.Parallel()
	requireRootless(t)
	probe := buildEscapeProbe(t)
	script := `
		grep -H -E '^(Seccomp|NoNewPrivs|CapInh|CapPrm|CapEff|CapBnd|CapAmb):' /proc/[0-9]*/status
		if command -v python3 >/dev/null; then
			echo "python-ptrace=$(python3 -c 'import ctypes; print(ctypes.CDLL(None).ptrace(0, 0, 0, 0))')"
		else
			echo python-absent
		fi
		` + shq(filepath.Join(probe, "probe")) + ` ptrace-peek
		` + shq(filepath.Join(probe, "probe")) + ` ptrace-traceme`
	check := func(t *testing.T, stdout string) {
		procs := map[string]map[string]string{}
		for _, l := range strings.Split(stdout, "\n") {
			file, rest, ok := strings.Cut(l, ":")
			if !ok || !strings.HasPrefix(file, "/proc/") {
				continue
			}
			key, val, _ := strings.Cut(rest, ":")
			if procs[file] == nil {
				procs[file] = map[string]string{}
			}
			procs[file][key] = strings.TrimSpace(val)
		}
		require.NotEmpty(t, procs, stdout)
		require.Contains(t, procs, "/proc/1/status", "boxsh-init (PID 1) is checked too")
		for file, st := range procs {
			if len(st) < 7 {
				continue // a process that ended while grep ran
			}
			assert.Equal(t, "2", st["Seccomp"], "%s: Seccomp (2 is filter mode)", file)
			assert.Equal(t, "1", st["NoNewPrivs"], "%s: NoNewPrivs", file)
			assert.Equal(t, "0000000000000000", st["CapInh"], file)
			assert.Equal(t, "0000000000000000", st["CapAmb"], file)
			for _, set := range []string{"CapPrm", "CapEff", "CapBnd"} {
				caps, err := strconv.ParseUint(st[set], 16, 64)
				require.NoError(t, err, "%s %s", file, set)
				for name, bit := range dangerousCaps {
					assert.Zero(t, caps&(1<<bit), "%s: %s has %s", file, set, name)
				}
			}
		}
		if strings.Contains(stdout, "python-absent") {
			t.Log("python3 is not installed inside the sandbox: the ctypes ptrace check is left to the probe")
		} else {
			assert.Contains(t, stdout, "python-ptrace=-1\n", "ptrace(PTRACE_TRACEME) from python3")
		}
		res := probeResults(t, stdout)
		assert.Equal(t, "EPERM", res["ptrace-peek"], "ptrace(PTRACE_PEEKDATA, parent)")
		assert.Equal(t, "EPERM", res["ptrace-traceme"], "ptrace(PTRACE_TRACEME)")
	}
	t.Run("shell", func(t *testing.T) {
		r := sandboxShell(t, t.TempDir(), []string{"--bind", "ro:" + probe}, script)
		require.Equal(t, 0, r.code(), r.stderr)
		check(t, r.stdout)
	})
	t.Run("rpc", func(t *testing.T) {
		s := startServer(t, testContext(t), serverOptions{args: []string{"--sandbox", "--bind", "ro:" + probe}})
		out := s.bash(script)
		require.Equal(t, 0, out.ExitCode, out.Stderr)
		check(t, out.Stdout)
	})
}

// TestEscapeMountAndNamespaces checks that nothing can be mounted or
// unmounted and no namespace made:
//   - mount(8), umount(8) and unshare(1) with every namespace flag fail and
//     leave no mount behind;
//   - the probe's mount, umount2, pivot_root, setns, unshare and clone with
//     CLONE_NEWUSER get EPERM;
//   - clone3 gets ENOSYS, so that libc falls back to clone, whose flags the
//     filter sees.
func TestEscapeMountAndNamespaces(t *testing.T) {
	t.Parallel()
	requireRootless(t)
	probe := buildEscapeProbe(t)
	r := sandboxShell(t, t.TempDir(), []string{"--bind", "ro:" + probe}, tryFunc+`
		mkdir -p /tmp/x
		try mount-tmpfs mount -t tmpfs none /tmp/x
		try mount-bind mount --bind /usr /tmp/x
		try mount-proc mount -t proc proc /tmp/x
		try remount-usr mount -o remount,rw /usr
		try umount-proc umount -l /proc
		echo "mounts-at-x=$(grep -c ' /tmp/x ' /proc/self/mountinfo)"
		if command -v unshare >/dev/null; then
			try unshare-U unshare -U true
			try unshare-r unshare -r true
			try unshare-m unshare -m true
			try unshare-n unshare -n true
			try unshare-p unshare -p -f true
			try unshare-i unshare -i true
			try unshare-u unshare -u true
			try unshare-C unshare -C true
		else
			echo unshare-absent
		fi`)
	require.Equal(t, 0, r.code(), r.stderr)
	requireRefused(t, r, "mount-tmpfs", "mount-bind", "mount-proc", "remount-usr", "umount-proc")
	assert.Contains(t, r.stdout, "mounts-at-x=0\n")
	if strings.Contains(r.stdout, "unshare-absent") {
		t.Log("unshare(1) is not installed: the namespace checks are left to the probe")
	} else {
		requireRefused(t, r, "unshare-U", "unshare-r", "unshare-m", "unshare-n", "unshare-p", "unshare-i", "unshare-u", "unshare-C")
	}

	checks := []string{"mount", "umount2", "pivot_root", "setns", "unshare-user", "unshare-mount", "unshare-net", "clone-newuser"}
	res := runProbe(t, probe, nil, append(checks, "clone3")...)
	requireProbe(t, res, "EPERM", checks...)
	assert.Equal(t, "ENOSYS", res["clone3"], "clone3")
}

// TestEscapeTerminalInjection checks that the filter refuses TIOCSTI and
// TIOCLINUX, in shell and RPC mode. Those push input into a terminal, and
// so into the shell outside that owns it. They are refused with EPERM, also
// with high bits set in the request, since the kernel looks at the low 32.
// Without the filter /dev/null answers ENOTTY, as the same probe run on the
// host checks.
func TestEscapeTerminalInjection(t *testing.T) {
	t.Parallel()
	requireRootless(t)
	probe := buildEscapeProbe(t)
	checks := []string{"ioctl-tiocsti", "ioctl-tiocsti-high", "ioctl-tioclinux", "ioctl-tioclinux-high"}

	out, err := exec.Command(filepath.Join(probe, "probe"), checks...).CombinedOutput()
	require.NoError(t, err, "%s", out)
	requireProbe(t, probeResults(t, string(out)), "ENOTTY", checks...) // the control: the probe on the host

	requireProbe(t, runProbe(t, probe, nil, checks...), "EPERM", checks...)
	requireProbeInRPC(t, probe, "EPERM", checks...)
}

// requireProbeInRPC runs the probe's checks in a bash call of boxsh --rpc
// --sandbox and requires each to give want.
func requireProbeInRPC(t *testing.T, probe, want string, checks ...string) {
	t.Helper()
	s := startServer(t, testContext(t), serverOptions{args: []string{"--sandbox", "--bind", "ro:" + probe}})
	b := s.bash(shq(filepath.Join(probe, "probe")) + " " + strings.Join(checks, " "))
	require.Equal(t, 0, b.ExitCode, b.Stderr)
	requireProbe(t, probeResults(t, b.Stdout), want, checks...)
}

// TestEscapeDeniedSyscalls checks the rest of the filter with the probe.
// These all fail with EPERM:
//   - Unix sockets, which reach host daemons through bound directories,
//     also with high bits in the family;
//   - keyrings, BPF, perf and userfaultfd;
//   - io_uring, whose system calls seccomp does not see;
//   - file handles, modules, kexec, reboot, swap and device nodes.
//
// socketpair and inet sockets still work. The probe on the host gets a Unix
// socket, as the control.
func TestEscapeDeniedSyscalls(t *testing.T) {
	t.Parallel()
	requireRootless(t)
	probe := buildEscapeProbe(t)
	out, err := exec.Command(filepath.Join(probe, "probe"), "unix-socket", "unix-socket-high").CombinedOutput()
	require.NoError(t, err, "%s", out)
	requireProbe(t, probeResults(t, string(out)), "ok", "unix-socket", "unix-socket-high")

	denied := []string{"unix-socket", "unix-socket-high", "keyctl", "add_key", "request_key", "bpf",
		"perf_event_open", "userfaultfd", "io_uring_setup", "name_to_handle_at", "open_by_handle_at",
		"kexec_load", "kexec_file_load", "init_module", "finit_module", "delete_module", "reboot",
		"swapon", "swapoff", "mknod-block", "mknod-char", "pidfd_getfd", "process_vm_readv", "process_vm_writev"}
	allowed := []string{"unix-socketpair", "inet-socket"}
	res := runProbe(t, probe, nil, append(denied, allowed...)...)
	requireProbe(t, res, "EPERM", denied...)
	requireProbe(t, res, "ok", allowed...)
	requireProbeInRPC(t, probe, "EPERM", denied...)
}

// TestEscapeChrootBreakout checks the classic chroot breakout (root of the
// user namespace has CAP_SYS_CHROOT: chroot into a subdirectory, climb
// with .. past it, chroot there): it ends at the sandbox's own root, as
// the sandbox's root is a pivot_root, not a chroot.
func TestEscapeChrootBreakout(t *testing.T) {
	t.Parallel()
	requireRootless(t)
	probe := buildEscapeProbe(t)
	r := sandboxShell(t, t.TempDir(), []string{"--bind", "ro:" + probe},
		`echo "slash=$(ls -A / | tr '\n' ',')"; `+shq(filepath.Join(probe, "probe"))+` chroot-escape`)
	require.Equal(t, 0, r.code(), r.stderr)
	res := probeResults(t, r.stdout)
	escaped, ok := strings.CutPrefix(res["chroot-escape"], "ok:")
	require.True(t, ok, "chroot-escape: %q (the breakout itself must run for this check)", res["chroot-escape"])
	slash := strings.Split(strings.TrimSuffix(res["slash"], ","), ",")
	slices.Sort(slash)
	assert.Equal(t, strings.Join(slash, ","), escaped, "the breakout ends in the sandbox's root")
	assert.Contains(t, strings.Split(escaped, ","), ".boxsh")

	host, err := os.ReadDir("/")
	require.NoError(t, err)
	var hostNames []string
	for _, e := range host {
		hostNames = append(hostNames, e.Name())
	}
	assert.NotEqual(t, strings.Join(hostNames, ","), escaped, "the host's root")
}

// ---- 8: cow ----

// TestEscapeCowSourceNotWritable checks that with --bind cow:SRC:DST the
// SRC directory cannot be written by its real path. Neither SRC nor the
// overlay's work directory exists inside, so writes to SRC/f fail. A SRC
// made inside is the sandbox's own; that is possible here, since the test's
// directories are under /tmp, the sandbox's private tmpfs. The writes
// through DST land in DST on the host, and SRC keeps its files.
func TestEscapeCowSourceNotWritable(t *testing.T) {
	t.Parallel()
	requireRootless(t)
	base := t.TempDir()
	src, dst := filepath.Join(base, "src"), filepath.Join(base, "dst")
	writeHostFile(t, filepath.Join(src, "f"), "src\n", 0o644)

	r := sandboxShell(t, base, []string{"--bind", "cow:" + src + ":" + dst}, tryFunc+`
		test -e `+shq(src)+` && echo src-visible
		test -e `+shq(filepath.Join(base, ".boxsh"))+` && echo workdir-visible
		try src-write sh -c 'echo x > `+filepath.Join(src, "f")+`'
		try src-new sh -c 'echo x > `+filepath.Join(src, "new")+`'
		mkdir -p `+shq(filepath.Join(src, "sub"))+` && echo private > `+shq(filepath.Join(src, "f"))+` && echo private-src-made
		cat `+shq(filepath.Join(dst, "f"))+`
		echo changed > `+shq(filepath.Join(dst, "f"))+` && echo dst-write-ok`)
	require.Equal(t, 0, r.code(), r.stderr)
	requireRefused(t, r, "src-write", "src-new")
	assert.NotContains(t, r.stdout, "src-visible")
	assert.NotContains(t, r.stdout, "workdir-visible")
	assert.Contains(t, r.stdout, "private-src-made\nsrc\ndst-write-ok\n", "DST shows the host's SRC, not the one made inside, and takes the writes")

	requireHostFile(t, filepath.Join(src, "f"), "src\n")
	requireHostAbsent(t, filepath.Join(src, "new"))
	requireHostAbsent(t, filepath.Join(src, "sub"))
	requireHostFile(t, filepath.Join(dst, "f"), "changed\n")
}

// ---- protected start-up files ----

// TestEscapeProtectedFileReplacedOnHost checks that the protected paths
// stay read-only for the whole life of a sandbox. They stay so even when
// the host changes them meanwhile in the usual ways:
//   - An existing ~/.bashrc in a writable home is replaced by renaming a
//     new file over it, as editors, sed -i and dotfile managers save. The
//     home is read-only but for its projects and caches, so the new file is
//     read-only too.
//   - A missing ~/.zshrc cannot be made at all.
//   - The empty placeholder of a missing .mcp.json at the root of a
//     writable project is deleted on the host. The protection is a
//     read-only mount on the host's directory entry. Removing that entry
//     detaches the mount in the sandbox, so boxsh stops the sandbox and the
//     next call gets a new one.
//
// In every case a write from inside fails, and the host file does not get
// the sandbox's bytes.
func TestEscapeProtectedFileReplacedOnHost(t *testing.T) {
	requireRootless(t)
	home := t.TempDir()
	bashrc, zshrc := filepath.Join(home, ".bashrc"), filepath.Join(home, ".zshrc")
	writeHostFile(t, bashrc, "original\n", 0o644)
	t.Setenv("HOME", home) // boxsh protects the start-up files of $HOME
	proj := t.TempDir()
	mcp := filepath.Join(proj, ".mcp.json")

	s := startServer(t, testContext(t), serverOptions{args: []string{"--sandbox", "--bind", "wr:" + home, "--bind", "wr:" + proj}, dir: t.TempDir()})
	inject := func(path string) bashOutput {
		t.Helper()
		return s.bash("echo injected-by-sandbox >> " + shq(path))
	}
	out := inject(bashrc)
	assert.NotEqual(t, 0, out.ExitCode, "~/.bashrc is read-only at first")
	assert.Contains(t, out.Stderr, "Read-only file system")
	out = inject(zshrc)
	assert.NotEqual(t, 0, out.ExitCode, "a missing ~/.zshrc cannot be made at first")
	out = inject(mcp)
	assert.NotEqual(t, 0, out.ExitCode, "a missing .mcp.json cannot be made at first")
	fi, err := os.Lstat(mcp)
	require.NoError(t, err, "the placeholder of the missing .mcp.json is on the host while the sandbox runs")
	require.True(t, fi.Mode().IsRegular(), "placeholder: %v", fi.Mode())
	requireHostFile(t, mcp, "{\"mcpServers\": {}}\n")

	// The host saves a new ~/.bashrc by renaming it over the old one, and
	// deletes the stray empty .mcp.json.
	writeHostFile(t, bashrc+".new", "edited on the host\n", 0o644)
	require.NoError(t, os.Rename(bashrc+".new", bashrc))
	require.NoError(t, os.Remove(mcp))

	out = inject(bashrc)
	assert.NotEqual(t, 0, out.ExitCode, "~/.bashrc writable from the sandbox after the host replaced it: stderr %q", out.Stderr)
	requireHostFile(t, bashrc, "edited on the host\n")
	out = inject(zshrc)
	assert.NotEqual(t, 0, out.ExitCode, "~/.zshrc creatable from the sandbox: stderr %q", out.Stderr)
	requireHostAbsent(t, zshrc)
	out = inject(mcp)
	assert.NotEqual(t, 0, out.ExitCode, ".mcp.json creatable from the sandbox after the host removed its placeholder: stderr %q", out.Stderr)
	if got, err := os.ReadFile(mcp); err == nil {
		assert.NotContains(t, string(got), "injected-by-sandbox", "the host's .mcp.json holds the sandbox's bytes")
	}
}

// ---- 9: network ----

// TestEscapeNetworkNamespace checks --new-net-ns: the sandbox has only a
// loopback interface, and a TCP connect to a listener on the host's
// 127.0.0.1 fails and never reaches it. Without --new-net-ns the same
// connect succeeds and is accepted, which shows that the check can see a
// connection.
func TestEscapeNetworkNamespace(t *testing.T) {
	t.Parallel()
	requireRootless(t)
	probe := buildEscapeProbe(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { ln.Close() })
	tl := ln.(*net.TCPListener)
	connect := "connect:" + ln.Addr().String()
	script := "cat /proc/net/dev; " + shq(filepath.Join(probe, "probe")) + " " + connect
	flags := []string{"--bind", "ro:" + probe}

	r := sandboxShell(t, t.TempDir(), append([]string{"--new-net-ns"}, flags...), script)
	require.Equal(t, 0, r.code(), r.stderr)
	var ifaces []string
	for _, l := range strings.Split(r.stdout, "\n") {
		if name, _, ok := strings.Cut(l, ":"); ok && !strings.Contains(name, "|") && !strings.Contains(l, "=") {
			ifaces = append(ifaces, strings.TrimSpace(name))
		}
	}
	assert.Equal(t, []string{"lo"}, ifaces, "interfaces in /proc/net/dev:\n%s", r.stdout)
	res := probeResults(t, r.stdout)
	assert.NotEqual(t, "ok", res[connect], "connect to the host's listener from a new network namespace")
	assert.NotEmpty(t, res[connect])
	require.NoError(t, tl.SetDeadline(time.Now().Add(300*time.Millisecond)))
	c, err := tl.Accept()
	if err == nil {
		c.Close()
		t.Errorf("the host listener accepted a connection from the sandbox (--new-net-ns)")
	} else {
		var ne net.Error
		assert.True(t, errors.As(err, &ne) && ne.Timeout(), "accept: %v", err)
	}

	// The control: the host's network namespace.
	r = sandboxShell(t, t.TempDir(), flags, shq(filepath.Join(probe, "probe"))+" "+connect)
	require.Equal(t, 0, r.code(), r.stderr)
	assert.Equal(t, "ok", probeResults(t, r.stdout)[connect], "without --new-net-ns the connect works")
	require.NoError(t, tl.SetDeadline(time.Now().Add(5*time.Second)))
	c, err = tl.Accept()
	if assert.NoError(t, err, "without --new-net-ns the listener gets the connection") {
		c.Close()
	}
}

// ---- 10: unbound host paths ----

// TestEscapeUnboundHostPaths checks that host paths that are not bound do
// not exist inside. Those are /root, a file of the test's temporary
// directory, the test binary and package directory, and the host's
// /etc/shadow, /home, /var, /run, /sys and other top-level directories. The
// home directory is an empty one of the sandbox's own, with none of the
// host's files in it.
func TestEscapeUnboundHostPaths(t *testing.T) {
	requireRootless(t)
	home := homeDir(t)
	t.Setenv("HOME", home)
	writeHostFile(t, filepath.Join(home, ".secret"), "s3cret-home\n", 0o600)
	secret := filepath.Join(t.TempDir(), "secret")
	writeHostFile(t, secret, "s3cret-unbound\n", 0o600)
	exe, err := os.Executable()
	require.NoError(t, err)
	wd, err := os.Getwd()
	require.NoError(t, err)

	must := []string{secret, exe, wd, binDir}
	maybe := []string{"/root", "/etc/shadow", "/etc/sudoers", "/etc/ssh", "/home", "/var", "/run", "/sys",
		"/boot", "/mnt", "/media", "/opt", "/srv", "/work"}
	var paths []string
	for _, p := range must {
		_, err := os.Lstat(p)
		require.NoError(t, err, "%s must exist on the host for this test", p)
		paths = append(paths, p)
	}
	for _, p := range maybe {
		// The directories above the home are there, as mount points.
		if _, err := os.Lstat(p); err == nil && !strings.HasPrefix(home, p+"/") {
			paths = append(paths, p)
		}
	}
	var quoted []string
	for _, p := range paths {
		quoted = append(quoted, shq(p))
	}
	r := sandboxShell(t, t.TempDir(), nil, `
		for p in `+strings.Join(quoted, " ")+`; do
			if [ -e "$p" ] || [ -L "$p" ]; then echo "visible $p"; fi
		done
		cat `+shq(secret)+` `+shq(home+"/.secret")+`
		ls -A `+shq(home)+`
		ls /root
		echo done`)
	assert.Equal(t, "done\n", r.stdout, "host paths visible inside: %v", paths)
	assert.Contains(t, r.stderr, secret+": No such file")
	assert.Contains(t, r.stderr, home+"/.secret: No such file")
	assert.Contains(t, r.stderr, "'/root': No such file")
	assert.NotContains(t, r.stdout+r.stderr, "s3cret")
}

// ---- 11: processes that outlive the sandbox ----

// TestEscapeNoSurvivorsShell checks that background processes of a shell
// sandbox, also those that detach (nohup, setsid, a double fork), end with
// it: once boxsh has returned none is left on the host.
func TestEscapeNoSurvivorsShell(t *testing.T) {
	t.Parallel()
	requireRootless(t)
	var markers, env []string
	for i, secs := range []int{300, 301, 300, 300} {
		m := sleepMarker(secs)
		killMarkedAtCleanup(t, m)
		markers = append(markers, m)
		// The markers go through the environment, so that the shell's
		// own command line does not hold them; the patterns do not match
		// grep's own command line.
		env = append(env, fmt.Sprintf("M%d=%s", i, m), fmt.Sprintf("P%d=[%c]%s", i, m[0], m[1:]))
	}
	r := runBoxshIn(t, testContext(t), t.TempDir(), "", env, "--sandbox", "-c", `
		sleep "$M0" &
		sleep "$M1" >/dev/null 2>&1 &
		setsid sleep "$M2" >/dev/null 2>&1 </dev/null &
		(nohup sleep "$M3" >/dev/null 2>&1 &)
		for p in "$P0" "$P1" "$P2" "$P3"; do
			i=0
			until grep -qa -e "$p" /proc/[0-9]*/cmdline 2>/dev/null; do
				i=$((i+1)); [ $i -lt 500 ] || { echo "not started: $p"; break; }
				sleep 0.01
			done
		done
		echo started`)
	require.Equal(t, 0, r.code(), r.stderr)
	require.Equal(t, "started\n", r.stdout, "every sleep ran inside the sandbox")
	for _, m := range markers {
		requireNoArgv(t, 2*time.Second, "sleep", m)
	}
}

// TestEscapeNoSurvivorsRPC checks the same for --rpc --sandbox: processes
// a bash call left in the background (nohup, setsid) are gone once boxsh
// has exited at the end of its input.
func TestEscapeNoSurvivorsRPC(t *testing.T) {
	t.Parallel()
	requireRootless(t)
	s := startServer(t, testContext(t), serverOptions{args: []string{"--sandbox"}})
	nohup, setsid := sleepMarker(302), sleepMarker(302)
	killMarkedAtCleanup(t, nohup)
	killMarkedAtCleanup(t, setsid)
	out := s.bash("nohup sleep " + nohup + " >/dev/null 2>&1 &")
	require.Equal(t, 0, out.ExitCode, out.Stderr)
	out = s.bash("setsid sleep " + setsid + " >/dev/null 2>&1 </dev/null &")
	require.Equal(t, 0, out.ExitCode, out.Stderr)
	waitForArgv(t, "sleep", nohup)
	waitForArgv(t, "sleep", setsid)
	s.requireExitZero()
	requireNoArgv(t, 5*time.Second, "sleep", nohup)
	requireNoArgv(t, 5*time.Second, "sleep", setsid)
}

// TestEscapeNoSurvivorsFrontKilled checks that SIGKILL of boxsh (which can
// clean up nothing) still ends the sandbox: its PID 1, boxsh-init, gets
// the parent-death signal, and with it every process of the sandbox dies.
// The state directory the killed boxsh left is removed by the next
// sandbox's start, which leaves none of its own once its launcher is done.
func TestEscapeNoSurvivorsFrontKilled(t *testing.T) {
	t.Parallel()
	requireRootless(t)
	// A state root of its own (see StateRoot: $XDG_RUNTIME_DIR/boxsh), so
	// that the sandboxes of other tests or programs running meanwhile are
	// neither counted as this one's nor as left behind.
	runtimeDir := t.TempDir()
	env := []string{"XDG_RUNTIME_DIR=" + runtimeDir}
	root := filepath.Join(runtimeDir, "boxsh")
	before := sandboxStateDirs(root)
	marker := sleepMarker(303)
	killMarkedAtCleanup(t, marker)

	cmd := exec.CommandContext(testContext(t), boxshPath(), "--sandbox", "-c", "sleep "+marker+"; echo not-killed")
	cmd.Dir = t.TempDir()
	cmd.Env = append(os.Environ(), env...)
	var output lockedBuffer
	cmd.Stdout, cmd.Stderr = &output, &output
	cmd.WaitDelay = 5 * time.Second
	require.NoError(t, cmd.Start())
	waitForArgv(t, "sleep", marker)

	var ours []string
	for _, d := range sandboxStateDirs(root) {
		if !slices.Contains(before, d) {
			ours = append(ours, d)
		}
	}
	require.NotEmpty(t, ours, "the running sandbox's state directory in %s", root)
	init := 0
	for _, pid := range descendants(cmd.Process.Pid) {
		if procComm(pid) == "boxsh-init" {
			init = pid
		}
	}
	require.NotZero(t, init, "boxsh-init among boxsh's descendants")

	require.NoError(t, cmd.Process.Signal(syscall.SIGKILL))
	_ = cmd.Wait()
	requireNoArgv(t, 5*time.Second, "sleep", marker)
	requireGone(t, init, "boxsh-init")
	assert.NotContains(t, output.String(), "not-killed")
	for _, d := range ours {
		_, err := os.Stat(d)
		t.Logf("state directory left by the killed boxsh: %s (stat: %v)", d, err)
	}

	r := runBoxshIn(t, testContext(t), t.TempDir(), "", env, "--sandbox", "-c", "true")
	require.Equal(t, 0, r.code(), r.stderr)
	after := sandboxStateDirs(root)
	for _, d := range ours {
		assert.NotContains(t, after, d, "the killed sandbox's state directory is swept by the next start")
	}
	// The next start's own is removed by its launcher, after its front.
	assert.Eventually(t, func() bool {
		for _, d := range sandboxStateDirs(root) {
			if !slices.Contains(before, d) {
				return false
			}
		}
		return true
	}, 10*time.Second, 10*time.Millisecond, "state directories left behind: %v", sandboxStateDirs(root))
}

// TestEscapeNoSurvivorsRPCFrontKilled checks that SIGKILL of boxsh --rpc
// ends its sandbox too: boxsh-init sees its frame socket close and exits,
// and as PID 1 takes every process of the sandbox with it.
func TestEscapeNoSurvivorsRPCFrontKilled(t *testing.T) {
	t.Parallel()
	requireRootless(t)
	s := startServer(t, testContext(t), serverOptions{args: []string{"--sandbox"}})
	marker := sleepMarker(304)
	killMarkedAtCleanup(t, marker)
	out := s.bash("nohup sleep " + marker + " >/dev/null 2>&1 & echo started")
	require.Equal(t, "started\n", out.Stdout, out.Stderr)
	waitForArgv(t, "sleep", marker)
	init := findChild(t, s.pid(), "boxsh-init")

	require.NoError(t, s.cmd.Process.Signal(syscall.SIGKILL))
	<-s.exited
	requireNoArgv(t, 5*time.Second, "sleep", marker)
	requireGone(t, init, "boxsh-init")
}

// TestEscapeRenameAroundProtected checks that the protection of dotfiles
// and git hooks in a writable bind cannot be undone from inside. Moving a
// directory that holds them away and making a new one fails, since the
// directories between the bind and a protected path are pinned. A missing
// ~/.aws cannot be made. The host's files stay as they were.
func TestEscapeRenameAroundProtected(t *testing.T) {
	requireRootless(t)
	home := t.TempDir()
	repo := filepath.Join(home, "proj")
	require.NoError(t, os.MkdirAll(filepath.Join(repo, ".git", "hooks"), 0o755))
	docs := filepath.Join(repo, "docs") // a ro bind inside a pinned directory
	require.NoError(t, os.Mkdir(docs, 0o755))
	t.Setenv("HOME", home)
	r := sandboxShell(t, home, []string{"--bind", "wr:" + home, "--bind", "ro:" + docs}, `
		echo x > proj/docs/new 2>/dev/null && echo docs-written
		mv proj proj.orig 2>/dev/null && echo moved-repo
		mv proj/.git proj/git.orig 2>/dev/null && echo moved-git
		rm -rf proj 2>/dev/null; test -d proj/.git/hooks || echo repo-removed
		mkdir -p proj/.git/hooks 2>/dev/null; echo evil > proj/.git/hooks/post-checkout 2>/dev/null && echo hook-written
		mv .aws aws.old 2>/dev/null && echo moved-aws
		mkdir -p .aws 2>/dev/null; echo EVIL > .aws/credentials 2>/dev/null && echo credentials-written
		echo done`)
	require.Equal(t, 0, r.code(), r.stderr)
	assert.Equal(t, "done\n", r.stdout)
	assert.NoFileExists(t, filepath.Join(repo, ".git", "hooks", "post-checkout"))
	assert.DirExists(t, filepath.Join(repo, ".git", "hooks"))
	assert.NoDirExists(t, filepath.Join(home, ".aws"), "the placeholder is gone after the sandbox")
	assert.NoDirExists(t, filepath.Join(home, "proj.orig"))
	assert.NoFileExists(t, filepath.Join(docs, "new"), "the ro bind inside the pinned directory stays read-only")
}

// TestEscapeRefusedSetups checks the setups in which boxsh cannot keep its
// promises, and so refuses to start:
//   - a protected path that is a symbolic link in a writable bind, since
//     the link itself could be replaced;
//   - a writable bind over boxsh's own state directory, since the sandbox
//     could plant state that a later start acts on.
func TestEscapeRefusedSetups(t *testing.T) {
	t.Parallel()
	requireRootless(t)
	ctx := testContext(t)
	home := t.TempDir()
	require.NoError(t, os.Symlink("dotfiles/vscode", filepath.Join(home, ".vscode")))
	r := runBoxshIn(t, ctx, home, "", []string{"HOME=" + t.TempDir()}, "--sandbox", "--bind", "wr:"+home, "-c", "echo ran")
	assert.Equal(t, 1, r.code())
	assert.NotContains(t, r.stdout, "ran")
	assert.Contains(t, r.stderr, "symbolic link")

	run := filepath.Join(t.TempDir(), "run")
	require.NoError(t, os.Mkdir(run, 0o700))
	r = runBoxshIn(t, ctx, t.TempDir(), "", []string{"XDG_RUNTIME_DIR=" + run}, "--sandbox", "--bind", "wr:"+filepath.Dir(run), "-c", "echo ran")
	assert.Equal(t, 1, r.code())
	assert.NotContains(t, r.stdout, "ran")
	assert.Contains(t, r.stderr, "state directory")
}

// TestEscapeCacheRefused checks that --cache DIR is refused wherever --bind
// wr:DIR would keep something read-only, with the same message (fourth
// round, item 5). Such directories are boxsh's configuration directory or a
// directory holding it, the home, a directory holding boxsh's state
// directory, and directories holding protected entries (a repository,
// ~/.local whose bin is missing). Nothing is written there. A cache of its
// own still works.
func TestEscapeCacheRefused(t *testing.T) {
	t.Parallel()
	requireRootless(t)
	ctx := testContext(t)
	home := filepath.Join(t.TempDir(), "users", "u")
	writeHostFile(t, filepath.Join(home, ".bashrc"), "# rc\n", 0o644)
	require.NoError(t, os.MkdirAll(filepath.Join(home, ".config", "boxsh"), 0o755))
	require.NoError(t, os.MkdirAll(filepath.Join(home, ".local", "share"), 0o755))
	repo := filepath.Join(home, "src", "repo")
	newHostRepo(t, repo)
	run := filepath.Join(t.TempDir(), "run")
	require.NoError(t, os.Mkdir(run, 0o700))
	env := []string{"HOME=" + home, "XDG_RUNTIME_DIR=" + run}
	script := `echo '{}' > "$HOME/.cache/policy.json"; echo evil >> "$HOME/.cache/.bashrc"; echo evil > "$HOME/.cache/planted"; echo ran`
	for _, c := range []struct{ dir, says string }{
		{filepath.Join(home, ".config", "boxsh"), "boxsh's own settings"},
		{filepath.Join(home, ".config"), "boxsh's own settings"},
		{home, "the home directory"},
		{filepath.Dir(home), "the home directory"},
		{run, "state directory"},
		{filepath.Join(home, "src"), filepath.Join(repo, ".git")},
		{repo, filepath.Join(repo, ".git")},
		{filepath.Join(home, ".local"), filepath.Join(home, ".local", "bin")},
	} {
		r := runBoxshIn(t, ctx, t.TempDir(), "", env, "--sandbox", "--cache", c.dir, "-c", script)
		assert.Equal(t, 1, r.code(), "--cache %s: %s", c.dir, r.stderr)
		assert.NotContains(t, r.stdout, "ran", c.dir)
		assert.Contains(t, r.stderr, "--cache "+c.dir+" would let the sandbox write", c.dir)
		assert.Contains(t, r.stderr, c.says, c.dir)
		requireHostAbsent(t, filepath.Join(c.dir, "planted"))
		requireHostAbsent(t, filepath.Join(c.dir, "policy.json"))
	}
	// Through a symbolic link, the directory it names is checked.
	link := filepath.Join(t.TempDir(), "link")
	require.NoError(t, os.Symlink(filepath.Join(home, ".config"), link))
	r := runBoxshIn(t, ctx, t.TempDir(), "", env, "--sandbox", "--cache", link, "-c", script)
	assert.Equal(t, 1, r.code(), r.stderr)
	assert.NotContains(t, r.stdout, "ran")
	assert.Contains(t, r.stderr, "boxsh's own settings")
	requireHostAbsent(t, filepath.Join(home, ".config", "boxsh", "policy.json"))
	requireHostFile(t, filepath.Join(home, ".bashrc"), "# rc\n")
	requireHostAbsent(t, filepath.Join(home, ".local", "bin"))

	cache := filepath.Join(home, ".cache", "boxsh-ci")
	require.NoError(t, os.MkdirAll(cache, 0o755))
	r = runBoxshIn(t, ctx, t.TempDir(), "", env, "--sandbox", "--cache", cache, "-c", script)
	require.Equal(t, 0, r.code(), r.stderr)
	assert.Contains(t, r.stdout, "ran")
	requireHostFile(t, filepath.Join(cache, "planted"), "evil\n")
}

// TestEscapeCowWorkDirShared checks a cow bind whose DST is in a directory
// every user may write to, sticky and world-writable as /tmp (fourth round,
// item 7). The bind keeps its work directory in the caller's own .boxsh-UID
// there, checked before use. What another user left there first neither
// breaks nor redirects it:
//   - their .boxsh, mode 0755 and theirs; the test stands for it with one
//     the caller cannot write to;
//   - a .boxsh-UID that is a link to a directory they can read;
//   - one they may write to;
//   - a DST that is a link.
//
// The test runs as one unprivileged user. It plants what another user
// could, as far as one user can.
func TestEscapeCowWorkDirShared(t *testing.T) {
	t.Parallel()
	requireRootless(t)
	shared := func() string {
		d := t.TempDir()
		require.NoError(t, os.Chmod(d, 0o777|os.ModeSticky))
		t.Cleanup(func() { exec.Command("chmod", "-R", "u+rwx", d).Run() })
		return d
	}
	src := t.TempDir()
	writeHostFile(t, filepath.Join(src, "f"), "src\n", 0o644)
	own := fmt.Sprintf(".boxsh-%d", os.Getuid())
	cow := func(dst string) runResult {
		return sandboxShell(t, src, []string{"--bind", "cow:" + src + ":" + dst}, `cat `+shq(filepath.Join(dst, "f"))+` && echo changed > `+shq(filepath.Join(dst, "f"))+` && echo cow-ok`)
	}

	tmp := shared()
	require.NoError(t, os.Mkdir(filepath.Join(tmp, ".boxsh"), 0o555))
	r := cow(filepath.Join(tmp, "dst"))
	require.Equal(t, 0, r.code(), r.stderr)
	assert.Contains(t, r.stdout, "src\ncow-ok\n")
	requireHostFile(t, filepath.Join(tmp, "dst", "f"), "changed\n")
	assert.DirExists(t, filepath.Join(tmp, own, "dst"), "the work directory is the caller's own")
	r = cow(filepath.Join(tmp, "dst"))
	require.Equal(t, 0, r.code(), "again: %s", r.stderr)

	attacker := t.TempDir()
	require.NoError(t, os.Chmod(attacker, 0o777))
	for _, plant := range []func(tmp string){
		func(tmp string) { require.NoError(t, os.Symlink(attacker, filepath.Join(tmp, own))) },
		func(tmp string) {
			require.NoError(t, os.Mkdir(filepath.Join(tmp, own), 0o777))
			require.NoError(t, os.Chmod(filepath.Join(tmp, own), 0o777))
		},
		func(tmp string) { require.NoError(t, os.Symlink(attacker, filepath.Join(tmp, "dst"))) },
	} {
		tmp := shared()
		plant(tmp)
		r := cow(filepath.Join(tmp, "dst"))
		assert.Equal(t, 1, r.code(), r.stderr)
		assert.NotContains(t, r.stdout, "cow-ok")
		assert.Contains(t, r.stderr, tmp)
	}
	entries, err := os.ReadDir(attacker)
	require.NoError(t, err)
	assert.Empty(t, entries, "nothing made in the directory a planted link names")
}
