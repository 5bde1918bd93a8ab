package hostcheck

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// All is every check, in the order a failed start looks for its cause.
func All() []Check {
	return []Check{UserNamespaces(), AppArmor(), Seccomp(), Proc(), Cgroups(), Overlay(), StartCalls()}
}

// Diagnose names, in one line with the fixes, every cause it finds of why a
// sandbox failed to start with err.
//
// It returns "" when no check explains the failure. In a Docker or Podman
// container whose causes are all settings of the engine, the line starts with
// the run flags that fix them all.
func Diagnose(err error) string {
	// A /proc of another PID namespace comes first: the user namespace
	// probe writes the child's id maps through /proc/PID, which there
	// names another process or none, so its error would mislead.
	if c, stale := staleProc(); stale {
		return c.Line()
	}
	var failed []Check
	for _, c := range []Check{UserNamespaces(), AppArmor(), Proc(), Cgroups(), StartCalls()} {
		if c.Needed && !c.OK {
			failed = append(failed, c)
		}
	}
	msg := err.Error()
	has := func(name string) bool {
		return slices.ContainsFunc(failed, func(c Check) bool { return c.Name == name })
	}
	if !has("/proc") && strings.Contains(msg, `"proc"`) && strings.Contains(msg, "operation not permitted") {
		failed = append(failed, Check{Name: "/proc", Needed: true, Detail: "the sandbox cannot mount a /proc of its own here (" + firstLine(msg) + ")", Fix: procFix})
	}
	if !has("start calls") && !has("user namespaces") {
		if d := diagnoseSeccomp(msg, seccompMode() == "2" && !InsideBoxsh()); d != "" {
			failed = append(failed, Check{Name: "seccomp", Needed: true, Detail: d})
		}
	}
	if len(failed) == 0 && strings.Contains(msg, "overlay") {
		if c := Overlay(); !c.OK {
			failed = append(failed, c)
		}
	}
	return Summary(failed)
}

// Summary returns the failed needed checks of checks in one line, each with
// its fix.
//
// It is "" when every needed check passed. In a Docker or Podman container
// whose failures are all settings of the engine, it starts with the run flags
// that fix them all.
func Summary(checks []Check) string {
	var failed []Check
	var lines []string
	for _, c := range checks {
		if c.Needed && !c.OK {
			failed = append(failed, c)
			lines = append(lines, c.Line())
		}
	}
	if flags := engineFlags(containerEngine(), failed); flags != "" {
		return "run the container with " + flags + ": " + strings.Join(lines, "; ")
	}
	return strings.Join(lines, "; ")
}

// containerEngine is "docker" or "podman" when this process runs in a
// container of that engine (as its marker file says), else "".
func containerEngine() string {
	if _, err := os.Stat("/run/.containerenv"); err == nil {
		return "podman"
	}
	if _, err := os.Stat("/.dockerenv"); err == nil {
		return "docker"
	}
	return ""
}

// engineFlags is the run flags of engine that fix every check of failed,
// "" when one of them is no setting of the engine's.
func engineFlags(engine string, failed []Check) string {
	fixes := map[string]map[string]string{
		"docker": {"/proc": "--security-opt systempaths=unconfined", "seccomp": "--security-opt seccomp=unconfined"},
		"podman": {"/proc": "--security-opt unmask=ALL", "seccomp": "--security-opt seccomp=unconfined"},
	}[engine]
	if fixes == nil || len(failed) == 0 {
		return ""
	}
	var flags []string
	for _, c := range failed {
		kind := c.Name
		switch {
		case c.Fix == seccompFix || c.Fix == seccompCallsFix || strings.Contains(c.Detail, seccompCallsFix):
			kind = "seccomp"
		case c.Fix != procFix:
			return ""
		}
		if f := fixes[kind]; f != "" && !slices.Contains(flags, f) {
			flags = append(flags, f)
		}
	}
	return strings.Join(flags, " ") + " (" + map[string]string{"docker": "Docker", "podman": "Podman"}[engine] + ")"
}

