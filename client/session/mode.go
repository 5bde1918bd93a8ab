package session

import (
	"fmt"
	"io/fs"
	"strings"
)

// The kernel's permission bits beyond rwx, and the write bits of the
// group and others.
const (
	sISUID = 0o4000
	sISGID = 0o2000
	sISVTX = 0o1000
	sIWGRP = 0o020
	sIWOTH = 0o002
)

// guardedBits are the bits apply never adds to an entry of SRC that SRC
// did not have: write for the group or others, set-ID and sticky.
const guardedBits = sIWGRP | sIWOTH | sISUID | sISGID | sISVTX

// unixPerm is the permission bits of m in the kernel's form (0o4000 for
// setuid, ...), not Go's.
func unixPerm(m fs.FileMode) uint32 {
	p := uint32(m.Perm())
	if m&fs.ModeSetuid != 0 {
		p |= sISUID
	}
	if m&fs.ModeSetgid != 0 {
		p |= sISGID
	}
	if m&fs.ModeSticky != 0 {
		p |= sISVTX
	}
	return p
}

// fileMode is the kernel's permission bits p in Go's form.
func fileMode(p uint32) fs.FileMode {
	m := fs.FileMode(p & 0o777)
	if p&sISUID != 0 {
		m |= fs.ModeSetuid
	}
	if p&sISGID != 0 {
		m |= fs.ModeSetgid
	}
	if p&sISVTX != 0 {
		m |= fs.ModeSticky
	}
	return m
}

// modeString is m's permission bits as chmod takes them: 0755, or
// 01777 and 04755 when a sticky or set-ID bit is set.
func modeString(m fs.FileMode) string {
	p := unixPerm(m)
	if p&0o7000 != 0 {
		return fmt.Sprintf("%05o", p)
	}
	return fmt.Sprintf("%04o", p)
}

// modeWarning names the bits of m that open an entry to other users or run it
// as another, and that old has not.
//
// The names are "group-writable", "world-writable", "setuid" and "setgid"; ""
// for none.
func modeWarning(m, old fs.FileMode) string {
	p, o := unixPerm(m), unixPerm(old)
	var w []string
	for _, b := range []struct {
		bit  uint32
		name string
	}{{sIWGRP, "group-writable"}, {sIWOTH, "world-writable"}, {sISUID, "setuid"}, {sISGID, "setgid"}} {
		if p&b.bit != 0 && o&b.bit == 0 {
			w = append(w, b.name)
		}
	}
	return strings.Join(w, ", ")
}

// applyMode is the mode apply gives an entry the sandbox left with mode
// want (kernel bits): want without the guarded bits allowed lacks. For
// an entry SRC has, of the same type, allowed is its mode there: apply
// adds no group or other write, set-ID or sticky bit to it. For a new
// entry it is newAllowed of its parent directory.
func applyMode(want, allowed uint32) uint32 {
	return want &^ (guardedBits &^ allowed)
}

// newAllowed returns the bits that applyMode allows a new entry in a directory
// of SRC of mode parent (kernel bits).
//
//   - Write for the group or others only where the directory gives it already
//     and is not sticky, since there others could replace the entry anyway.
//   - The setgid bit for a directory in a setgid one, as the kernel gives it.
//   - Never setuid or sticky.
func newAllowed(parent uint32, dir bool) uint32 {
	var allowed uint32
	if parent&sISVTX == 0 {
		allowed |= parent & (sIWGRP | sIWOTH)
	}
	if dir {
		allowed |= parent & sISGID
	}
	return allowed
}
