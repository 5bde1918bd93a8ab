package plan

import (
	goruntime "runtime"

	specs "github.com/opencontainers/runtime-spec/specs-go"
)

// Errno values returned by the seccomp rules.
const (
	errnoEPERM      uint = 1
	errnoENOSYS     uint = 38
	errnoEOPNOTSUPP uint = 95
)

// Argument values the seccomp rules compare against.
const (
	// cloneNewUser is CLONE_NEWUSER: a new user namespace would give the
	// sandboxed process every capability again (in that namespace).
	cloneNewUser uint64 = 0x10000000
	// afUnix is AF_UNIX: Unix sockets reach host daemons (Docker, D-Bus,
	// SSH agents) through bound directories.
	afUnix uint64 = 1
	// tiocsti and tioclinux are the ioctls that push input into a terminal
	// (and so into the shell that owns it, outside the sandbox).
	tiocsti   uint64 = 0x5412
	tioclinux uint64 = 0x541C
	// modeSetUID and modeSetGID are S_ISUID and S_ISGID, the mode bits
	// that make an executable run as its owner or group.
	modeSetUID uint64 = 0o4000
	modeSetGID uint64 = 0o2000
	// lowWordMask keeps the 32 bits of an int argument that the kernel
	// looks at, such as a socket family or an ioctl request. So setting
	// the high bits does not slip past a rule.
	lowWordMask uint64 = 0xFFFFFFFF
)

// deniedSyscalls fail with EPERM whatever their arguments.
//
// They escape or weaken the sandbox, or reach the kernel in ways a shell never
// needs: mounts, namespaces, tracing, keyrings, kernel modules, BPF, and
// io_uring, which runs system calls that seccomp does not see.
//
// setgroups would let root in the sandbox drop a supplementary group, and so
// read what the group is denied (a file of mode 0604). An unprivileged user
// namespace refuses it, since its setgroups file says deny. But one whose
// groups newgidmap mapped (see SpecConfig.Groups) does not, nor does one that
// root made.
var deniedSyscalls = []string{
	"add_key",
	"bpf",
	"delete_module",
	"finit_module",
	"init_module",
	"io_uring_enter",
	"io_uring_register",
	"io_uring_setup",
	"kexec_file_load",
	"kexec_load",
	"keyctl",
	"mount",
	"name_to_handle_at",
	"open_by_handle_at",
	"perf_event_open",
	"pidfd_getfd",
	"pivot_root",
	"process_vm_readv",
	"process_vm_writev",
	"ptrace",
	"reboot",
	"request_key",
	"setgroups",
	"setns",
	"swapoff",
	"swapon",
	"umount",
	"umount2",
	"userfaultfd",
}

// modeArgs are the system calls that set a file's mode, with the index of
// their mode argument.
//
// A command must not make a set-user-ID or set-group-ID file in a bind. It
// would run as the user, or the user's group, when another user of the host
// executes it.
//
// mkdir and mkdirat are not among them: the kernel drops those bits from
// mkdir's mode. A new directory gets S_ISGID only from a set-group-ID parent,
// which gives no privilege. open and openat take a mode only with O_CREAT or
// O_TMPFILE, and libc passes 0 otherwise; the rule does not look at the flags.
var modeArgs = []struct {
	name  string
	index uint
}{
	{"chmod", 1},
	{"fchmod", 1},
	{"fchmodat", 2},
	{"fchmodat2", 2},
	{"creat", 1},
	{"open", 2},
	{"openat", 3},
	{"mknod", 1},
	{"mknodat", 2},
}

// seccompArches are the architectures a filter covers, by GOARCH.
//
// They are the native one and the 32-bit one its kernel also runs (x86
// binaries on amd64, arm binaries on arm64), so that those run under the same
// rules. System calls of an architecture not listed (such as x32's, which few
// kernels enable) fail outright, so they cannot get around the rules either.
// Each architecture left out shortens the compiling of the filter at every
// start.
var seccompArches = map[string][]specs.Arch{
	"amd64": {specs.ArchX86_64, specs.ArchX86},
	"arm64": {specs.ArchAARCH64, specs.ArchARM},
}

// DefaultSeccomp returns the seccomp filter of the sandbox for the running
// architecture.
func DefaultSeccomp() *specs.LinuxSeccomp {
	return seccompFor(goruntime.GOARCH)
}

