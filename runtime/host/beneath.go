package host

import (
	"fmt"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

// dirChain is the open directories of a clean absolute path, from "/" down.
//
// Each is opened beneath the one before, without following a link. So a
// directory renamed away and replaced by a link while it is opened stops the
// walk, rather than leading it elsewhere.
type dirChain struct {
	paths []string
	fds   []int
}

// openDirChain opens dir and every directory above it.
func openDirChain(dir string) (*dirChain, error) {
	if !filepath.IsAbs(dir) || filepath.Clean(dir) != dir {
		return nil, fmt.Errorf("%q is not a clean absolute path", dir)
	}
	fd, err := unix.Open("/", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	c := &dirChain{paths: []string{"/"}, fds: []int{fd}}
	p := "/"
	for _, name := range strings.Split(strings.TrimPrefix(dir, "/"), "/") {
		if name == "" {
			continue
		}
		fd, err := unix.Openat(c.fds[len(c.fds)-1], name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err != nil {
			c.close()
			return nil, fmt.Errorf("open %s beneath %s: %w", name, p, err)
		}
		p = filepath.Join(p, name)
		c.paths, c.fds = append(c.paths, p), append(c.fds, fd)
	}
	return c, nil
}

// last is the descriptor of the chain's deepest directory.
func (c *dirChain) last() int { return c.fds[len(c.fds)-1] }

// close closes the chain's descriptors.
func (c *dirChain) close() {
	for _, fd := range c.fds {
		unix.Close(fd)
	}
}
