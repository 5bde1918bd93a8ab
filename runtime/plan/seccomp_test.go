package plan

import (
	goruntime "runtime"
	"slices"
	"testing"

	specs "github.com/opencontainers/runtime-spec/specs-go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// seccompVerdict evaluates sc for a call as runc's libseccomp filter does:
// the first rule that names the call and whose conditions all hold gives
// the action (and errno); otherwise the default action.
func seccompVerdict(sc *specs.LinuxSeccomp, name string, args ...uint64) (specs.LinuxSeccompAction, uint) {
	arg := func(i uint) uint64 {
		if int(i) < len(args) {
			return args[i]
		}
		return 0
	}
	for _, rule := range sc.Syscalls {
		if !slices.Contains(rule.Names, name) {
			continue
		}
		match := true
		for _, c := range rule.Args {
			v := arg(c.Index)
			switch c.Op {
			case specs.OpEqualTo:
				match = match && v == c.Value
			case specs.OpNotEqual:
				match = match && v != c.Value
			case specs.OpMaskedEqual:
				match = match && v&c.Value == c.ValueTwo
			default:
				panic("operator not handled by the test: " + string(c.Op))
			}
		}
		if !match {
			continue
		}
		var errno uint
		if rule.ErrnoRet != nil {
			errno = *rule.ErrnoRet
		}
		return rule.Action, errno
	}
	return sc.DefaultAction, 0
}

func TestSeccompArchitectures(t *testing.T) {
	for _, tc := range []struct {
		goarch string
		want   []specs.Arch
	}{
		{"amd64", []specs.Arch{specs.ArchX86_64, specs.ArchX86}},
		{"arm64", []specs.Arch{specs.ArchAARCH64, specs.ArchARM}},
		{"riscv64", nil}, // the native architecture only
	} {
		t.Run(tc.goarch, func(t *testing.T) {
			sc := seccompFor(tc.goarch)
			assert.Equal(t, specs.ActAllow, sc.DefaultAction)
			assert.Equal(t, tc.want, sc.Architectures)
		})
	}
	assert.Equal(t, seccompFor(goruntime.GOARCH), DefaultSeccomp())
}

func TestSeccompRuleStructure(t *testing.T) {
	sc := seccompFor("amd64")
	for _, rule := range sc.Syscalls {
		assert.Equal(t, specs.ActErrno, rule.Action, "%v", rule.Names)
		require.NotNil(t, rule.ErrnoRet, "%v", rule.Names)
		assert.LessOrEqual(t, len(rule.Args), 1, "%v: one condition per rule (runc ANDs them)", rule.Names)
	}
	// The unconditional EPERM rule names the whole list.
	require.NotEmpty(t, sc.Syscalls)
	assert.Empty(t, sc.Syscalls[0].Args)
	assert.Equal(t, uint(1), *sc.Syscalls[0].ErrnoRet)
	for _, name := range []string{
		"ptrace", "mount", "umount", "umount2", "pivot_root", "keyctl", "add_key",
		"request_key", "bpf", "perf_event_open", "userfaultfd", "kexec_load",
		"kexec_file_load", "init_module", "finit_module", "delete_module", "reboot",
		"swapon", "swapoff", "open_by_handle_at", "name_to_handle_at", "setns",
		"io_uring_setup", "io_uring_enter", "io_uring_register",
	} {
		assert.Contains(t, sc.Syscalls[0].Names, name)
	}

	find := func(name string) []specs.LinuxSyscall {
		var out []specs.LinuxSyscall
		for _, r := range sc.Syscalls {
			if slices.Contains(r.Names, name) {
				out = append(out, r)
			}
		}
		return out
	}
	for _, name := range []string{"clone3", "openat2"} {
		rules := find(name)
		require.Len(t, rules, 1, name)
		assert.Equal(t, uint(38), *rules[0].ErrnoRet, "%s is ENOSYS so that libc falls back to clone or openat", name)
		assert.Empty(t, rules[0].Args)
	}

	for _, name := range []string{"unshare", "clone"} {
		rules := find(name)
		require.Len(t, rules, 1, name)
		assert.Equal(t, []specs.LinuxSeccompArg{{Index: 0, Value: 0x10000000, ValueTwo: 0x10000000, Op: specs.OpMaskedEqual}}, rules[0].Args, name)
		assert.Equal(t, uint(1), *rules[0].ErrnoRet)
	}

	ioctl := find("ioctl")
	require.Len(t, ioctl, 2)
	assert.Equal(t, []specs.LinuxSeccompArg{{Index: 1, Value: 0xFFFFFFFF, ValueTwo: 0x5412, Op: specs.OpMaskedEqual}}, ioctl[0].Args, "TIOCSTI")
	assert.Equal(t, []specs.LinuxSeccompArg{{Index: 1, Value: 0xFFFFFFFF, ValueTwo: 0x541C, Op: specs.OpMaskedEqual}}, ioctl[1].Args, "TIOCLINUX")

	socket := find("socket")
	require.Len(t, socket, 1)
	assert.Equal(t, []specs.LinuxSeccompArg{{Index: 0, Value: 0xFFFFFFFF, ValueTwo: 1, Op: specs.OpMaskedEqual}}, socket[0].Args, "AF_UNIX")
}

func TestSeccompVerdicts(t *testing.T) {
	sc := DefaultSeccomp()
	const (
		eperm  = 1
		enosys = 38
	)
	for _, tc := range []struct {
		name    string
		syscall string
		args    []uint64
		denied  bool
		errno   uint
	}{
		{"read", "read", []uint64{0, 0, 10}, false, 0},
		{"mount", "mount", nil, true, eperm},
		{"ptrace", "ptrace", nil, true, eperm},
		{"io_uring_setup", "io_uring_setup", []uint64{1, 0}, true, eperm},
		{"clone3", "clone3", nil, true, enosys},
		{"clone thread", "clone", []uint64{0x3d0f00}, false, 0},
		{"clone fork", "clone", []uint64{0x01200011}, false, 0},
		{"clone newuser", "clone", []uint64{0x10000000 | 0x11}, true, eperm},
		{"unshare newns", "unshare", []uint64{0x00020000}, false, 0},
		{"unshare newuser", "unshare", []uint64{0x10000000}, true, eperm},
		{"unshare newuser|newns", "unshare", []uint64{0x10020000}, true, eperm},
		{"ioctl TCGETS", "ioctl", []uint64{0, 0x5401}, false, 0},
		{"ioctl TIOCSTI", "ioctl", []uint64{0, 0x5412}, true, eperm},
		{"ioctl TIOCSTI high bits", "ioctl", []uint64{0, 0xdead00000000 | 0x5412}, true, eperm},
		{"ioctl TIOCLINUX", "ioctl", []uint64{0, 0x541C}, true, eperm},
		{"ioctl TIOCLINUX high bits", "ioctl", []uint64{0, 1<<32 | 0x541C}, true, eperm},
		{"socket AF_INET", "socket", []uint64{2, 1, 0}, false, 0},
		{"socket AF_UNIX", "socket", []uint64{1, 1, 0}, true, eperm},
		{"socket AF_UNIX high bits", "socket", []uint64{1<<32 | 1, 1, 0}, true, eperm},
		{"socketpair AF_UNIX", "socketpair", []uint64{1, 1, 0}, false, 0},
		{"openat2", "openat2", []uint64{0, 0, 0, 24}, true, enosys},
		{"chmod 0755", "chmod", []uint64{0, 0o755}, false, 0},
		{"chmod 4755", "chmod", []uint64{0, 0o4755}, true, eperm},
		{"chmod 2755", "chmod", []uint64{0, 0o2755}, true, eperm},
		{"chmod 1777", "chmod", []uint64{0, 0o1777}, false, 0},
		{"fchmod 6755", "fchmod", []uint64{3, 0o6755}, true, eperm},
		{"fchmod 0644", "fchmod", []uint64{3, 0o644}, false, 0},
		{"fchmodat 4755", "fchmodat", []uint64{3, 0, 0o4755}, true, eperm},
		{"fchmodat 0755", "fchmodat", []uint64{3, 0, 0o755}, false, 0},
		{"fchmodat2 2755", "fchmodat2", []uint64{3, 0, 0o2755, 0x100}, true, eperm},
		{"fchmodat2 0700", "fchmodat2", []uint64{3, 0, 0o700, 0x100}, false, 0},
		{"creat 4755", "creat", []uint64{0, 0o4755}, true, eperm},
		{"open O_CREAT 0644", "open", []uint64{0, 0o101, 0o644}, false, 0},
		{"open O_CREAT 4755", "open", []uint64{0, 0o101, 0o4755}, true, eperm},
		{"openat O_CREAT 0666", "openat", []uint64{0, 0, 0o101, 0o666}, false, 0},
		{"openat O_CREAT 2777", "openat", []uint64{0, 0, 0o101, 0o2777}, true, eperm},
		{"openat O_TMPFILE 4700", "openat", []uint64{0, 0, 0o20200002, 0o4700}, true, eperm},
		{"openat mode high bits", "openat", []uint64{0, 0, 0o101, 0xffff0000_00000000 | 0o644}, false, 0},
		{"mknod 4755", "mknod", []uint64{0, 0o100000 | 0o4755, 0}, true, eperm},
		{"mknodat fifo 0600", "mknodat", []uint64{0, 0, 0o10000 | 0o600, 0}, false, 0},
		{"mknodat 2755", "mknodat", []uint64{0, 0, 0o100000 | 0o2755, 0}, true, eperm},
		{"mkdir 2775 (the kernel drops the bit)", "mkdir", []uint64{0, 0o2775}, false, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			action, errno := seccompVerdict(sc, tc.syscall, tc.args...)
			if !tc.denied {
				assert.Equal(t, specs.ActAllow, action)
				return
			}
			assert.Equal(t, specs.ActErrno, action)
			assert.Equal(t, tc.errno, errno)
		})
	}
}

// A sandbox with a disk limit refuses fallocate in every mode but 0
// (which RLIMIT_FSIZE bounds), and nothing else beyond DefaultSeccomp.
func TestDiskLimitedSeccomp(t *testing.T) {
	sc, def := DiskLimitedSeccomp(), DefaultSeccomp()
	require.Len(t, sc.Syscalls, len(def.Syscalls)+1)
	assert.Equal(t, def.Syscalls, sc.Syscalls[:len(def.Syscalls)])
	r := sc.Syscalls[len(def.Syscalls)]
	assert.Equal(t, []string{"fallocate"}, r.Names)
	require.NotNil(t, r.ErrnoRet)
	assert.Equal(t, uint(95), *r.ErrnoRet, "EOPNOTSUPP")
	assert.Equal(t, []specs.LinuxSeccompArg{{Index: 1, Value: 0, Op: specs.OpNotEqual}}, r.Args)
}
