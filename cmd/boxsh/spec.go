package main

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/boxsh/boxsh/internal/initproto"
	"github.com/boxsh/boxsh/internal/pathtree"
	"github.com/boxsh/boxsh/policy"
	"github.com/boxsh/boxsh/runtime"
	"github.com/boxsh/boxsh/runtime/host"
	"github.com/boxsh/boxsh/runtime/plan"
)

const specUsage = `Usage: boxsh spec [SANDBOX OPTIONS] [OPTIONS] [-- COMMAND [ARGS...]]

Print the sandbox as an OCI runtime spec (config.json), for runc and other
OCI runtimes, rootless: the spec boxsh --sandbox runs with the same flags.
The process is boxsh-init (bound read-only at /.boxsh/boxsh-init; it
expects its frame socket on fd 3), or boxsh-init --exec -- COMMAND.
What boxsh does besides at start is named in the spec's org.boxsh.*
annotations (see README.md). --sandbox is implied.

Options:
  --bundle DIR         Write DIR/config.json and prepare DIR/rootfs,
                       DIR/placeholders (and the cow directories) instead
                       of printing: then  runc run --bundle DIR ID  runs
                       the sandbox. DIR (and the root) must be outside
                       what the sandbox can write.
  --rootfs DIR         The root directory in the spec (default: rootfs,
                       relative to the bundle). An empty directory that
                       boxsh spec --bundle prepares.
  --format oci|sbpl    The output format: the OCI spec (default), or the
                       macOS Seatbelt profile of the same sandbox and policy,
                       as boxsh --sandbox runs it on macOS, but for what
                       is named at start: the sandbox's own temporary
                       directory shows as $TMPDIR/boxsh-sandbox-XXXXXXXX,
                       and in allowlist mode port 0 stands for the proxy's.
  --interactive, -i    The process gets a terminal.
  --workers N, --shell PATH, --log-level LEVEL
                       boxsh-init's arguments, as for boxsh --rpc.
  --sandbox, --new-net-ns, --bind MODE:...
                       The sandbox, as for boxsh.

Without --bundle, cow:SRC:DST needs DST and DST's work directory
<parent of DST>/.boxsh/<name of DST> to exist when the spec is run, and
the protected paths that do not exist are left out (see the annotations).
The environment of the process is the one boxsh --sandbox gives commands:
boxsh's, as the policy passes and sets it.
`

// specHostFacts, when set (by tests), replaces the host facts boxsh spec
// gathers; specFindInit is its boxsh-init lookup (replaced in tests).
var (
	specHostFacts func() plan.HostFacts
	specFindInit  = runtime.FindInit
)

// specOptions are the options of boxsh spec besides boxsh's own.
type specOptions struct {
	bundle string
	rootfs string
	format string
}

// runSpec runs boxsh spec with argv (the arguments after "spec") in the
// host directory cwd, and returns the exit status: 2 for usage errors, 1
// for failures of the environment.
func runSpec(argv []string, cwd string, stdout, stderr io.Writer) int {
	fail := func(err error) int {
		fmt.Fprintf(stderr, "boxsh spec: %s\n", strings.TrimPrefix(err.Error(), "usage: "))
		if errors.Is(err, policy.ErrUsage) {
			return 2
		}
		return 1
	}
	so, rest, err := parseSpecArgs(argv)
	if err != nil {
		return fail(err)
	}
	opts, err := parseArgs(rest, cwd)
	if err != nil {
		return fail(err)
	}
	switch {
	case opts.mode == modeVersion:
		return fail(fmt.Errorf("%w: --version is not an option of spec", policy.ErrUsage))
	case opts.mode == modeRPC:
		return fail(fmt.Errorf("%w: --rpc is not an option of spec (the spec runs boxsh-init)", policy.ErrUsage))
	case opts.mode == modeShell && len(opts.args) > 0:
		return fail(fmt.Errorf("%w: unexpected argument %q (a command goes after --)", policy.ErrUsage, opts.args[0]))
	case opts.sandbox.Try:
		return fail(fmt.Errorf("%w: --try is not an option of spec: use --bind cow:SRC:DST", policy.ErrUsage))
	}
	opts.sandbox.Enabled = true
	if err := opts.sandbox.Validate(); err != nil {
		return fail(err)
	}

	pol, err := loadPolicy(opts, os.Getenv("HOME"), cwd)
	if err != nil {
		return fail(err)
	}
	warnUntrusted(stderr, pol)
	home := os.Getenv("HOME")
	sb, err := host.ResolveSandbox(opts.sandbox, pol, home, cwd)
	if err != nil {
		return fail(err)
	}
	if so.format == "sbpl" {
		if so.bundle != "" {
			return fail(fmt.Errorf("%w: --bundle is for --format oci", policy.ErrUsage))
		}
		// The profile boxsh --sandbox runs with the same flags, built the
		// same way (issue 29, item 12), after the sandbox is resolved.
		in := seatbeltInputs(sb, pol, home, cwd)
		in.PrivateTmp = filepath.Join(cmp.Or(in.TmpDir, os.TempDir()), runtime.PrivateTmpStandIn)
		profile, err := runtime.SeatbeltProfile(in)
		if err != nil {
			return fail(err)
		}
		fmt.Fprint(stdout, profile)
		return 0
	}
	pc := plan.Config{
		Target:   plan.TargetPrint,
		Sandbox:  sb,
		Policy:   pol,
		Env:      policy.CommandEnv(pol, os.Environ()),
		Terminal: opts.interactive,
		Cwd:      cwd,
		Rootfs:   so.rootfs,
		Version:  version,
	}
	if so.bundle != "" {
		pc.Target = plan.TargetBundle
		if !filepath.IsAbs(so.bundle) {
			so.bundle = filepath.Join(cwd, so.bundle)
		}
		so.bundle = filepath.Clean(so.bundle)
		pc.Placeholders = filepath.Join(so.bundle, "placeholders")
		if err := bundleHidden(sb, so.bundle, so.rootfs); err != nil {
			return fail(err)
		}
	}
	initPath, initErr := specFindInit()
	if opts.mode == modeCommand {
		pc.Mode = plan.ModeExec
		pc.Command = opts.args
		if initErr == nil {
			pc.InitPath = initPath
		}
	} else {
		if initErr != nil {
			return fail(initErr)
		}
		pc.Mode = plan.ModeServe
		pc.Init = initproto.InitOptions{Workers: opts.workers, Shell: opts.shell, LogLevel: opts.logLevel}
		pc.InitPath = initPath
	}
	// The steps of a start (see host.Gather), but the start itself.
	pc, found, err := host.Gather(pc, home)
	if err == nil {
		err = found.Check()
	}
	if err != nil {
		return fail(err)
	}
	if specHostFacts != nil {
		pc.Host = specHostFacts()
	}
	sp, err := plan.Build(pc)
	if err != nil {
		return fail(err)
	}
	spec := sp.Spec
	out, err := json.MarshalIndent(spec, "", "\t")
	if err != nil {
		return fail(err)
	}
	out = append(out, '\n')
	if so.bundle == "" {
		if _, err := stdout.Write(out); err != nil {
			return fail(err)
		}
		return 0
	}
	if err := host.Prepare(so.bundle, sp); err != nil {
		return fail(err)
	}
	if err := writeConfig(filepath.Join(so.bundle, "config.json"), out); err != nil {
		return fail(err)
	}
	return 0
}

