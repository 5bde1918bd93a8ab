package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/boxsh/boxsh/policy"
	"github.com/boxsh/boxsh/runtime"
)

const policyUsage = `Usage: boxsh policy init [--global] [--force]
       boxsh policy show [--json] [OPTIONS]
       boxsh policy trust [PATH]
       boxsh policy untrust [PATH]
       boxsh policy trusted

init writes the default settings to ./.boxsh/policy.json (the project's
file), or with --global to ~/.config/boxsh/policy.json, for editing. An
existing file is kept unless --force is given.

show prints the policy boxsh would apply with OPTIONS (boxsh's own, such as
--policy FILE, --memory 2G), each rule with where it came from: the
defaults, the global file, the project file, --policy, or a flag.

A project's settings file (./.boxsh/policy.json) can only narrow the policy
your own settings and flags give: its denyRead, denyWrite and deniedDomains
rules, lower limits, a stricter network mode and new variables are taken;
allowRead, allowWrite, environment.pass, higher limits and the rest are
ignored with a warning. So is a --policy file inside a writable bind. Run
trust, after reading the file, to let it widen the policy: trust records the
file's path and the SHA-256 of its content (PATH, default
./.boxsh/policy.json) in ~/.config/boxsh/trusted.json; once the file
changes it is untrusted again. untrust removes the record; trusted lists
them.
`

// runPolicy runs boxsh policy with argv (the arguments after "policy") and
// returns the exit status.
func runPolicy(argv []string, cwd, home string, stdout, stderr io.Writer) int {
	fail := func(err error) int {
		fmt.Fprintf(stderr, "boxsh policy: %s\n", strings.TrimPrefix(err.Error(), "usage: "))
		if errors.Is(err, policy.ErrUsage) {
			return 2
		}
		return 1
	}
	if len(argv) == 0 {
		return fail(fmt.Errorf("%w: expected init, show, trust, untrust or trusted (see boxsh policy --help)", policy.ErrUsage))
	}
	switch argv[0] {
	case "init":
		global, force := false, false
		for _, a := range argv[1:] {
			switch a {
			case "--global":
				global = true
			case "--force":
				force = true
			default:
				return fail(fmt.Errorf("%w: policy init: unknown option %s", policy.ErrUsage, a))
			}
		}
		path := policy.ProjectSettingsPath(cwd)
		if global {
			if home == "" {
				return fail(errors.New("policy init --global: HOME is not set"))
			}
			path = policy.GlobalSettingsPath(home)
		}
		if err := writeDefaultSettings(path, force); err != nil {
			return fail(err)
		}
		fmt.Fprintf(stdout, "wrote %s\n", path)
		return 0
	case "show":
		asJSON := false
		var rest []string
		for _, a := range argv[1:] {
			if a == "--json" {
				asJSON = true
			} else {
				rest = append(rest, a)
			}
		}
		opts, err := parseArgs(rest, cwd)
		if err != nil {
			return fail(err)
		}
		p, err := loadPolicy(opts, home, cwd)
		if err != nil {
			return fail(err)
		}
		warnUntrusted(stderr, p)
		if asJSON {
			b, err := json.MarshalIndent(p, "", "  ")
			if err != nil {
				return fail(err)
			}
			fmt.Fprintf(stdout, "%s\n", b)
			return 0
		}
		printPolicy(stdout, p, runtime.Enforcement(p, opts.sandbox.Enabled || opts.sandbox.Try))
		return 0
	case "trust", "untrust":
		if len(argv) > 2 || len(argv) == 2 && strings.HasPrefix(argv[1], "-") {
			return fail(fmt.Errorf("%w: policy %s takes one settings file (default ./.boxsh/policy.json)", policy.ErrUsage, argv[0]))
		}
		if home == "" {
			return fail(fmt.Errorf("policy %s: HOME is not set", argv[0]))
		}
		path := policy.ProjectSettingsPath(cwd)
		if len(argv) == 2 {
			path = argv[1]
			if !filepath.IsAbs(path) {
				path = filepath.Join(cwd, path)
			}
		}
		store := policy.TrustStorePath(home)
		if argv[0] == "untrust" {
			found, err := policy.Untrust(store, path)
			if err != nil {
				return fail(err)
			}
			if !found {
				return fail(fmt.Errorf("%s is not trusted", path))
			}
			fmt.Fprintf(stdout, "untrusted %s\n", path)
			return 0
		}
		entry, err := policy.Trust(store, path)
		if err != nil {
			return fail(err)
		}
		fmt.Fprintf(stdout, "trusted %s (sha256 %s), recorded in %s; a change to it makes it untrusted again\n", entry.Path, entry.SHA256, store)
		return 0
	case "trusted":
		if len(argv) > 1 {
			return fail(fmt.Errorf("%w: policy trusted takes no arguments", policy.ErrUsage))
		}
		if home == "" {
			return fail(errors.New("policy trusted: HOME is not set"))
		}
		t, err := policy.LoadTrustStore(policy.TrustStorePath(home))
		if err != nil {
			return fail(err)
		}
		printTrusted(stdout, t)
		return 0
	}
	return fail(fmt.Errorf("%w: unknown policy command %q (expected init, show, trust, untrust or trusted)", policy.ErrUsage, argv[0]))
}

