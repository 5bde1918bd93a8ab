package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"github.com/opencontainers/runc/libcontainer"
	"github.com/opencontainers/runc/libcontainer/configs"
	"github.com/opencontainers/runc/libcontainer/specconv"
	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/boxsh/boxsh/internal/launch"
	// The container's init of -direct, libcontainer's copy of this
	// program.
	_ "github.com/boxsh/boxsh/internal/lcinit"
	"github.com/boxsh/boxsh/internal/starttrace"
)

func main() {
	starttrace.Mark("floor.main")
	launcher := flag.String("launcher", "", "the boxsh-launch `binary`")
	version := flag.String("version", "", "its build, as boxsh --version names it")
	direct := flag.Bool("direct", false, "start the sandbox with libcontainer in this process instead (it copies this program), without boxsh-launch")
	flag.Parse()
	args := flag.Args()
	if len(args) == 0 {
		args = []string{"/usr/bin/true"}
	}
	var code int
	var err error
	if *direct {
		code, err = runDirect(args)
	} else {
		code, err = run(*launcher, *version, args)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "lcfloor:", err)
		os.Exit(1)
	}
	os.Exit(code)
}

// run starts the floor sandbox, runs args in it and returns its status.
func run(launcher, version string, args []string) (int, error) {
	if launcher == "" || version == "" {
		return 0, fmt.Errorf("-launcher and -version are required")
	}
	// The sealed copy the launcher runs from, made beside the spec, as the
	// front makes it.
	launch.Prepare(launcher)
	dir, err := os.MkdirTemp("", "lcfloor-")
	if err != nil {
		return 0, err
	}
	defer os.RemoveAll(dir)
	l, err := launch.Start(launcher, os.Stderr)
	if err != nil {
		return 0, err
	}
	defer func() {
		l.Destroy()
		starttrace.Mark("floor.destroyed")
	}()
	config, err := floorConfig(dir)
	if err != nil {
		return 0, err
	}
	configJSON, err := json.Marshal(config)
	if err != nil {
		return 0, err
	}
	starttrace.Mark("floor.spec")
	req := launch.StartRequest{
		Version: version,
		Root:    filepath.Join(dir, "state"),
		ID:      "state",
		Config:  configJSON,
		Args:    args,
		Env:     starttrace.Env([]string{"PATH=/usr/bin"}),
		Cwd:     "/",
	}
	if _, err := l.StartSandbox(req, launch.Process{Stdout: os.Stdout, Stderr: os.Stderr}); err != nil {
		return 0, err
	}
	starttrace.Mark("floor.started")
	if _, err := l.Exec(); err != nil {
		return 0, err
	}
	starttrace.Mark("floor.execed")
	code, err := l.Wait()
	starttrace.Mark("floor.exited")
	return code, err
}

// runDirect starts the floor sandbox with libcontainer in this process, runs
// args in it and returns its status.
func runDirect(args []string) (int, error) {
	dir, err := os.MkdirTemp("", "lcfloor-")
	if err != nil {
		return 0, err
	}
	defer os.RemoveAll(dir)
	config, err := floorConfig(dir)
	if err != nil {
		return 0, err
	}
	starttrace.Mark("floor.spec")
	c, err := libcontainer.Create(filepath.Join(dir, "state"), "state", config)
	if err != nil {
		return 0, err
	}
	defer func() {
		_ = c.Destroy()
		starttrace.Mark("floor.destroyed")
	}()
	p := &libcontainer.Process{
		Args:   args,
		Env:    starttrace.Env([]string{"PATH=/usr/bin"}),
		Cwd:    "/",
		Stdout: os.Stdout,
		Stderr: os.Stderr,
		Init:   true,
	}
	if err := c.Run(p); err != nil {
		return 0, err
	}
	starttrace.Mark("floor.execed")
	state, err := p.Wait()
	starttrace.Mark("floor.exited")
	if state == nil {
		return 0, err
	}
	return state.ExitCode(), nil
}

// floorConfig is libcontainer's configuration of the floor sandbox, whose
// root it makes under dir.
func floorConfig(dir string) (*configs.Config, error) {
	rootfs := filepath.Join(dir, "rootfs")
	if err := makeRootfs(rootfs); err != nil {
		return nil, err
	}
	config, err := specconv.CreateLibcontainerConfig(&specconv.CreateOpts{
		CgroupName:      "lcfloor",
		Spec:            floorSpec(rootfs),
		RootlessEUID:    true,
		RootlessCgroups: true,
	})
	if err != nil {
		return nil, fmt.Errorf("libcontainer config: %w", err)
	}
	if config.Cgroups != nil && config.Cgroups.Resources != nil {
		config.Cgroups.Resources.Devices = nil
	}
	return config, nil
}

// makeRootfs makes the root of the sandbox: /usr's mount point and the
// links of a merged /usr.
func makeRootfs(rootfs string) error {
	for _, d := range []string{"usr", "proc", "dev", "tmp"} {
		if err := os.MkdirAll(filepath.Join(rootfs, d), 0o755); err != nil {
			return err
		}
	}
	for _, name := range []string{"bin", "sbin", "lib", "lib64"} {
		target := "/usr/" + name
		if _, err := os.Stat(target); err != nil {
			continue
		}
		if err := os.Symlink("usr/"+name, filepath.Join(rootfs, name)); err != nil {
			return err
		}
	}
	return nil
}

// floorSpec is the sandbox: boxsh's namespaces and bubblewrap's mounts in
// the comparison, rootless.
func floorSpec(rootfs string) *specs.Spec {
	uid, gid := uint32(os.Geteuid()), uint32(os.Getegid())
	return &specs.Spec{
		Version: specs.Version,
		Root:    &specs.Root{Path: rootfs, Readonly: true},
		Process: &specs.Process{
			Cwd:             "/",
			NoNewPrivileges: true,
		},
		Hostname: "lcfloor",
		Mounts: []specs.Mount{
			{Destination: "/proc", Type: "proc", Source: "proc", Options: []string{"nosuid", "noexec", "nodev"}},
			{Destination: "/dev", Type: "tmpfs", Source: "tmpfs", Options: []string{"nosuid", "strictatime", "mode=755", "size=65536k"}},
			{Destination: "/tmp", Type: "tmpfs", Source: "tmpfs", Options: []string{"nosuid", "nodev", "mode=1777"}},
			{Destination: "/usr", Type: "bind", Source: "/usr", Options: []string{"rbind", "ro", "nosuid", "nodev"}},
		},
		Linux: &specs.Linux{
			UIDMappings: []specs.LinuxIDMapping{{ContainerID: 0, HostID: uid, Size: 1}},
			GIDMappings: []specs.LinuxIDMapping{{ContainerID: 0, HostID: gid, Size: 1}},
			Namespaces: []specs.LinuxNamespace{
				{Type: specs.PIDNamespace}, {Type: specs.IPCNamespace}, {Type: specs.UTSNamespace},
				{Type: specs.MountNamespace}, {Type: specs.UserNamespace},
			},
		},
	}
}