// diagnoseSeccomp names a container's seccomp profile as the cause of the
// failed start msg, when boxsh runs under a filter (filtered) and the runtime
// was refused a call.
//
// Docker's default profile, for one, lets a process with CAP_SYS_ADMIN make a
// user namespace but refuses it keyctl. The runtime calls keyctl to give the
// sandbox a session keyring of its own.
func diagnoseSeccomp(msg string, filtered bool) string {
	if !filtered || !strings.Contains(msg, "operation not permitted") {
		return ""
	}
	return "seccomp: a seccomp filter (a container's profile) refuses a call the sandbox's start needs (" + firstLine(msg) + "): " + seccompCallsFix
}

// InitialUserNS tells whether this process is in the host's user namespace,
// where uid 0 is the real root.
//
// There, the uid map is the identity of every id. In a container with a user
// namespace of its own (rootless Podman, a pod with hostUsers: false, a
// sandbox), uid 0 is an ordinary user of the host.
func InitialUserNS() bool {
	b, err := os.ReadFile("/proc/self/uid_map")
	if err != nil {
		return true // no user namespaces: this kernel has only the host's
	}
	return strings.Join(strings.Fields(string(b)), " ") == "0 0 4294967295"
}

// OuterUID is this process's uid as the parent user namespace sees it
// (its uid itself in the host's user namespace).
func OuterUID() int {
	uid := os.Getuid()
	b, err := os.ReadFile("/proc/self/uid_map")
	if err != nil {
		return uid
	}
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) != 3 {
			continue
		}
		in, err1 := strconv.Atoi(f[0])
		out, err2 := strconv.Atoi(f[1])
		n, err3 := strconv.Atoi(f[2])
		if err1 == nil && err2 == nil && err3 == nil && uid >= in && uid-in < n {
			return out + uid - in
		}
	}
	return uid
}

// sysctl reads /proc/sys/NAME.
func sysctl(name string) (string, bool) {
	b, err := os.ReadFile("/proc/sys/" + name)
	if err != nil {
		return "", false
	}
	return strings.TrimSpace(string(b)), true
}

// initMountPath is initproto.InitMountPath, where a sandbox has boxsh-init
// bound (a leaf imports no frame; a test checks the two agree).
const initMountPath = "/.boxsh/boxsh-init"

// InsideBoxsh tells whether this process runs in a boxsh sandbox: its
// boxsh-init is bound there, and a seccomp filter holds.
func InsideBoxsh() bool {
	_, err := os.Stat(initMountPath)
	return err == nil && seccompMode() == "2"
}

// seccompMode is the Seccomp field of /proc/self/status: "0" none, "2" a
// filter.
func seccompMode() string { return statusField("Seccomp") }

// statusField is the value of the field name of /proc/self/status.
func statusField(name string) string {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return ""
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), name+":"); ok {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

// CapSysAdmin tells whether this process has CAP_SYS_ADMIN in its user
// namespace.
//
// Root in a container usually has not: Docker's and a pod's default
// capabilities leave it out.
func CapSysAdmin() bool {
	eff, err := strconv.ParseUint(statusField("CapEff"), 16, 64)
	return err == nil && eff&(1<<unix.CAP_SYS_ADMIN) != 0
}

// probeUserNS makes a process in a new user namespace, mapping the caller's
// ids to root as the sandbox does.
//
// The process then fails to execute "/" (EACCES). That failure means the
// namespace was made.
func probeUserNS() error {
	_, err := syscall.ForkExec("/", []string{"/"}, &syscall.ProcAttr{Sys: &syscall.SysProcAttr{
		Cloneflags:  syscall.CLONE_NEWUSER,
		UidMappings: []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Geteuid(), Size: 1}},
		GidMappings: []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getegid(), Size: 1}},
	}})
	if err == nil || errors.Is(err, syscall.EACCES) {
		return nil
	}
	return err
}

