package host

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/opencontainers/runc/libcontainer"
	"github.com/opencontainers/runc/libcontainer/configs"
	"github.com/opencontainers/runc/libcontainer/seccomp"
	"github.com/opencontainers/runc/libcontainer/specconv"
	specs "github.com/opencontainers/runtime-spec/specs-go"
	"github.com/sirupsen/logrus"
	"golang.org/x/sys/unix"

	"github.com/boxsh/boxsh/internal/front/hostcheck"
	"github.com/boxsh/boxsh/internal/initproto"
	"github.com/boxsh/boxsh/internal/launch"
	"github.com/boxsh/boxsh/internal/pathtree"
	"github.com/boxsh/boxsh/internal/seccompload"
	"github.com/boxsh/boxsh/internal/starttrace"
	"github.com/boxsh/boxsh/policy"
	"github.com/boxsh/boxsh/runtime/plan"
)

// ContainerConfig describes a sandbox to start and the process it runs
// (see plan.Config, which StartContainer makes of it).
type ContainerConfig struct {
	// Mode is what the sandbox runs: boxsh-init serving calls, or a
	// command.
	Mode plan.Mode
	// Sandbox is the policy; Try must have been resolved (see ResolveTry).
	Sandbox policy.Sandbox
	// Policy holds the limits, the network and the file rules (see
	// Gather).
	Policy policy.Policy
	// Command is what plan.ModeExec runs; Init are boxsh-init's options for
	// plan.ModeServe (see plan.Config.Init).
	Command []string
	Init    initproto.InitOptions
	// Env is the process's environment, inside the sandbox.
	Env []string
	// Cwd is the caller's directory on the host (see SandboxCwd).
	Cwd string
	// InitPath is the host's boxsh-init, bound at initproto.InitMountPath.
	InitPath string
	// LauncherPath is the host's boxsh-launch, which starts the sandbox
	// with libcontainer and stays its parent (see internal/launch).
	// Launcher, if set, is one already started (StartLauncher), which
	// StartContainer uses instead: its start then overlaps with the
	// caller's work before StartContainer. StartContainer owns it from
	// then on, started or not.
	LauncherPath string
	Launcher     *Launcher
	// Home is the caller's home directory, for Gather.
	Home string
	// Terminal gives the process a terminal of the sandbox's own. The
	// master side is then Container.Console, and Stdin, Stdout and Stderr
	// are not used.
	Terminal bool
	// Stdin, Stdout and Stderr are the process's standard streams.
	Stdin          io.Reader
	Stdout, Stderr io.Writer
	// Files are the process's descriptors, by the name the plan gives them
	// (plan.Plan.Descriptors). They are plan.FramesDescriptor for
	// plan.ModeServe, plan.LifelineDescriptor for plan.ModeExec, and
	// plan.ForwardDescriptor for the forwarding socket of exposed ports,
	// if any. The proxy's descriptor is the container's own.
	Files map[string]*os.File
	// Version goes into the spec's annotations.
	Version string
	// Log receives diagnostics.
	Log hclog.Logger
	// Started, if set, is called once the sandbox is set up, just before
	// its process starts.
	Started func()
	// Proxy observes the network proxy of an allowlist sandbox.
	Proxy ProxyHooks
	// FileSize, if set, tells that a DiskLimit accounts the sandbox's
	// writable layer. The sandbox's first process then starts with
	// RLIMIT_FSIZE FileSize() (soft and hard), and its seccomp filter is
	// plan.DiskLimitedSeccomp.
	FileSize func() uint64
}

// Container is a running sandbox: a rootless OCI container started by
// libcontainer in boxsh-launch, the sandbox's launcher.
//
// Its first process, PID 1 of its PID namespace, is the planned boxsh-init.
// When PID 1 exits, the kernel kills every other process of the sandbox. When
// the front dies, the launcher is killed by its parent-death signal, then
// PID 1 by its own, and the sandbox with it.
type Container struct {
	l *launch.Launcher
	// made is set once the launcher was asked to create the container;
	// pid is the first process's host PID once it runs; cgroup the
	// sandbox's cgroup v2 directory, if any.
	made    bool
	pid     int
	cgroup  string
	dir     string
	lock    *os.File
	console *os.File
	protect []plan.HostPath
	held    []*os.File // shared locks on the placeholders
	// found is what GatherProtection found at the start (the repositories
	// among it, and when); binds and home where to look for new ones.
	found Protection
	binds policy.Sandbox
	home  string
	watch *protectionWatch
	cow   *cowGuard
	log   hclog.Logger
	// stopProxy stops the network proxy of an allowlist sandbox.
	stopProxy func()
	// setup is what the front's hello tells boxsh-init (see InitSetup).
	setup initproto.Setup

	destroyOnce sync.Once
	lostOnce    sync.Once
	// running is set once the sandbox's first process runs: the guard
	// kills it from then on.
	running atomic.Bool
}