// parseSpecArgs takes the options of spec out of argv (up to "--"), and
// returns the rest for parseArgs.
func parseSpecArgs(argv []string) (specOptions, []string, error) {
	so := specOptions{rootfs: "rootfs", format: "oci"}
	var rest []string
	for i := 0; i < len(argv); i++ {
		arg := argv[i]
		if arg == "--" {
			rest = append(rest, argv[i:]...)
			break
		}
		name, value, hasValue := strings.Cut(arg, "=")
		var dst *string
		switch name {
		case "--bundle":
			dst = &so.bundle
		case "--rootfs":
			dst = &so.rootfs
		case "--format":
			dst = &so.format
		default:
			rest = append(rest, arg)
			continue
		}
		if !hasValue {
			if i+1 >= len(argv) {
				return so, nil, fmt.Errorf("%w: %s needs a value", policy.ErrUsage, name)
			}
			i++
			value = argv[i]
		}
		if value == "" {
			return so, nil, fmt.Errorf("%w: %s needs a value", policy.ErrUsage, name)
		}
		*dst = value
	}
	if so.format != "oci" && so.format != "sbpl" {
		return so, nil, fmt.Errorf("%w: --format %q: expected oci or sbpl", policy.ErrUsage, so.format)
	}
	return so, rest, nil
}

// bundleHidden checks that no bind of sb lets the sandbox write into, or
// replace, the bundle directory bundle or its root directory rootfs.
// rootfs is relative to the bundle unless absolute. Otherwise a command
// could rewrite config.json, and the next run of the bundle would be the
// sandbox it wrote. bundleHidden compares real paths as the mounts see
// them, with symlinks above the bundle and in the binds resolved.
func bundleHidden(sb policy.Sandbox, bundle, rootfs string) error {
	if !filepath.IsAbs(rootfs) {
		rootfs = filepath.Join(bundle, rootfs)
	}
	dirs := []string{bundle, filepath.Clean(rootfs)}
	for _, d := range slices.Clone(dirs) {
		if real := host.RealPath(d); real != d {
			dirs = append(dirs, real)
		}
	}
	for _, b := range sb.Binds {
		if b.Mode == policy.ReadOnly {
			continue
		}
		dsts := []string{b.Dst}
		if real := host.RealPath(b.Dst); real != b.Dst {
			dsts = append(dsts, real)
		}
		for _, d := range dirs {
			for _, dst := range dsts {
				if pathtree.Within(d, dst) || pathtree.Within(dst, d) {
					return fmt.Errorf("--bind %s would let the sandbox write into its own bundle (%s): put the bundle outside it", b, d)
				}
			}
		}
	}
	return nil
}

// writeConfig replaces the file path with content, of mode 0600 since the
// environment may hold variables the policy passes. It writes a new file
// beside path and renames it over path. So a symlink at path is replaced
// rather than written through.
func writeConfig(path string, content []byte) error {
	f, err := os.CreateTemp(filepath.Dir(path), ".config.json.*")
	if err != nil {
		return err
	}
	_, err = f.Write(content)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(f.Name(), path)
	}
	if err != nil {
		os.Remove(f.Name())
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}
