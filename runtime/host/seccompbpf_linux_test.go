//go:build cgo && seccomp && amd64

package host

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"fmt"
	"os"
	"os/exec"
	goruntime "runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/opencontainers/runc/libcontainer/configs"
	"github.com/opencontainers/runc/libcontainer/seccomp"
	"github.com/opencontainers/runc/libcontainer/specconv"
	specs "github.com/opencontainers/runtime-spec/specs-go"
	"golang.org/x/sys/unix"

	"github.com/boxsh/boxsh/internal/seccompload"

	"github.com/boxsh/boxsh/runtime/plan"
)

// sandboxSeccompConfig is the seccomp part of the libcontainer config
// startContainer makes: the spec's filter as specconv converts it, with
// SPEC_ALLOW added.
func sandboxSeccompConfig(t *testing.T) *configs.Seccomp {
	t.Helper()
	cfg, err := specconv.SetupSeccomp(plan.DefaultSeccomp())
	if err != nil {
		t.Fatal(err)
	}
	cfg.Flags = append(cfg.Flags, specs.LinuxSeccompFlagSpecAllow)
	return cfg
}

const seccompChildEnv = "BOXSH_TEST_SECCOMP_CHILD"

func init() {
	if os.Getenv(seccompChildEnv) != "" {
		seccompChild()
	}
}

// seccompChild is the traced child of TestSeccompProgramIsLibcontainers: the
// test binary run with seccompChildEnv set.
//
// It prints the id of its thread, waits for a line on stdin, and has
// libcontainer load the sandbox's filter. The parent kills it at the system
// call.
func seccompChild() {
	goruntime.LockOSThread()
	cfg, err := specconv.SetupSeccomp(plan.DefaultSeccomp())
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	cfg.Flags = append(cfg.Flags, specs.LinuxSeccompFlagSpecAllow)
	fmt.Printf("tid %d\n", unix.Gettid())
	_, _ = bufio.NewReader(os.Stdin).ReadString('\n')
	_, err = seccomp.InitSeccomp(cfg)
	fmt.Fprintf(os.Stderr, "the filter was loaded (%v): the parent should have stopped it\n", err)
	os.Exit(2)
}

// TestSeccompProgramIsLibcontainers checks that the program boxsh-init loads
// (compileSeccomp's) is, byte for byte, the one libcontainer's init loads for
// the same filter.
//
// A child has libcontainer's seccomp.InitSeccomp load it, while the test
// traces the child's thread and reads the program from the arguments of its
// seccomp(2) call.
func TestSeccompProgramIsLibcontainers(t *testing.T) {
	cfg := sandboxSeccompConfig(t)
	ours, err := compileSeccomp(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if !seccompload.Valid(ours) {
		t.Fatalf("compiled program of %d bytes", len(ours))
	}
	theirs := libcontainerSeccompProgram(t)
	if !bytes.Equal(ours, theirs) {
		t.Fatalf("the compiled program (%d instructions) differs from the one libcontainer loads (%d instructions)", len(ours)/8, len(theirs)/8)
	}
	if err := fastSeccompSupported(cfg); err != nil {
		t.Errorf("the sandbox's filter does not take the fast path: %v", err)
	}
}

// libcontainerSeccompProgram runs seccompChild and returns
// the program its seccomp(SECCOMP_SET_MODE_FILTER) call passes.
func libcontainerSeccompProgram(t *testing.T) []byte {
	goruntime.LockOSThread() // ptrace requests come from the tracer thread
	defer goruntime.UnlockOSThread()
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), seccompChildEnv+"=1")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	}()
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		t.Fatalf("child: %v", err)
	}
	tid, err := strconv.Atoi(strings.TrimSpace(strings.TrimPrefix(line, "tid ")))
	if err != nil {
		t.Fatalf("child said %q", line)
	}
	if err := unix.PtraceSeize(tid); err != nil {
		t.Fatalf("trace the child's thread: %v", err)
	}
	if err := unix.PtraceInterrupt(tid); err != nil {
		t.Fatal(err)
	}
	wait := func() {
		var ws unix.WaitStatus
		if _, err := unix.Wait4(tid, &ws, unix.WALL, nil); err != nil {
			t.Fatalf("wait for the child's thread: %v", err)
		}
		if !ws.Stopped() {
			t.Fatalf("the child's thread ended (%v) before loading a filter", ws)
		}
	}
	wait()
	if _, err := stdin.Write([]byte("go\n")); err != nil {
		t.Fatal(err)
	}
	for range 100000 {
		if err := unix.PtraceSyscall(tid, 0); err != nil {
			t.Fatal(err)
		}
		wait()
		var regs unix.PtraceRegs
		if err := unix.PtraceGetRegs(tid, &regs); err != nil {
			t.Fatal(err)
		}
		if regs.Orig_rax != unix.SYS_SECCOMP || regs.Rdi != unix.SECCOMP_SET_MODE_FILTER {
			continue
		}
		if regs.Rsi&unix.SECCOMP_FILTER_FLAG_SPEC_ALLOW == 0 {
			t.Errorf("libcontainer loads the filter with flags %#x, without SPEC_ALLOW", regs.Rsi)
		}
		hdr := make([]byte, 16) // struct sock_fprog: len, padding, filter
		if _, err := unix.PtracePeekData(tid, uintptr(regs.Rdx), hdr); err != nil {
			t.Fatal(err)
		}
		n := int(binary.LittleEndian.Uint16(hdr))
		prog := make([]byte, 8*n)
		if _, err := unix.PtracePeekData(tid, uintptr(binary.LittleEndian.Uint64(hdr[8:])), prog); err != nil {
			t.Fatal(err)
		}
		return prog
	}
	t.Fatal("the child made no seccomp(SECCOMP_SET_MODE_FILTER) call")
	return nil
}

// TestSeccompCompiledAhead checks that the program compiled ahead is used
// for the filter it was compiled from, and that another filter is
// compiled for itself rather than given that program.
func TestSeccompCompiledAhead(t *testing.T) {
	cfg := sandboxSeccompConfig(t)
	want, err := compileSeccomp(cfg)
	if err != nil {
		t.Fatal(err)
	}
	sp := startSeccomp(plan.DefaultSeccomp(), []specs.LinuxSeccompFlag{specs.LinuxSeccompFlagSpecAllow})
	got, err := sp.program(cfg)
	if err != nil || !bytes.Equal(got, want) {
		t.Fatalf("the program compiled ahead: %d bytes, %v; want %d bytes", len(got), err, len(want))
	}
	other := sandboxSeccompConfig(t)
	other.Syscalls = other.Syscalls[1:]
	wantOther, err := compileSeccomp(other)
	if err != nil {
		t.Fatal(err)
	}
	gotOther, err := sp.program(other)
	if err != nil || !bytes.Equal(gotOther, wantOther) || bytes.Equal(gotOther, want) {
		t.Fatalf("another filter got %d bytes (%v), not its own %d", len(gotOther), err, len(wantOther))
	}
}