// seccompFor is the seccomp filter of the sandbox for goarch (a GOARCH
// value; other architectures than amd64 and arm64 get the native one only).
// It allows every system call except:
//
//   - those in deniedSyscalls (EPERM);
//   - unshare and clone with CLONE_NEWUSER in their flags (EPERM);
//   - clone3 (ENOSYS): its flags are in memory that seccomp cannot read, so
//     it is refused as if the kernel were too old, and libc falls back to
//     clone, whose flags the filter does see;
//   - the calls of modeArgs with S_ISUID or S_ISGID in their mode (EPERM),
//     so that no set-user-ID or set-group-ID file can be made;
//   - openat2 (ENOSYS), whose mode is in memory too: programs that use it
//     fall back to openat (glibc's open never uses it);
//   - socket(AF_UNIX, ...) (EPERM), as boxsh v3 does; socketpair stays
//     allowed, so pipes between processes still work;
//   - ioctl TIOCSTI and TIOCLINUX (EPERM).
//
// The socket family and the ioctl request are compared on their low 32
// bits (SCMP_CMP_MASKED_EQ with mask 0xFFFFFFFF), the bits the kernel uses.
func seccompFor(goarch string) *specs.LinuxSeccomp {
	sc := &specs.LinuxSeccomp{
		DefaultAction: specs.ActAllow,
		Architectures: seccompArches[goarch],
	}
	eperm, enosys := errnoEPERM, errnoENOSYS
	sc.Syscalls = append(sc.Syscalls,
		specs.LinuxSyscall{
			Names:    append([]string(nil), deniedSyscalls...),
			Action:   specs.ActErrno,
			ErrnoRet: &eperm,
		},
		specs.LinuxSyscall{
			Names:    []string{"clone3", "openat2"},
			Action:   specs.ActErrno,
			ErrnoRet: &enosys,
		},
	)
	// Each rule below has one condition: runc ANDs the conditions of a rule,
	// so alternatives (TIOCSTI or TIOCLINUX) are separate rules.
	for _, name := range []string{"unshare", "clone"} {
		sc.Syscalls = append(sc.Syscalls, maskedRule(name, 0, cloneNewUser, cloneNewUser, &eperm))
	}
	sc.Syscalls = append(sc.Syscalls, maskedRule("socket", 0, lowWordMask, afUnix, &eperm))
	for _, m := range modeArgs {
		for _, bit := range []uint64{modeSetUID, modeSetGID} {
			sc.Syscalls = append(sc.Syscalls, maskedRule(m.name, m.index, bit, bit, &eperm))
		}
	}
	for _, req := range []uint64{tiocsti, tioclinux} {
		sc.Syscalls = append(sc.Syscalls, maskedRule("ioctl", 1, lowWordMask, req, &eperm))
	}
	return sc
}

// DiskLimitedSeccomp returns the seccomp filter of a sandbox whose writable
// layer has a disk limit.
//
// It is DefaultSeccomp with fallocate refused in every mode but 0. The error
// is EOPNOTSUPP, which programs take for a file system without fallocate, and
// fall back on writing.
//
// Mode 0 grows the file's size, which RLIMIT_FSIZE bounds. FALLOC_FL_KEEP_SIZE
// and the modes with it (zero range, unshare) allocate blocks past the end of
// the file, which RLIMIT_FSIZE does not bound, so one call could take any
// amount of space. The mode is compared on all 64 bits, so a call with high
// bits set is refused too.
func DiskLimitedSeccomp() *specs.LinuxSeccomp {
	sc := DefaultSeccomp()
	eopnotsupp := errnoEOPNOTSUPP
	sc.Syscalls = append(sc.Syscalls, specs.LinuxSyscall{
		Names:    []string{"fallocate"},
		Action:   specs.ActErrno,
		ErrnoRet: &eopnotsupp,
		Args:     []specs.LinuxSeccompArg{{Index: 1, Value: 0, Op: specs.OpNotEqual}},
	})
	return sc
}

// maskedRule fails syscall name with *errno when argument index, masked with
// mask, equals value.
func maskedRule(name string, index uint, mask, value uint64, errno *uint) specs.LinuxSyscall {
	return specs.LinuxSyscall{
		Names:    []string{name},
		Action:   specs.ActErrno,
		ErrnoRet: errno,
		Args: []specs.LinuxSeccompArg{{
			Index:    index,
			Value:    mask,
			ValueTwo: value,
			Op:       specs.OpMaskedEqual,
		}},
	}
}
