package plan

import (
	"encoding/json"
	"os"
	"testing"

	specs "github.com/opencontainers/runtime-spec/specs-go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/boxsh/boxsh/internal/initproto"
	"github.com/boxsh/boxsh/internal/proc"
	"github.com/boxsh/boxsh/policy"
)

// planHost are the host facts of the plan tests: nothing of them is read
// from the host.
var planHost = HostFacts{
	System: []HostPath{{Path: "/usr", Dir: true}, {Path: "/bin", Dir: true, Link: "usr/bin"}},
	Etc:    []HostPath{{Path: "/etc/passwd"}, {Path: "/etc/ssl", Dir: true}, {Path: "/etc/localtime", Link: "/usr/share/zoneinfo/UTC"}},
}

// planConfig is the base of the plan tests: a sandbox of mode m for
// target t, started in /work/p.
func planConfig(m Mode, t Target) Config {
	return Config{
		Mode: m, Target: t,
		Sandbox:  policy.Sandbox{Enabled: true},
		Command:  []string{"sh", "-c", "echo hi"},
		Init:     initproto.InitOptions{Workers: 2, Shell: "/bin/bash"},
		Env:      []string{"HOME=/home/u", "TERM=xterm"},
		Cwd:      "/work/p",
		UID:      1000,
		GID:      1000,
		Rootfs:   "/state/rootfs",
		InitPath: "/opt/boxsh/boxsh-init", ForkServer: "/opt/boxsh/boxsh-zygote.so",
		Host:    planHost,
		Version: "9.9",
	}
}

// planMount is the last mount of s at dst, or nil.
func planMount(s *specs.Spec, dst string) *specs.Mount {
	var m *specs.Mount
	for i := range s.Mounts {
		if s.Mounts[i].Destination == dst {
			m = &s.Mounts[i]
		}
	}
	return m
}

func set[T any](v T) policy.Value[T] { return policy.Value[T]{Value: v, Source: "test"} }

