// Package policy models what a sandbox may see and do.
//
// A Sandbox is built from the command line: the --sandbox, --new-net-ns,
// --bind and --try flags.
package policy

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// BindMode is how a bind exposes a host path.
type BindMode string

// The bind modes of --bind MODE:...
const (
	ReadOnly    BindMode = "ro"
	ReadWrite   BindMode = "wr"
	CopyOnWrite BindMode = "cow"
)

// Bind exposes a host path inside the sandbox.
type Bind struct {
	Mode BindMode
	// Src is the host path (for cow, the read-only lower layer).
	Src string
	// Dst is where the bind appears inside. For ro and wr it is Src
	// itself. For cow it is the directory that receives the writes, where
	// the merged view is mounted.
	Dst string
}

// String is the flag form of b.
func (b Bind) String() string {
	if b.Mode == CopyOnWrite {
		return fmt.Sprintf("cow:%s:%s", b.Src, b.Dst)
	}
	return fmt.Sprintf("%s:%s", b.Mode, b.Src)
}

// ErrUsage marks errors in how boxsh was invoked (exit status 2).
var ErrUsage = errors.New("usage")

// ErrBind marks errors in the binds (--bind values, their paths, --try).
// boxsh exits with status 1 for them, as boxsh v3 does; other usage errors
// exit with 2.
var ErrBind = errors.New("bind")

// bindError is an error that is ErrBind.
type bindError struct{ msg string }

func (e bindError) Error() string        { return e.msg }
func (e bindError) Is(target error) bool { return target == ErrBind }

// BindErrorf formats an error that is ErrBind.
func BindErrorf(format string, args ...any) error {
	return bindError{fmt.Sprintf(format, args...)}
}

// ParseBind parses the value of --bind: ro:PATH, wr:PATH or cow:SRC:DST.
// Relative paths are taken from dir (the working directory).
func ParseBind(spec, dir string) (Bind, error) {
	mode, rest, ok := strings.Cut(spec, ":")
	if !ok || rest == "" {
		return Bind{}, BindErrorf("--bind %q: expected ro:PATH, wr:PATH or cow:SRC:DST", spec)
	}
	abs := func(p string) string {
		if !filepath.IsAbs(p) {
			p = filepath.Join(dir, p)
		}
		return filepath.Clean(p)
	}
	switch BindMode(mode) {
	case ReadOnly, ReadWrite:
		p := abs(rest)
		return Bind{Mode: BindMode(mode), Src: p, Dst: p}, nil
	case CopyOnWrite:
		src, dst, ok := strings.Cut(rest, ":")
		if !ok || src == "" || dst == "" {
			return Bind{}, BindErrorf("--bind %q: cow needs cow:SRC:DST", spec)
		}
		return Bind{Mode: CopyOnWrite, Src: abs(src), Dst: abs(dst)}, nil
	}
	return Bind{}, BindErrorf("--bind %q: unknown mode %q (use ro, wr or cow)", spec, mode)
}

// Sandbox is the sandbox part of the command line.
type Sandbox struct {
	// Enabled is --sandbox (implied by --try).
	Enabled bool
	// NewNetNS is --new-net-ns: a network namespace with only loopback.
	NewNetNS bool
	// Binds are the --bind flags in order.
	Binds []Bind
	// Try is --try: a copy-on-write shell on the working directory.
	Try bool
	// InPlace is --in-place (and --rpc --try's). Each cow bind's merged
	// view is shown at its SRC too, so the project keeps its own path
	// inside, and a command started in SRC starts there rather than under
	// DST.
	InPlace bool
	// HostSystem shows the host's whole /etc, /var and /run read-only, as
	// boxsh v3 does, rather than the selected /etc entries. --try sets it,
	// so that a try shell behaves like the host (package databases, the
	// resolver's files under /run).
	HostSystem bool
	// Cache is --cache: a host directory shown writable at the home's
	// .cache, where the tools' caches go (see plan.CacheEnv).
	Cache string
	// Home, set by the runtime (host.ResolveSandbox), is the caller's
	// home directory. The sandbox gets an empty, writable tmpfs of its own
	// there when no bind shows it or a directory above it: tools' caches
	// and files written to $HOME stay in the sandbox and go with it.
	Home string
}

// Validate checks the binds against the host.
//
// Sources must exist, no destination may appear twice, and the --cache
// directory must be a directory. (The command line turns the sandbox on for
// binds and the network flags: unlike boxsh v3, none is ignored.)
func (s Sandbox) Validate() error {
	seen := make(map[string]Bind)
	for _, b := range s.Binds {
		if _, err := os.Stat(b.Src); err != nil {
			return BindErrorf("--bind %s: source %s: %v", b, b.Src, errors.Unwrap(err))
		}
		if prev, dup := seen[b.Dst]; dup {
			return BindErrorf("--bind %s: %s is already bound by --bind %s", b, b.Dst, prev)
		}
		seen[b.Dst] = b
	}
	if s.Cache != "" {
		fi, err := os.Stat(s.Cache)
		if err != nil {
			return BindErrorf("--cache %s: %v", s.Cache, errors.Unwrap(err))
		}
		if !fi.IsDir() {
			return BindErrorf("--cache %s: not a directory", s.Cache)
		}
	}
	return nil
}