// The fixes of the checks that name a setting of a container runtime.
const (
	seccompFix = "run the container with a seccomp profile that allows unshare and clone with CLONE_NEWUSER " +
		"(Docker and Podman: --security-opt seccomp=unconfined, or a copy of the default profile allowing them; " +
		"Kubernetes: securityContext.seccompProfile.type: Unconfined)"
	seccompCallsFix = "run the container with a seccomp profile that allows the calls a container runtime makes " +
		"(Docker and Podman: --security-opt seccomp=unconfined; Kubernetes: securityContext.seccompProfile.type: Unconfined)"
	procFix = "unmask /proc in the container (Docker: --security-opt systempaths=unconfined; " +
		"Podman: --security-opt unmask=ALL; Kubernetes: securityContext.procMount: Unmasked, with hostUsers: false)"
	nestedFix = "run the command in the outer sandbox as it is (it is sandboxed already), " +
		"or run boxsh outside it with the binds both need"
)

// UserNamespaces checks that this process can make a user namespace, as
// every sandbox starts in one.
func UserNamespaces() Check {
	c := Check{Name: "user namespaces", Needed: true}
	err := probeUserNS()
	if err == nil {
		c.OK, c.Detail = true, "a process can make a user namespace"
		return c
	}
	switch {
	case errors.Is(err, syscall.ENOSPC):
		if v, _ := sysctl("user/max_user_namespaces"); v == "0" {
			c.Detail = "user namespaces are off (sysctl user.max_user_namespaces is 0)"
			c.Fix = "set it to a positive number: sysctl -w user.max_user_namespaces=15000 (on the host, or in the user namespace that set it to 0)"
		} else {
			c.Detail = fmt.Sprintf("the limit of user namespaces (sysctl user.max_user_namespaces, %s) is reached", v)
			c.Fix = "raise it: sysctl -w user.max_user_namespaces=15000"
		}
	case errors.Is(err, syscall.EPERM) || errors.Is(err, syscall.EACCES):
		if v, _ := sysctl("kernel/unprivileged_userns_clone"); v == "0" {
			c.Detail = "unprivileged user namespaces are off (sysctl kernel.unprivileged_userns_clone is 0)"
			c.Fix = "turn them on: sysctl -w kernel.unprivileged_userns_clone=1"
		} else if InsideBoxsh() {
			c.Detail = "boxsh runs inside a boxsh sandbox, whose seccomp filter refuses new user namespaces and mounts, so sandboxes do not nest"
			c.Fix = nestedFix
		} else if seccompMode() == "2" {
			c.Detail = "a seccomp filter refuses unshare(CLONE_NEWUSER) (a container's seccomp profile: Docker's default refuses it)"
			c.Fix = seccompFix
		} else {
			c.Detail = fmt.Sprintf("cannot make a user namespace (%v)", err)
			c.Fix = "the kernel, a security module or a container refuses it: see boxsh doctor"
		}
	default:
		c.Detail = fmt.Sprintf("cannot make a user namespace (%v)", err)
	}
	return c
}

// AppArmorProfilePath is where install.sh installs the AppArmor profile
// that lets boxsh make user namespaces.
const AppArmorProfilePath = "/etc/apparmor.d/boxsh"

// AppArmor checks that AppArmor (Ubuntu 23.10 and later) does not keep
// boxsh from using the user namespaces it makes.
func AppArmor() Check {
	c := Check{Name: "AppArmor", Needed: true, OK: true}
	v, ok := sysctl("kernel/apparmor_restrict_unprivileged_userns")
	if !ok || v != "1" {
		c.Detail = "does not restrict unprivileged user namespaces"
		return c
	}
	label := appArmorLabel()
	switch {
	case os.Geteuid() == 0 && InitialUserNS():
		c.Detail = "restricts unprivileged user namespaces, which does not apply to root"
	case label != "" && label != "unconfined":
		c.Detail = fmt.Sprintf("restricts unprivileged user namespaces; boxsh runs under the profile %s, which must allow userns", label)
	default:
		c.OK = false
		c.Detail = "restricts unprivileged user namespaces (sysctl kernel.apparmor_restrict_unprivileged_userns is 1) and no profile allows boxsh to use them"
		c.Fix = "install the profile " + AppArmorProfilePath + " (install.sh does; by hand: see the README, AppArmor), " +
			"or sysctl -w kernel.apparmor_restrict_unprivileged_userns=0"
	}
	return c
}