// SandboxSupported tells whether this binary can start sandboxes: it needs
// libcontainer's seccomp support (cgo and the seccomp build tag).
func SandboxSupported() error {
	if !seccomp.Enabled {
		return errors.New("--sandbox needs a boxsh built with seccomp support (cgo, libseccomp-dev and -tags seccomp; `just build` does this)")
	}
	return checkSeccompCovered(libseccompKnows)
}

// StartContainer starts a sandbox and its process.
func StartContainer(ctx context.Context, cc ContainerConfig) (*Container, error) {
	if err := SandboxSupported(); err != nil {
		cc.Launcher.Close()
		return nil, err
	}
	ct, err := startContainer(ctx, cc)
	var se *startError
	switch {
	case errors.As(err, &se):
		se.Err = fmt.Errorf("start sandbox: %w", se.Err)
		return ct, se
	case err != nil && !errors.Is(err, policy.ErrBind):
		err = fmt.Errorf("start sandbox: %w", err)
	}
	return ct, err
}

func startContainer(ctx context.Context, cc ContainerConfig) (_ *Container, retErr error) {
	log := cc.Log
	if log == nil {
		log = hclog.NewNullLogger()
	}
	// The launcher starts first, so that its exec and Go start overlap
	// with the walk and the plan below.
	lr := cc.Launcher
	if lr == nil {
		lr = StartLauncher(cc.LauncherPath, log)
	}
	if err := ctx.Err(); err != nil {
		lr.Close()
		return nil, err
	}
	l, err := lr.wait()
	if err != nil {
		return nil, err
	}
	routeLibcontainerLog(log)
	starttrace.Mark("front.sandbox")
	root, err := stateRoot()
	if err == nil {
		err = stateHidden(cc.Sandbox, root)
	}
	if err != nil {
		l.Destroy()
		return nil, err
	}
	sweepStale(root, log)
	dir, lock, err := newContainerDir(root)
	if err != nil {
		l.Destroy()
		return nil, err
	}
	ct := &Container{l: l, dir: dir, lock: lock, log: log}
	defer func() {
		if retErr != nil {
			ct.Destroy()
		}
	}()
	// The reaper cleans up if the front dies before it has.
	if err := reapAfter(dir); err != nil {
		log.Debug("no reaper", "error", err) // said before the placeholders
	}

	t0 := time.Now()
	// The seccomp program boxsh-init loads, compiled while the host is
	// read (see startSeccomp).
	seccomp := plan.DefaultSeccomp()
	if cc.FileSize != nil {
		seccomp = plan.DiskLimitedSeccomp()
	}
	seccompProg := startSeccomp(seccomp, []specs.LinuxSeccompFlag{specs.LinuxSeccompFlagSpecAllow})
	rootfs := filepath.Join(dir, "rootfs")
	secrets, err := PrepareSecrets(cc.Policy, os.LookupEnv)
	if err != nil {
		return nil, err
	}
	pc, found, err := Gather(plan.Config{
		Mode:         cc.Mode,
		Target:       plan.TargetStart,
		Sandbox:      cc.Sandbox,
		Policy:       cc.Policy,
		Command:      cc.Command,
		Init:         cc.Init,
		Forward:      cc.Files[plan.ForwardDescriptor] != nil,
		Env:          WithEnv(cc.Env, secrets.Env),
		Trust:        secrets.Trust,
		SecretFiles:  secrets.Files,
		Terminal:     cc.Terminal,
		Cwd:          cc.Cwd,
		Rootfs:       rootfs,
		InitPath:     cc.InitPath,
		Placeholders: filepath.Join(dir, "placeholders"),
		Version:      cc.Version,
		Seccomp:      seccomp,
	}, cc.Home)
	if err != nil {
		return nil, err
	}
	ct.protect, ct.found, ct.binds, ct.home = pc.Protect, found.Protection, cc.Sandbox, cc.Home
	// The sandbox's own cgroup, when the system gives one.
	if cgroupParent, ok := SandboxCgroup(); ok {
		pc.Cgroup = filepath.Join(cgroupParent, filepath.Base(dir))
	}
	pl, err := plan.Build(pc)
	if err != nil {
		return nil, err
	}
	spec := pl.Spec
	ct.setup = pl.Setup
	// The protected paths are listed before their placeholders are made,
	// for the reaper to remove them should the front die.
	if err := writeJSON(filepath.Join(dir, protectName), pl.Protect); err != nil {
		return nil, err
	}
	if err := reaperReady(); err != nil {
		log.Warn("placeholders will stay on the host until the next sandbox starts if boxsh is killed", "error", err)
	}
	if err := Prepare(dir, pl); err != nil {
		return nil, err
	}
	if ct.cow, err = guardCowDsts(pl.Cow, log); err != nil {
		return nil, err
	}
	files := maps.Clone(cc.Files)
	if pl.Proxy {
		hooks := cc.Proxy
		hooks.Secrets, hooks.Requests = secrets.Proxy, secrets.Requests
		child, stop, err := startProxy(cc.Policy, log.Named("proxy"), hooks)
		if err != nil {
			return nil, err
		}
		defer child.Close()
		ct.stopProxy = stop
		if files == nil {
			files = map[string]*os.File{}
		}
		files[plan.ProxyDescriptor] = child
	}
	extraFiles, err := pl.ExtraFiles(files)
	if err != nil {
		return nil, err
	}
	var copyEtc func() error
	spec.Mounts, copyEtc = inlineEtc(spec.Mounts, rootfs, pl.Inline)
	t1 := time.Now()
	config, err := specconv.CreateLibcontainerConfig(&specconv.CreateOpts{
		CgroupName:      filepath.Base(dir),
		Spec:            spec,
		RootlessEUID:    rootlessEUID(),
		RootlessCgroups: rootlessCgroups(),
	})
	if err != nil {
		return nil, err
	}
	// The plan's adjustments that runtime-spec cannot carry (see
	// adjustSeccomp, adjustParentDeath, adjustDevices).
	initEnv := starttrace.Env(spec.Process.Env)
	if config.Seccomp != nil {
		config.Seccomp.Flags = append(config.Seccomp.Flags, pl.SeccompFlags...)
		// The program compiled once, which boxsh-init loads before all
		// else, rather than libcontainer's init compiling it again.
		if pl.InitLoadsSeccomp {
			prog, err := seccompProg.program(config.Seccomp)
			if err == nil {
				err = os.WriteFile(filepath.Join(rootfs, seccompload.Path), prog, 0o644)
			}
			if err == nil {
				config.Seccomp = nil
				// The front's variable only: one a policy set for the
				// commands must not name another program.
				initEnv = slices.DeleteFunc(slices.Clone(initEnv), func(kv string) bool {
					return strings.HasPrefix(kv, seccompload.EnvVar+"=")
				})
				initEnv = append(initEnv, seccompload.EnvVar+"="+seccompload.Path)
			} else {
				log.Debug("libcontainer compiles the seccomp filter", "reason", err)
			}
		}
	}
	if pl.ParentDeathSignal != "" {
		config.ParentDeathSignal = int(unix.SignalNum(pl.ParentDeathSignal))
	}
	if pl.NoDeviceRules && config.Cgroups != nil && config.Cgroups.Resources != nil {
		config.Cgroups.Resources.Devices = nil
	}

	configJSON, err := json.Marshal(config)
	if err != nil {
		return nil, err
	}
	t2 := time.Now()
	starttrace.MarkAt("front.spec", t2)
	p := spec.Process
	req := launch.StartRequest{
		Version: cc.Version,
		Root:    dir,
		ID:      "state",
		Config:  configJSON,
		Args:    p.Args,
		Env:     initEnv,
		Cwd:     p.Cwd,
		Debug:   log.IsDebug(),
	}
	for _, r := range p.Rlimits {
		typ, ok := rlimitTypes[r.Type]
		if !ok {
			return nil, fmt.Errorf("unknown rlimit %s", r.Type)
		}
		req.Rlimits = append(req.Rlimits, configs.Rlimit{Type: typ, Hard: r.Hard, Soft: r.Soft})
	}
	if cc.FileSize != nil {
		// From the first process on, so that no process of the sandbox,
		// however soon forked, runs without it (see DiskLimit.Started).
		req.Rlimits = capFileSize(req.Rlimits, cc.FileSize())
	}
	lp := launch.Process{Stdin: cc.Stdin, Stdout: cc.Stdout, Stderr: cc.Stderr, ExtraFiles: extraFiles}
	var consoleParent *os.File
	if cc.Terminal {
		parent, child, err := SocketPair()
		if err != nil {
			return nil, fmt.Errorf("console socket: %w", err)
		}
		defer child.Close()
		consoleParent = parent
		defer consoleParent.Close()
		lp = launch.Process{Console: child, ExtraFiles: extraFiles}
	}
	// Watched from before the start, so that a change the host makes
	// meanwhile is seen too (and acted on once the sandbox runs).
	if ct.watch, err = watchProtection(ct.protect, func(path string) {
		if ct.running.Load() {
			ct.stopForLostProtection(path)
		}
	}); err != nil {
		return nil, fmt.Errorf("watch the protected paths: %w", err)
	}
	// The /etc copies are made while the runtime sets the sandbox up, and
	// are complete before it starts the sandbox's first process (Exec).
	copied := make(chan error, 1)
	go func() { copied <- copyEtc() }()
	ct.made = true
	pid, err := l.StartSandbox(req, lp)
	if err != nil {
		<-copied
		return nil, explainStartError(err)
	}
	ct.pid = pid
	starttrace.Mark("front.started")
	t3 := time.Now()
	if err := <-copied; err != nil {
		return nil, err
	}
	// The walk of the cow binds' SRC ran while the sandbox was set up.
	if err := found.Check(); err != nil {
		return nil, err
	}
	if cc.Started != nil {
		cc.Started()
	}
	if ct.cgroup, err = l.Exec(); err != nil {
		return nil, explainStartError(err)
	}
	starttrace.Mark("front.exec")
	log.Debug("sandbox started", "prepare", t1.Sub(t0), "convert", t2.Sub(t1), "start", t3.Sub(t2), "exec", time.Since(t3))
	if consoleParent != nil {
		ct.console, err = recvFile(consoleParent)
		if err != nil {
			return nil, fmt.Errorf("receive terminal: %w", err)
		}
	}
	ct.held = holdPlaceholders(ct.protect)
	ct.running.Store(true)
	ct.ProtectionLost() // a change made while the sandbox started
	return ct, nil
}