func TestPlan(t *testing.T) {
	allowlist := policy.Policy{NetworkMode: set(policy.NetworkAllowlist)}
	limits := policy.Policy{Memory: set(int64(1 << 30)), Pids: set(64), CPUs: set(1.5), TimeoutDefault: set(30.0), MaxOutput: set(int64(4096))}
	cow := policy.Bind{Mode: policy.CopyOnWrite, Src: "/work/p", Dst: "/work/out"}
	missing := HostPath{Path: "/work/p/.vscode", Dir: true, Missing: true, MissingFrom: "/work/p/.vscode"}
	rules := FileRules{
		DenyRead:  []RuledPath{{Path: "/work/p/.env", Rule: "denyRead .env"}, {Path: "/work/p/secrets", Dir: true}},
		DenyWrite: []RuledPath{{Path: "/work/p/Makefile"}},
	}

	for name, tc := range map[string]struct {
		cfg   func(*Config)
		check func(t *testing.T, p *Plan)
	}{
		"serve starts boxsh-init serving on fd 3 with the rules file": {
			cfg: func(c *Config) {},
			check: func(t *testing.T, p *Plan) {
				assert.Equal(t, []string{initproto.InitMountPath, "--workers", "2", "--shell", "/bin/bash", "--log-level", "warn", "--rules", initproto.RulesPath}, p.Spec.Process.Args)
				assert.Equal(t, []Descriptor{{3, FramesDescriptor}}, p.Descriptors)
				assert.Equal(t, "frames", p.Annotations["org.boxsh.fd.3"])
				assert.Equal(t, "serve", p.Annotations[ModeAnnotation])
				require.Len(t, p.Files, 1)
				assert.Equal(t, initproto.RulesPath, p.Files[0].Path)
				assert.Equal(t, "[]", string(p.Files[0].Content))
				assert.Equal(t, "[]", p.Annotations["org.boxsh.file./.boxsh/rules.json"])
				assert.NotNil(t, planMount(p.Spec, initproto.ForkServerMountPath), "the fork server is bound beside boxsh-init")
				assert.Equal(t, "/opt/boxsh/boxsh-init", planMount(p.Spec, initproto.InitMountPath).Source)
				assert.Empty(t, p.Spec.Process.Rlimits, "boxsh-init applies the limits to each command")
				assert.False(t, p.Proxy)
				assert.Contains(t, p.Spec.Process.Env, "PATH="+defaultPath)
				assert.Equal(t, "9.9", p.Spec.Annotations[VersionAnnotation])
				assert.Equal(t, map[string]string{VersionAnnotation: "9.9"}, p.Spec.Annotations, "a started spec carries the plan's fields instead")
			},
		},
		"serve printed has no rules file option": {
			cfg: func(c *Config) { c.Target = TargetPrint },
			check: func(t *testing.T, p *Plan) {
				assert.Equal(t, p.Annotations, filterBoxsh(p.Spec.Annotations), "a printed spec carries the annotations")
				assert.NotContains(t, p.Spec.Process.Args, "--rules")
				assert.Contains(t, p.Annotations, "org.boxsh.file./.boxsh/rules.json", "the file is named")
			},
		},
		"serve bundle has the rules file": {
			cfg: func(c *Config) { c.Target = TargetBundle },
			check: func(t *testing.T, p *Plan) {
				assert.Contains(t, p.Spec.Process.Args, "--rules")
				require.Len(t, p.Files, 1)
			},
		},
		"serve limits are boxsh-init's options": {
			cfg: func(c *Config) { c.Policy = limits },
			check: func(t *testing.T, p *Plan) {
				assert.Equal(t, []string{"--timeout-default", "30", "--max-output", "4096", "--memory", "1073741824", "--pids", "64"}, p.Spec.Process.Args[7:15])
				assert.Empty(t, p.Spec.Process.Rlimits)
				assert.Nil(t, p.Spec.Linux.Resources, "no cgroup without one")
				assert.Equal(t, "memory=1073741824,pids=64,cpus=1.5", p.Annotations[CgroupAnnotation])
			},
		},
		"root's sandbox gets its cgroup": {
			cfg: func(c *Config) { c.Policy = limits; c.Cgroup = "/boxsh/sb-1" },
			check: func(t *testing.T, p *Plan) {
				assert.Equal(t, "/boxsh/sb-1", p.Spec.Linux.CgroupsPath)
				require.NotNil(t, p.Spec.Linux.Resources)
				assert.Equal(t, int64(64), *p.Spec.Linux.Resources.Pids.Limit)
				assert.NotContains(t, p.Annotations, CgroupAnnotation)
			},
		},
		"a printed spec gets no cgroup": {
			cfg: func(c *Config) { c.Policy = limits; c.Cgroup = "/boxsh/sb-1"; c.Target = TargetPrint },
			check: func(t *testing.T, p *Plan) {
				assert.Empty(t, p.Spec.Linux.CgroupsPath)
				assert.Nil(t, p.Spec.Linux.Resources)
				assert.Contains(t, p.Annotations, CgroupAnnotation)
			},
		},
		"the limit of open files boxsh was started with binds boxsh-init": {
			cfg: func(c *Config) { c.Policy = limits; c.Host.NoFile = &Rlimit{Soft: 1024, Hard: 20000} },
			check: func(t *testing.T, p *Plan) {
				assert.Equal(t, []specs.POSIXRlimit{{Type: "RLIMIT_NOFILE", Hard: 20000, Soft: 1024}}, p.Spec.Process.Rlimits,
					"the only rlimit of boxsh-init; the policy's are its options")
			},
		},
		"every rlimit of an exec sandbox is in its spec": {
			cfg: func(c *Config) {
				c.Mode, c.Target, c.Policy = ModeExec, TargetPrint, limits
				c.Host.NoFile = &Rlimit{Soft: 1024, Hard: 20000}
			},
			check: func(t *testing.T, p *Plan) {
				assert.Equal(t, []specs.POSIXRlimit{{Type: "RLIMIT_NOFILE", Hard: 20000, Soft: 1024},
					{Type: "RLIMIT_DATA", Hard: 1 << 30, Soft: 1 << 30}, {Type: "RLIMIT_NPROC", Hard: 64, Soft: 64}}, p.Spec.Process.Rlimits)
			},
		},
		"exec runs the command under boxsh-init with the lifeline": {
			cfg: func(c *Config) { c.Mode = ModeExec; c.Policy = limits },
			check: func(t *testing.T, p *Plan) {
				assert.Equal(t, []string{initproto.InitMountPath, "--exec", "--lifeline", "3", "--", "sh", "-c", "echo hi"}, p.Spec.Process.Args)
				assert.Equal(t, []Descriptor{{3, LifelineDescriptor}}, p.Descriptors)
				assert.Equal(t, []specs.POSIXRlimit{{Type: "RLIMIT_DATA", Hard: 1 << 30, Soft: 1 << 30}, {Type: "RLIMIT_NPROC", Hard: 64, Soft: 64}}, p.Spec.Process.Rlimits)
				assert.Empty(t, p.Files)
				assert.Nil(t, planMount(p.Spec, initproto.ForkServerMountPath), "no worker pool")
				assert.NotContains(t, p.Annotations, LifelineAnnotation)
			},
		},
		"exec printed leaves the lifeline out and says so": {
			cfg: func(c *Config) { c.Mode = ModeExec; c.Target = TargetPrint },
			check: func(t *testing.T, p *Plan) {
				assert.Equal(t, []string{initproto.InitMountPath, "--exec", "--", "sh", "-c", "echo hi"}, p.Spec.Process.Args)
				assert.Empty(t, p.Descriptors)
				assert.Equal(t, "3", p.Annotations[LifelineAnnotation])
			},
		},
		"exec printed without boxsh-init runs the command itself": {
			cfg: func(c *Config) { c.Mode = ModeExec; c.Target = TargetPrint; c.InitPath = "" },
			check: func(t *testing.T, p *Plan) {
				assert.Equal(t, []string{"sh", "-c", "echo hi"}, p.Spec.Process.Args)
				assert.Equal(t, "missing", p.Annotations[initAnnotation])
				assert.Nil(t, planMount(p.Spec, initproto.InitMountPath))
			},
		},
		"allowlist network: own namespace, the proxy on fd 4 and its variables": {
			cfg: func(c *Config) { c.Policy = allowlist; c.Sandbox.NewNetNS = true },
			check: func(t *testing.T, p *Plan) {
				assert.True(t, p.Proxy)
				assert.Equal(t, []Descriptor{{3, FramesDescriptor}, {4, ProxyDescriptor}}, p.Descriptors)
				assert.Equal(t, []string{"--proxy-fd", "4", "--proxy-listen", initproto.ProxyListen}, p.Spec.Process.Args[len(p.Spec.Process.Args)-4:])
				assert.Contains(t, p.Spec.Process.Env, "HTTPS_PROXY=http://"+initproto.ProxyListen)
				assert.Equal(t, specs.NetworkNamespace, p.Spec.Linux.Namespaces[len(p.Spec.Linux.Namespaces)-1].Type)
				assert.Equal(t, "proxy", p.Annotations["org.boxsh.fd.4"])
			},
		},
		"allowlist network in exec mode": {
			cfg: func(c *Config) { c.Mode = ModeExec; c.Policy = allowlist; c.Sandbox.NewNetNS = true },
			check: func(t *testing.T, p *Plan) {
				assert.Equal(t, []string{initproto.InitMountPath, "--exec", "--lifeline", "3", "--proxy-fd", "4", "--proxy-listen", initproto.ProxyListen, "--egress-ports", "22,80,443", "--", "sh", "-c", "echo hi"}, p.Spec.Process.Args)
				assert.Equal(t, []Descriptor{{3, LifelineDescriptor}, {4, ProxyDescriptor}}, p.Descriptors)
			},
		},
		"deny-all network: own namespace, no proxy": {
			cfg: func(c *Config) { c.Policy.NetworkMode = set("deny_all"); c.Sandbox.NewNetNS = true },
			check: func(t *testing.T, p *Plan) {
				assert.False(t, p.Proxy)
				assert.Equal(t, specs.NetworkNamespace, p.Spec.Linux.Namespaces[len(p.Spec.Linux.Namespaces)-1].Type)
				assert.NotContains(t, p.Spec.Process.Args, "--proxy-fd")
			},
		},
		"binds of each kind": {
			cfg: func(c *Config) {
				c.Sandbox.Binds = []policy.Bind{{Mode: policy.ReadOnly, Src: "/data", Dst: "/data"}, {Mode: policy.ReadWrite, Src: "/work/p", Dst: "/work/p"}, {Mode: policy.CopyOnWrite, Src: "/srv/src", Dst: "/srv/out"}}
			},
			check: func(t *testing.T, p *Plan) {
				assert.Equal(t, bindRO, planMount(p.Spec, "/data").Options)
				assert.Equal(t, bindRW, planMount(p.Spec, "/work/p").Options)
				assert.Equal(t, "overlay", planMount(p.Spec, "/srv/out").Type)
				assert.Equal(t, "upper=/srv/out,work=/srv/.boxsh/out", p.Annotations["org.boxsh.cow./srv/out"])
				assert.Equal(t, "/work/p", p.Spec.Process.Cwd)
			},
		},
		"cow moves the working directory": {
			cfg:   func(c *Config) { c.Sandbox.Binds = []policy.Bind{cow} },
			check: func(t *testing.T, p *Plan) { assert.Equal(t, "/work/out", p.Spec.Process.Cwd) },
		},
		"file rules": {
			cfg: func(c *Config) {
				c.Sandbox.Binds = []policy.Bind{{Mode: policy.ReadWrite, Src: "/work/p", Dst: "/work/p"}}
				c.Rules = rules
				c.Placeholders = "/state/placeholders"
			},
			check: func(t *testing.T, p *Plan) {
				assert.Equal(t, "/state/placeholders/denied-dir", planMount(p.Spec, "/work/p/secrets").Source)
				assert.Equal(t, "/state/placeholders/denied", planMount(p.Spec, "/work/p/.env").Source)
				assert.Equal(t, []string{"bind", "ro", "nosuid", "nodev"}, planMount(p.Spec, "/work/p/Makefile").Options)
				var entries []map[string]any
				require.NoError(t, json.Unmarshal(p.Files[0].Content, &entries))
				assert.Len(t, entries, 3, "the rules file lists each covered path")
			},
		},
		"file rules printed": {
			cfg: func(c *Config) {
				c.Target = TargetPrint
				c.Sandbox.Binds = []policy.Bind{{Mode: policy.ReadWrite, Src: "/work/p", Dst: "/work/p"}}
				c.Rules = rules
			},
			check: func(t *testing.T, p *Plan) {
				assert.Equal(t, "/dev/null", planMount(p.Spec, "/work/p/.env").Source, "no placeholders: /dev/null")
			},
		},
		"a missing protected path gets a placeholder at start": {
			cfg: func(c *Config) {
				c.Sandbox.Binds = []policy.Bind{{Mode: policy.ReadWrite, Src: "/work/p", Dst: "/work/p"}}
				c.Protect = []HostPath{missing, {Path: "/work/p/.git/hooks", Dir: true}}
				c.Placeholders = "/state/placeholders"
			},
			check: func(t *testing.T, p *Plan) {
				assert.Equal(t, "/state/placeholders/dir", planMount(p.Spec, "/work/p/.vscode").Source)
				assert.Equal(t, "/work/p/.git/hooks", planMount(p.Spec, "/work/p/.git/hooks").Source)
				assert.Equal(t, "dir", p.Annotations["org.boxsh.placeholder./work/p/.vscode"])
			},
		},
		"a bundle binds its placeholders over the missing protected paths": {
			cfg: func(c *Config) {
				c.Target = TargetBundle
				c.Sandbox.Binds = []policy.Bind{{Mode: policy.ReadWrite, Src: "/work/p", Dst: "/work/p"}}
				c.Protect = []HostPath{missing}
				c.Rules = rules
				c.Placeholders = "/bundle/placeholders"
			},
			check: func(t *testing.T, p *Plan) {
				assert.Equal(t, "/bundle/placeholders/dir", planMount(p.Spec, "/work/p/.vscode").Source)
				assert.NotContains(t, p.Spec.Annotations, "org.boxsh.placeholder./work/p/.vscode", "the spec carries the mount")
				assert.Equal(t, "/bundle/placeholders/denied", planMount(p.Spec, "/work/p/.env").Source)
				assert.Equal(t, "/bundle/placeholders/denied-dir", planMount(p.Spec, "/work/p/secrets").Source)
			},
		},
		"a printed spec leaves the placeholders out and names them": {
			cfg: func(c *Config) {
				c.Target = TargetPrint
				c.Sandbox.Binds = []policy.Bind{{Mode: policy.ReadWrite, Src: "/work/p", Dst: "/work/p"}}
				c.Protect = []HostPath{missing}
			},
			check: func(t *testing.T, p *Plan) {
				assert.Nil(t, planMount(p.Spec, "/work/p/.vscode"))
				assert.Equal(t, "dir", p.Annotations["org.boxsh.placeholder./work/p/.vscode"])
			},
		},
		"the /etc binds boxsh may copy": {
			cfg: func(c *Config) {},
			check: func(t *testing.T, p *Plan) {
				assert.Equal(t, []string{"/etc/passwd", "/etc/ssl"}, p.Inline)
				assert.Equal(t, "copy", p.Annotations["org.boxsh.inline./etc/passwd"])
				assert.NotNil(t, planMount(p.Spec, "/etc/passwd"), "the spec keeps the bind")
				assert.NotContains(t, p.Annotations, "org.boxsh.inline./etc/localtime", "a symlink into /usr is recreated, not bound")
			},
		},
		"the adjustments runtime-spec cannot carry": {
			cfg: func(c *Config) {},
			check: func(t *testing.T, p *Plan) {
				assert.Equal(t, []specs.LinuxSeccompFlag{specs.LinuxSeccompFlagSpecAllow}, p.SeccompFlags)
				assert.Empty(t, p.Spec.Linux.Seccomp.Flags, "runc 1.1 refuses seccomp flags")
				assert.Equal(t, "SECCOMP_FILTER_FLAG_SPEC_ALLOW", p.Annotations[SeccompFlagsAnnotation])
				assert.Equal(t, "boxsh-init", p.Annotations[seccompLoaderAnnotation])
				assert.Equal(t, "SIGKILL", p.ParentDeathSignal)
				assert.Equal(t, "SIGKILL", p.Annotations[ParentDeathAnnotation])
				assert.True(t, p.NoDeviceRules)
				assert.Equal(t, "none", p.Annotations[DeviceRulesAnnotation])
			},
		},
		"boxsh-init loads the seccomp program": {
			cfg: func(c *Config) { c.Mode = ModeExec },
			check: func(t *testing.T, p *Plan) {
				assert.Equal(t, initproto.InitMountPath, p.Spec.Process.Args[0])
				assert.True(t, p.InitLoadsSeccomp)
				assert.Equal(t, "boxsh-init", p.Annotations[seccompLoaderAnnotation])
			},
		},
		"a printed command without boxsh-init loads no seccomp program": {
			cfg: func(c *Config) { c.Mode, c.Target, c.InitPath = ModeExec, TargetPrint, "" },
			check: func(t *testing.T, p *Plan) {
				assert.Equal(t, []string{"sh", "-c", "echo hi"}, p.Spec.Process.Args)
				assert.False(t, p.InitLoadsSeccomp)
				assert.NotContains(t, p.Annotations, seccompLoaderAnnotation)
			},
		},
		"what the host prepares": {
			cfg: func(c *Config) {
				c.Target = TargetBundle
				c.Sandbox.Binds = []policy.Bind{
					{Mode: policy.ReadWrite, Src: "/work/p", Dst: "/work/p"},
					cow,
					{Mode: policy.ReadOnly, Src: "/data", Dst: "/data"},
				}
				c.Protect = []HostPath{missing, {Path: "/work/p/.bashrc"}}
				c.Placeholders = "/bundle/placeholders"
			},
			check: func(t *testing.T, p *Plan) {
				assert.Equal(t, rootEntries(planHost), p.Root, "the root's mount points and symlinks")
				assert.Equal(t, "/bundle/placeholders", p.Placeholders)
				assert.Equal(t, []HostPath{missing, {Path: "/work/p/.bashrc"}}, p.Protect)
				assert.Equal(t, []policy.Bind{cow}, p.Cow, "only the cow binds have host directories")
			},
		},
		"a printed spec has no placeholders to prepare": {
			cfg: func(c *Config) {
				c.Target = TargetPrint
				c.Sandbox.Binds = []policy.Bind{cow}
				c.Protect = []HostPath{missing}
			},
			check: func(t *testing.T, p *Plan) {
				assert.Empty(t, p.Placeholders)
				assert.Equal(t, []policy.Bind{cow}, p.Cow)
				assert.Equal(t, []HostPath{missing}, p.Protect, "named, left out of the spec")
			},
		},
		"try: the host's /etc, /var and /run whole": {
			cfg: func(c *Config) {
				c.Mode = ModeExec
				c.Sandbox.HostSystem = true
				c.Sandbox.Binds = []policy.Bind{cow}
				c.Host.Whole = []HostPath{{Path: "/etc", Dir: true}, {Path: "/var", Dir: true}}
			},
			check: func(t *testing.T, p *Plan) {
				assert.NotNil(t, planMount(p.Spec, "/etc"))
				assert.Nil(t, planMount(p.Spec, "/etc/passwd"))
				assert.Empty(t, p.Inline)
				assert.Equal(t, "/work/out", p.Spec.Process.Cwd)
			},
		},
	} {
		t.Run(name, func(t *testing.T) {
			cfg := planConfig(ModeServe, TargetStart)
			tc.cfg(&cfg)
			p, err := Build(cfg)
			require.NoError(t, err)
			tc.check(t, p)
		})
	}
}

