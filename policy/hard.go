package policy

import (
	"path"
	"slices"
	"strings"
)

// ProtectedEntry is one entry of the protected list: a path that no setting
// makes writable.
//
// It applies in every writable or copy-on-write area and at any depth, because
// a program on the host runs code from it later.
type ProtectedEntry struct {
	// Path is a name or a relative path (".bashrc", ".git/config"),
	// matched at any depth. With a trailing "/" it is a directory and
	// everything below it (".vscode/").
	Path string
	// Reason is the attack the entry stops, for messages and the docs.
	Reason string
	// AtRoot tells that the entry cannot be created at the root of a
	// writable bind either. When it is missing there, boxsh covers it with
	// an empty read-only placeholder, because tools read these from a
	// project's root. Elsewhere the entries are kept read-only where they
	// exist.
	AtRoot bool
}

// ProtectedPaths is the protected list (see docs/security.md, "Protected
// paths"). The git entries are about the .git directory of a repository;
// the runtime applies them to every repository it finds (gitfiles and
// submodules' git directories included).
var ProtectedPaths = []ProtectedEntry{
	// Shell start-up files: every new shell of the user runs them.
	{".bashrc", "a shell start-up file: every new shell of the user runs it", false},
	{".bash_profile", "a shell start-up file: every login shell runs it", false},
	{".bash_login", "a shell start-up file: a login bash runs it", false},
	{".bash_logout", "a shell start-up file: bash runs it at logout", false},
	{".bash_aliases", "sourced by the usual ~/.bashrc: every new shell runs it", false},
	{".profile", "a shell start-up file: every login shell runs it", false},
	{".zshrc", "a shell start-up file: every interactive zsh runs it", false},
	{".zshenv", "a shell start-up file: every zsh runs it, scripts too", false},
	{".zprofile", "a shell start-up file: every login zsh runs it", false},
	{".zlogin", "a shell start-up file: every login zsh runs it", false},
	{".config/fish/", "fish's start-up files and functions: every fish runs them", false},
	{".config/zsh/", "zsh's start-up files where ZDOTDIR points there (the usual XDG set-up): every zsh runs them", false},
	{".config/bash/", "bash start-up files that the usual XDG set-ups source from ~/.bashrc", false},
	{".local/bin/", "on PATH before /usr/bin: a planted git or ls shadows the real one", false},
	{".config/systemd/user/", "user services: the host's systemd starts them", false},
	{".local/share/systemd/user/", "user services: the host's systemd starts them", false},
	{".config/environment.d/", "the environment of every user service (LD_PRELOAD, PATH)", false},
	{".config/autostart/", "desktop autostart entries: the session starts them at login", false},

	// git: configuration runs programs (core.fsmonitor, core.hooksPath,
	// core.sshCommand, core.pager, aliases, filter and diff drivers).
	{".gitconfig", "the user's git configuration: core.fsmonitor, core.hooksPath, aliases run programs", false},
	{".config/git/", "the user's git configuration (config, attributes): core.fsmonitor, core.hooksPath, aliases run programs", false},
	{".gitmodules", "submodule definitions: update = !command runs a program, URLs redirect fetches", true},
	{".git/config", "the repository's configuration: core.fsmonitor (run by git status), core.hooksPath, aliases run programs", false},
	{".git/hooks/", "git runs hooks at commit, checkout, merge and push", false},
	{".git/commondir", "redirects the repository to another directory, whose config and hooks git then uses", false},
	{".git/config.worktree", "per-worktree configuration (extensions.worktreeConfig): runs programs like config", false},
	{".git/worktrees/", "linked worktrees' git directories: their commondir and config.worktree", false},
	{".git/info/", "info/attributes selects filter and diff drivers, which run programs", false},

	// Editors, agents and tools that run commands from a project.
	{".mcp.json", "MCP servers: commands the agent's client starts on the host", true},
	{".vscode/", "VS Code tasks, launch configurations and settings that run programs", true},
	{".idea/", "JetBrains run configurations and external tools", true},
	{".claude/", "Claude Code settings (hooks are shell commands run on the host), commands and agents", true},
	{".cursor/", "Cursor settings, MCP servers and hooks", true},
	{".devcontainer/", "dev container definitions: initializeCommand runs on the host", true},
	{".ripgreprc", "ripgrep's flags (--pre runs a program on every file searched)", false},
	{".npmrc", "npm settings: script-shell and git name programs npm runs", false},

	// boxsh's own policy: settings the next session starts with.
	{".boxsh/", "boxsh's project settings: the next session's policy", true},
	{".config/boxsh/", "the user's boxsh settings: every session's policy", false},

	// Credentials and their programs (with a writable home).
	{".ssh/", "authorized_keys lets a key in; config's ProxyCommand runs a program", false},
	{".gnupg/", "gpg's configuration names programs it runs; the user's keys", false},
	{".aws/", "credential_process in the AWS configuration runs a program; credentials", false},
	{".config/gcloud/", "gcloud's configuration and credentials", false},
	{".pip/pip.conf", "pip's index: a planted one redirects installs", false},
	{".cargo/credentials.toml", "cargo's registry tokens", false},
}