// rlimitTypes are the rlimits BuildSpec sets (libcontainer takes a
// process's rlimits by number).
var rlimitTypes = map[string]int{
	"RLIMIT_NOFILE": unix.RLIMIT_NOFILE,
	"RLIMIT_DATA":   unix.RLIMIT_DATA,
	"RLIMIT_NPROC":  unix.RLIMIT_NPROC,
}

// ProtectionLost reports, by its path, a change on the host that undid the
// protection of a protected path. It returns "" while the protection holds.
//
// The sandbox is killed after such a change: the guard kills it as the kernel
// reports the change. ProtectionLost also reads what is queued, so that a
// change made before it was called is always reported.
func (ct *Container) ProtectionLost() string {
	p := ct.watch.check()
	if p != "" {
		ct.stopForLostProtection(p)
	}
	return p
}

// stopForLostProtection kills the sandbox, once, for the lost protection
// of path.
func (ct *Container) stopForLostProtection(path string) {
	ct.lostOnce.Do(func() {
		_ = ct.Signal(unix.SIGKILL)
		ct.log.Warn("a protected path changed on the host, which lifts its protection in the sandbox: stopping the sandbox", "path", path)
	})
}

// Console is the master side of the sandbox's terminal (with
// ContainerConfig.Terminal), else nil.
func (ct *Container) Console() *os.File { return ct.console }