// printTrusted lists the trusted settings files and whether each still
// has the content trusted.
func printTrusted(w io.Writer, t policy.TrustStore) {
	if len(t.Files) == 0 {
		fmt.Fprintln(w, "no trusted settings files")
		return
	}
	tw := tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)
	for _, f := range t.Files {
		state := "trusted"
		if sf, err := policy.ReadSettingsFile(f.Path); err != nil {
			state = "missing"
		} else if sf.Key != f.Path || sf.SHA256 != f.SHA256 {
			state = "changed since trusted: not trusted"
		}
		fmt.Fprintf(tw, "%s\tsha256 %s\t%s\t%s\n", f.Path, f.SHA256[:min(16, len(f.SHA256))], f.Added.Format("2006-01-02"), state)
	}
	tw.Flush()
}

// writeDefaultSettings writes the default settings to path, keeping an
// existing file unless force.
func writeDefaultSettings(path string, force bool) error {
	b, err := policy.MarshalSettings(policy.DefaultSettings())
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	flags := os.O_WRONLY | os.O_CREATE | os.O_EXCL
	if force {
		flags = os.O_WRONLY | os.O_CREATE | os.O_TRUNC
	}
	f, err := os.OpenFile(path, flags, 0o644)
	if errors.Is(err, os.ErrExist) {
		return fmt.Errorf("%s exists (--force replaces it)", path)
	}
	if err != nil {
		return err
	}
	_, err = f.Write(b)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// printPolicy prints p for people. It shows each rule and setting with its
// source, "default" when none chose it; the network's mode is shown as it
// applies. For the limits it shows how they are enforced.
func printPolicy(w io.Writer, p policy.Policy, enforced map[string]string) {
	tw := tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)
	files := "none"
	if len(p.Files) > 0 {
		files = strings.Join(p.Files, ", ")
	}
	fmt.Fprintf(tw, "settings files read:\t%s\n", files)
	for _, u := range p.Untrusted {
		ignored := "nothing ignored"
		if len(u.Ignored) > 0 {
			ignored = "ignored: " + strings.Join(u.Ignored, ", ")
		}
		fmt.Fprintf(tw, "not trusted (narrows only):\t%s (%s)\n", u.Path, ignored)
	}
	rules := func(key string, rs []policy.Rule) {
		fmt.Fprintf(tw, "\n%s:\n", key)
		if len(rs) == 0 {
			fmt.Fprintf(tw, "  (none)\n")
		}
		for _, r := range rs {
			fmt.Fprintf(tw, "  %s\t%s\n", r.Value, r.Source)
		}
	}
	rules("filesystem.denyRead", p.DenyRead)
	rules("filesystem.allowRead", p.AllowRead)
	rules("filesystem.allowWrite", p.AllowWrite)
	rules("filesystem.denyWrite", p.DenyWrite)
	if len(p.Protect) > 0 {
		rules("filesystem.protect", p.Protect)
	}
	rules("environment.pass", p.EnvPass)
	fmt.Fprintf(tw, "\nenvironment.set:\n")
	if len(p.EnvSet) == 0 {
		fmt.Fprintf(tw, "  (none)\n")
	}
	for _, k := range slices.Sorted(maps.Keys(p.EnvSet)) {
		fmt.Fprintf(tw, "  %s=%s\t%s\n", k, p.EnvSet[k].Value, p.EnvSet[k].Source)
	}
	mode, _ := p.Network()
	source := p.NetworkMode.Source
	if !p.NetworkMode.Set() {
		source = "default"
	}
	fmt.Fprintf(tw, "\nnetwork.mode:\n  %s\t%s\n", mode, source)
	rules("network.allowedDomains", p.AllowedDomains)
	rules("network.deniedDomains", p.DeniedDomains)
	fmt.Fprintf(tw, "\nlimits:\n")
	limit := func(name string, set bool, value string, source policy.Source) {
		if !set {
			fmt.Fprintf(tw, "  %s\t(none)\t\t\n", name)
			return
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\n", name, value, source, enforced[name])
	}
	limit("memory", p.Memory.Set(), fmt.Sprintf("%d bytes", p.Memory.Value), p.Memory.Source)
	limit("pids", p.Pids.Set(), fmt.Sprint(p.Pids.Value), p.Pids.Source)
	limit("cpus", p.CPUs.Set(), fmt.Sprint(p.CPUs.Value), p.CPUs.Source)
	limit("timeoutDefault", p.TimeoutDefault.Set(), fmt.Sprintf("%gs", p.TimeoutDefault.Value), p.TimeoutDefault.Source)
	limit("maxOutput", p.MaxOutput.Set(), fmt.Sprintf("%d bytes", p.MaxOutput.Value), p.MaxOutput.Source)
	tw.Flush()
}
