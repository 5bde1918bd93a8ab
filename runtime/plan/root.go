package plan

import (
	"path/filepath"

	"github.com/boxsh/boxsh/internal/initproto"
	"github.com/boxsh/boxsh/internal/pathtree"
)

// RootEntry is an entry of a sandbox's root directory that host.Prepare makes.
//
// It is a directory or an empty file (mount points, or a directory the sandbox
// needs), or a symlink.
type RootEntry struct {
	// Path is its path in the sandbox.
	Path string
	// Dir makes it a directory, Link a symlink to Link, neither an empty
	// file.
	Dir  bool
	Link string
}

// rootEntries returns the entries of the root directory of a sandbox on the
// host host.
//
//   - /proc, /dev, /tmp, /etc and boxsh's directory;
//   - the symlinks of a merged /usr (bin -> usr/bin, ...), and of the /etc
//     entries that are symlinks into /usr or /proc (etcSymlink);
//   - the mount points of the system directories and of the other /etc
//     entries.
//
// The binds' mount points are left to the runtime.
func rootEntries(host HostFacts) []RootEntry {
	var es []RootEntry
	for _, p := range []string{"/proc", "/dev", "/tmp", "/etc", initproto.BoxshDir} {
		es = append(es, RootEntry{Path: p, Dir: true})
	}
	for _, hp := range host.System {
		switch {
		case hp.Link != "":
			es = append(es, RootEntry{Path: hp.Path, Link: hp.Link})
		case hp.Dir:
			es = append(es, RootEntry{Path: hp.Path, Dir: true})
		}
	}
	for _, hp := range host.Etc {
		if etcSymlink(hp) {
			es = append(es, RootEntry{Path: hp.Path, Link: hp.Link})
		} else {
			es = append(es, RootEntry{Path: hp.Path, Dir: hp.Dir})
		}
	}
	return es
}

// etcSymlink tells whether the /etc entry hp is recreated as a symlink in the
// root rather than bound.
//
// It is when hp is a symlink into a tree the sandbox has anyway (/usr, /proc),
// so that readlink still works on it. /etc/localtime, which names the time
// zone, and /etc/mtab are such symlinks. A symlink elsewhere (/etc/resolv.conf
// -> /run/...) is bound, which follows it.
func etcSymlink(hp HostPath) bool {
	if hp.Link == "" {
		return false
	}
	target := hp.Link
	if !filepath.IsAbs(target) {
		target = filepath.Join(filepath.Dir(hp.Path), target)
	}
	target = filepath.Clean(target)
	return pathtree.Within(target, "/usr") || pathtree.Within(target, "/proc")
}
