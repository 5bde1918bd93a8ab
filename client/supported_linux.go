package client

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
)

// Supported tells whether this machine can run boxsh's sandbox, and if
// not, why: unprivileged user namespaces turned off (the sysctl to change
// is named), or a kernel too old for overlayfs in a user namespace
// (copy-on-write binds need Linux 5.11).
func Supported() error {
	if os.Geteuid() != 0 {
		if v, ok := sysctl("kernel/unprivileged_userns_clone"); ok && v == "0" {
			return errors.New("unprivileged user namespaces are off: sysctl kernel.unprivileged_userns_clone=1 turns them on")
		}
		if v, ok := sysctl("user/max_user_namespaces"); ok && v == "0" {
			return errors.New("user namespaces are off: sysctl user.max_user_namespaces is 0")
		}
		if err := tryUserNamespace(); err != nil {
			msg := fmt.Sprintf("cannot create a user namespace: %v", err)
			if v, ok := sysctl("kernel/apparmor_restrict_unprivileged_userns"); ok && v == "1" {
				msg += " (AppArmor restricts unprivileged user namespaces: sysctl kernel.apparmor_restrict_unprivileged_userns=0, or an AppArmor profile for boxsh allowing userns)"
			}
			return errors.New(msg)
		}
	}
	if major, minor, ok := kernelVersion(); ok && (major < 5 || major == 5 && minor < 11) {
		return fmt.Errorf("the kernel, Linux %d.%d, cannot mount overlayfs in a user namespace (5.11 or later is needed for copy-on-write binds)", major, minor)
	}
	if b, err := os.ReadFile("/proc/filesystems"); err == nil && !strings.Contains(string(b), "\toverlay\n") {
		if _, err := os.Stat("/sys/module/overlay"); err != nil {
			return errors.New("overlayfs is not loaded (modprobe overlay): copy-on-write binds need it")
		}
	}
	return nil
}

// sysctl reads /proc/sys/NAME.
func sysctl(name string) (string, bool) {
	b, err := os.ReadFile("/proc/sys/" + name)
	if err != nil {
		return "", false
	}
	return strings.TrimSpace(string(b)), true
}

// tryUserNamespace starts a process in a new user namespace (mapping the
// caller to root), as the sandbox does.
func tryUserNamespace() error {
	exe := "/bin/true"
	if _, err := os.Stat(exe); err != nil {
		exe = "/usr/bin/true"
	}
	cmd := exec.Command(exe)
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Cloneflags:  syscall.CLONE_NEWUSER,
		UidMappings: []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Geteuid(), Size: 1}},
		GidMappings: []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getegid(), Size: 1}},
	}
	return cmd.Run()
}

// kernelVersion is the running kernel's major and minor version.
func kernelVersion() (major, minor int, ok bool) {
	var u syscall.Utsname
	if syscall.Uname(&u) != nil {
		return 0, 0, false
	}
	var b strings.Builder
	for _, c := range u.Release {
		if c == 0 {
			break
		}
		b.WriteByte(byte(c))
	}
	parts := strings.SplitN(b.String(), ".", 3)
	if len(parts) < 2 {
		return 0, 0, false
	}
	major, err1 := strconv.Atoi(parts[0])
	minor, err2 := strconv.Atoi(strings.TrimFunc(parts[1], func(r rune) bool { return r < '0' || r > '9' }))
	return major, minor, err1 == nil && err2 == nil
}