// appArmorLabel is the AppArmor label of this process ("" without
// AppArmor).
func appArmorLabel() string {
	for _, p := range []string{"/proc/self/attr/apparmor/current", "/proc/self/attr/current"} {
		if b, err := os.ReadFile(p); err == nil {
			label, _, _ := strings.Cut(strings.TrimSpace(string(b)), " (")
			return label
		}
	}
	return ""
}

// Seccomp tells whether this process runs under a seccomp filter, such as a
// container's profile.
//
// It only informs: UserNamespaces finds out whether the filter refuses what
// the sandbox needs.
func Seccomp() Check {
	c := Check{Name: "seccomp", OK: true}
	switch seccompMode() {
	case "0":
		c.Detail = "boxsh runs under no seccomp filter"
	case "2":
		c.Detail = "boxsh runs under a seccomp filter (a container's profile); it must allow unshare and clone with CLONE_NEWUSER, mount and pivot_root"
	default:
		c.Detail = "unknown (no Seccomp field in /proc/self/status)"
	}
	return c
}

// maskedProc returns the mounts over parts of /proc that count against
// mounting a new proc in a user namespace.
//
// The kernel's rule for that is mount_too_revealing. binfmt_misc, a mount on
// an empty directory, does not count.
func maskedProc() []string {
	var masked []string
	for _, m := range mounts() {
		if strings.HasPrefix(m.point, "/proc/") && m.point != "/proc/sys/fs/binfmt_misc" {
			masked = append(masked, m.point)
		}
	}
	return masked
}

// Proc checks that a sandbox can mount a /proc of its own.
//
// In a user namespace, the kernel refuses it while parts of the /proc it sees
// are masked, as container runtimes mask them by default.
func Proc() Check {
	if c, stale := staleProc(); stale {
		return c
	}
	c := Check{Name: "/proc", Needed: true}
	masked := maskedProc()
	if len(masked) == 0 {
		c.OK, c.Detail = true, "not masked: a sandbox can mount its own"
		return c
	}
	shown := masked
	if len(shown) > 3 {
		shown = append(shown[:3:3], "…")
	}
	c.Detail = fmt.Sprintf("parts are masked (%s), so the kernel refuses a sandbox a /proc of its own", strings.Join(shown, ", "))
	c.Fix = procFix
	return c
}

// staleProc tells whether the /proc this process sees is another PID
// namespace's (unshare --pid without --mount-proc), and the failed check
// that says so.
func staleProc() (Check, bool) {
	self, err := os.Readlink("/proc/self")
	if err != nil || self == strconv.Itoa(os.Getpid()) {
		return Check{}, false
	}
	return Check{
		Name:   "/proc",
		Needed: true,
		Detail: fmt.Sprintf("/proc is another PID namespace's (this process is %d, /proc says %s): the container did not mount a /proc of its own, which the runtime needs", os.Getpid(), self),
		Fix:    "mount one in the container (unshare: --mount-proc; container runtimes do)",
	}, true
}

// A mount is a line of /proc/self/mountinfo: its mount point and type.
type mount struct{ point, fstype string }

// mounts is this process's mount table.
func mounts() []mount {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return nil
	}
	defer f.Close()
	var ms []mount
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 5 {
			continue
		}
		m := mount{point: strings.ReplaceAll(fields[4], `\040`, " ")}
		for i, f := range fields {
			if f == "-" && i+1 < len(fields) {
				m.fstype = fields[i+1]
				break
			}
		}
		ms = append(ms, m)
	}
	return ms
}

// CgroupMode is the cgroup file system this process sees: "v2" (unified),
// "v1" or "none".
func CgroupMode() string {
	var fs unix.Statfs_t
	if unix.Statfs("/sys/fs/cgroup", &fs) == nil && fs.Type == unix.CGROUP2_SUPER_MAGIC {
		return "v2"
	}
	for _, m := range mounts() {
		if m.fstype == "cgroup" {
			return "v1"
		}
	}
	return "none"
}

