package policy

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"time"

	"golang.org/x/sys/unix"
)

// A settings file that the sandbox could have written (the project's
// ./.boxsh/policy.json, a --policy file inside a writable bind) only
// narrows the policy, unless the user trusts it: `boxsh policy trust`
// records its path and the SHA-256 of its content in the trust store, in
// the user's boxsh configuration directory, which no sandbox can write.
// A file whose content changed, or that is reached through a symbolic
// link, is not trusted.

// maxSettingsSize bounds what a settings file may hold.
const maxSettingsSize = 1 << 20

// ConfigDir returns the user's boxsh configuration directory,
// $XDG_CONFIG_HOME/boxsh.
//
// As the XDG specification says, it is ~/.config/boxsh when XDG_CONFIG_HOME is
// unset or not an absolute path.
func ConfigDir(home string) string {
	dir := os.Getenv("XDG_CONFIG_HOME")
	if !filepath.IsAbs(dir) {
		dir = filepath.Join(home, ".config")
	}
	return filepath.Join(filepath.Clean(dir), "boxsh")
}

// TrustStorePath is the trust store: trusted.json in ConfigDir.
func TrustStorePath(home string) string {
	return filepath.Join(ConfigDir(home), "trusted.json")
}

// TrustedFile is a settings file the user trusts: its canonical path and
// the SHA-256 of the content trusted.
type TrustedFile struct {
	Path   string    `json:"path"`
	SHA256 string    `json:"sha256"`
	Added  time.Time `json:"added"`
}

// TrustStore is the content of the trust store.
type TrustStore struct {
	Files []TrustedFile `json:"files"`
}

// trusts tells whether the store trusts the file at the canonical path key
// with content of SHA-256 sum.
func (t TrustStore) trusts(key, sum string) bool {
	return slices.ContainsFunc(t.Files, func(f TrustedFile) bool { return f.Path == key && f.SHA256 == sum })
}

// LoadTrustStore reads the trust store at path; a missing store is empty.
func LoadTrustStore(path string) (TrustStore, error) {
	var t TrustStore
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return t, nil
	}
	if err != nil {
		return t, fmt.Errorf("trust store: %w", err)
	}
	if err := json.Unmarshal(b, &t); err != nil {
		return t, fmt.Errorf("trust store %s: %w (remove it, then trust the files again)", path, err)
	}
	return t, nil
}

// save writes the store at path atomically (a temporary file renamed over
// it), mode 0600, making its directory (mode 0700) if needed.
func (t TrustStore) save(path string) error {
	b, err := json.MarshalIndent(t, "", "  ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return fmt.Errorf("trust store: %w", err)
	}
	f, err := os.CreateTemp(filepath.Dir(path), ".trusted-*.json")
	if err != nil {
		return fmt.Errorf("trust store: %w", err)
	}
	defer os.Remove(f.Name()) // after the rename: nothing
	err = f.Chmod(0o600)      // CreateTemp's 0600, whatever the umask
	if err == nil {
		_, err = f.Write(append(b, '\n'))
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(f.Name(), path)
	}
	if err != nil {
		return fmt.Errorf("trust store: %w", err)
	}
	return nil
}

// SettingsFile is a settings file as read once.
//
// It holds the content, the SHA-256 of that content, and the canonical path
// that trust is recorded under.
type SettingsFile struct {
	// Path is the path it was read from.
	Path string
	// Content is what was read: what is hashed is what is parsed.
	Content []byte
	// SHA256 is the hex SHA-256 of Content.
	SHA256 string
	// Key is the canonical path, when the file can be trusted at all.
	Key string
	// Untrustable says why it cannot be (a symbolic link), or is empty.
	Untrustable string
}

