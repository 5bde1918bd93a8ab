//go:build cgo && seccomp

package host

import (
	"errors"
	"fmt"
	"io"
	"os"
	"reflect"
	"slices"

	"github.com/opencontainers/runc/libcontainer/configs"
	"github.com/opencontainers/runc/libcontainer/specconv"
	specs "github.com/opencontainers/runtime-spec/specs-go"
	libseccomp "github.com/seccomp/libseccomp-golang"
	"golang.org/x/sys/unix"

	"github.com/boxsh/boxsh/internal/seccompload"
)

// The seccomp filter of a sandbox is compiled by libseccomp. When
// libcontainer's init compiles it, that cost is on the critical path of
// every start (see BenchmarkSeccompCompile). So the front compiles it
// instead, the way libcontainer does, on another goroutine while it walks
// the binds (startSeccomp). boxsh-init loads the program as its first act
// (see seccompload), with the flags libcontainer would give it, and
// libcontainer is given no filter. TestSeccompProgramIsLibcontainers
// checks that the program is the one libcontainer's init loads.
//
// The program is compiled at every start and never kept on disk: a copy
// kept in the state directory could be rewritten by a sandbox with a
// writable bind on another state directory (XDG_RUNTIME_DIR changes from
// one start to the next) and would turn the filter off for every later
// sandbox.

// seccompProgram is the compilation of a filter started by startSeccomp.
type seccompProgram struct {
	cfg  *configs.Seccomp
	done chan struct{}
	prog []byte
	err  error
}

// startSeccomp starts compiling the filter of spec, with flags added as
// the plan adds them (see plan.Plan.SeccompFlags), on another goroutine.
func startSeccomp(spec *specs.LinuxSeccomp, flags []specs.LinuxSeccompFlag) *seccompProgram {
	sp := &seccompProgram{done: make(chan struct{})}
	go func() {
		defer close(sp.done)
		if sp.cfg, sp.err = specconv.SetupSeccomp(spec); sp.err != nil || sp.cfg == nil {
			return
		}
		sp.cfg.Flags = append(sp.cfg.Flags, flags...)
		sp.prog, sp.err = compiledSeccomp(sp.cfg)
	}()
	return sp
}

// program returns the program of cfg, or the reason why boxsh-init cannot load
// it, and libcontainer must.
//
// The program is the one compiled ahead, if it was compiled from the same
// filter; else cfg is compiled now.
func (sp *seccompProgram) program(cfg *configs.Seccomp) ([]byte, error) {
	<-sp.done
	if sp.err == nil && reflect.DeepEqual(sp.cfg, cfg) {
		return sp.prog, nil
	}
	return compiledSeccomp(cfg)
}

// compiledSeccomp compiles cfg when boxsh-init can load it instead of
// libcontainer. Otherwise it returns the reason, and libcontainer loads the
// filter as it always has.
//
// boxsh-init can load it when the filter is one this file compiles like
// libcontainer (default allow, errno rules, the SPEC_ALLOW flag only, maybe
// twice), and the kernel takes the flags boxsh-init loads it with.
func compiledSeccomp(cfg *configs.Seccomp) ([]byte, error) {
	if err := fastSeccompSupported(cfg); err != nil {
		return nil, err
	}
	return compileSeccomp(cfg)
}

// fastSeccompSupported tells why cfg cannot take the fast path, if so.
func fastSeccompSupported(cfg *configs.Seccomp) error {
	if cfg.DefaultAction != configs.Allow || cfg.DefaultErrnoRet != nil || cfg.ListenerPath != "" {
		return errors.New("not a default-allow filter")
	}
	// SPEC_ALLOW, which libcontainer sets by default and startContainer
	// too, and nothing else.
	if len(cfg.Flags) == 0 || slices.ContainsFunc(cfg.Flags, func(f specs.LinuxSeccompFlag) bool { return f != specs.LinuxSeccompFlagSpecAllow }) {
		return fmt.Errorf("flags %v", cfg.Flags)
	}
	for _, c := range cfg.Syscalls {
		if c == nil || c.Action != configs.Errno || c.ErrnoRet == nil {
			return errors.New("a rule that is not an errno rule")
		}
	}
	return seccompFlagsSupported()
}

// seccompFlagsSupported probes the kernel for the flags boxsh-init loads the
// program with, as libseccomp does.
//
// A NULL program gives EFAULT when the flags are known, and EINVAL when not.
func seccompFlagsSupported() error {
	_, _, errno := unix.RawSyscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, seccompload.Flags, 0)
	if errno != unix.EFAULT {
		return fmt.Errorf("the kernel does not take seccomp flags %#x: %v", seccompload.Flags, errno)
	}
	return nil
}

