package main

import (
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// evictPageCache drops the page cache of a target's binary and the files
// beside it (boxsh-init, the zygote) before a memory figure. So both
// targets start from the same state.
//
// A binary just written by the linker sits in the page cache in large
// folios. A process maps a large folio whole when it touches any page of
// it. So a front whose executable pages were released would map back much
// more than it uses at its next instruction. Its idle figure would then
// measure how the file got into the cache, not the program. Errors are
// ignored: the figure is then what it would have been without the eviction.
func evictPageCache(bin string) {
	dir := filepath.Dir(bin)
	for _, p := range []string{bin, filepath.Join(dir, "boxsh-init"), filepath.Join(dir, "boxsh-zygote.so")} {
		f, err := os.Open(p)
		if err != nil {
			continue
		}
		// Pages not yet written back (a binary just built) are dirty,
		// and the kernel drops clean pages only.
		_ = unix.Fsync(int(f.Fd()))
		_ = unix.Fadvise(int(f.Fd()), 0, 0, unix.FADV_DONTNEED)
		f.Close()
	}
}
