package files

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"time"
	"unsafe"

	"github.com/boxsh/boxsh/internal/tool"
)

// Write runs the write tool: it creates or replaces the file, creating
// parent directories as needed.
func Write(ctx context.Context, args tool.WriteArgs) tool.Result {
	// The content as bytes without a copy (of up to tens of megabytes):
	// data is only read.
	data := unsafe.Slice(unsafe.StringData(args.Content), len(args.Content))
	if args.Encoding == "base64" {
		var err error
		if data, err = base64.StdEncoding.DecodeString(args.Content); err != nil {
			return tool.Errorf("write: content is not valid base64: %v", err)
		}
	}
	if err := ctx.Err(); err != nil {
		return tool.Errorf("write: %s: %v", args.Path, err)
	}
	if err := replaceFile(ctx, args.Path, data, true); err != nil {
		return tool.Errorf("write: cannot create file: %s: %s", args.Path, tool.ErrorText(err))
	}
	return tool.TextResult(fmt.Sprintf("written %d bytes", len(data)))
}

// replaceFile replaces the contents of path atomically, until ctx ends.
//
// The data goes to a new file in the same directory that then takes path's
// place, so a crash never leaves a half-written file. Where the file system
// allows it, the new file is unnamed (O_TMPFILE) until it is complete, so an
// interrupted write leaves nothing behind. Elsewhere it is a temporary
// .NAME.boxsh-* file, removed on failure (not if boxsh-init is killed).
//
// A symbolic link is followed: its target is replaced, and the link kept. An
// existing file keeps its mode. Targets that are not regular files (devices,
// FIFOs) are written in place (see writeInPlace).
func replaceFile(ctx context.Context, path string, data []byte, mkdirs bool) error {
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
	exists := false
	if fi, err := os.Stat(target); err == nil {
		if fi.IsDir() {
			return &fs.PathError{Op: "write", Path: path, Err: errors.New("is a directory")}
		}
		if !fi.Mode().IsRegular() {
			return writeInPlace(ctx, target, data, fi.Mode())
		}
		mode = fi.Mode().Perm()
		exists = true
		// The replaced file is freed after the call, not during it.
		defer holdInode(target)()
	}
	dir := filepath.Dir(target)
	if mkdirs {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
	}
	tmp, err := createUnnamed(dir)
	unnamed := err == nil
	if errors.Is(err, errors.ErrUnsupported) {
		tmp, err = os.CreateTemp(dir, tempPrefix(target)+"*")
	}
	if err != nil {
		if errors.Is(err, fs.ErrPermission) && exists {
			// The directory is closed to new files but the file itself
			// may still be writable: write it in place.
			return os.WriteFile(target, data, 0)
		}
		return err
	}
	if unnamed {
		defer tmp.Close()
		if err := fill(tmp, data, mode); err != nil {
			return err
		}
		return publish(tmp, target, exists)
	}
	name := tmp.Name()
	err = fill(tmp, data, mode)
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(name, target)
	}
	if err != nil {
		_ = os.Remove(name)
	}
	return err
}

// writeInPlace writes data to target, a file that is not regular (a
// device, a FIFO), as it is. A FIFO is written without waiting in the
// kernel, which nothing could interrupt: its open, which would wait for a
// reader, is tried again until one comes, and its writes wait in the
// runtime's poller. When ctx ends (the call was cancelled) both stop, and
// the call's slot is free again.
func writeInPlace(ctx context.Context, target string, data []byte, mode fs.FileMode) error {
	if mode&fs.ModeNamedPipe == 0 {
		return os.WriteFile(target, data, 0)
	}
	f, err := openFIFOWriter(ctx, target)
	if err != nil {
		return err
	}
	stop := context.AfterFunc(ctx, func() { _ = f.SetWriteDeadline(time.Now()) })
	_, err = f.Write(data)
	if !stop() {
		err = ctx.Err()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// openFIFOWriter opens FIFO path for writing once it has a reader, or
// returns ctx's error when ctx ends first.
func openFIFOWriter(ctx context.Context, path string) (*os.File, error) {
	for delay := time.Millisecond; ; delay = min(2*delay, 50*time.Millisecond) {
		// O_NONBLOCK: ENXIO at once while no reader has it open.
		f, err := os.OpenFile(path, os.O_WRONLY|syscall.O_NONBLOCK, 0)
		if !errors.Is(err, syscall.ENXIO) {
			return f, err
		}
		t := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, ctx.Err()
		case <-t.C:
		}
	}
}

// tempPrefix starts the names of temporary files for target.
func tempPrefix(target string) string {
	return filepath.Join(filepath.Dir(target), "."+filepath.Base(target)+".boxsh-")
}

// fill writes data to the new file f, sets its mode and syncs it.
func fill(f *os.File, data []byte, mode fs.FileMode) error {
	if err := writeOut(f, data); err != nil {
		return err
	}
	if err := f.Chmod(mode); err != nil {
		return err
	}
	return f.Sync()
}

// publish puts the complete unnamed file f at target.
//
// A new target is linked at once. An existing one is replaced by rename, which
// needs a name. So f is linked at a temporary name for the two system calls
// until the rename, the only moment an interrupted write could leave it.
func publish(f *os.File, target string, exists bool) error {
	if !exists {
		err := linkUnnamed(f, target)
		if !errors.Is(err, fs.ErrExist) {
			return err
		}
		// Made meanwhile: replace it.
	}
	for range 10 {
		tmp := tempPrefix(target) + strconv.FormatUint(uint64(rand.Uint32()), 10)
		err := linkUnnamed(f, tmp)
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		if err != nil {
			return err
		}
		if err := os.Rename(tmp, target); err != nil {
			_ = os.Remove(tmp)
			return err
		}
		return nil
	}
	return fmt.Errorf("no free temporary name for %s", target)
}
