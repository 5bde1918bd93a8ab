package hostcheck

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// ProbeArg is the first argument under which the probe's program (see
// ProbeBinary) runs the start's calls (RunProbe), instead of its own main.
const ProbeArg = "__boxsh_probe_start_calls"

// ProbeBinary is the program StartCalls runs as its probe; boxsh sets it to
// itself. The program calls RunProbe when its first argument is ProbeArg. When
// ProbeBinary is empty, StartCalls does not probe.
var ProbeBinary string

// StartCalls checks that the calls a sandbox's runtime makes once it is in its
// namespaces are allowed.
//
// Those calls are sethostname, keyctl, mount, pivot_root and umount; a
// container's seccomp profile may refuse them. StartCalls makes them in a
// child in new user, UTS, IPC and mount namespaces.
func StartCalls() Check {
	c := Check{Name: "start calls", Needed: true}
	if ProbeBinary == "" {
		c.OK, c.Needed, c.Detail = true, false, "not probed"
		return c
	}
	refused, err := probeStartCalls()
	switch {
	case err != nil:
		c.OK, c.Needed, c.Detail = true, false, "not probed ("+err.Error()+"); see user namespaces"
	case len(refused) == 0:
		c.OK, c.Detail = true, "a process in new namespaces may call sethostname, keyctl, mount, pivot_root and umount"
	default:
		c.Detail = "refused in new namespaces: " + strings.Join(refused, ", ")
		if seccompMode() == "2" && !InsideBoxsh() {
			c.Detail += " (a seccomp filter: a container's profile)"
			c.Fix = seccompCallsFix
		} else if InsideBoxsh() {
			c.Fix = nestedFix
		}
	}
	return c
}

// probeStartCalls runs the probe and returns the calls it was refused,
// each with its error.
func probeStartCalls() ([]string, error) {
	r, w, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	defer r.Close()
	null, err := os.Open(os.DevNull)
	if err != nil {
		w.Close()
		return nil, err
	}
	defer null.Close()
	pid, err := syscall.ForkExec(ProbeBinary, []string{ProbeBinary, ProbeArg}, &syscall.ProcAttr{
		Env:   []string{},
		Files: []uintptr{null.Fd(), w.Fd(), null.Fd()},
		Sys: &syscall.SysProcAttr{
			Cloneflags:  syscall.CLONE_NEWUSER | syscall.CLONE_NEWUTS | syscall.CLONE_NEWIPC | syscall.CLONE_NEWNS,
			UidMappings: []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Geteuid(), Size: 1}},
			GidMappings: []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getegid(), Size: 1}},
			Pdeathsig:   syscall.SIGKILL,
		},
	})
	w.Close()
	if err != nil {
		return nil, err
	}
	var out bytes.Buffer
	_, _ = out.ReadFrom(r)
	var ws syscall.WaitStatus
	if _, err := syscall.Wait4(pid, &ws, 0, nil); err != nil {
		return nil, err
	}
	if !ws.Exited() || ws.ExitStatus() != 0 {
		return nil, fmt.Errorf("the probe ended with %v", ws)
	}
	var refused []string
	sc := bufio.NewScanner(&out)
	for sc.Scan() {
		if call, errno, ok := strings.Cut(sc.Text(), " "); ok && errno != "ok" {
			refused = append(refused, call+" ("+errno+")")
		}
	}
	return refused, nil
}

// RunProbe makes the start's calls in the namespaces StartCalls made, and
// exits.
//
// It prints one line a call: "NAME ok" or "NAME ERROR".
func RunProbe() {
	report := func(name string, err error) {
		if err == nil {
			fmt.Printf("%s ok\n", name)
			return
		}
		var errno syscall.Errno
		if errors.As(err, &errno) && errno != unix.EPERM && errno != unix.ENOSYS && errno != unix.EACCES {
			fmt.Printf("%s ok\n", name) // refused for another reason than a filter's
			return
		}
		fmt.Printf("%s %v\n", name, err)
	}
	report("sethostname", unix.Sethostname([]byte("boxsh-probe")))
	_, err := unix.KeyctlJoinSessionKeyring("_ses.boxsh-probe")
	report("keyctl", err)
	name, err := probeMounts()
	report(name, err)
	os.Exit(0)
}

// probeMounts does with a tmpfs what the runtime does with the sandbox's root,
// and returns the call that failed, or the last one.
//
// It makes the mount namespace's mounts private, mounts a tmpfs over /tmp (in
// this namespace only), pivots into it and unmounts the old root.
func probeMounts() (call string, err error) {
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return "mount", err
	}
	if fi, err := os.Stat("/tmp"); err != nil || !fi.IsDir() {
		return "mount", nil // no place to try: not a filter's refusal
	}
	if err := unix.Mount("tmpfs", "/tmp", "tmpfs", 0, "size=64k"); err != nil {
		return "mount", err
	}
	if err := os.Mkdir("/tmp/old", 0o700); err != nil {
		return "mount", nil
	}
	if err := unix.PivotRoot("/tmp", "/tmp/old"); err != nil {
		return "pivot_root", err
	}
	return "umount", unix.Unmount("/old", unix.MNT_DETACH)
}
