package host

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/boxsh/boxsh/policy"
)

// subgidPath is the file of the host ids each user may map (shadow's
// newgidmap reads it).
const subgidPath = "/etc/subgid"

// MappedGroups returns the caller's supplementary groups that the sandbox's
// user namespace maps (see plan.Config.Groups).
//
// Those are the groups /etc/subgid lets the caller map, when newgidmap is
// installed (Debian: uidmap); newgidmap writes such a map for an unprivileged
// user. Unmapped, a group's files show as nogroup in the sandbox, and a cow
// bind cannot copy them up. Root maps none: it starts the sandbox through
// another path of the runtime.
func MappedGroups() []uint32 {
	if !rootlessEUID() {
		return nil
	}
	if _, err := exec.LookPath("newgidmap"); err != nil {
		return nil
	}
	groups, err := os.Getgroups()
	if err != nil {
		return nil
	}
	ranges := subgidRanges(subgidPath, os.Getuid())
	var mapped []uint32
	for _, g := range groups {
		if g != 0 && g != os.Getgid() && inRanges(uint32(g), ranges) {
			mapped = append(mapped, uint32(g))
		}
	}
	return mapped
}

// An idRange is a line of /etc/subgid: count ids from start.
type idRange struct{ start, count uint64 }

// subgidRanges are the ranges of the subgid file p that belong to the
// user uid, named by its name or its number.
func subgidRanges(p string, uid int) []idRange {
	f, err := os.Open(p)
	if err != nil {
		return nil
	}
	defer f.Close()
	names := []string{strconv.Itoa(uid)}
	if u, err := user.LookupId(strconv.Itoa(uid)); err == nil {
		names = append(names, u.Username)
	}
	var ranges []idRange
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Split(strings.TrimSpace(sc.Text()), ":")
		if len(fields) != 3 || !slices.Contains(names, fields[0]) {
			continue
		}
		start, err1 := strconv.ParseUint(fields[1], 10, 32)
		count, err2 := strconv.ParseUint(fields[2], 10, 32)
		if err1 == nil && err2 == nil {
			ranges = append(ranges, idRange{start, count})
		}
	}
	return ranges
}

// inRanges tells whether id is in one of ranges.
func inRanges(id uint32, ranges []idRange) bool {
	for _, r := range ranges {
		if uint64(id) >= r.start && uint64(id) < r.start+r.count {
			return true
		}
	}
	return false
}

// maxGroupScan bounds the entries checkCowGroups looks at in a cow bind's SRC,
// so that a huge tree does not slow every start. A tree a team shares is
// usually of its group from the top, and found at once.
const maxGroupScan = 20_000

// checkCowGroups refuses a cow bind whose SRC holds a file that a command
// could change but the overlay could not copy up.
//
// Such a file is of a supplementary group of the caller that the user
// namespace does not map (mapped), or is the caller's own with a group it does
// not map. The kernel refuses such a copy-up with EOVERFLOW ("Value too large
// for defined data type"), which says nothing of the cause.
//
// Only a caller with unmapped supplementary groups has its cow binds walked.
// Each walk looks at up to maxGroupScan entries, on SRC's file system only,
// since the overlay shows no mounts below SRC.
func checkCowGroups(binds []policy.Bind, mapped []uint32) error {
	groups, err := os.Getgroups()
	if err != nil {
		return nil
	}
	uid, gid := os.Getuid(), os.Getgid()
	ok := map[uint32]bool{uint32(gid): true}
	for _, g := range mapped {
		ok[g] = true
	}
	var unmapped []uint32
	for _, g := range groups {
		if !ok[uint32(g)] {
			unmapped = append(unmapped, uint32(g))
		}
	}
	if len(unmapped) == 0 {
		return nil
	}
	for _, b := range binds {
		if b.Mode != policy.CopyOnWrite {
			continue
		}
		p, g, err := findUnmappedGroup(b.Src, uid, ok, unmapped)
		if err != nil || p == "" {
			continue
		}
		name := strconv.Itoa(int(g))
		if gr, err := user.LookupGroupId(name); err == nil {
			name = gr.Name + " (gid " + name + ")"
		}
		owner := strconv.Itoa(uid)
		if u, err := user.LookupId(owner); err == nil {
			owner = u.Username
		}
		return fmt.Errorf("--bind %s: %s belongs to the group %s, which the sandbox's user namespace does not map, "+
			"so changing it there would fail (Value too large for defined data type): let boxsh map the group "+
			"(newgidmap, Debian package uidmap, and the line %s:%d:1 in %s) or change the files' group (chgrp)",
			b, p, name, owner, g, subgidPath)
	}
	return nil
}

