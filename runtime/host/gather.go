package host

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/boxsh/boxsh/internal/initproto"
	"github.com/boxsh/boxsh/internal/proc"
	"github.com/boxsh/boxsh/internal/starttrace"
	"github.com/boxsh/boxsh/policy"
	"github.com/boxsh/boxsh/runtime/plan"
)

// A sandbox is started, or its bundle written, in three steps, as
// libcontainer does: Gather reads the host, plan.Build makes the plan of
// what it read (pure), and Prepare makes on the host what the plan needs.
// Every start (StartContainer) and boxsh spec take the same steps.

// Gather reads from the host what the plan of the sandbox cfg is made of, and
// returns cfg with it.
//
// It reads:
//
//   - the caller's uid and gid, and the groups the user namespace maps;
//   - the host facts;
//   - the protected paths, from the caller's home directory home;
//   - the file rules, resolved;
//   - boxsh-init's fork-server library (plan.ModeServe).
//
// For a sandbox that boxsh prepares (plan.TargetStart, plan.TargetBundle), a
// placeholder that another running sandbox holds is a placeholder here too.
//
// Gather refuses a sandbox that could write boxsh's own settings, and a
// --cache directory that a wr bind of it would not leave writable whole. For a
// sandbox that boxsh prepares, it leaves running the walk of the cow binds'
// SRC for files the user namespace could not copy up. Found.Check returns that
// walk's refusal, which must stop the sandbox before its first process runs.
// Gather changes nothing on the host.
func Gather(cfg plan.Config, home string) (plan.Config, *Found, error) {
	cfg.UID, cfg.GID = uint32(os.Getuid()), uint32(os.Getgid())
	cfg.Host = gatherHostFacts()
	protection, err := GatherProtection(cfg.Sandbox, home, cfg.Cwd, ProtectEntries(cfg.Policy)...)
	if err != nil {
		return cfg, nil, err
	}
	starttrace.Mark("front.protect")
	cfg.Protect = protection.Paths
	if err := checkConfigHidden(cfg.Sandbox, cfg.Protect, home); err != nil {
		return cfg, nil, err
	}
	if err := checkCache(cfg.Sandbox, home, ProtectEntries(cfg.Policy)); err != nil {
		return cfg, nil, err
	}
	if cfg.Rules, err = resolveFileRules(cfg.Sandbox, cfg.Policy, home, cfg.Cwd); err != nil {
		return cfg, nil, err
	}
	starttrace.Mark("front.rules")
	cfg.Groups = MappedGroups()
	if cfg.Mode == plan.ModeServe {
		cfg.ForkServer = proc.FindForkServer(cfg.InitPath)
	}
	found := &Found{Protection: protection, cowGroups: make(chan error, 1)}
	if cfg.Target == plan.TargetPrint {
		found.cowGroups <- nil
		return cfg, found, nil
	}
	shareHeldPlaceholders(cfg.Protect)
	go func(binds []policy.Bind, groups []uint32) {
		found.cowGroups <- checkCowGroups(binds, groups)
	}(cfg.Sandbox.Binds, cfg.Groups)
	return cfg, found, nil
}

// Found is what Gather found besides the plan's config.
type Found struct {
	// Protection is what GatherProtection found (the repositories among
	// it, for the warning about new ones at the end).
	Protection Protection
	// cowGroups receives the refusal of checkCowGroups.
	cowGroups chan error
}

// Check waits for the check Gather left running, of the files a cow bind
// could not copy up, and returns its refusal, if any. It may be called
// once.
func (f *Found) Check() error { return <-f.cowGroups }

// Prepare makes on the host what the plan pl needs before its sandbox starts.
//
// root is the directory that a relative root path of the spec is in: a bundle,
// or the sandbox's state directory. Prepare makes:
//
//   - the root directory, with its mount points and symlinks (plan.Plan.Root),
//     and the plan's files;
//   - the placeholders;
//   - the directories above the missing protected paths;
//   - the cow directories.
//
// It is the one step of a start that changes the host. It never writes through
// a symlink in root. Preparing the same root again is harmless, since a bundle
// may be written again.
func Prepare(root string, pl *plan.Plan) error {
	if err := checkOwnDir(root); err != nil {
		return err
	}
	if err := os.MkdirAll(root, 0o755); err != nil {
		return err
	}
	rootfs := pl.Spec.Root.Path
	if !filepath.IsAbs(rootfs) {
		rootfs = filepath.Join(root, rootfs)
	}
	if err := prepareRootfs(rootfs, pl.Root); err != nil {
		return fmt.Errorf("prepare %s: %w", rootfs, err)
	}
	if err := resetDir(filepath.Join(rootfs, initproto.BoxshDir)); err != nil {
		return fmt.Errorf("prepare %s: %w", rootfs, err)
	}
	if err := writePlanFiles(rootfs, pl.Files); err != nil {
		return err
	}
	if pl.Placeholders != "" {
		if err := preparePlaceholders(pl.Placeholders); err != nil {
			return fmt.Errorf("prepare %s: %w", pl.Placeholders, err)
		}
	}
	if err := makePlaceholderDirs(pl.Protect); err != nil {
		return err
	}
	if err := prepareCowDirs(pl.Cow); err != nil {
		return err
	}
	return checkCowUpperFS(pl.Cow)
}
