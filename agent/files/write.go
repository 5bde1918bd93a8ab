package files

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/boxsh/boxsh/tool"
)

// Write runs the write tool: it creates or replaces the file, creating
// parent directories as needed.
func Write(ctx context.Context, args tool.WriteArgs) tool.Result {
	data := []byte(args.Content)
	if args.Encoding == "base64" {
		var err error
		if data, err = base64.StdEncoding.DecodeString(args.Content); err != nil {
			return tool.Errorf("write: content is not valid base64: %v", err)
		}
	}
	if err := ctx.Err(); err != nil {
		return tool.Errorf("write: %s: %v", args.Path, err)
	}
	if err := replaceFile(args.Path, data, true); err != nil {
		return tool.Errorf("write: cannot create file: %s: %s", args.Path, tool.ErrorText(err))
	}
	return tool.TextResult(fmt.Sprintf("written %d bytes", len(data)))
}

// replaceFile replaces the contents of path atomically: the data goes to a
// temporary file in the same directory that is then renamed over path, so a
// crash never leaves a half-written file. A symbolic link is followed (its
// target is replaced, the link kept), an existing file keeps its mode, and
// targets that are not regular files (devices, FIFOs) are written in place.
func replaceFile(path string, data []byte, mkdirs bool) error {
	target := path
	mode := fs.FileMode(0o644)
	if fi, err := os.Lstat(path); err == nil && fi.Mode()&fs.ModeSymlink != 0 {
		if resolved, err := filepath.EvalSymlinks(path); err == nil {
			target = resolved
		} else if dest, err := os.Readlink(path); err == nil {
			// A dangling link: create its target.
			if !filepath.IsAbs(dest) {
				dest = filepath.Join(filepath.Dir(path), dest)
			}
			target = dest
		}
	}
	if fi, err := os.Stat(target); err == nil {
		if fi.IsDir() {
			return &fs.PathError{Op: "write", Path: path, Err: errors.New("is a directory")}
		}
		if !fi.Mode().IsRegular() {
			return os.WriteFile(target, data, 0)
		}
		mode = fi.Mode().Perm()
	}
	dir := filepath.Dir(target)
	if mkdirs {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
	}
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(target)+".boxsh-*")
	if err != nil {
		if errors.Is(err, fs.ErrPermission) {
			// The directory is closed to new files but the file itself
			// may still be writable: write it in place.
			if _, serr := os.Stat(target); serr == nil {
				return os.WriteFile(target, data, 0)
			}
		}
		return err
	}
	name := tmp.Name()
	cleanup := func(err error) error {
		_ = tmp.Close()
		_ = os.Remove(name)
		return err
	}
	if _, err := tmp.Write(data); err != nil {
		return cleanup(err)
	}
	if err := tmp.Chmod(mode); err != nil {
		return cleanup(err)
	}
	if err := tmp.Sync(); err != nil {
		return cleanup(err)
	}
	if err := tmp.Close(); err != nil {
		return cleanup(err)
	}
	if err := os.Rename(name, target); err != nil {
		_ = os.Remove(name)
		return err
	}
	return nil
}