// HardDeniedWrites are the paths of ProtectedPaths, the form the macOS
// profile takes them in.
var HardDeniedWrites = func() []string {
	out := make([]string, len(ProtectedPaths))
	for i, e := range ProtectedPaths {
		out[i] = e.Path
	}
	return out
}()

// gitControl are the entries of a git directory that can make git run a
// program (see the .git/ entries of ProtectedPaths), as names.
var gitControl = []string{"config", "hooks", "commondir", "config.worktree", "worktrees", "info"}

// IsProtected tells whether rel is, or is under, an entry of the protected
// list, and why.
//
// rel is a slash-separated path relative to a writable or copy-on-write area.
// The list is ProtectedPaths plus the user's extra entries, such as the
// policy's filesystem.protect. This is the rule for changes applied back to
// the host (cow): a change to a protected path must not be applied.
//
// Entries match at any depth. Besides the list, these are protected:
//
//   - in a repository's .git directory, the git control files of submodules'
//     git directories (.git/modules/NAME/config, hooks, ...);
//   - ".git" itself (rel ends in a .git component): creating or replacing it
//     makes a new repository, whose configuration could run programs.
//
// Changes inside an existing .git directory other than its control files
// (objects, refs, the index) are not protected.
func IsProtected(rel string, extra ...string) (reason string, ok bool) {
	rel = strings.Trim(path.Clean("/"+strings.ReplaceAll(rel, `\`, "/")), "/")
	if rel == "" {
		return "", false
	}
	c := strings.Split(rel, "/")
	for i := range c {
		for _, e := range ProtectedPaths {
			if matchEntry(c[i:], e.Path) {
				return e.Path + ": " + e.Reason, true
			}
		}
		for _, e := range extra {
			if matchEntry(c[i:], e) {
				return e + ": protected by the policy (filesystem.protect)", true
			}
		}
		if c[i] != ".git" {
			continue
		}
		if i == len(c)-1 {
			return ".git: a new or replaced repository, whose configuration and hooks run programs", true
		}
		// A submodule's git directory: .git/modules/NAME.../CONTROL.
		if c[i+1] == "modules" {
			for _, x := range c[i+2 : len(c)-1] {
				if slices.Contains(gitControl, x) {
					return ".git/modules/.../" + x + ": a submodule's git control file, which can make git run a program", true
				}
			}
			if last := c[len(c)-1]; len(c) > i+3 && slices.Contains(gitControl, last) {
				return ".git/modules/.../" + last + ": a submodule's git control file, which can make git run a program", true
			}
		}
	}
	return "", false
}

// IsProtectedAt is IsProtected for the path rel of an area whose root is the
// host directory root.
//
// rel is also protected by where it is on the host, so an entry whose place
// starts above the root is matched. For example, autostart/x.desktop of a
// copy-on-write ~/.config is ~/.config/autostart/x.desktop.
func IsProtectedAt(root, rel string, extra ...string) (reason string, ok bool) {
	if reason, ok := IsProtected(rel, extra...); ok || !strings.HasPrefix(root, "/") {
		return reason, ok
	}
	rel = strings.Trim(path.Clean("/"+strings.ReplaceAll(rel, `\`, "/")), "/")
	if rel == "" {
		return "", false
	}
	return IsProtected(path.Join(root, rel), extra...)
}

// matchEntry tells whether the components c start with the entry e: the
// entry exactly, or anything below it when e is a directory ("dir/").
func matchEntry(c []string, e string) bool {
	dir := strings.HasSuffix(e, "/")
	ec := strings.Split(strings.Trim(e, "/"), "/")
	if len(c) < len(ec) || (!dir && len(c) != len(ec)) {
		return false
	}
	return slices.Equal(c[:len(ec)], ec)
}

// WritableHomeCaches are the dot entries of a writable home that stay writable
// (see docs/security.md).
//
// They are package and build caches that commands in the sandbox fill. The
// other dot entries at the top of the home, ~/.config and ~/.local among them,
// are read-only.
var WritableHomeCaches = []string{".cache", ".npm", ".cargo/registry", ".cargo/git", ".m2/repository", ".gradle/caches"}