// maxGroupScanDepth bounds the depth of directories checkCowGroups
// descends to (one descriptor is open for each level).
const maxGroupScanDepth = 128

// findUnmappedGroup returns the first entry under src that is of one of the
// unmapped groups, or of uid with a group not ok, and its group.
//
// It returns "" when there is none among the first maxGroupScan entries. It
// reads each directory once (getdents, in the directory's order), and stats
// its entries relative to the directory's descriptor, which is faster than a
// walk by path names.
func findUnmappedGroup(src string, uid int, ok map[uint32]bool, unmapped []uint32) (string, uint32, error) {
	fd, err := unix.Open(src, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if errors.Is(err, unix.ENOTDIR) {
		fd, err = unix.Open(filepath.Dir(src), unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if err != nil {
			return "", 0, &os.PathError{Op: "open", Path: src, Err: err}
		}
		defer unix.Close(fd)
		var st unix.Stat_t
		if err := unix.Fstatat(fd, filepath.Base(src), &st, 0); err != nil {
			return "", 0, &os.PathError{Op: "stat", Path: src, Err: err}
		}
		if bad(st, uid, ok, unmapped) {
			return src, st.Gid, nil
		}
		return "", 0, nil
	}
	if err != nil {
		return "", 0, &os.PathError{Op: "open", Path: src, Err: err}
	}
	defer unix.Close(fd)
	var root unix.Stat_t
	if err := unix.Fstat(fd, &root); err != nil {
		return "", 0, &os.PathError{Op: "stat", Path: src, Err: err}
	}
	if bad(root, uid, ok, unmapped) {
		return src, root.Gid, nil
	}
	w := groupWalk{uid: uid, ok: ok, unmapped: unmapped, dev: root.Dev, n: 1, buf: make([]byte, 32<<10)}
	w.dir(fd, src, 0)
	return w.found, w.group, nil
}

// bad tells whether a file of st could not be copied up.
func bad(st unix.Stat_t, uid int, ok map[uint32]bool, unmapped []uint32) bool {
	return slices.Contains(unmapped, st.Gid) || int(st.Uid) == uid && !ok[st.Gid]
}

// A groupWalk is the state of findUnmappedGroup's walk.
type groupWalk struct {
	uid      int
	ok       map[uint32]bool
	unmapped []uint32
	dev      uint64 // SRC's file system: the walk stays on it
	n        int    // entries looked at
	buf      []byte // getdents
	found    string
	group    uint32
}

// dir walks the directory of descriptor fd and path p, depth levels below
// SRC; false ends the walk (found, or maxGroupScan reached).
func (w *groupWalk) dir(fd int, p string, depth int) bool {
	var names []string
	for {
		k, err := unix.ReadDirent(fd, w.buf)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil || k <= 0 {
			break // unreadable: nothing a command could change
		}
		_, _, names = unix.ParseDirent(w.buf[:k], -1, names)
	}
	for _, name := range names {
		if w.n++; w.n > maxGroupScan {
			return false
		}
		var st unix.Stat_t
		if unix.Fstatat(fd, name, &st, unix.AT_SYMLINK_NOFOLLOW) != nil {
			continue
		}
		isDir := st.Mode&unix.S_IFMT == unix.S_IFDIR
		if isDir && st.Dev != w.dev {
			continue // a mount point: the overlay shows what is below it
		}
		if bad(st, w.uid, w.ok, w.unmapped) {
			w.found, w.group = filepath.Join(p, name), st.Gid
			return false
		}
		if !isDir || depth+1 >= maxGroupScanDepth {
			continue
		}
		sub, err := unix.Openat(fd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err != nil {
			continue
		}
		more := w.dir(sub, filepath.Join(p, name), depth+1)
		unix.Close(sub)
		if !more {
			return false
		}
	}
	return true
}
