// Package files implements the read, write, edit, list and stat tools.
package files

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// asciiFold maps the look-alike characters that screenshots and macOS file
// names carry (curly apostrophes, narrow no-break space) to the ASCII ones a
// model is likely to type.
var asciiFold = strings.NewReplacer(
	"\u2018", "'", "\u2019", "'",
	"\u202f", " ", "\u00a0", " ",
)

// resolve returns path, or when path does not exist, the one entry of its
// directory whose name matches after folding look-alike characters (as
// boxsh v3 does). The error is that of the original path.
func resolve(path string) (string, fs.FileInfo, error) {
	fi, err := os.Stat(path)
	if err == nil || !errors.Is(err, fs.ErrNotExist) {
		return path, fi, err
	}
	dir, base := filepath.Split(path)
	if base == "" {
		return path, nil, err
	}
	if dir == "" {
		dir = "."
	}
	want := asciiFold.Replace(base)
	entries, derr := os.ReadDir(dir)
	if derr != nil {
		return path, nil, err
	}
	for _, e := range entries {
		if asciiFold.Replace(e.Name()) == want && e.Name() != base {
			candidate := filepath.Join(dir, e.Name())
			if cfi, cerr := os.Stat(candidate); cerr == nil {
				return candidate, cfi, nil
			}
		}
	}
	return path, nil, err
}