// InitSetup is what the front's hello tells the container's boxsh-init (see
// initproto.Setup): the descriptors it was given that its command line does
// not name.
func (ct *Container) InitSetup() initproto.Setup { return ct.setup }

// Exited is closed when the sandbox's first process has exited, or its
// launcher has ended.
func (ct *Container) Exited() <-chan struct{} { return ct.l.Exited() }

// Wait waits for the sandbox's first process and returns its exit status as a
// shell reports it.
//
// That is the exit code, or 128+N for a death by signal N. When the launcher
// ended without the process's status, it is 1 and an error that names the
// launcher.
func (ct *Container) Wait() (int, error) { return ct.l.Wait() }

// CgroupDir returns the directory of the sandbox's own cgroup v2.
//
// It is "" when the sandbox has none (see SandboxCgroup) or the host has
// cgroup v1.
func (ct *Container) CgroupDir() string {
	if _, ok := SandboxCgroup(); !ok {
		return ""
	}
	return ct.cgroup
}

// Signal sends sig to the sandbox's first process.
func (ct *Container) Signal(sig os.Signal) error {
	return ct.l.Signal(sig)
}

// Destroy kills what is left of the sandbox and removes its state: its
// root directory, libcontainer's state and the console. The user's cow
// directories stay.
func (ct *Container) Destroy() { ct.destroy(false) }