func TestServeOptions(t *testing.T) {
	base := initproto.InitOptions{Workers: 2, Shell: "/bin/bash", LogLevel: "debug"}
	pol := policy.Policy{Memory: set(int64(1 << 20)), Pids: set(32), TimeoutDefault: set(5.0), MaxOutput: set(int64(100))}
	for _, tc := range []struct {
		name      string
		pol       policy.Policy
		sandboxed bool
		want      initproto.InitOptions
	}{
		{"no policy", policy.Policy{}, true, base},
		{"sandboxed", pol, true, initproto.InitOptions{Workers: 2, Shell: "/bin/bash", LogLevel: "debug", TimeoutDefault: 5, MaxOutput: 100, Memory: 1 << 20, Pids: 32}},
		{"plain: no pids, which would count the user's own", pol, false, initproto.InitOptions{Workers: 2, Shell: "/bin/bash", LogLevel: "debug", TimeoutDefault: 5, MaxOutput: 100, Memory: 1 << 20}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, ServeOptions(base, tc.pol, tc.sandboxed))
		})
	}
}

func TestPlanErrors(t *testing.T) {
	cfg := planConfig(ModeExec, TargetStart)
	cfg.Command = nil
	_, err := Build(cfg)
	assert.ErrorContains(t, err, "no command")

	cfg = planConfig(ModeServe, TargetPrint)
	cfg.InitPath = ""
	_, err = Build(cfg)
	assert.ErrorContains(t, err, "no boxsh-init")

	cfg = planConfig(ModeServe, TargetStart)
	cfg.Sandbox.Binds = []policy.Bind{{Mode: policy.ReadOnly, Src: "/x", Dst: "/proc/x"}}
	_, err = Build(cfg)
	assert.ErrorIs(t, err, policy.ErrBind)
}

func TestPlanExtraFiles(t *testing.T) {
	cfg := planConfig(ModeServe, TargetStart)
	cfg.Policy.NetworkMode = set(policy.NetworkAllowlist)
	p, err := Build(cfg)
	require.NoError(t, err)
	_, err = p.ExtraFiles(map[string]*os.File{FramesDescriptor: os.Stdin})
	assert.ErrorContains(t, err, "no file for descriptor 4 (proxy)")
	files, err := p.ExtraFiles(map[string]*os.File{FramesDescriptor: os.Stdin, ProxyDescriptor: os.Stdout})
	require.NoError(t, err)
	assert.Equal(t, []*os.File{os.Stdin, os.Stdout}, files)
}

func TestMountPathsMatchProc(t *testing.T) {
	assert.Equal(t, initproto.BoxshDir+"/"+proc.ForkServerName, initproto.ForkServerMountPath)
}

// filterBoxsh is annotations without the VersionAnnotation.
func filterBoxsh(annotations map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range annotations {
		if k != VersionAnnotation {
			out[k] = v
		}
	}
	return out
}