// cgroupWritable tells whether this process can make cgroups where
// libcontainer makes a sandbox's: under a v1 hierarchy's root, or under
// its own v2 cgroup.
func cgroupWritable(mode string) bool {
	switch mode {
	case "v1":
		for _, m := range mounts() {
			if m.fstype == "cgroup" {
				return unix.Access(m.point, unix.W_OK) == nil
			}
		}
	case "v2":
		b, err := os.ReadFile("/proc/self/cgroup")
		if err != nil {
			return false
		}
		for _, line := range strings.Split(string(b), "\n") {
			if p, ok := strings.CutPrefix(line, "0::"); ok {
				return unix.Access(filepath.Join("/sys/fs/cgroup", p), unix.W_OK) == nil
			}
		}
	}
	return false
}

// SandboxCgroup tells whether a sandbox gets a cgroup of its own.
//
// It does only when boxsh runs as the real root, and the cgroup file system is
// writable (Docker mounts it read-only). The real root is uid 0 in the host's
// user namespace; in a container's, uid 0 is an ordinary user of the host.
func SandboxCgroup() bool {
	if os.Geteuid() != 0 || !InitialUserNS() {
		return false
	}
	mode := CgroupMode()
	return mode != "none" && cgroupWritable(mode)
}

// noCgroupLimits is what becomes of the policy's limits without a cgroup
// of the sandbox's own.
const noCgroupLimits = "a sandbox gets no cgroup of its own: the memory and pids limits fall back to rlimits " +
	"(RLIMIT_DATA per process, RLIMIT_NPROC), cpus is not enforced"

// Cgroups tells which cgroup file system this process sees, and whether a
// sandbox gets a cgroup of its own.
//
// It fails only where none is mounted, since the runtime (libcontainer) needs
// one, even read-only.
func Cgroups() Check {
	c := Check{Name: "cgroups", Needed: true, OK: true}
	mode := CgroupMode()
	switch {
	case mode == "none":
		c.OK = false
		c.Detail = "no cgroup file system is mounted, and the runtime needs one, even read-only"
		c.Fix = "mount /sys/fs/cgroup (Docker, Podman and Kubernetes do by default)"
	case SandboxCgroup():
		c.Detail = fmt.Sprintf("cgroup %s, writable by root: a sandbox gets a cgroup of its own, which the memory, pids and cpus limits apply to", mode)
	case !InitialUserNS():
		c.Detail = fmt.Sprintf("cgroup %s, in a container's user namespace: %s", mode, noCgroupLimits)
	default:
		c.Detail = fmt.Sprintf("cgroup %s, not writable here: %s", mode, noCgroupLimits)
	}
	return c
}

// Overlay checks that copy-on-write binds (cow: and --try) can work:
// overlayfs, mountable in a user namespace since Linux 5.11.
func Overlay() Check {
	c := Check{Name: "overlayfs", Needed: true}
	if major, minor, ok := kernelVersion(); ok && (major < 5 || major == 5 && minor < 11) {
		c.Detail = fmt.Sprintf("the kernel, Linux %d.%d, cannot mount overlayfs in a user namespace", major, minor)
		c.Fix = "Linux 5.11 or later is needed for copy-on-write binds (cow: and --try)"
		return c
	}
	if b, err := os.ReadFile("/proc/filesystems"); err == nil && !strings.Contains(string(b), "\toverlay\n") {
		if _, err := os.Stat("/sys/module/overlay"); err != nil {
			c.Detail = "overlayfs is not loaded, and copy-on-write binds (cow: and --try) need it"
			c.Fix = "modprobe overlay"
			return c
		}
	}
	c.OK, c.Detail = true, "copy-on-write binds (cow: and --try) can mount it"
	return c
}

// kernelVersion is the running kernel's major and minor version.
func kernelVersion() (major, minor int, ok bool) {
	var u unix.Utsname
	if unix.Uname(&u) != nil {
		return 0, 0, false
	}
	parts := strings.SplitN(unix.ByteSliceToString(u.Release[:]), ".", 3)
	if len(parts) < 2 {
		return 0, 0, false
	}
	major, err1 := strconv.Atoi(parts[0])
	minor, err2 := strconv.Atoi(strings.TrimFunc(parts[1], func(r rune) bool { return r < '0' || r > '9' }))
	return major, minor, err1 == nil && err2 == nil
}
