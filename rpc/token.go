package rpc

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/boxsh/boxsh/internal/front/ownfile"
)

// LoadOrCreateToken returns the bearer token kept in path.
//
// If the file exists, the token is its first line. Otherwise a new random
// token is written there, readable by the user only. created tells which.
//
// An existing file is used only if it cannot have been planted or read
// by another user. It is opened without following a symbolic link, and
// must be a regular file owned by the user with no group or other
// permission bits.
func LoadOrCreateToken(path string) (token string, created bool, err error) {
	for range 2 {
		token, err = readToken(path)
		if !errors.Is(err, fs.ErrNotExist) {
			return token, false, err
		}
		token, err = newToken()
		if err != nil {
			return "", false, err
		}
		// Made only where nothing is: a file or link planted meanwhile
		// is read (and checked) on the next turn, never written through.
		err = writeToken(path, token)
		if !errors.Is(err, fs.ErrExist) {
			return token, err == nil, err
		}
	}
	return "", false, fmt.Errorf("token file %s: made and removed again while boxsh started: use a path in a directory only you can write", path)
}

// readToken reads the token of an existing token file path, refusing a
// file another user could have written or read.
func readToken(path string) (string, error) {
	fd, err := syscall.Open(path, syscall.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK|syscall.O_CLOEXEC, 0)
	if err != nil {
		if errors.Is(err, syscall.ELOOP) {
			return "", ownfile.SymlinkError("token file", path)
		}
		if errors.Is(err, fs.ErrNotExist) {
			return "", fs.ErrNotExist
		}
		return "", fmt.Errorf("token file %s: %w", path, err)
	}
	f := os.NewFile(uintptr(fd), path)
	defer f.Close()
	var st syscall.Stat_t
	if err := syscall.Fstat(fd, &st); err != nil {
		return "", fmt.Errorf("token file %s: %w", path, err)
	}
	if err := checkTokenFile(path, uint32(st.Mode), st.Uid, uint32(os.Geteuid())); err != nil {
		return "", err
	}
	b, err := io.ReadAll(io.LimitReader(f, 4096))
	if err != nil {
		return "", fmt.Errorf("token file %s: %w", path, err)
	}
	token := strings.TrimSpace(strings.SplitN(string(b), "\n", 2)[0])
	if token == "" {
		return "", fmt.Errorf("token file %s is empty", path)
	}
	return token, nil
}

// checkTokenFile tells why an existing token file path, of the kernel's
// mode and owner uid, must not be used by the user me (see ownfile.Check).
// Its error about the mode adds that a token others could read must be
// replaced.
func checkTokenFile(path string, mode, uid, me uint32) error {
	err := ownfile.Check("token file", path, mode, uid, me)
	if err != nil && mode&syscall.S_IFMT == syscall.S_IFREG && uid == me {
		return fmt.Errorf("%w (and make a new token if others could read it)", err)
	}
	return err
}

// newToken is a new random token.
func newToken() (string, error) {
	var raw [32]byte
	if _, err := rand.Read(raw[:]); err != nil {
		return "", fmt.Errorf("token: %w", err)
	}
	return hex.EncodeToString(raw[:]), nil
}

// writeToken makes the token file path, mode 0600, where nothing is
// (fs.ErrExist otherwise; a symbolic link is never followed).
func writeToken(path, token string) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW, 0o600)
	if err != nil {
		if errors.Is(err, fs.ErrExist) {
			return fs.ErrExist
		}
		return fmt.Errorf("token file: %w", err)
	}
	if _, err := f.WriteString(token + "\n"); err != nil {
		f.Close()
		return fmt.Errorf("token file %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("token file %s: %w", path, err)
	}
	return nil
}

// CreateToken makes a new random token and writes it to path, readable by
// the user only. It replaces any file already there, whose token is never
// used: the file may be left by a process of the same id that died, or
// planted.
func CreateToken(path string) (string, error) {
	token, err := newToken()
	if err != nil {
		return "", err
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return "", fmt.Errorf("token file: %w", err)
	}
	if err := writeToken(path, token); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return "", fmt.Errorf("token file %s: made again by another process while boxsh replaced it", path)
		}
		return "", err
	}
	return token, nil
}

// DefaultTokenPath returns where the HTTP transport keeps the token it
// makes when none is given.
//
// The file is named after the process, in boxsh's private state directory
// ($XDG_STATE_HOME/boxsh, default ~/.local/state/boxsh). DefaultTokenPath
// makes that directory, mode 0700, when it is missing.
func DefaultTokenPath() (string, error) {
	dir := os.Getenv("XDG_STATE_HOME")
	if dir == "" || !filepath.IsAbs(dir) {
		home, err := os.UserHomeDir()
		if err != nil {
			return "", fmt.Errorf("token directory: %w", err)
		}
		dir = filepath.Join(home, ".local", "state")
	}
	dir = filepath.Join(dir, "boxsh")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", fmt.Errorf("token directory: %w", err)
	}
	fi, err := os.Stat(dir)
	if err != nil {
		return "", fmt.Errorf("token directory: %w", err)
	}
	if fi.Mode().Perm()&0o077 != 0 {
		return "", fmt.Errorf("token directory %s is readable by others (mode %v): chmod 700 it", dir, fi.Mode().Perm())
	}
	return filepath.Join(dir, fmt.Sprintf("http-%d.token", os.Getpid())), nil
}
