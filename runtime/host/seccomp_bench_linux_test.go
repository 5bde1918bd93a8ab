//go:build cgo && seccomp

package host

import (
	"io"
	"os"
	"testing"

	"github.com/opencontainers/runc/libcontainer/specconv"
	specs "github.com/opencontainers/runtime-spec/specs-go"
	libseccomp "github.com/seccomp/libseccomp-golang"

	"github.com/boxsh/boxsh/runtime/plan"
)

// BenchmarkSeccompCompile measures what libcontainer's init pays at every
// start to compile the sandbox's filter with libseccomp.
//
// It compiles as seccomp.InitSeccomp does, up to the export of the BPF
// program, without loading it. The figure decides whether a filter assembled
// ahead of time pays.
func BenchmarkSeccompCompile(b *testing.B) {
	cfg, err := specconv.SetupSeccomp(plan.DefaultSeccomp())
	if err != nil {
		b.Fatal(err)
	}
	cfg.Flags = append(cfg.Flags, specs.LinuxSeccompFlagSpecAllow)
	devnull, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	if err != nil {
		b.Fatal(err)
	}
	defer devnull.Close()
	for b.Loop() {
		f, err := libseccomp.NewFilter(libseccomp.ActAllow)
		if err != nil {
			b.Fatal(err)
		}
		for _, a := range cfg.Architectures {
			arch, _ := libseccomp.GetArchFromString(a)
			_ = f.AddArch(arch)
		}
		_ = f.SetNoNewPrivsBit(false)
		for _, call := range cfg.Syscalls {
			num, err := libseccomp.GetSyscallFromName(call.Name)
			if err != nil {
				continue
			}
			act := libseccomp.ActErrno.SetReturnCode(int16(*call.ErrnoRet))
			if len(call.Args) == 0 {
				_ = f.AddRule(num, act)
				continue
			}
			var conds []libseccomp.ScmpCondition
			for _, a := range call.Args {
				c, err := libseccomp.MakeCondition(a.Index, libseccomp.CompareMaskedEqual, a.Value, a.ValueTwo)
				if err != nil {
					b.Fatal(err)
				}
				conds = append(conds, c)
			}
			_ = f.AddRuleConditional(num, act, conds)
		}
		r, w, _ := os.Pipe()
		go func() { _, _ = io.Copy(io.Discard, r); r.Close() }()
		if err := f.ExportBPF(w); err != nil {
			b.Fatal(err)
		}
		w.Close()
		f.Release()
	}
}
