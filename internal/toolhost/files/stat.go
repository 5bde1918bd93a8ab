package files

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"

	"github.com/boxsh/boxsh/internal/tool"
)

// Stat runs the stat tool: what is at a path, without following a final
// symbolic link or reading the object. A path that does not exist (or
// crosses a non-directory) is a result with Exists false; one that cannot
// be looked up is a failure.
func Stat(ctx context.Context, args tool.StatArgs, deniedBy DeniedBy) tool.Result {
	if err := ctx.Err(); err != nil {
		return tool.Errorf("stat: %s: %v", args.Path, err)
	}
	path, fi, err := lresolve(args.Path)
	abs, aerr := filepath.Abs(path)
	if aerr != nil {
		return tool.Errorf("stat: %s: %s", args.Path, tool.ErrorText(aerr))
	}
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
			return tool.StructuredResult(tool.StatOutput{Path: abs, Exists: false})
		}
		return tool.Errorf("stat: %s: %s", args.Path, tool.ErrorText(err))
	}
	denied := ""
	if deniedBy != nil {
		// Rules name real paths: resolve the directories on the way.
		real := abs
		if dir, err := filepath.EvalSymlinks(filepath.Dir(abs)); err == nil {
			real = filepath.Join(dir, filepath.Base(abs))
		}
		denied = deniedBy(real)
	}
	return tool.StructuredResult(tool.StatOf(abs, Info(path, fi, denied)))
}

// lresolve is resolve without following a final symbolic link.
func lresolve(path string) (string, fs.FileInfo, error) {
	fi, err := os.Lstat(path)
	if err == nil || !errors.Is(err, fs.ErrNotExist) {
		return path, fi, err
	}
	folded, _, ferr := resolve(path)
	if ferr != nil || folded == path {
		return path, nil, err
	}
	fi, ferr = os.Lstat(folded)
	if ferr != nil {
		return path, nil, err
	}
	return folded, fi, nil
}