// DestroyExited destroys the sandbox as Destroy does, once its first process
// has exited (Wait has returned), but without waiting on the launcher: the
// launcher removes the container and the state directory after the front,
// which may exit at once. What the front made on the host (the placeholders)
// is removed first, as nothing of the sandbox runs any more. It falls back to
// Destroy when the process has not exited or the launcher cannot.
func (ct *Container) DestroyExited() { ct.destroy(true) }

func (ct *Container) destroy(detach bool) {
	ct.destroyOnce.Do(func() {
		// The repositories the sandbox made, looked for meanwhile.
		newRepos := make(chan func(), 1)
		if ct.made {
			go func() { newRepos <- newRepositoriesWarning(ct.log, ct.binds, ct.home, ct.found, ct.found.At) }()
		} else {
			newRepos <- func() {}
		}
		// With the first process gone (the sandbox's PID 1: all its
		// processes with it), the launcher may finish on its own.
		detached := false
		if detach && ct.made && ct.lock != nil {
			select {
			case <-ct.l.Exited():
				detached = ct.detach()
			default:
			}
		}
		// The launcher kills what is left of the sandbox and removes
		// libcontainer's state; if it cannot (it died), the front does.
		if !detached && !ct.l.Destroy() && ct.made {
			killSandbox(ct.dir)
		}
		if ct.console != nil {
			ct.console.Close()
		}
		ct.watch.close()
		ct.cow.close()
		if ct.stopProxy != nil {
			ct.stopProxy()
		}
		for _, f := range ct.held {
			f.Close()
		}
		removePlaceholders(ct.protect)
		if !detached {
			// The launcher removes it (holding the lock) when detached.
			_ = os.RemoveAll(ct.dir)
		}
		(<-newRepos)()
		if ct.lock != nil {
			ct.lock.Close()
		}
	})
}

// detach hands the rest of the destroy to the launcher (launch.Detach). The
// state directory is moved first, so that the front's reaper, which looks
// for it under its name once the front has exited, does not start to wait on
// the launcher; the next start sweeps it (an sb-* name still) if the
// launcher dies before it is done.
func (ct *Container) detach() bool {
	moved := ct.dir + ".detached"
	if err := os.Rename(ct.dir, moved); err != nil {
		moved = ct.dir
	}
	if ct.l.Detach(ct.lock, moved) {
		return true
	}
	if moved != ct.dir {
		_ = os.Rename(moved, ct.dir)
	}
	return false
}

// stateRoot returns the directory of the running sandboxes' state, their root
// directories among it.
//
// It is private to the user, and in memory when possible, where making the
// root's few dozen mount points is fast. It is the first of:
//
//   - $XDG_RUNTIME_DIR/boxsh, when that is set;
//   - /dev/shm/boxsh-UID, when /dev/shm is a writable tmpfs;
//   - $TMPDIR/boxsh-UID.
//
// In a container's user namespace, uid 0 is not the host's root, and may share
// /tmp or /dev/shm with it. There the name says whose uid it is:
// boxsh-UID.OUTER, OUTER being the uid the parent namespace sees (see
// stateName).
func stateRoot() (string, error) {
	var dir string
	writable := func(d string) bool {
		fi, err := os.Stat(d)
		return err == nil && fi.IsDir() && unix.Access(d, unix.W_OK) == nil
	}
	if x := os.Getenv("XDG_RUNTIME_DIR"); x != "" && filepath.IsAbs(x) && writable(x) {
		dir = filepath.Join(x, "boxsh")
	}
	var fs unix.Statfs_t
	if dir == "" && writable("/dev/shm") && unix.Statfs("/dev/shm", &fs) == nil && fs.Type == unix.TMPFS_MAGIC {
		dir = filepath.Join("/dev/shm", stateName())
	}
	if dir == "" {
		dir = filepath.Join(os.TempDir(), stateName())
	}
	if err := os.Mkdir(dir, 0o700); err != nil && !os.IsExist(err) {
		return "", fmt.Errorf("state directory: %w", err)
	}
	// It must be ours and private: in a shared /tmp another user could
	// have made it first.
	if err := privateDir(dir, 0o077); err != nil {
		return "", fmt.Errorf("state directory: %w", err)
	}
	return dir, nil
}

