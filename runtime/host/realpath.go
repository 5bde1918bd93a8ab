package host

import (
	"os"
	"path/filepath"
	goruntime "runtime"
	"slices"
	"strings"
)

// caseInsensitive tells that names are matched without regard to case, as on
// macOS's default file system (APFS).
//
// There RealPath also puts each name in the case it has on disk. It is a
// variable for tests.
var caseInsensitive = goruntime.GOOS == "darwin"

// RealPath returns the clean absolute path p with the symbolic links of its
// longest existing prefix resolved.
//
// It resolves them as filepath.EvalSymlinks and realpath(3) do, and keeps the
// rest, which does not exist yet, as it is. Where names are case-insensitive,
// each existing name is spelled as on disk, as realpath(3) does on macOS and
// EvalSymlinks does not. The macOS sandbox matches paths as spelled, so an
// allow of /users/u would not match /Users/u.
func RealPath(p string) string {
	var rest []string
	for d := filepath.Clean(p); ; d = filepath.Dir(d) {
		if real, err := filepath.EvalSymlinks(d); err == nil {
			if caseInsensitive {
				real = diskCase(real, readNames)
			}
			return filepath.Join(append([]string{real}, rest...)...)
		}
		if d == filepath.Dir(d) {
			return p
		}
		rest = append([]string{filepath.Base(d)}, rest...)
	}
}

// readNames lists the names in the directory dir.
func readNames(dir string) ([]string, error) {
	f, err := os.Open(dir)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return f.Readdirnames(-1)
}

// diskCase spells each name of the existing absolute path p as its directory
// lists it, when p spells it in another case. names lists a directory.
//
// Each name is the name itself when listed, else the one name that differs
// from it only in case. A directory that cannot be listed keeps the rest as
// given.
func diskCase(p string, names func(dir string) ([]string, error)) string {
	parts := strings.Split(strings.TrimPrefix(filepath.Clean(p), "/"), "/")
	dir := "/"
	for i, name := range parts {
		if name == "" {
			continue
		}
		listed, err := names(dir)
		if err != nil {
			return filepath.Join(append([]string{dir}, parts[i:]...)...)
		}
		if !slices.Contains(listed, name) {
			var folded []string
			for _, l := range listed {
				if strings.EqualFold(l, name) {
					folded = append(folded, l)
				}
			}
			if len(folded) == 1 {
				name = folded[0]
			}
		}
		dir = filepath.Join(dir, name)
	}
	return dir
}