// ReadSettingsFile reads the settings file at path once.
//
// Its key is the path with the directories above its own directory resolved.
// For the file to be trustable, neither it nor its directory may be a symbolic
// link. Otherwise a project's .boxsh linked to another project's would borrow
// that project's trust, with relative rules now meaning other paths. The file
// must be a regular file of at most 1 MiB; a FIFO or device is refused,
// without blocking.
func ReadSettingsFile(path string) (SettingsFile, error) {
	sf := SettingsFile{Path: path}
	abs, err := filepath.Abs(path)
	if err != nil {
		return sf, fmt.Errorf("policy %s: %w", path, err)
	}
	f, key, err := openNoLinks(abs)
	if errors.Is(err, unix.ELOOP) || errors.Is(err, unix.ENOTDIR) {
		sf.Untrustable = "it or its directory is a symbolic link"
		f, err = os.OpenFile(abs, os.O_RDONLY|unix.O_NONBLOCK, 0)
	}
	if err != nil {
		return sf, fmt.Errorf("policy %s: %w", path, err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return sf, fmt.Errorf("policy %s: %w", path, err)
	}
	if !fi.Mode().IsRegular() {
		return sf, fmt.Errorf("policy %s: not a regular file", path)
	}
	b, err := io.ReadAll(io.LimitReader(f, maxSettingsSize+1))
	if err != nil {
		return sf, fmt.Errorf("policy %s: %w", path, err)
	}
	if len(b) > maxSettingsSize {
		return sf, fmt.Errorf("policy %s: larger than %d bytes", path, maxSettingsSize)
	}
	sum := sha256.Sum256(b)
	sf.Content, sf.SHA256 = b, hex.EncodeToString(sum[:])
	if sf.Untrustable == "" {
		sf.Key = key
	}
	return sf, nil
}

// openNoLinks opens abs for reading without following a symbolic link in its
// last two components, and returns its key.
//
// A link there gives ELOOP or ENOTDIR. The key is abs with the directories
// above resolved, and the last two components as they are.
func openNoLinks(abs string) (*os.File, string, error) {
	dir, name := filepath.Split(abs)
	dir = filepath.Clean(dir)
	parent, sub := filepath.Dir(dir), filepath.Base(dir)
	realParent, err := filepath.EvalSymlinks(parent)
	if err != nil {
		return nil, "", err
	}
	pfd, err := unix.Open(realParent, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, "", &os.PathError{Op: "open", Path: realParent, Err: err}
	}
	defer unix.Close(pfd)
	dfd := pfd
	if dir != parent { // not directly under /
		dfd, err = unix.Openat(pfd, sub, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err != nil {
			return nil, "", &os.PathError{Op: "open", Path: dir, Err: err}
		}
		defer unix.Close(dfd)
	}
	fd, err := unix.Openat(dfd, name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, "", &os.PathError{Op: "open", Path: abs, Err: err}
	}
	key := filepath.Join(realParent, sub, name)
	if dir == parent {
		key = filepath.Join(realParent, name)
	}
	return os.NewFile(uintptr(fd), abs), key, nil
}

// Trust records the settings file at path, as it is now, in the trust
// store at storePath; it must parse. It returns the entry.
func Trust(storePath, path string) (TrustedFile, error) {
	sf, err := ReadSettingsFile(path)
	if err != nil {
		return TrustedFile{}, err
	}
	if sf.Untrustable != "" {
		return TrustedFile{}, fmt.Errorf("policy %s: cannot be trusted: %s (trust the file it points to, or copy it here)", path, sf.Untrustable)
	}
	if _, err := parseSettings(path, sf.Content); err != nil {
		return TrustedFile{}, err
	}
	t, err := LoadTrustStore(storePath)
	if err != nil {
		return TrustedFile{}, err
	}
	t.Files = slices.DeleteFunc(t.Files, func(f TrustedFile) bool { return f.Path == sf.Key })
	entry := TrustedFile{Path: sf.Key, SHA256: sf.SHA256, Added: time.Now().UTC().Truncate(time.Second)}
	t.Files = append(t.Files, entry)
	return entry, t.save(storePath)
}

// Untrust removes the trust of the settings file at path from the store at
// storePath.
//
// It tells whether there was any. The file need not exist any more.
func Untrust(storePath, path string) (bool, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return false, err
	}
	keys := []string{abs}
	if sf, err := ReadSettingsFile(abs); err == nil && sf.Key != "" {
		keys = append(keys, sf.Key)
	} else if real, err := filepath.EvalSymlinks(filepath.Dir(filepath.Dir(abs))); err == nil {
		keys = append(keys, filepath.Join(real, filepath.Base(filepath.Dir(abs)), filepath.Base(abs)))
	}
	t, err := LoadTrustStore(storePath)
	if err != nil {
		return false, err
	}
	n := len(t.Files)
	t.Files = slices.DeleteFunc(t.Files, func(f TrustedFile) bool { return slices.Contains(keys, f.Path) })
	if len(t.Files) == n {
		return false, nil
	}
	return true, t.save(storePath)
}