// stateHidden checks that no bind, nor the --cache directory, lets the sandbox
// write into the state root or replace it.
//
// A sandbox that could would plant state that a later start acts on, or undo
// the protection of the placeholders. The other directories that stateRoot may
// choose at another start are refused too, since XDG_RUNTIME_DIR can change: a
// sandbox that could write one could tamper with the roots of the sandboxes
// started there.
func stateHidden(sb policy.Sandbox, root string) error {
	roots := append([]string{root}, otherStateRoots()...)
	for _, b := range writableBinds(sb) {
		for _, r := range roots {
			if pathtree.Within(r, b.Dst) || pathtree.Within(b.Dst, r) {
				return fmt.Errorf("%s would let the sandbox write into boxsh's state directory %s: set XDG_RUNTIME_DIR (or TMPDIR) to a directory outside it", bindFlag(sb, b), r)
			}
		}
	}
	return nil
}

// otherStateRoots returns the state directories that stateRoot has made for
// this user at earlier starts, whatever the environment.
//
// They are under the usual runtime directory, in /dev/shm and in the temporary
// directories.
func otherStateRoots() []string {
	uid := os.Getuid()
	var roots []string
	for _, r := range []string{
		fmt.Sprintf("/run/user/%d/boxsh", uid),
		filepath.Join("/dev/shm", stateName()),
		filepath.Join(os.TempDir(), stateName()),
		filepath.Join("/tmp", stateName()),
	} {
		if _, err := os.Lstat(r); err == nil {
			roots = append(roots, r)
		}
	}
	return roots
}

// stateName is the name of the state directory under /dev/shm or a
// temporary directory: boxsh-UID, or in a user namespace other than the
// host's, boxsh-UID.OUTER (see stateRoot).
func stateName() string {
	if hostcheck.InitialUserNS() {
		return fmt.Sprintf("boxsh-%d", os.Getuid())
	}
	return fmt.Sprintf("boxsh-%d.%d", os.Getuid(), hostcheck.OuterUID())
}

// The files of a sandbox's state directory.
//
//   - lockName is locked by the front for as long as the sandbox may run.
//   - protectName lists the protected paths, whose placeholders are
//     removed after the sandbox.
const (
	lockName    = "lock"
	protectName = "protect.json"
)

// writeJSON writes v to the file p.
func writeJSON(p string, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return os.WriteFile(p, b, 0o600)
}

// newContainerDir makes a new state directory under root and locks it.
func newContainerDir(root string) (string, *os.File, error) {
	// Made and locked under another name, so that a sweep never sees an
	// sb-* directory without its lock held.
	tmp, err := os.MkdirTemp(root, "new-")
	if err != nil {
		return "", nil, err
	}
	lock, err := os.OpenFile(filepath.Join(tmp, lockName), os.O_CREATE|os.O_RDWR, 0o600)
	if err == nil {
		err = unix.Flock(int(lock.Fd()), unix.LOCK_EX|unix.LOCK_NB)
	}
	dir := filepath.Join(root, "sb-"+strings.TrimPrefix(filepath.Base(tmp), "new-"))
	if err == nil {
		err = os.Rename(tmp, dir)
	}
	if err != nil {
		if lock != nil {
			lock.Close()
		}
		os.RemoveAll(tmp)
		return "", nil, fmt.Errorf("lock %s: %w", tmp, err)
	}
	return dir, lock, nil
}

