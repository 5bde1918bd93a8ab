package rpc

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// LoadOrCreateToken returns the bearer token kept in path: the file's
// first line when it exists, else a new random token written there,
// readable by the user only. created tells which.
func LoadOrCreateToken(path string) (token string, created bool, err error) {
	b, err := os.ReadFile(path)
	switch {
	case err == nil:
		token = strings.TrimSpace(strings.SplitN(string(b), "\n", 2)[0])
		if token == "" {
			return "", false, fmt.Errorf("token file %s is empty", path)
		}
		return token, false, nil
	case !errors.Is(err, fs.ErrNotExist):
		return "", false, fmt.Errorf("token file: %w", err)
	}
	token, err = CreateToken(path)
	return token, err == nil, err
}

// CreateToken makes a new random token and writes it to path, readable by
// the user only, replacing a file left there (by a process of the same id
// that died, or planted: its token is never used).
func CreateToken(path string) (string, error) {
	var raw [32]byte
	if _, err := rand.Read(raw[:]); err != nil {
		return "", fmt.Errorf("token: %w", err)
	}
	token := hex.EncodeToString(raw[:])
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return "", fmt.Errorf("token file: %w", err)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW, 0o600)
	if err != nil {
		return "", fmt.Errorf("token file: %w", err)
	}
	if _, err := f.WriteString(token + "\n"); err != nil {
		f.Close()
		return "", fmt.Errorf("token file %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return "", fmt.Errorf("token file %s: %w", path, err)
	}
	return token, nil
}

// DefaultTokenPath is where the HTTP transport keeps the token it makes
// when none is given: a file named after the process in boxsh's private
// state directory ($XDG_STATE_HOME/boxsh, default ~/.local/state/boxsh),
// made 0700 when missing.
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
