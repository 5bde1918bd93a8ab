package idle

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"strconv"
	"syscall"

	"golang.org/x/sys/unix"
)

// ReleaseExecutable drops this process's mappings of the pages of its own
// executable that hold only the file's contents, and returns the mappings
// released.
//
// Those pages are the code and read-only data. The kernel maps them again from
// the page cache, where they stay, when they are next used. The pages are
// clean and shared, but the kernel maps a Go binary's large page-cache folios
// whole, so an idle process would keep nearly all of its binary resident.
// Mappings with private pages (a relocated RELRO page, a debugger's
// breakpoint) are left alone: dropping them would lose what was written.
func ReleaseExecutable() (Released, error) {
	var st syscall.Stat_t
	if err := syscall.Stat("/proc/self/exe", &st); err != nil {
		return nil, fmt.Errorf("release executable: %w", err)
	}
	smaps, err := os.Open("/proc/self/smaps")
	if err != nil {
		return nil, fmt.Errorf("release executable: %w", err)
	}
	clean, err := cleanMappings(smaps, st.Dev, st.Ino)
	smaps.Close()
	if err != nil {
		return nil, fmt.Errorf("release executable: read /proc/self/smaps: %w", err)
	}
	var released Released
	for _, m := range clean {
		if _, _, errno := unix.Syscall(unix.SYS_MADVISE, m.start, m.end-m.start, unix.MADV_DONTNEED); errno != 0 {
			return released, fmt.Errorf("release executable: madvise %#x-%#x: %w", m.start, m.end, errno)
		}
		released = append(released, m)
	}
	return released, nil
}

// Released are the mappings ReleaseExecutable released.
type Released []mapping

// Bytes is the size of the mappings.
func (r Released) Bytes() int {
	n := 0
	for _, m := range r {
		n += int(m.end - m.start)
	}
	return n
}

// Populate maps the pages of the mappings again, from the page cache, in
// one call each (MADV_POPULATE_READ, Linux 5.14). That is faster than the
// page faults of a call that maps again what it uses one piece at a time
// (see docs/perf.md). On an older kernel it does nothing, and the faults
// map the pages.
func (r Released) Populate() {
	for _, m := range r {
		_, _, _ = unix.Syscall(unix.SYS_MADVISE, m.start, m.end-m.start, unix.MADV_POPULATE_READ)
	}
}

// mapping is an address range of a mapping in /proc/self/smaps.
type mapping struct{ start, end uintptr }

// cleanMappings returns the mappings in smaps of the file dev:ino that are
// private, not writable, and hold no anonymous (copied-on-write) page. It
// reads smaps a line at a time: the process it describes is idle, and
// should not grow its heap to read it.
func cleanMappings(smaps io.Reader, dev, ino uint64) ([]mapping, error) {
	var out []mapping
	var cur mapping
	candidate := false
	sc := bufio.NewScanner(smaps)
	for sc.Scan() {
		line := sc.Bytes()
		if m, ok := parseMapsLine(line, dev, ino); ok {
			cur, candidate = m, true
			continue
		} else if isMapsLine(line) {
			candidate = false
			continue
		}
		if candidate && bytes.HasPrefix(line, []byte("Anonymous:")) {
			if kb, err := strconv.Atoi(string(bytes.Fields(line[len("Anonymous:"):])[0])); err == nil && kb == 0 {
				out = append(out, cur)
			}
			candidate = false
		}
	}
	return out, sc.Err()
}

// isMapsLine tells whether line is the heading line of a mapping
// ("START-END PERMS OFFSET MAJ:MIN INODE [PATH]") rather than one of its
// "Key: value" lines, without allocating: it is asked of every line.
func isMapsLine(line []byte) bool {
	sp := bytes.IndexByte(line, ' ')
	return sp > 0 && line[sp-1] != ':' && bytes.IndexByte(line[:sp], '-') > 0
}

// parseMapsLine parses the heading line of a mapping and returns its range
// when it maps the file dev:ino privately and without write permission.
func parseMapsLine(line []byte, dev, ino uint64) (mapping, bool) {
	if !isMapsLine(line) {
		return mapping{}, false
	}
	f := bytes.Fields(line)
	if len(f) < 5 {
		return mapping{}, false
	}
	perms := f[1]
	if len(perms) != 4 || perms[1] == 'w' || perms[3] != 'p' {
		return mapping{}, false
	}
	if n, err := strconv.ParseUint(string(f[4]), 10, 64); err != nil || n != ino {
		return mapping{}, false
	}
	majMin := bytes.SplitN(f[3], []byte(":"), 2)
	if len(majMin) != 2 {
		return mapping{}, false
	}
	major, err1 := strconv.ParseUint(string(majMin[0]), 16, 32)
	minor, err2 := strconv.ParseUint(string(majMin[1]), 16, 32)
	if err1 != nil || err2 != nil || unix.Mkdev(uint32(major), uint32(minor)) != dev {
		return mapping{}, false
	}
	addr := bytes.SplitN(f[0], []byte("-"), 2)
	start, err1 := strconv.ParseUint(string(addr[0]), 16, 64)
	end, err2 := strconv.ParseUint(string(addr[1]), 16, 64)
	if err1 != nil || err2 != nil || end <= start {
		return mapping{}, false
	}
	return mapping{uintptr(start), uintptr(end)}, true
}