// sweepStale removes the state directories of sandboxes whose front (or
// detached launcher, or reaper) died without cleaning up (SIGKILL): their lock
// is free, or their lock file is gone with part of the rest. A new-*
// directory is left alone for a minute, as it may be in the making.
func sweepStale(root string, log hclog.Logger) {
	entries, err := os.ReadDir(root)
	if err != nil {
		return
	}
	for _, e := range entries {
		dir := filepath.Join(root, e.Name())
		if !e.IsDir() {
			continue
		}
		if strings.HasPrefix(e.Name(), "new-") {
			// One being made, or left by a front that died making it.
			if fi, err := e.Info(); err == nil && time.Since(fi.ModTime()) > time.Minute {
				os.RemoveAll(dir)
			}
			continue
		}
		if !strings.HasPrefix(e.Name(), "sb-") {
			continue
		}
		f, err := os.OpenFile(filepath.Join(dir, lockName), os.O_RDWR, 0)
		if errors.Is(err, fs.ErrNotExist) {
			// An sb-* directory has its lock file from its making
			// (newContainerDir) until its removal, which a kill cut
			// short after the lock file (os.RemoveAll's order).
			cleanDeadSandbox(dir, log)
			continue
		}
		if err != nil {
			continue
		}
		if unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB) == nil {
			cleanDeadSandbox(dir, log)
		}
		f.Close()
	}
}

// killSandbox kills what still runs of the sandbox whose state directory
// is dir and waits (a little) for it to be gone.
func killSandbox(dir string) {
	c, err := libcontainer.Load(dir, "state")
	if err != nil {
		return
	}
	if len(c.Config().Hooks) > 0 {
		return // not a state boxsh wrote: Destroy would run its hooks
	}
	_ = c.Signal(unix.SIGKILL)
	for range 200 {
		if st, err := c.Status(); err != nil || st == libcontainer.Stopped {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	_ = c.Destroy()
}

// recvFile receives one descriptor sent with SCM_RIGHTS on sock.
func recvFile(sock *os.File) (*os.File, error) {
	name := make([]byte, 4096)
	oob := make([]byte, unix.CmsgSpace(4))
	n, oobn, _, _, err := unix.Recvmsg(int(sock.Fd()), name, oob, unix.MSG_CMSG_CLOEXEC)
	if err != nil {
		return nil, err
	}
	msgs, err := unix.ParseSocketControlMessage(oob[:oobn])
	if err != nil {
		return nil, err
	}
	if len(msgs) != 1 {
		return nil, fmt.Errorf("expected one control message, got %d", len(msgs))
	}
	fds, err := unix.ParseUnixRights(&msgs[0])
	if err != nil {
		return nil, err
	}
	if len(fds) != 1 {
		for _, fd := range fds {
			unix.Close(fd)
		}
		return nil, fmt.Errorf("expected one descriptor, got %d", len(fds))
	}
	return os.NewFile(uintptr(fds[0]), string(name[:n])), nil
}

// startError is a sandbox that failed to start for a cause of the host's that
// boxsh knows (see hostcheck.Diagnose).
//
// Its message starts with one line that names the cause and the fix, and the
// runtime's error follows.
type startError struct {
	// Cause is the cause and its fix, in one line.
	Cause string
	// Err is the runtime's error.
	Err error
}

func (e *startError) Error() string {
	return "cannot start the sandbox: " + e.Cause + "\n" + e.Err.Error()
}

func (e *startError) Unwrap() error { return e.Err }

// explainStartError makes err, the runtime's refusal to start a sandbox,
// a startError when the host's checks name its cause.
func explainStartError(err error) error {
	if cause := hostcheck.Diagnose(err); cause != "" {
		return &startError{Cause: cause, Err: err}
	}
	return err
}

// routeLibcontainerLog sends libcontainer's log (logrus, a global of its
// own) to log: its errors, or everything when log is at debug level.
func routeLibcontainerLog(log hclog.Logger) {
	logrus.SetOutput(log.StandardWriter(&hclog.StandardLoggerOptions{ForceLevel: hclog.Warn}))
	logrus.SetFormatter(&logrus.TextFormatter{DisableTimestamp: true})
	if log.IsDebug() {
		logrus.SetLevel(logrus.DebugLevel)
	} else {
		logrus.SetLevel(logrus.ErrorLevel)
	}
}

// capFileSize is rlimits with RLIMIT_FSIZE at most n, soft and hard.
func capFileSize(rlimits []configs.Rlimit, n uint64) []configs.Rlimit {
	for i, r := range rlimits {
		if r.Type == unix.RLIMIT_FSIZE {
			rlimits[i].Soft, rlimits[i].Hard = min(r.Soft, n), min(r.Hard, n)
			return rlimits
		}
	}
	return append(rlimits, configs.Rlimit{Type: unix.RLIMIT_FSIZE, Soft: n, Hard: n})
}

// Rootfs is the host directory that is the sandbox's root.
func (ct *Container) Rootfs() string {
	return filepath.Join(ct.dir, "rootfs")
}