// compileSeccomp compiles cfg with libseccomp as libcontainer's
// seccomp.InitSeccomp does, and returns the BPF program.
//
// It makes the same calls in the same order, for the default-allow errno
// filters that fastSeccompSupported lets through. With a permissive default
// action, libcontainer prepends no ENOSYS stub, so the program is libseccomp's
// export as is.
func compileSeccomp(cfg *configs.Seccomp) ([]byte, error) {
	filter, err := libseccomp.NewFilter(libseccomp.ActAllow)
	if err != nil {
		return nil, fmt.Errorf("seccomp filter: %w", err)
	}
	defer filter.Release()
	for _, a := range cfg.Architectures {
		arch, err := libseccomp.GetArchFromString(a)
		if err != nil {
			return nil, fmt.Errorf("seccomp architecture %s: %w", a, err)
		}
		if err := filter.AddArch(arch); err != nil {
			return nil, fmt.Errorf("seccomp architecture %s: %w", a, err)
		}
	}
	if err := filter.SetSSB(true); err != nil {
		return nil, fmt.Errorf("seccomp SPEC_ALLOW: %w", err)
	}
	// libcontainer's threshold for libseccomp's binary tree.
	if len(cfg.Syscalls) > 32 {
		if err := filter.SetOptimize(2); err != nil {
			return nil, fmt.Errorf("seccomp binary tree: %w", err)
		}
	}
	if err := filter.SetNoNewPrivsBit(false); err != nil {
		return nil, fmt.Errorf("seccomp no_new_privs: %w", err)
	}
	for _, call := range cfg.Syscalls {
		if err := addSeccompRule(filter, call); err != nil {
			return nil, err
		}
	}
	return exportSeccomp(filter)
}

// addSeccompRule adds the errno rule call to filter, as libcontainer's
// matchCall does.
//
// A system call libseccomp does not know is left out. Conditions on distinct
// arguments make one rule, else one rule each.
func addSeccompRule(filter *libseccomp.ScmpFilter, call *configs.Syscall) error {
	act := libseccomp.ActErrno.SetReturnCode(int16(*call.ErrnoRet))
	nr, err := libseccomp.GetSyscallFromName(call.Name)
	if err != nil {
		return nil
	}
	if len(call.Args) == 0 {
		if err := filter.AddRule(nr, act); err != nil {
			return fmt.Errorf("seccomp rule for %s: %w", call.Name, err)
		}
		return nil
	}
	counts := map[uint]int{}
	var conds []libseccomp.ScmpCondition
	for _, a := range call.Args {
		op, ok := seccompOps[a.Op]
		if !ok {
			return fmt.Errorf("seccomp rule for %s: operator %v", call.Name, a.Op)
		}
		c, err := libseccomp.MakeCondition(a.Index, op, a.Value, a.ValueTwo)
		if err != nil {
			return fmt.Errorf("seccomp rule for %s: %w", call.Name, err)
		}
		counts[a.Index]++
		conds = append(conds, c)
	}
	separate := false
	for _, n := range counts {
		separate = separate || n > 1
	}
	if !separate {
		if err := filter.AddRuleConditional(nr, act, conds); err != nil {
			return fmt.Errorf("seccomp rule for %s: %w", call.Name, err)
		}
		return nil
	}
	for _, c := range conds {
		if err := filter.AddRuleConditional(nr, act, []libseccomp.ScmpCondition{c}); err != nil {
			return fmt.Errorf("seccomp rule for %s: %w", call.Name, err)
		}
	}
	return nil
}

// seccompOps are libcontainer's operators in libseccomp's terms.
var seccompOps = map[configs.Operator]libseccomp.ScmpCompareOp{
	configs.EqualTo:              libseccomp.CompareEqual,
	configs.NotEqualTo:           libseccomp.CompareNotEqual,
	configs.GreaterThan:          libseccomp.CompareGreater,
	configs.GreaterThanOrEqualTo: libseccomp.CompareGreaterEqual,
	configs.LessThan:             libseccomp.CompareLess,
	configs.LessThanOrEqualTo:    libseccomp.CompareLessOrEqual,
	configs.MaskEqualTo:          libseccomp.CompareMaskedEqual,
}

// exportSeccomp returns filter's BPF program.
func exportSeccomp(filter *libseccomp.ScmpFilter) ([]byte, error) {
	r, w, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	read := make(chan []byte, 1)
	go func() {
		b, _ := io.ReadAll(r)
		r.Close()
		read <- b
	}()
	err = filter.ExportBPF(w)
	w.Close()
	prog := <-read
	if err != nil {
		return nil, fmt.Errorf("export the seccomp program: %w", err)
	}
	if !seccompload.Valid(prog) {
		return nil, fmt.Errorf("libseccomp exported a program of %d bytes", len(prog))
	}
	return prog, nil
}
